"""The memory record: what one Markdown file under `.memory/` holds."""

from __future__ import annotations

import os
import re
import threading
import time
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from memctl.core.files.history import current_text
from memctl.core.language.text import clip, utc_timestamp

MEMORY_TYPES = ("episodic", "semantic", "procedural", "preference", "profile", "knowledge")
SOURCES = (
    "explicit_user_input",
    "implicit_inference",
    "system_generated",
    "external_data",
    "corrected_memory",
)
SCOPES = ("project", "private")

# Front matter keys in the order they are written. Unknown keys follow, sorted.
FIELD_ORDER = (
    "id",
    "title",
    "type",
    "tags",
    "importance",
    "confidence",
    "source",
    "scope",
    "agent",
    "created",
    "updated",
    "expires",
    "pinned",
    "relations",
    "version",
)

DEFAULT_TYPE = "semantic"
DEFAULT_IMPORTANCE = 0.5
DEFAULT_CONFIDENCE = 0.8
DEFAULT_SOURCE = "explicit_user_input"

_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"


@dataclass
class Memory:
    id: str
    title: str = ""
    type: str = DEFAULT_TYPE
    tags: list[str] = field(default_factory=list)
    importance: float = DEFAULT_IMPORTANCE
    confidence: float = DEFAULT_CONFIDENCE
    source: str = DEFAULT_SOURCE
    scope: str = "project"
    agent: str | None = None
    created: str | None = None
    updated: str | None = None
    expires: str | None = None
    pinned: bool = False
    relations: list[dict[str, str]] = field(default_factory=list)
    version: int = 1
    body: str = ""
    # Keys we do not model (mentions, speaker, occurred_at, ...) survive a round trip here.
    extra: dict[str, Any] = field(default_factory=dict)
    # Which front matter keys were present in the file: defaults are never written back.
    present: frozenset[str] = field(default_factory=frozenset)
    # (line, what is wrong) for values read leniently (see core.files.lenient); never written back
    warnings: tuple[tuple[int, str], ...] = field(default=(), compare=False, repr=False)

    @property
    def display_title(self) -> str:
        return self.title or first_line(self.body) or self.id

    @property
    def dated(self) -> str:
        """When what the memory tells of happened, as memctl writes times: its `occurred_at`
        when it has one (an episode written at a session's end about its start, a note filed
        days later), else `created`; "" when neither is a time."""
        for value in (self.extra.get("occurred_at"), self.created):
            moment = parse_time(value)
            if moment is not None:
                return utc_timestamp(moment)
        return ""

    def embed_text(self) -> str:
        """The text that represents this memory in the index: title, tags and body.

        The body's `## History` section (values a newer one replaced) is left out: it is kept
        for the record, and recall should find what is true now.
        """
        parts = []
        title = self.title.strip()
        body = current_text(self.body).strip()
        # Why: a derived title is the body's first line (perhaps cut with "…"): indexing it again
        # would double the weight of a memory's opening words.
        if title and not first_line(body, max_len=len(body) + 1).startswith(
            title.rstrip("…").strip()
        ):
            parts.append(title)
        if self.tags:
            parts.append("tags: " + ", ".join(self.tags))
        if body:
            parts.append(body)
        return "\n".join(parts)


_last_id = [0, 0]  # (milliseconds, tail) of the last id this process made
_id_lock = threading.Lock()
_TAIL = 32**3


def new_id(now: float | None = None) -> str:
    """Short, sortable id: 9 Crockford base32 chars of milliseconds, then 3 more chars.

    Why monotonic: a 10,000-line import makes ~30 ids a millisecond, and 15 random bits alone
    collided 14 times. Within one process the tail counts up from a random start in the same
    millisecond (spilling into the next one), so a process never repeats an id; across
    processes the random start keeps a collision at 1 in 32,768 for two ids made in the same
    millisecond, and writers check for an id in use before writing (see store.files)."""
    ms = int((time.time() if now is None else now) * 1000)
    with _id_lock:
        last_ms, last_tail = _last_id
        if now is None and ms <= last_ms:
            ms, tail = last_ms, last_tail + 1
            if tail >= _TAIL:
                ms, tail = ms + 1, int.from_bytes(os.urandom(2), "big") % 1024
        else:
            tail = int.from_bytes(os.urandom(2), "big") % _TAIL
        if now is None:
            _last_id[:] = [ms, tail]
    chars = []
    for _ in range(9):
        chars.append(_CROCKFORD[ms & 31])
        ms >>= 5
    return "".join(reversed(chars)) + "".join(_CROCKFORD[(tail >> s) & 31] for s in (10, 5, 0))


def now_iso(now: float | None = None) -> str:
    return utc_timestamp(now)


def parse_time(value: Any) -> datetime | None:
    """Read a timestamp as written by memctl or by a person (date, datetime, ISO text)."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    if hasattr(value, "year") and hasattr(value, "month"):  # a date
        return datetime(value.year, value.month, value.day, tzinfo=timezone.utc)
    text = str(value).strip().replace("Z", "+00:00")
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def _slug_char(char: str) -> str:
    """A letter or digit as it goes into a slug ("-" for anything else): Latin without its
    accents and lowercased; other scripts (Chinese, Japanese, Cyrillic, ...) kept as written."""
    plain = "".join(c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c))
    if plain.isascii():
        return "".join(c.lower() if c.isalnum() else "-" for c in plain) or "-"
    kept = unicodedata.normalize("NFKC", char)
    return kept if kept.isalnum() else "-"


def slugify(text: str, max_len: int = 48, max_bytes: int | None = None) -> str:
    """Lowercase words joined by "-", at most `max_len` characters and `max_bytes` UTF-8 bytes,
    cut at a word boundary where there is one (a run of CJK has none: cut at a character)."""
    slug = re.sub(r"-+", "-", "".join(_slug_char(c) for c in text)).strip("-")

    def fits(candidate: str) -> bool:
        return len(candidate) <= max_len and (
            max_bytes is None or len(candidate.encode("utf-8")) <= max_bytes
        )

    if not fits(slug):
        cut = slug[:max_len]
        while not fits(cut):
            cut = cut[:-1]
        if slug[len(cut)] != "-" and "-" in cut:
            cut = cut.rsplit("-", 1)[0]
        slug = cut.strip("-")
    return slug or "memory"


def first_line(text: str, max_len: int = 80) -> str:
    for line in text.splitlines():
        line = line.strip().lstrip("#").strip()
        if line:
            return line if len(line) <= max_len else clip(line, max_len)
    return ""


def derived_title(text: str, max_len: int = 80) -> str:
    """The title a memory gets from its text: the first line, cut between words with no "…"
    (a stored title is a statement, not a display; the body carries the rest)."""
    line = first_line(text, max_len=len(text) + 1)
    return line if len(line) <= max_len else clip(line, max_len, marker="")


def after_title(title: str, text: str) -> str:
    """`text` without the title it opens with (a derived title is the text's first words), so
    a display does not say them twice; `text` as it is when it does not open with the title."""
    shown = " ".join(title.split()).removesuffix("...").rstrip("…").rstrip()
    flat = " ".join(text.split())
    if not shown or not flat.startswith(shown):
        return text
    rest = len(shown)
    # Why back to a word start: a title cut mid-word must not leave the rest of that word.
    if rest < len(flat) and flat[rest].isalnum() and flat[rest - 1].isalnum():
        rest = flat.rfind(" ", 0, rest) + 1
    return flat[rest:].lstrip(" .:-—")


# A file name's slug stays short in bytes too: 20 CJK characters, or 48 Latin ones.
FILENAME_SLUG_BYTES = 60


def memory_filename(memory: Memory) -> str:
    return f"{slugify(memory.display_title, max_bytes=FILENAME_SLUG_BYTES)}-{memory.id}.md"


# Editors' and memctl's own temporary files: never memories, never worth a sync.
_TEMP_SUFFIXES = (".tmp", ".swp", ".swx", "~", ".part")


def is_memory_filename(name: str) -> bool:
    """A Markdown file that is not hidden and not a temporary file."""
    return name.endswith(".md") and not name.startswith(".") and not name.endswith(_TEMP_SUFFIXES)
