"""Items of an agent-instructions file (AGENTS.md, CLAUDE.md, copilot-instructions.md, ...).

One item per bullet or numbered line (its continuation lines joined), per paragraph of prose
(rules are often written as sentences), and per commented command in a shell code block. A
paragraph ending in ':' is not an item but introduces the list after it, which carries it. A numbered
step carries its heading and a nested bullet its parent (cut at 100 characters) in front,
since a step alone ("Run the tests") says nothing of what it is a step of. Directory trees,
tables and code other than commented shell commands are left out. Pure text: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_BULLET = re.compile(r"^(\s*)(?:[-*+]|\d+[.)])\s+(.*)$")
_NUMBERED = re.compile(r"^\s*\d+[.)]\s+")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)(.*)$")
_BOLD_LEAD = re.compile(r"^\*\*[^*]+\*\*")
_TREE = re.compile(r"[├└│]")
_SHELLS = {"", "bash", "sh", "shell", "console", "zsh", "powershell", "pwsh", "cmd"}
MIN_CHARS = 12
PARAGRAPH_CHARS = 40  # a shorter paragraph is a caption, not an instruction


@dataclass(frozen=True)
class Item:
    text: str
    section: str  # the nearest heading above it ("" at the top)
    line: int  # 1-based line of the file where the item starts


def _clean(text: str) -> str:
    return " ".join(text.split())


def _code_items(lines: list[str], section: str, start: int) -> list[Item]:
    """`# comment` then a command, or `command  # comment` -> 'comment: `command`'."""
    if any(_TREE.search(line) for line in lines):
        return []
    items: list[Item] = []
    comment = ""
    for offset, raw in enumerate(lines):
        line = raw.strip()
        if not line:
            comment = ""
        elif line.startswith("#") and not line.startswith("#!"):
            comment = line.lstrip("# ").strip()
        elif "  #" in line:
            command, _, note = line.partition("  #")
            items.append(Item(f"{note.strip()}: `{command.strip()}`", section, start + offset + 1))
            comment = ""
        elif comment:
            items.append(Item(f"{comment}: `{line}`", section, start + offset + 1))
            comment = ""
    return items


def extract_items(markdown: str) -> list[Item]:
    """The file's items in the order they appear."""
    lines = markdown.splitlines()
    items: list[Item] = []
    section = ""
    parents: list[tuple[int, str]] = []  # (indent, text) of open bullets
    current: list[str] | None = None
    current_meta: tuple[str, int, str] = ("", 0, "")  # (section, line, prefix)
    in_comment = False
    lead = ""  # a paragraph ending in ':' right before a list introduces its items

    def close() -> None:
        nonlocal current
        if current is not None:
            text = _clean(" ".join(current))
            sect, line, prefix = current_meta
            if len(text) >= MIN_CHARS and not text.replace("*", "").rstrip().endswith(":"):
                items.append(Item(f"{prefix}{text}" if prefix else text, sect, line))
        current = None

    index = 0
    while index < len(lines):
        raw = lines[index]
        stripped = raw.strip()
        if in_comment or stripped.startswith("<!--"):
            in_comment = "-->" not in stripped
            close()
            index += 1
            continue
        fence = _FENCE.match(raw)
        if fence:
            close()
            language = fence.group(2).strip().lower()
            end = index + 1
            while end < len(lines) and not _FENCE.match(lines[end]):
                end += 1
            if language in _SHELLS:
                items.extend(_code_items(lines[index + 1 : end], section, index + 1))
            index = end + 1
            continue
        heading = _HEADING.match(raw)
        if heading:
            close()
            section = _clean(heading.group(2).replace("*", ""))
            parents = []
            lead = ""
            index += 1
            continue
        bullet = _BULLET.match(raw)
        if bullet:
            close()
            indent = len(bullet.group(1).expandtabs(4))
            text = bullet.group(2)
            while parents and parents[-1][0] >= indent:
                parents.pop()
            prefix = ""
            if not parents and lead:
                prefix = lead + " "
            elif parents:
                parent = _clean(parents[-1][1])
                parent = parent if len(parent) <= 100 else parent[:99] + "…"
                prefix = parent + (" " if parent.endswith(":") else ": ")
            elif _NUMBERED.match(raw) and section:
                prefix = f"{section}: "
            parents.append((indent, text))
            current = [text]
            current_meta = (section, index + 1, prefix)
            index += 1
            continue
        if not stripped:
            close()
            index += 1
            continue
        if current is not None and (raw.startswith((" ", "\t")) or not _BOLD_LEAD.match(stripped)):
            current.append(stripped)
            index += 1
            continue
        close()
        paragraph = [stripped]
        while (
            index + 1 < len(lines)
            and lines[index + 1].strip()
            and not (
                _BULLET.match(lines[index + 1])
                or _HEADING.match(lines[index + 1])
                or _FENCE.match(lines[index + 1])
            )
        ):
            index += 1
            paragraph.append(lines[index].strip())
        text = _clean(" ".join(paragraph))
        lead = text if text.endswith(":") and len(text) <= 200 else ""
        parents = []
        if not lead and not stripped.startswith(("|", "<", "![")) and len(text) >= PARAGRAPH_CHARS:
            current = [text]
            current_meta = (section, index + 1 - len(paragraph) + 1, "")
        index += 1
    close()
    return items
