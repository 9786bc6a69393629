"""Time expressions in a query ("last week", "in May", "3 days ago", 上周, 五月), resolved to a
window of dates against the query's own date (`as_of`). Pure.

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


def parse_window(query: str, as_of: datetime) -> Window | None:
    """The first time expression of `query`, as a window; None when it names no time."""
    text = query.lower()
    today = _day(as_of)
    finders = (_relative_days, _weekends, _weekdays, _named_periods, _ago, _dates, _months)
    for finder in (*finders, _years, _event):
        try:
            found = finder(text, as_of, today)
        except (OverflowError, ValueError):  # "99999 years ago", 9999-12-31: past the calendar
            continue
        if found is not None:
            return found
    return None


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
    before = text[: match.start()].split()
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


def around(moment: datetime, side: str) -> Window:
    """The window before or after an anchor event's date."""
    return Window(None, moment) if side == "before" else Window(moment, None)
