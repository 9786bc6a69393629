"""Time expressions in a query, resolved to a window of dates (pure)."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest

from memctl.core.recall.when import parse_window

AS_OF = datetime(2023, 5, 7, 15, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    "query, day",
    [("What was my mood on May 2nd?", date(2023, 5, 2)),
     ("On April 27th, how long did I run?", date(2023, 4, 27)),
     ("the 3rd of May", date(2023, 5, 3)),
     ("notes from 2 May 2023", date(2023, 5, 2)),
     ("May 2, 2023", date(2023, 5, 2)),
     ("what changed on 2023-05-02", date(2023, 5, 2)),
     ("在5月2号我很烦恼", date(2023, 5, 2)),
     ("4月30号我做了一道什么菜", date(2023, 4, 30)),
     ("五月二日", date(2023, 5, 2)),
     ("Dec 25th", date(2022, 12, 25))],  # not yet come this year: the last one
)  # fmt: skip
def test_a_named_day_is_a_window_of_that_day(query, day):
    window = parse_window(query, AS_OF)
    assert window is not None
    assert (window.since.date(), window.until.date()) == (
        day,
        date.fromordinal(day.toordinal() + 1),
    )


@pytest.mark.parametrize("query", ["we may 2x the pool size", "May 45", "what happened may 2"])
def test_may_the_verb_and_impossible_days_are_no_day(query):
    window = parse_window(query, AS_OF)
    assert (
        window is None
        or window.since is None
        or window.until - window.since > (datetime(2023, 5, 2) - datetime(2023, 5, 1))
    )


def test_before_and_since_a_day_open_one_side():
    before = parse_window("what did we decide before May 3rd", AS_OF)
    assert before is not None and before.since is None and before.until.date() == date(2023, 5, 3)
    since = parse_window("since 2 May", AS_OF)
    assert since is not None and since.until is None and since.since.date() == date(2023, 5, 2)


WEDNESDAY = datetime(2023, 5, 10, 15, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    "query, first, days",
    [("what did I do last Saturday", date(2023, 5, 6), 1),
     ("last Wednesday", date(2023, 5, 3), 1),  # not today
     ("on Monday I went climbing", date(2023, 5, 8), 1),
     ("this Friday", date(2023, 5, 12), 1),
     ("上周六", date(2023, 5, 6), 1),
     ("这周一", date(2023, 5, 8), 1),
     ("last weekend", date(2023, 5, 6), 2),
     ("上个周末我们去了哪里", date(2023, 5, 6), 2),
     ("the day before yesterday", date(2023, 5, 8), 1),
     ("last night", date(2023, 5, 9), 2),
     ("a couple of days ago", date(2023, 5, 7), 3),
     ("几天前", date(2023, 5, 6), 3)],
)  # fmt: skip
def test_weekdays_weekends_and_rough_days(query, first, days):
    window = parse_window(query, WEDNESDAY)
    assert window is not None and window.since.date() == first
    assert (window.until - window.since).days == days


@pytest.mark.parametrize("query", ["what is the Monday standup about", "周一的例会讲什么"])
def test_a_bare_weekday_names_a_habit_not_a_day(query):
    assert parse_window(query, WEDNESDAY) is None


def test_a_window_that_tells_no_candidate_apart_is_set_aside():
    """ "last weekend" in a store of last year's chats, or a window holding every candidate,
    would only take its words out of the query: recall keeps the words instead."""
    from memctl.service.retrieval.timing import telling_window

    window = parse_window("what did I do last weekend", WEDNESDAY)
    inside, outside = {"created": "2023-05-06T10:00:00Z"}, {"created": "2022-01-01T10:00:00Z"}
    assert telling_window(window, [inside, outside]) == window
    assert telling_window(window, [outside, outside]) is None
    assert telling_window(window, [inside, inside]) is None


@pytest.mark.parametrize("query", ["what happened 99999 years ago", "due 9999-12-31", "0月0日"])
def test_a_time_past_the_calendar_is_no_window_and_no_crash(query):
    assert parse_window(query, WEDNESDAY) is None


AUTUMN = datetime(2023, 10, 20, 15, 0, tzinfo=timezone.utc)


def assert_days(query: str, first: date, last: date) -> None:
    """The query's window runs from the start of `first` to the end of `last`."""
    window = parse_window(query, AUTUMN)
    assert window is not None
    assert (window.since.date(), window.until.date()) == (first, last + timedelta(days=1))


@pytest.mark.parametrize(
    "query, first, last",
    [("Where was John between August 11 and August 15 2023?", date(2023, 8, 11), date(2023, 8, 15)),
     ("what happened between May 1 and May 9?", date(2023, 5, 1), date(2023, 5, 9)),
     ("from May 3rd to May 9th", date(2023, 5, 3), date(2023, 5, 9)),
     ("the trip, June 3-5", date(2023, 6, 3), date(2023, 6, 5)),
     ("3-5 June 2022", date(2022, 6, 3), date(2022, 6, 5)),
     ("from 3 to 5 June 2022", date(2022, 6, 3), date(2022, 6, 5)),
     ("Dec 20 - Jan 5", date(2022, 12, 20), date(2023, 1, 5)),  # across the new year
     ("did they meet between August and November 2023?", date(2023, 8, 1), date(2023, 11, 30)),
     ("from May 3rd to June", date(2023, 5, 3), date(2023, 6, 30)),
     ("between 2021 and 2022", date(2021, 1, 1), date(2022, 12, 31)),
     ("2023-05-01 to 2023-05-09", date(2023, 5, 1), date(2023, 5, 9)),
     ("2023年8月11日到15日", date(2023, 8, 11), date(2023, 8, 15)),
     ("从3月5日至4月2日", date(2023, 3, 5), date(2023, 4, 2)),
     ("从5月到7月", date(2023, 5, 1), date(2023, 7, 31)),
     ("2021年和2022年之间", date(2021, 1, 1), date(2022, 12, 31))],
)  # fmt: skip
def test_a_range_runs_from_its_first_end_to_the_whole_of_its_last(query, first, last):
    """The year or month an end leaves out comes from the other end: "August 11 and August
    15 2023" is one range in 2023, not August 11 of this year."""
    assert_days(query, first, last)


@pytest.mark.parametrize(
    "query, first, last",
    [("Which country was Tim visiting in the second week of November?",
      date(2022, 11, 8), date(2022, 11, 14)),  # the latest November begun
     ("Where was Calvin in the last week of October 2023?", date(2023, 10, 25), date(2023, 10, 31)),
     ("during the week of August 7, 2023", date(2023, 8, 7), date(2023, 8, 13)),
     ("11月的第二周", date(2022, 11, 8), date(2022, 11, 14)),
     ("10月最后一周", date(2023, 10, 25), date(2023, 10, 31)),
     ("Which classes did Evan join in mid-August 2023?", date(2023, 8, 11), date(2023, 8, 20)),
     ("early May", date(2023, 5, 1), date(2023, 5, 10)),
     ("the end of June", date(2023, 6, 21), date(2023, 6, 30)),
     ("8月中旬", date(2023, 8, 11), date(2023, 8, 20)),
     ("2023年6月底", date(2023, 6, 21), date(2023, 6, 30)),
     ("late 2022", date(2022, 9, 1), date(2022, 12, 31)),
     ("mid-2023", date(2023, 5, 1), date(2023, 8, 31)),
     ("去年年底", date(2022, 9, 1), date(2022, 12, 31))],
)  # fmt: skip
def test_weeks_and_parts_of_a_month_or_year(query, first, last):
    """ "the last week of October 2023" is that week of October, not the week before today."""
    assert_days(query, first, last)


@pytest.mark.parametrize(
    "query, first, last",
    [("what did we do last summer", date(2023, 6, 1), date(2023, 8, 31)),  # ended by October
     ("last winter", date(2022, 12, 1), date(2023, 2, 28)),
     ("this winter", date(2023, 12, 1), date(2024, 2, 29)),  # in autumn: the coming one
     ("in the spring", date(2023, 3, 1), date(2023, 5, 31)),
     ("In what country was Jolene during summer 2022?", date(2022, 6, 1), date(2022, 8, 31)),
     ("in the summer of 2022", date(2022, 6, 1), date(2022, 8, 31)),
     ("towards the end of summer 2023", date(2023, 8, 1), date(2023, 8, 31)),
     ("去年夏天", date(2022, 6, 1), date(2022, 8, 31)),
     ("2022年冬天", date(2021, 12, 1), date(2022, 2, 28))],
)  # fmt: skip
def test_seasons_of_the_northern_hemisphere(query, first, last):
    assert_days(query, first, last)


def test_last_summer_during_the_summer_is_the_year_before():
    july = datetime(2023, 7, 10, tzinfo=timezone.utc)
    window = parse_window("last summer", july)
    assert window is not None and window.since.date() == date(2022, 6, 1)


@pytest.mark.parametrize(
    "query",
    ["retry from 5 to 10 times", "between 1 and 3 pm", "upgrade version 2 to 3", "pages 10-12",
     "what are the plans for the summer", "the summer drives", "we may to go", "from 2021 to May",
     "1-2 days", "0月0日到30日"],
)  # fmt: skip
def test_numbers_and_bare_seasons_are_no_span(query):
    window = parse_window(query, AUTUMN)
    assert window is None or window.phrase not in query.lower().replace("0月0日到", "")


def test_a_long_prompt_is_read_for_time_only_at_its_start():
    """A hook passes whole prompts; a pasted log after the question is no question about dates
    (and reading 100,000 characters of it took seconds)."""
    pasted = "what did we decide on May 3rd? " + "between may 3 and " * 10_000 + "1-" * 50_000
    window = parse_window(pasted, AUTUMN)
    assert window is not None and window.since.date() == date(2023, 5, 3)
    assert parse_window("x" * 5_000 + " last week", AUTUMN) is None


def test_a_time_a_memory_tells_of_counts_only_when_closed_and_no_wider_than_the_window():
    from memctl.core.recall.when import tells_of

    week = parse_window("the last week of October 2023", AUTUMN)
    written = datetime(2023, 11, 2, tzinfo=timezone.utc)
    assert week is not None
    assert tells_of(parse_window("last week I was in Boston", written), week)
    assert tells_of(parse_window("on October 28th we flew home", written), week)
    assert not tells_of(parse_window("last year I was in Boston", written), week)  # too wide
    assert not tells_of(parse_window("yesterday", written), week)  # November 1st
    assert not tells_of(parse_window("since October 1st", written), week)  # open: no date
    assert not tells_of(None, week)


@pytest.mark.parametrize(
    "query, first, last",
    [("What did John do the week before August 3, 2023?", date(2023, 7, 27), date(2023, 8, 2)),
     ("the day after May 3rd", date(2023, 5, 4), date(2023, 5, 4)),
     ("on the Sunday before October 25, 2022", date(2022, 10, 23), date(2022, 10, 23)),
     ("the Monday before July 24, 2023", date(2023, 7, 17), date(2023, 7, 17)),  # not that day
     ("on the Saturday after October 28, 2023", date(2023, 11, 4), date(2023, 11, 4)),
     ("over the weekend before 4th October, 2023", date(2023, 9, 30), date(2023, 10, 1)),
     ("the weekend before October 1, 2023", date(2023, 9, 23), date(2023, 9, 24)),  # a Sunday
     ("a puppy she got two weeks before August 11, 2023", date(2023, 7, 25), date(2023, 7, 31))],
)  # fmt: skip
def test_a_time_counted_from_a_named_day(query, first, last):
    """ "The week before August 3" is those seven days, not everything before August 3."""
    assert_days(query, first, last)
