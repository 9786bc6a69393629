"""Time expressions in a query, resolved to a window of dates (pure)."""

from __future__ import annotations

from datetime import date, datetime, timezone

import pytest

from memctl.core.when import parse_window

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
