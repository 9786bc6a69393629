"""Time in recall: `--since/--until` filter by date; a time expression in the query boosts.

Why two behaviours: dates a person types as options are meant literally, so they filter. A
time expression read out of the query ("last week", "in May", 上周) may be misread or refer to a
date the store does not use, so it only favours memories of that time: added to their score,
never removing the others. "before the migration" is resolved by finding the memory about the
migration and taking its date.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone

from memctl.core.errors import UsageError
from memctl.core.files.memory import parse_time
from memctl.core.recall.when import Window, around, parse_window, states_schedule, tells_of
from memctl.service.retrieval.digest_cache import DigestCache


def as_datetime(value: str | datetime | None, name: str) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value if value is None or value.tzinfo else value.replace(tzinfo=timezone.utc)
    parsed = parse_time(value)
    if parsed is None:
        raise UsageError(f"--{name} '{value}' is not a date; use ISO 8601, e.g. 2025-05-01.")
    return parsed


def iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def explicit_window(since, until) -> tuple[datetime | None, datetime | None]:
    bounds = as_datetime(since, "since"), as_datetime(until, "until")
    if bounds[0] and bounds[1] and bounds[0] >= bounds[1]:
        raise UsageError("--since must be earlier than --until.")
    return bounds


def in_window(date: str | None, since: datetime | None, until: datetime | None) -> bool:
    moment = parse_time(date)
    if moment is None:
        return since is None and until is None
    return (since is None or moment >= since) and (until is None or moment < until)


def query_window(query: str, as_of, anchor_date: Callable[[str], datetime | None]) -> Window | None:
    """The time the query speaks of, if any; `anchor_date` finds an event's date."""
    now = as_datetime(as_of, "as-of") or datetime.now(timezone.utc)
    window = parse_window(query, now)
    if window is None or window.anchor is None:
        return window
    moment = anchor_date(window.anchor)
    return around(moment, window.side or "before") if moment else None


def dated_inside(row: dict, window: Window | None) -> bool:
    """Is the memory of this index row dated inside the window (one with at least one bound),
    or does it tell of a time inside it ("last week I was in Boston", written a week after)?"""
    if window is None or (window.since is None and window.until is None):
        return False
    created = row.get("created") or ""
    if in_window(created, window.since, window.until):
        return True
    moment = parse_time(created) if created else None
    if moment is None or (window.since is not None and moment + TOLD_REACH < window.since):
        return False  # Why: cheap, and a memory written long before the window tells of none of it
    return tells_of(told_window(row.get("text") or "", created), window)


# How far ahead of its own date a memory's words reach: they name its past, or its own week
# ("this Friday"); a season or a year ahead is too broad to count for a narrower window.
TOLD_REACH = timedelta(days=7)


# Told times of recent candidates (a resident server reads the same rows again).
TOLD_CACHE_SIZE = 4096
_told: DigestCache[Window | None] = DigestCache(TOLD_CACHE_SIZE)


def told_window(text: str, created: str) -> Window | None:
    """The time a memory's own words name ("yesterday", "last week", "in May", "on May 3rd"),
    resolved against the memory's own date, as a query's time words are against `as_of`."""
    return _told.get((created, text), lambda: _read_told_window(text, created))


def _read_told_window(text: str, created: str) -> Window | None:
    moment = parse_time(created)
    window = parse_window(text, moment) if moment is not None else None
    return (
        None if window is None or window.anchor is not None else Window(window.since, window.until)
    )


def telling_window(window: Window | None, candidates: list[dict]) -> Window | None:
    """The window, if it tells the candidates apart: some are dated inside it and some not.

    A time the store does not use ("last weekend" in a store of last year's chats) or one that
    holds every candidate would only take its words out of the query ("weekend" may be the
    best word it has) and give every memory, or none, the date's credit.
    """
    if window is None or (window.since is None and window.until is None):
        return window
    inside = sum(dated_inside(row, window) for row in candidates)
    return window if 0 < inside < len(candidates) else None


def add_time_bonus(scores: dict, rows: dict, window: Window | None, bonus: float) -> None:
    """Memories dated inside the window gain `bonus` (a share of one retriever's top score)."""
    if bonus <= 0:
        return
    for memory_id in scores:
        if dated_inside(rows.get(memory_id) or {}, window):
            scores[memory_id] += bonus


def tells_a_time(row: dict) -> bool:
    """Do the memory's words name a time: a schedule ("every Thursday at 4pm") or a date they
    tell of ("last week", "on May 3")?"""
    text = row.get("text") or ""
    return states_schedule(text) or told_window(text, row.get("created") or "") is not None
