"""Time expressions in a query ("last week", "in May", "3 days ago", "between May 3 and May 9",
"the last week of October", "mid-August", "last summer", 上周, 五月, 5月3日到9日, 去年夏天),
resolved to a window of dates against the query's own date (`as_of`). Pure.

A window is [since, until) in UTC. Words that name an event rather than a date ("before the
migration") come back as an anchor for the caller to look up (`Window.anchor`, `Window.side`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
CN_DIGITS = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8,
             "九": 9, "十": 10, "十一": 11, "十二": 12}  # fmt: skip
UNITS = {"day": 1, "days": 1, "week": 7, "weeks": 7, "month": 30, "months": 30, "year": 365,
         "years": 365, "天": 1, "日": 1, "周": 7, "星期": 7, "个月": 30, "月": 30, "年": 365}  # fmt: skip
_MONTH_NAMES = "|".join(sorted(MONTHS, key=len, reverse=True))
_NUMBER = (
    r"(\d+|a couple of|couple of|a few|few|several|a|an|one|two|three|four|five|six|seven|eight"
    r"|nine|ten|[一二两三四五六七八九十]+|几)"
)
_WORD_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
                 "seven": 7, "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "couple of": 2,
                 "a few": 3, "few": 3, "several": 4, "几": 3}  # fmt: skip
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
CN_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}


@dataclass(frozen=True)
class Window:
    since: datetime | None = None
    until: datetime | None = None
    phrase: str = ""  # the words of the query that named the time
    anchor: str | None = None  # an event to look up ("the migration"); its date bounds the window
    side: str | None = None  # "before" or "after" the anchor


def _day(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _number(text: str) -> int:
    if text.isdigit():
        return int(text)
    if text in _WORD_NUMBERS:
        return _WORD_NUMBERS[text]
    if text in CN_DIGITS:
        return CN_DIGITS[text]
    if text.startswith("十"):  # 十三
        return 10 + CN_DIGITS.get(text[1:], 0)
    if "十" in text:  # 二十, 二十三
        tens, _, ones = text.partition("十")
        return CN_DIGITS.get(tens, 1) * 10 + (CN_DIGITS.get(ones, 0) if ones else 0)
    return 1


def _month_window(month: int, year: int | None, as_of: datetime) -> tuple[datetime, datetime]:
    """The named month in `year`, else its latest occurrence that has begun by `as_of`."""
    if year is None:
        year = as_of.year if month <= as_of.month else as_of.year - 1
    start = datetime(year, month, 1, tzinfo=timezone.utc)
    end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=timezone.utc)
    return start, end


def _week_start(moment: datetime) -> datetime:
    return _day(moment) - timedelta(days=moment.weekday())


# A query is read for time in its first this many characters: a pasted log or file in a
# prompt is no question about dates, and reading all of it would cost seconds.
MAX_TIME_CHARS = 2000


def parse_window(query: str, as_of: datetime) -> Window | None:
    """The first time expression of `query`, as a window; None when it names no time."""
    text = query[:MAX_TIME_CHARS].lower()
    if not _TIME_CUE.search(text):
        return None
    today = _day(as_of)
    for finder in _FINDERS:
        try:
            found = finder(text, as_of, today)
        except (OverflowError, ValueError):  # "99999 years ago", 9999-12-31: past the calendar
            continue
        if found is not None:
            return found
    return None


# A question whose answer is a time: "When did ...", "What year ...", "How long ago ...",
# 什么时候, 哪一年, 几月. "when" must be followed by a verb of the question, so "what do we do
# when the build fails" asks for a procedure, not a date.
QUESTION_VERBS = r"(?:did|do|does|is|are|was|were|will|would|could|should|can|has|have|had)"
_ASKS_WHEN = re.compile(
    rf"\bwhen\s+{QUESTION_VERBS}\b"
    r"|\bsince when\b|\bhow long ago\b"
    r"|\b(?:what|which)\s+(?:year|month|day|date|week|weekend|season|time of year)\b"
    r"|\bon what (?:day|date)\b"
    r"|什么时候|何时|哪一?年|哪个月|几月|哪一?天|几号|多久以前|多久前"
)


def asks_when(query: str) -> bool:
    """Does the query ask for a time (the answer is a date, not a thing)?"""
    return _ASKS_WHEN.search(query[:MAX_TIME_CHARS].lower()) is not None


# A time that recurs or a time of day ("every Thursday", "weekly", "at 4pm", "10:30",
# 每周四, 每月, 下午四点): no window to resolve, yet the answer to "when is the standup?".
_SCHEDULE = re.compile(
    r"\b(?:every|each)\s+(?:other\s+)?(?:day|morning|evening|night|week|weekday|weekend|month"
    r"|quarter|year|sprint|release|monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?\b"
    r"|\b(?:daily|nightly|weekly|biweekly|fortnightly|monthly|quarterly|yearly|annually)\b"
    r"|\b\d{1,2}(?::\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.)|(?<![\d.])(?:[01]?\d|2[0-3]):[0-5]\d\b|\bnoon\b"
    r"|每(?:天|日|晚|周|星期|个?月|季度?|年)|[上下中]午|[早晚]上\S{0,3}点|[\d一二两三四五六七八九十]+点"
)


def states_schedule(text: str) -> bool:
    """Does the text name a recurring time or a time of day?"""
    return _SCHEDULE.search(text[:MAX_TIME_CHARS].lower()) is not None


_RELATIVE_DAYS = (  # (pattern, first day back, days in the window)
    (r"\bthe day before yesterday\b|前天", 2, 1),
    (r"\blast night\b|昨晚|昨天晚上", 1, 2),  # the evening, or the small hours of today
    (r"\btoday\b|\bthis (?:morning|afternoon|evening)\b|\btonight\b|今天|今晚|今早", 0, 1),
    (r"\byesterday\b|昨天", 1, 1),
)


def _relative_days(text: str, as_of: datetime, today: datetime) -> Window | None:
    for pattern, days, length in _RELATIVE_DAYS:
        match = re.search(pattern, text)
        if match:
            start = today - timedelta(days=days)
            return Window(start, start + timedelta(days=length), match.group(0))
    return None


def _weekends(text: str, as_of: datetime, today: datetime) -> Window | None:
    """ "last weekend" is the Saturday and Sunday of the week before this one; "this weekend"
    this week's; "the past weekend" the latest that has begun."""
    match = re.search(
        r"\b(last|this|past|previous) weekend\b|(上|这|本)个?(?:周末|星期末|礼拜末)", text
    )
    if not match:
        return None
    saturday = _week_start(as_of) + timedelta(days=5)
    which = match.group(1) or {"上": "last", "这": "this", "本": "this"}[match.group(2)]
    if which in ("last", "previous") or (which == "past" and today < saturday):
        saturday -= timedelta(days=7)
    return Window(saturday, saturday + timedelta(days=2), match.group(0))


def _weekdays(text: str, as_of: datetime, today: datetime) -> Window | None:
    """ "last Friday" (the latest before today), "this Friday" (this week's), "on Friday" (the
    latest by today), 上周五 (last week's), 这周五, 在周五. A bare weekday is no date: "the
    Monday standup" names a habit, not a day."""
    names = "|".join(WEEKDAYS)
    match = re.search(
        rf"\b(last|this|past|on|since|before|after|until) ({names})\b"
        r"|(上|这|本|在)个?(?:周|星期|礼拜)([一二三四五六日天])",
        text,
    )
    if not match:
        return None
    if match.group(2):
        cue, weekday = match.group(1), WEEKDAYS.index(match.group(2))
    else:
        cue = {"上": "last week", "这": "this", "本": "this", "在": "on"}[match.group(3)]
        weekday = CN_WEEKDAYS[match.group(4)]
    week = _week_start(as_of)
    if cue == "this":
        day = week + timedelta(days=weekday)
    elif cue == "last week":
        day = week - timedelta(days=7 - weekday)
    else:
        back = (today.weekday() - weekday) % 7
        day = today - timedelta(days=back or (7 if cue in ("last", "past") else 0))
    end = day + timedelta(days=1)
    if cue in ("since", "after"):
        return Window(day if cue == "since" else end, None, match.group(0))
    if cue in ("before", "until"):
        return Window(None, day, match.group(0))
    return Window(day, end, match.group(0))


def _named_periods(text: str, as_of: datetime, today: datetime) -> Window | None:
    week = _week_start(as_of)
    month = today.replace(day=1)
    previous_month = (month - timedelta(days=1)).replace(day=1)
    year = today.replace(month=1, day=1)
    periods = (
        (
            r"\blast week\b|\bprevious week\b|上周|上星期|上个星期|上礼拜",
            week - timedelta(days=7),
            week,
        ),
        (r"\bthis week\b|本周|这周|这个星期|这星期", week, week + timedelta(days=7)),
        (r"\blast month\b|\bprevious month\b|上个月|上月", previous_month, month),
        (r"\bthis month\b|本月|这个月", month, (month + timedelta(days=32)).replace(day=1)),
        (r"\blast year\b|去年", year.replace(year=year.year - 1), year),
        (r"\bthis year\b|今年", year, year.replace(year=year.year + 1)),
    )
    for pattern, start, end in periods:
        match = re.search(pattern, text)
        if match:
            return Window(start, end, match.group(0))
    match = re.search(
        rf"\b(?:in |during )?(?:the )?(?:last|past) {_NUMBER} (days?|weeks?|months?|years?)\b"
        rf"|最近{_NUMBER}(天|周|个月|年)|过去{_NUMBER}(天|周|个月|年)",
        text,
    )
    if match:
        groups = [g for g in match.groups() if g]
        span = _number(groups[0]) * UNITS[groups[1]]
        return Window(today - timedelta(days=span), as_of + timedelta(seconds=1), match.group(0))
    return None


def _ago(text: str, as_of: datetime, today: datetime) -> Window | None:
    match = re.search(
        rf"\b{_NUMBER} (days?|weeks?|months?|years?) ago\b|{_NUMBER}(天|周|个星期|星期|个月|年)前",
        text,
    )
    if not match:
        return None
    groups = [g for g in match.groups() if g]
    unit = groups[1].replace("个星期", "星期")
    span = _number(groups[0]) * UNITS[unit]
    # Why: "two weeks ago" is a rough date: a window of one unit around it.
    center = today - timedelta(days=span)
    half = timedelta(days=max(UNITS[unit] // 2, 1))
    return Window(center - half, center + half + timedelta(days=1), match.group(0))


_ORDINAL = r"(?:st|nd|rd|th)?"
_DAY_FORMS = (  # (pattern, group of the year, of the month, of the day)
    (re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b"), 1, 2, 3),  # 2023-05-02
    (re.compile(rf"\b({_MONTH_NAMES})\.? (\d{{1,2}}){_ORDINAL}\b(?:,? (\d{{4}})\b)?"), 3, 1, 2),
    (
        re.compile(rf"\b(\d{{1,2}}){_ORDINAL} (?:of )?({_MONTH_NAMES})\b\.?(?:,? (\d{{4}})\b)?"),
        3,
        2,
        1,
    ),
    (
        re.compile(
            r"(?:(\d{4})年)?(\d{1,2}|[一二三四五六七八九十]+)月(\d{1,2}|[一二三四五六七八九十]+)[日号]"
        ),
        1,
        2,
        3,
    ),
)


def _dates(text: str, as_of: datetime, today: datetime) -> Window | None:
    """One day: "May 2nd", "2 May 2023", "2023-05-02", 5月2日, 五月二号."""
    for pattern, year_group, month_group, day_group in _DAY_FORMS:
        for match in pattern.finditer(text):
            month_text = match.group(month_group)
            if month_text == "may" and not _plainly_a_date(text, match):
                continue  # "we may 2x the pool": the verb
            month = MONTHS.get(month_text) or _number(month_text)
            day = _number(match.group(day_group))
            year_text = match.group(year_group)
            start = _day_of(int(year_text) if year_text else None, month, day, as_of)
            if start is not None:
                return _bounded(text, match, start, start + timedelta(days=1))
    return None


def _plainly_a_date(text: str, match: re.Match) -> bool:
    """A day of "may" reads as a date with an ordinal, a year or a preposition before it."""
    if re.search(r"\d(?:st|nd|rd|th)\b|\d{4}", match.group(0)):
        return True
    before = text[max(match.start() - 12, 0) : match.start()].split()
    return bool(before) and before[-1] in ("on", "by", "since", "before", "after", "until", "of")


def _day_of(year: int | None, month: int, day: int, as_of: datetime) -> datetime | None:
    """That day of `year`, else its latest occurrence by `as_of`; None for no such day."""
    try:
        if year is not None:
            return datetime(year, month, day, tzinfo=timezone.utc)
        start = datetime(as_of.year, month, day, tzinfo=timezone.utc)
        return (
            start if start <= as_of else datetime(as_of.year - 1, month, day, tzinfo=timezone.utc)
        )
    except ValueError:  # 2月30日, "May 45"
        return None


def _months(text: str, as_of: datetime, today: datetime) -> Window | None:
    match = re.search(rf"\b({_MONTH_NAMES})\.?(?:,? (\d{{4}}))?\b", text)
    if match and (
        match.group(1) != "may"
        or re.search(
            r"\b(?:in|during|since|of|early|late|"
            r"mid|before|after|until) may\b|may \d{4}",
            text,
        )
    ):
        month = MONTHS[match.group(1)]
        year = int(match.group(2)) if match.group(2) else None
        return _bounded(text, match, *_month_window(month, year, as_of))
    match = re.search(r"(?:(\d{4})年)?(\d{1,2}|[一二三四五六七八九十]+)月(?:份)?(?!前)", text)
    if match and not re.search(r"个月", match.group(0)):
        month = _number(match.group(2))
        if 1 <= month <= 12:
            year = int(match.group(1)) if match.group(1) else None
            return _bounded(text, match, *_month_window(month, year, as_of))
    return None


def _years(text: str, as_of: datetime, today: datetime) -> Window | None:
    match = re.search(
        r"\b(?:in|during|since|before|after) ((?:19|20)\d{2})\b|((?:19|20)\d{2})年", text
    )
    if not match:
        return None
    year = int(match.group(1) or match.group(2))
    start = datetime(year, 1, 1, tzinfo=timezone.utc)
    return _bounded(text, match, start, start.replace(year=year + 1))


def _bounded(text: str, match: re.Match, start: datetime, end: datetime) -> Window:
    """`since May` / `after May` open the window's end; `before May` / `until May` its start."""
    before = text[: match.start()].rstrip()
    phrase = match.group(0)
    if re.search(r"\b(?:since|after)$|以来$|之后$", before):
        return Window(start if before.endswith("since") else end, None, phrase)
    if re.search(r"\b(?:before|until|till)$|之前$|以前$", before):
        return Window(None, start, phrase)
    return Window(start, end, phrase)


# --- spans: ranges, weeks of a month, parts of a month or year, seasons ----------------------

_YEAR = r"(?:19|20)\d{2}"
_POINT = (  # one end of a range, read again by _point
    rf"\d{{4}}-\d{{1,2}}-\d{{1,2}}"
    rf"|(?:{_MONTH_NAMES})\.? \d{{1,2}}{_ORDINAL}(?:,? {_YEAR})?(?![\d:])"
    rf"|\d{{1,2}}{_ORDINAL} (?:of )?(?:{_MONTH_NAMES})\.?(?:,? {_YEAR})?"
    rf"|(?:{_MONTH_NAMES})\.?(?:,? {_YEAR})?"
    rf"|{_YEAR}"
    rf"|\d{{1,2}}{_ORDINAL}(?![\d:])"
)
_CN_NUMBER = r"\d{1,2}|[一二三四五六七八九十]+"
_CN_POINT = rf"(?:{_YEAR}年)?(?:(?:{_CN_NUMBER})月)?(?:(?:{_CN_NUMBER})[日号])?|{_YEAR}年"
_RANGE = re.compile(
    rf"\bbetween ({_POINT}) and ({_POINT})\b"
    rf"|\bfrom ({_POINT}) (?:to|until|till|through|thru) ({_POINT})\b"
    rf"|\b({_POINT}) ?(?:-|–|—|to|through|thru|until|till) ?({_POINT})\b"
    rf"|从?({_CN_POINT}) ?(?:到|至|-|–|—|~) ?({_CN_POINT})(?:之间|期间)?"
    rf"|在?({_CN_POINT})(?:和|与|跟)({_CN_POINT})之间"
)


@dataclass(frozen=True)
class _Point:
    """One end of a range as written: any of year, month and day may be missing."""

    year: int | None
    month: int | None
    day: int | None


def _point(text: str) -> _Point | None:
    """Read one end of a range ("May 3rd", "3 May 2023", "2023-05-03", "May", "2023", "5",
    5月3日, 3日, 2023年); None when it is no date."""
    point = _written_point(text)
    if point is None or not 1 <= (point.month or 1) <= 12 or not 1 <= (point.day or 1) <= 31:
        return None
    return point


def _written_point(text: str) -> _Point | None:
    text = text.strip().rstrip(".")
    if not text:
        return None
    iso = re.fullmatch(r"(\d{4})-(\d{1,2})-(\d{1,2})", text)
    if iso:
        return _Point(int(iso.group(1)), int(iso.group(2)), int(iso.group(3)))
    year = re.match(rf"({_YEAR})年", text) or re.search(rf"({_YEAR})年?$", text)
    if year is None:
        rest = text
    elif year.start() == 0:
        rest = text[year.end() :]
    else:
        rest = text[: year.start()].rstrip(" ,")
    found = _Point(int(year.group(1)) if year else None, None, None)
    if not rest:
        return found
    cn = re.fullmatch(rf"(?:({_CN_NUMBER})月)?(?:({_CN_NUMBER})[日号])?", rest)
    if cn and (cn.group(1) or cn.group(2)):
        month = _number(cn.group(1)) if cn.group(1) else None
        day = _number(cn.group(2)) if cn.group(2) else None
        return _Point(found.year, month, day)
    for pattern, month_group, day_group in (
        (rf"({_MONTH_NAMES})\.?(?: (\d{{1,2}}){_ORDINAL})?", 1, 2),
        (rf"(\d{{1,2}}){_ORDINAL} (?:of )?({_MONTH_NAMES})\.?", 2, 1),
        (rf"(\d{{1,2}}){_ORDINAL}()", 2, 1),
    ):
        match = re.fullmatch(pattern, rest)
        if match:
            month = MONTHS.get(match.group(month_group) or "")
            day = int(match.group(day_group)) if match.group(day_group) else None
            return _Point(found.year, month, day)
    return None


# Every range, week of a month and part of a month or year names a month, a year or a day:
# a text without one is passed over at once (a long regex tried at every word is slow).
_DATE_WORD = re.compile(rf"\d|\b(?:{_MONTH_NAMES})\b|[年月日号]")


def _ranges(text: str, as_of: datetime, today: datetime) -> Window | None:
    """Both ends named: "between May 3 and May 9", "from May to July 2023", "June 3-5",
    "3 to 5 June", "between 2021 and 2023", 5月3日到9日, 从5月到7月, 2021年和2023年之间.
    An end that leaves out the year or month takes it from the other; the window runs from
    the start of the first end to the end of the last (a whole day, month or year)."""
    if not _DATE_WORD.search(text):
        return None
    for match in _RANGE.finditer(text):
        groups = [g for g in match.groups() if g is not None]
        if len(groups) != 2:
            continue
        first, last = _point(groups[0]), _point(groups[1])
        if first is None or last is None or not _plainly_a_range(first, last, match.group(0)):
            continue
        window = _range_window(first, last, as_of)
        if window is not None:
            return Window(*window, match.group(0).strip())
    return None


def _plainly_a_range(first: _Point, last: _Point, phrase: str) -> bool:
    """Two numbers alone ("from 5 to 10"), or a day against a year, are no range of dates;
    "may" is the verb unless the range is plainly one of dates."""
    if first.month is None and last.month is None:
        return first.day is None and last.day is None and None not in (first.year, last.year)
    if (first.month is None and first.day is None) != (last.month is None and last.day is None):
        return False  # a year against a month or day: "2021 to May"
    if re.search(r"\bmay\b", phrase) and not re.search(
        r"^(?:between|from)\b|\d{4}|\d(?:st|nd|rd|th)\b", phrase
    ):
        return False
    return True


def _named_day(text: str, as_of: datetime) -> datetime | None:
    """The day a text names with its month and day ("August 7, 2023", "3rd May", 2023-05-03),
    in its year, else its latest by `as_of`; None for anything else."""
    point = _point(text)
    if point is None or point.month is None or point.day is None:
        return None
    return _day_of(point.year, point.month, point.day, as_of)


def _range_window(first: _Point, last: _Point, as_of: datetime) -> tuple[datetime, datetime] | None:
    """[start of the first end, end of the last end), or None when that is no range."""
    month_a = first.month or last.month
    month_b = last.month or first.month
    if month_a is None or month_b is None:  # years alone
        if first.year is None or last.year is None:
            return None
        if first.year > last.year:
            return None
        return (
            datetime(first.year, 1, 1, tzinfo=timezone.utc),
            datetime(last.year + 1, 1, 1, tzinfo=timezone.utc),
        )
    if first.day is None and last.day is not None and last.month is None:
        return None  # "May to 5": no range
    key_a, key_b = (month_a, first.day or 1), (month_b, last.day or 1)
    year_a, year_b = _range_years(first.year, last.year, key_a, key_b, as_of)
    start = _day_of(year_a, month_a, first.day or 1, as_of)
    if last.day is None:
        end: datetime | None = _month_window(month_b, year_b, as_of)[1]
    else:
        last_day = _day_of(year_b, month_b, last.day, as_of)
        end = last_day + timedelta(days=1) if last_day else None
    if start is None or end is None or start >= end:
        return None
    return start, end


def _range_years(
    year_a: int | None,
    year_b: int | None,
    key_a: tuple[int, int],
    key_b: tuple[int, int],
    as_of: datetime,
) -> tuple[int, int]:
    """The years of a range's ends, given as (month, day): each end's own, else the other
    end's (a year apart when the range crosses a new year: "Dec 20 - Jan 5"), else those of
    the latest such range that has begun by `as_of`."""
    crosses = key_a > key_b
    if year_a is not None and year_b is not None:
        return year_a, year_b
    if year_b is not None:
        return year_b - crosses, year_b
    if year_a is not None:
        return year_a, year_a + crosses
    latest = _latest_year(key_b[0], key_b[1], as_of)
    return latest - crosses, latest


def _latest_year(month: int, day: int | None, as_of: datetime) -> int:
    """The year of the latest occurrence of that month (and day) that has begun by `as_of`."""
    return as_of.year if (month, day or 1) <= (as_of.month, as_of.day) else as_of.year - 1


_DAY_POINT = (  # a named day, read again by _point
    rf"\d{{4}}-\d{{1,2}}-\d{{1,2}}"
    rf"|(?:{_MONTH_NAMES})\.? \d{{1,2}}{_ORDINAL}(?:,? {_YEAR})?(?![\d:])"
    rf"|\d{{1,2}}{_ORDINAL} (?:of )?(?:{_MONTH_NAMES})\.?(?:,? {_YEAR})?"
)
_OFFSET = re.compile(
    rf"\b(?:the )?(day|week|weekend|{'|'.join(WEEKDAYS)}|{_NUMBER} (?:days?|weeks?))"
    rf" (before|after) ({_DAY_POINT})"
)


def _offsets(text: str, as_of: datetime, today: datetime) -> Window | None:
    """A time counted from a named day: "the week before August 3, 2023" (the seven days
    before it), "the day after May 3rd", "the Sunday before October 25", "the weekend before
    4th October", "two weeks before August 11" (a rough date: a week around it)."""
    if not _DATE_WORD.search(text):
        return None
    match = _OFFSET.search(text)
    day = _named_day(match.group(4), as_of) if match else None
    if match is None or day is None:
        return None
    what, after = match.group(1), match.group(3) == "after"
    step = 1 if after else -1
    if what == "day":
        start = day + timedelta(days=step)
        return Window(start, start + timedelta(days=1), match.group(0))
    if what == "week":
        start = day + timedelta(days=1) if after else day - timedelta(days=7)
        return Window(start, start + timedelta(days=7), match.group(0))
    if what == "weekend":
        saturday = day + timedelta(days=step)
        while saturday.weekday() != 5:
            saturday += timedelta(days=step)
        if not after and saturday + timedelta(days=1) >= day:
            saturday -= timedelta(days=7)  # Why: the Sunday before a Sunday is a week back
        return Window(saturday, saturday + timedelta(days=2), match.group(0))
    if what in WEEKDAYS:
        found = day + timedelta(days=step)
        while found.weekday() != WEEKDAYS.index(what):
            found += timedelta(days=step)
        return Window(found, found + timedelta(days=1), match.group(0))
    count, unit = what.rsplit(" ", 1)  # "two weeks", "a couple of days"
    span = _number(count) * UNITS[unit]
    center = day + timedelta(days=step * span)
    half = timedelta(days=max(UNITS[unit] // 2, 1))
    return Window(center - half, center + half + timedelta(days=1), match.group(0))


_NTH = {"first": 0, "1st": 0, "second": 1, "2nd": 1, "third": 2, "3rd": 2, "fourth": 3, "4th": 3}
_NTH_CN = {"一": 0, "1": 0, "二": 1, "2": 1, "三": 2, "3": 2, "四": 3, "4": 3}


def _weeks_of_month(text: str, as_of: datetime, today: datetime) -> Window | None:
    """ "the second week of November" (days 8-14), "the last week of October 2023" (its last
    seven days), "the week of August 7" (the Monday-to-Sunday week holding that day),
    11月的第二周, 10月最后一周."""
    if not _DATE_WORD.search(text):
        return None
    match = re.search(
        rf"\b(first|1st|second|2nd|third|3rd|fourth|4th|last|final) week of "
        rf"({_MONTH_NAMES})\b\.?(?:,? ({_YEAR}))?"
        rf"|(?:({_YEAR})年)?({_CN_NUMBER})月(?:的)?(?:第([一二三四1234])|(最后))(?:一)?(?:个)?(?:周|星期|礼拜)",
        text,
    )
    if match:
        if match.group(2):
            which, month, year = match.group(1), MONTHS[match.group(2)], match.group(3)
        else:
            which = "last" if match.group(7) else list(_NTH)[2 * _NTH_CN[match.group(6)]]
            month, year = _number(match.group(5)), match.group(4)
        if not 1 <= month <= 12:
            return None
        start, end = _month_window(month, int(year) if year else None, as_of)
        if which in ("last", "final"):
            return Window(end - timedelta(days=7), end, match.group(0))
        first = start + timedelta(days=7 * _NTH[which])
        return Window(first, first + timedelta(days=7), match.group(0))
    match = re.search(rf"\b(?:the )?week of ({_POINT})", text)
    day = _named_day(match.group(1), as_of) if match else None
    if match is None or day is None:
        return None
    monday = _week_start(day)
    return Window(monday, monday + timedelta(days=7), match.group(0))


# Parts of a month: early (days 1-10), mid (11-20), late (21 to its end).
_PART_DAYS = {"early": (1, 11), "mid": (11, 21), "late": (21, None)}
_PART_WORDS = {"early": "early", "beginning": "early", "start": "early", "mid": "mid",
               "middle": "mid", "late": "late", "end": "late", "初": "early", "上旬": "early",
               "中旬": "mid", "中": "mid", "下旬": "late", "底": "late", "末": "late"}  # fmt: skip
# Parts of a year: early (January-April), mid (May-August), late (September-December).
_PART_MONTHS = {"early": (1, 5), "mid": (5, 9), "late": (9, 13)}
_PART = r"(early|mid|late|(?:the |towards? the )?(?:beginning|start|middle|end) of)"


def _month_parts(text: str, as_of: datetime, today: datetime) -> Window | None:
    """ "early May", "mid-August 2023", "the end of June", "late 2022", "mid-2023", 5月初,
    8月中旬, 2023年6月底, 去年年底."""
    if not _DATE_WORD.search(text) and "年" not in text:
        return None
    match = re.search(
        rf"\b{_PART}[- ]?({_MONTH_NAMES})\b\.?(?:,? ({_YEAR}))?"
        rf"|(?:({_YEAR})年)?({_CN_NUMBER})月(初|上旬|中旬|下旬|底|末)",
        text,
    )
    if match:
        if match.group(2):
            part, month = _part(match.group(1)), MONTHS[match.group(2)]
            year = match.group(3)
        else:
            part, month, year = _part(match.group(6)), _number(match.group(5)), match.group(4)
        if not 1 <= month <= 12:
            return None
        start, end = _month_window(month, int(year) if year else None, as_of)
        first, last = _PART_DAYS[part]
        since = start + timedelta(days=first - 1)
        until = end if last is None else start + timedelta(days=last - 1)
        return Window(since, until, match.group(0))
    match = re.search(
        rf"\b{_PART}[- ]?({_YEAR})\b|(?:({_YEAR})年|(今|去)年)年?(初|中|底|末)(?!旬)", text
    )
    if not match:
        return None
    if match.group(2):
        part, year = _part(match.group(1)), int(match.group(2))
    else:
        part = _part(match.group(5))
        year = int(match.group(3)) if match.group(3) else as_of.year - (match.group(4) == "去")
    first, last = _PART_MONTHS[part]
    since = datetime(year, first, 1, tzinfo=timezone.utc)
    until = datetime(year + (last == 13), last % 12 or 1, 1, tzinfo=timezone.utc)
    return Window(since, until, match.group(0))


def _part(words: str) -> str:
    for word in words.split():
        if word in _PART_WORDS:
            return _PART_WORDS[word]
    return _PART_WORDS[words]


# Meteorological seasons of the northern hemisphere: (first month, months).
SEASONS = {"spring": (3, 3), "summer": (6, 3), "autumn": (9, 3), "fall": (9, 3),
           "winter": (12, 3), "春": (3, 3), "夏": (6, 3), "秋": (9, 3), "冬": (12, 3)}  # fmt: skip


def _seasons(text: str, as_of: datetime, today: datetime) -> Window | None:
    """ "last summer" (the latest that has ended), "this winter", "in the spring", "summer
    2022", "the end of summer 2023", 去年夏天, 今年春天, 2022年夏天. A season with no cue
    ("summer drives", "plans for the summer") is no date. Winter 2023 is December 2022 to
    February 2023."""
    match = re.search(
        rf"\b(?:{_PART} |(early|late) )?(?:(last|this|past|previous) |(?:in|during|over) the )?"
        rf"(spring|summer|autumn|fall|winter)\b(?:,? (?:of )?({_YEAR}))?"
        rf"|(?:({_YEAR})年|(今|去|前)年)的?([春夏秋冬])(?:天|季)",
        text,
    )
    if match is None:
        return None
    if match.group(4):
        part = (
            _part(match.group(1) or match.group(2) or "")
            if (match.group(1) or match.group(2))
            else None
        )
        cue, name, year_text = match.group(3), match.group(4), match.group(5)
        plain = re.search(r"\b(?:in|during|over) the \w+$", match.group(0).split(",")[0])
        if cue is None and year_text is None and not plain:
            return None
        year = int(year_text) if year_text else None
    else:
        part, cue, name = None, None, match.group(8)
        if match.group(6):
            year = int(match.group(6))
        else:
            year = as_of.year - {"今": 0, "去": 1, "前": 2}[match.group(7)]
    first, months = SEASONS[name]
    if year is None:
        year = _season_year(first, months, cue, as_of)
    start_year = year - (first == 12)  # winter 2023 begins in December 2022
    start = datetime(start_year, first, 1, tzinfo=timezone.utc)
    end = _add_months(start, months)
    if part is not None:
        third = {"early": 0, "mid": 1, "late": 2}[part]
        start = _add_months(start, third)
        end = _add_months(start, 1)
    return Window(start, end, match.group(0).strip())


def _season_year(first: int, months: int, cue: str | None, as_of: datetime) -> int:
    """The year of "this" season (the current year's, a winter counted by its January), of
    "last" one (the latest that has ended by `as_of`), or of a plain one (the latest that has
    begun)."""

    def start_of(year: int) -> datetime:
        return datetime(year - (first == 12), first, 1, tzinfo=timezone.utc)

    if cue == "this":  # a winter is counted by its January: in autumn, the coming one
        return as_of.year + (first == 12 and as_of.month >= 3)
    year = as_of.year + (first == 12 and as_of.month == 12)
    while start_of(year) > as_of:
        year -= 1
    if cue in ("last", "past", "previous") and _add_months(start_of(year), months) > as_of:
        year -= 1
    return year


def _add_months(moment: datetime, months: int) -> datetime:
    total = moment.month - 1 + months
    return moment.replace(year=moment.year + total // 12, month=total % 12 + 1, day=1)


_STOP = r"(?:what|which|who|whom|when|where|why|how|did|do|does|we|i|you|they|was|were|is|are|and|or|to)"
_EVENT = re.compile(
    rf"\b(before|after|since) (the (?:(?!{_STOP}\b)[a-z0-9][\w-]*(?:\s|$)){{1,3}})"
    r"|在?([^\s，,。？?]{1,12}?)(之前|以前|之后|以后)"
)


def _event(text: str, as_of: datetime, today: datetime) -> Window | None:
    match = _EVENT.search(text)
    if not match:
        return None
    if match.group(1):
        side = "before" if match.group(1) == "before" else "after"
        anchor = match.group(2).strip()
    else:
        side = "before" if match.group(4) in ("之前", "以前") else "after"
        anchor = match.group(3).strip()
    return Window(None, None, match.group(0).strip(), anchor=anchor, side=side)


# A word every time expression holds at least one of (a digit, a month, a weekday, "ago",
# "last", a season, 年, 周, 前 ...): a text with none names no time, and is passed over at once.
_TIME_CUE = re.compile(
    rf"\d|\b(?:{_MONTH_NAMES}|{'|'.join(WEEKDAYS)}|yesterday|today|tonight|ago|last|this|past"
    r"|previous|week|month|year|night|morning|afternoon|evening|spring|summer|autumn|fall"
    r"|winter|early|mid|late|beginning|start|middle|end|before|after|since|until|till"
    r"|between|from)|[年月日号周天昨前今去后春夏秋冬旬初底末晚早]|星期|礼拜|最近|过去"
)

# In this order: a span names a month, a season or both ends of a range, so it is read before
# "last week" or a single day could take part of it ("the last week of October", "between
# August 11 and August 15 2023").
_FINDERS = (_offsets, _ranges, _weeks_of_month, _month_parts, _seasons, _relative_days, _weekends,
            _weekdays, _named_periods, _ago, _dates, _months, _years, _event)  # fmt: skip


def tells_of(told: Window | None, window: Window) -> bool:
    """Does a time a memory names fall in the query's window? Only a closed time no longer than
    the window counts: a memory on "last year" is no evidence for one week of it."""
    if told is None or told.since is None or told.until is None:
        return False
    if window.since is not None and window.until is not None:
        if told.until - told.since > window.until - window.since:
            return False
    return (window.until is None or told.since < window.until) and (
        window.since is None or told.until > window.since
    )


def around(moment: datetime, side: str) -> Window:
    """The window before or after an anchor event's date."""
    return Window(None, moment) if side == "before" else Window(moment, None)
