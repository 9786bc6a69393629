"""Hand-written labels: the items a careful engineer would keep from each session, and repeats.

labels/<project>.json holds, per session, items of six kinds, each citing the transcript lines that
justify it, with a machine check: `yes` and `partly` are lists of groups of alternatives; a text
satisfies a check when every group has at least one alternative in it (case-insensitive, spaces
collapsed). An item with status "refuted" is something said in the session that the user refuted:
a memory that matches it states something wrong. `repeats` name a later session and line where the
user had to say again what an item of an earlier session settled.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

LABELS = Path(__file__).resolve().parent / "labels"
KINDS = ("correction", "preference", "command", "gotcha", "decision", "fact")
Check = tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Item:
    id: str
    session: str  # Session.id
    kind: str
    statement: str
    lines: tuple[int, ...]
    yes: Check
    partly: Check
    status: str = "current"  # current | refuted

    @property
    def refuted(self) -> bool:
        return self.status == "refuted"


@dataclass(frozen=True)
class Repeat:
    item: str  # Item.id, settled in an earlier session
    session: str  # Session.id of the later session
    line: int  # the transcript line where the user said it again
    said: str


def _check(groups: list[list[str]]) -> Check:
    return tuple(tuple(normalize(alt) for alt in group) for group in groups)


def load_labels(directory: Path = LABELS) -> tuple[list[Item], list[Repeat]]:
    items: list[Item] = []
    repeats: list[Repeat] = []
    for path in sorted(directory.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        project = data["project"]
        for name, entries in data["sessions"].items():
            for entry in entries:
                if entry["kind"] not in KINDS:
                    raise ValueError(f"{path}: item {entry['id']} has unknown kind {entry['kind']}")
                items.append(
                    Item(
                        id=f"{project}/{entry['id']}",
                        session=f"{project}/{name}",
                        kind=entry["kind"],
                        statement=entry["statement"],
                        lines=tuple(entry["lines"]),
                        yes=_check(entry["yes"]),
                        partly=_check(entry.get("partly") or []),
                        status=entry.get("status", "current"),
                    )
                )
        for entry in data.get("repeats") or []:
            repeats.append(
                Repeat(
                    item=f"{project}/{entry['item']}",
                    session=f"{project}/{entry['session']}",
                    line=int(entry["line"]),
                    said=entry["said"],
                )
            )
    return items, repeats


_SPACE = re.compile(r"\s+")


def normalize(text: str) -> str:
    return _SPACE.sub(" ", text.lower()).strip()


def satisfies(text: str, check: Check) -> bool:
    """Every group has an alternative in `text` (already normalized); an empty check never holds."""
    return bool(check) and all(any(alt in text for alt in group) for group in check)


def grade(text: str, item: Item) -> str:
    """'yes', 'partly' or 'no' for one text against one item's checks."""
    norm = normalize(text)
    if satisfies(norm, item.yes):
        return "yes"
    if satisfies(norm, item.partly):
        return "partly"
    return "no"
