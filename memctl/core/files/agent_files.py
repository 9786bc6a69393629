"""Memories in other agents' native files, and back: pure text in, text or plain values out.

CLAUDE.md / AGENTS.md get a managed section between two HTML-comment markers, so the rest of
the file stays the author's; Cursor gets `.cursor/rules/memctl-<type>.mdc` files with the
description / globs / alwaysApply front matter Cursor reads. Reading goes the other way: one
item per top-level bullet, or per section of prose, each with the line it came from.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from memctl.core.errors import InvalidMemoryFile
from memctl.core.files.memory import Memory, slugify

BEGIN_MARKER = "<!-- memctl:begin -->"
END_MARKER = "<!-- memctl:end -->"
GENERATED_NOTE = (
    "<!-- Written by `memctl export --format {fmt}`; re-running it replaces "
    "{what}. Edit the memories instead: memctl list, memctl edit ID. -->"
)
_BEGIN = re.compile(r"^\s*<!--\s*memctl:begin\b.*-->\s*$")
_END = re.compile(r"^\s*<!--\s*memctl:end\b.*-->\s*$")

TYPE_HEADINGS = {
    "preference": "Preferences",
    "procedural": "How we do things",
    "profile": "About the user",
    "semantic": "Facts",
    "knowledge": "Knowledge",
    "episodic": "Past sessions",
}
EMPTY_SECTION = "_No memories to export yet._"
_WIDE = re.compile(
    r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]"
)  # as core.language.tokens
AGENT_FILE_TYPES = ("preference", "procedural", "profile", "semantic", "knowledge")

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^( {0,3})(?:[-*+]|\d{1,3}[.)])\s+(.*)$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_TYPE_HINTS = (
    ("preference", re.compile(r"prefer|style|convention|taste|like|偏好|风格", re.IGNORECASE)),
    (
        "procedural",
        re.compile(
            r"command|build|test|run|workflow|deploy|release|setup|install|"
            r"how to|procedure|steps|process|流程|步骤",
            re.IGNORECASE,
        ),
    ),
    ("profile", re.compile(r"about (me|the user)|profile|who i am|user", re.IGNORECASE)),
)


# --- writing --------------------------------------------------------------------------------


def priority_order(memories: Sequence[Memory]) -> list[Memory]:
    """Pinned first, then by importance, then most recently updated."""
    ordered = sorted(memories, key=lambda m: m.updated or m.created or "", reverse=True)
    return sorted(ordered, key=lambda m: (not m.pinned, -round(m.importance, 3)))


def memory_bullet(memory: Memory) -> str:
    """One Markdown bullet; a body longer than a line keeps its lines, indented under it."""
    body = memory.body.strip()
    title = memory.title.strip()
    lines = body.splitlines() or [title]
    first = lines[0].strip()
    if title and not first.lstrip("#").strip().startswith(title.rstrip("…")):
        first = f"**{title}**: {first}"
    rest = [f"  {line}" if line.strip() else "" for line in lines[1:]]
    return "\n".join([f"- {first}", *rest]).rstrip()


@dataclass(frozen=True)
class Selection:
    by_type: dict[str, list[Memory]]  # in TYPE_HEADINGS order, each in priority order
    omitted: int  # memories left out by the token budget


def select_within_budget(memories: Sequence[Memory], budget: int | None, fmt: str) -> Selection:
    """The highest-priority memories that fit, with their headings and markers, in `budget`
    tokens (all of them when None). A memory too long to fit leaves room for shorter ones."""
    chosen: list[Memory] = []
    kinds: set[str] = set()
    used = _Size()
    used.add(_fixed_text(fmt))
    for memory in priority_order(memories):
        extra = _Size()
        extra.add(memory_bullet(memory) + "\n")
        if memory.type not in kinds:
            extra.add(_type_text(fmt, memory.type))
        if budget is not None and used.tokens_with(extra) > budget:
            continue
        chosen.append(memory)
        kinds.add(memory.type)
        used.add_size(extra)
    by_type = {kind: [m for m in chosen if m.type == kind] for kind in TYPE_HEADINGS}
    return Selection({k: v for k, v in by_type.items() if v}, len(memories) - len(chosen))


class _Size:
    """Characters of a text being assembled, counted the way `estimate_tokens` counts them."""

    def __init__(self) -> None:
        self.wide = 0
        self.narrow = 0

    def add(self, text: str) -> None:
        wide = len(_WIDE.findall(text))
        self.wide += wide
        self.narrow += len(text) - wide

    def add_size(self, other: _Size) -> None:
        self.wide += other.wide
        self.narrow += other.narrow

    def tokens_with(self, other: _Size) -> int:
        return self.wide + other.wide + math.ceil((self.narrow + other.narrow) / 4)


def _fixed_text(fmt: str) -> str:
    return (
        ""
        if fmt == "cursor-rules"
        else managed_section(Selection({}, 0), fmt).replace(EMPTY_SECTION, "")
    )


def _type_text(fmt: str, kind: str) -> str:
    if fmt == "cursor-rules":
        return cursor_rule(kind, [])
    return f"### {TYPE_HEADINGS[kind]}\n\n\n\n"


def render_sections(selection: Selection, level: int = 3) -> str:
    parts = []
    for kind, memories in selection.by_type.items():
        bullets = "\n".join(memory_bullet(m) for m in memories)
        parts.append(f"{'#' * level} {TYPE_HEADINGS[kind]}\n\n{bullets}")
    return "\n\n".join(parts)


def managed_section(selection: Selection, fmt: str) -> str:
    """The text between (and including) the markers."""
    note = GENERATED_NOTE.format(fmt=fmt, what="this section")
    body = render_sections(selection) or EMPTY_SECTION
    return f"{BEGIN_MARKER}\n{note}\n## Project memory (memctl)\n\n{body}\n{END_MARKER}"


def find_managed_section(text: str, source: str = "<text>") -> tuple[int, int] | None:
    """(begin, end) line indexes of the markers, or None. Half a section is an error."""
    lines = text.splitlines()
    begins = [i for i, line in enumerate(lines) if _BEGIN.match(line)]
    ends = [i for i, line in enumerate(lines) if _END.match(line)]
    if not begins and not ends:
        return None
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        line = (begins or ends)[-1] + 1
        raise InvalidMemoryFile(
            source,
            line,
            f"memctl markers do not pair up ({len(begins)} "
            f"begin, {len(ends)} end); fix them by hand, then export again",
        )
    return begins[0], ends[0]


def replace_managed_section(text: str, section: str, source: str = "<text>") -> str:
    """`text` with its managed section replaced by `section`, or `section` appended."""
    span = find_managed_section(text, source)
    if span is None:
        base = text.rstrip("\n")
        return f"{base}\n\n{section}\n" if base else f"{section}\n"
    lines = text.splitlines()
    begin, end = span
    tail = "\n".join(lines[end + 1 :])
    head = "\n".join(lines[:begin])
    joined = (head + "\n" if head else "") + section + ("\n" + tail if tail else "")
    return joined.rstrip("\n") + "\n"


def cursor_rule(kind: str, memories: Sequence[Memory]) -> str:
    """One `.mdc` rule file: always applied, since the memories are project-wide."""
    bullets = "\n".join(memory_bullet(m) for m in memories)
    note = GENERATED_NOTE.format(fmt="cursor-rules", what="this file")
    return (
        f"---\ndescription: {TYPE_HEADINGS[kind]} (remembered by memctl for this project)\n"
        f"globs:\nalwaysApply: true\n---\n{note}\n# {TYPE_HEADINGS[kind]}\n\n{bullets}\n"
    )


def is_generated_rule(text: str) -> bool:
    return "memctl export --format cursor-rules" in text[:2000]


# --- reading --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ImportedItem:
    """One memory found in a Markdown instructions file. Its title comes from its own words
    (a heading such as "Architecture" or "CLAUDE.md" says nothing on its own); the heading
    becomes its tag (see heading_tag)."""

    text: str
    type: str
    heading: str  # the nearest heading above, "" at the top
    line: int  # 1-based line in the source file
    prose: bool = False  # a paragraph (merged with the next one of its section), not a bullet


# The opening line `claude /init` and similar tools write: about the file, not the project.
_ABOUT_THE_FILE = re.compile(
    r"^this file (?:provides|gives|contains|offers|is)? ?(?:guidance|instructions|guides)\b",
    re.IGNORECASE,
)


def heading_tag(heading: str) -> str:
    """The tag a section's items get: `Don'ts` -> `donts` (an apostrophe joins, not splits)."""
    return slugify(re.sub(r"['\u2019`]", "", heading), 32)


def type_for_heading(heading: str, default: str = "semantic") -> str:
    for kind, pattern in _TYPE_HINTS:
        if pattern.search(heading):
            return kind
    return default


def split_mdc(text: str, source: str = "<text>") -> tuple[dict[str, str], str, int]:
    """(front matter, body, first body line) of a Cursor rule. The front matter is read as
    `key: value` lines, not YAML: Cursor writes `globs: **/*.ts`, which YAML rejects."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}, text, 1
    fields: dict[str, str] = {}
    for number, line in enumerate(lines[1:], start=2):
        if line.strip() == "---":
            return fields, "\n".join(lines[number:]), number + 1
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, colon, value = line.partition(":")
        if not colon:
            raise InvalidMemoryFile(source, number, "front matter line is not `key: value`")
        fields[key.strip()] = value.strip().strip('"').strip("'")
    raise InvalidMemoryFile(source, 1, "front matter opened with '---' but never closed")


def read_instructions(
    text: str,
    *,
    first_line: int = 1,
    skip_managed: bool = True,
    default_type: str = "semantic",
    source: str = "<text>",
) -> list[ImportedItem]:
    """Items of a CLAUDE.md / AGENTS.md / rule body: one per top-level bullet (with the lines
    under it), and one per section of prose between headings."""
    lines = text.splitlines()
    if skip_managed:
        span = find_managed_section(text, source)
        if span is not None:
            lines = lines[: span[0]] + [""] * (span[1] - span[0] + 1) + lines[span[1] + 1 :]
    items: list[ImportedItem] = []
    heading = ""
    current: list[str] = []  # lines of the item being read
    start = 0
    kind = ""  # "bullet", "prose" or ""
    in_fence = False

    def close() -> None:
        nonlocal current, kind
        body = "\n".join(current).strip()
        if body and not _is_comment(body) and not _ABOUT_THE_FILE.match(body):
            items.append(
                ImportedItem(
                    body,
                    type_for_heading(heading, default_type),
                    heading,
                    start + first_line,
                    prose=kind == "prose",
                )
            )
        current, kind = [], ""

    for index, line in enumerate(lines):
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence:
            heading_match = _HEADING.match(line)
            if heading_match:
                close()
                heading = heading_match.group(2).strip()
                continue
            bullet = _BULLET.match(line)
            if bullet and (kind != "bullet" or not line.startswith(" ")):
                close()
                kind, start, current = "bullet", index, [bullet.group(2)]
                continue
            if kind == "bullet" and line.strip() and not line.startswith((" ", "\t")):
                close()  # an unindented paragraph after a list is prose again
        if not kind:
            if not line.strip():
                continue
            kind, start = "prose", index
        current.append(line[2:] if kind == "bullet" and line.startswith("  ") else line)
    close()
    return _merge_prose(items)


def _is_comment(body: str) -> bool:
    return body.startswith("<!--") and body.endswith("-->")


def _merge_prose(items: list[ImportedItem]) -> list[ImportedItem]:
    """Paragraphs of one section, split by blank lines only, make one memory, not several."""
    merged: list[ImportedItem] = []
    for item in items:
        last = merged[-1] if merged else None
        if last is not None and item.prose and last.prose and last.heading == item.heading:
            merged[-1] = ImportedItem(
                f"{last.text}\n\n{item.text}", last.type, last.heading, last.line, prose=True
            )
        else:
            merged.append(item)
    return merged
