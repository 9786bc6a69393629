"""Small text helpers every layer shares: clipping text to a length, UTC timestamps."""

from __future__ import annotations

import time
from datetime import datetime, timezone

ELLIPSIS = "…"
UTC_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def word_end(text: str, room: int) -> int:
    """Where to cut `text` to at most `room` characters without splitting a word: the last
    space in the second half, else `room` (a text without spaces there, e.g. Chinese)."""
    if len(text) <= room or not text[room].isalnum() or not text[room - 1 : room].isalnum():
        return room
    space = text.rfind(" ", 0, room + 1)
    return space if space >= room // 2 else room


def clip(text: str, limit: int, *, marker: str = ELLIPSIS, keep_lines: bool = False) -> str:
    """At most `limit` characters, ending in `marker` when something was cut, cut between words.

    By default the text is first put on one line (runs of whitespace become one space). With
    `keep_lines` the lines stay and the cut falls at a line end when one is in the second half.
    """
    if not keep_lines:
        text = " ".join(text.split())
    if len(text) <= limit:
        return text
    room = limit - len(marker)
    if room <= 0:
        return text[:limit]
    cut = word_end(text, room)
    if keep_lines:
        line_end = text.rfind("\n", 0, room + 1)
        if line_end >= room // 2:  # no line end in the second half: cut mid-line, not lose half
            cut = line_end
    return text[:cut].rstrip() + marker


def utc_timestamp(moment: datetime | float | None = None) -> str:
    """`2026-03-14T09:12:00Z`: how memctl writes every time (files, state, reports).

    `moment` is a datetime (a naive one is taken as UTC) or seconds since the epoch; now if None.
    """
    if moment is None:
        moment = time.time()
    if not isinstance(moment, datetime):
        moment = datetime.fromtimestamp(moment, tz=timezone.utc)
    elif moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime(UTC_FORMAT)


def parse_utc_timestamp(text: str) -> datetime:
    """The inverse of `utc_timestamp` (strict: that exact form only)."""
    return datetime.strptime(text, UTC_FORMAT).replace(tzinfo=timezone.utc)


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`1 memory`, `2 memories`: a count with its noun in the right number."""
    return f"{count} {noun if count == 1 else (plural or noun + 's')}"
