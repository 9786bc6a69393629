"""What memory cost and what it was worth: injections, the files then touched, replies.

Every hook that injects memories records (event, tokens, ids, session). A memory counts as used
in a session when the agent then touched a file it is anchored to, or when the agent's reply
holds its anchors or enough of its own distinctive words. `ledger_summary` gives tokens per
session, how many injected memories were used, and the memories injected in many sessions but
never used: candidates for `memctl decay` or for better anchors.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from memctl.config import Store
from memctl.core.codebase.anchors import path_matches
from memctl.store.files import find_by_id, max_file_bytes, read_memory
from memctl.store.ledger import append_entry, read_entries

NEVER_USED_SESSIONS = 3  # injected in at least this many sessions and never used
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]{4,}")
_COMMON = frozenset(
    "about after again always before being could every first should their there these "
    "those under until using where which while would never other another still".split()
)
WORDS_FOR_USE = 3  # distinctive words of a memory that make a reply count as using it


def record_injection(store: Store, session: str, event: str, ids, tokens: int) -> None:
    if ids:
        append_entry(
            store.state_dir,
            {
                "kind": "inject",
                "session": session,
                "event": event,
                "ids": list(ids),
                "tokens": tokens,
            },
        )


def record_touch(store: Store, session: str, paths) -> None:
    if paths:
        append_entry(store.state_dir, {"kind": "touch", "session": session, "paths": list(paths)})


def record_reply_use(store: Store, session: str, reply: str) -> list[str]:
    """Mark the memories injected in `session` whose words the agent's reply uses."""
    if not reply.strip():
        return []
    injected: set[str] = set()
    used: set[str] = set()
    for entry in read_entries(store.state_dir):
        if entry.get("session") != session:
            continue
        if entry.get("kind") == "inject":
            injected.update(entry.get("ids") or ())
        elif entry.get("kind") == "used":
            used.update(entry.get("ids") or ())
    reply_words = set(_WORD.findall(reply.lower()))
    found = []
    for memory_id in sorted(injected - used):
        located = find_by_id(store.root, memory_id)
        if located is None:
            continue
        try:
            memory = read_memory(store.root, located, max_bytes=max_file_bytes(store))
        except Exception:  # noqa: BLE001 - a broken file is reported elsewhere
            continue
        if _uses(memory.display_title + " " + memory.body, memory.extra, reply, reply_words):
            found.append(memory_id)
    if found:
        append_entry(store.state_dir, {"kind": "used", "session": session, "ids": found})
    return found


def _uses(text: str, extra: dict[str, Any], reply: str, reply_words: set[str]) -> bool:
    for key in ("paths", "commands", "symbols"):
        values = extra.get(key) or ()
        for value in [values] if isinstance(values, str) else values:
            if isinstance(value, str) and "*" not in value and len(value) > 3 and value in reply:
                return True
    words = {w for w in _WORD.findall(text.lower()) if w not in _COMMON}
    return len(words & reply_words) >= min(WORDS_FOR_USE, max(1, len(words) // 2))


@dataclass
class SessionCost:
    session: str
    tokens: int = 0
    injections: int = 0
    injected: set[str] = field(default_factory=set)
    used: set[str] = field(default_factory=set)
    touched: set[str] = field(default_factory=set)

    def to_dict(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "tokens": self.tokens,
            "injections": self.injections,
            "memories": len(self.injected),
            "used": len(self.used & self.injected),
        }


def ledger_summary(store: Store, never_used_sessions: int = NEVER_USED_SESSIONS) -> dict[str, Any]:
    from memctl.service.retrieval.anchor_table import anchor_entries

    sessions: dict[str, SessionCost] = {}
    by_event: dict[str, int] = defaultdict(int)
    for entry in read_entries(store.state_dir):
        name = str(entry.get("session") or "-")
        cost = sessions.setdefault(name, SessionCost(name))
        kind = entry.get("kind")
        if kind == "inject":
            tokens = int(entry.get("tokens") or 0)
            cost.tokens += tokens
            cost.injections += 1
            cost.injected.update(entry.get("ids") or ())
            by_event[str(entry.get("event") or "?")] += tokens
        elif kind == "used":
            cost.used.update(entry.get("ids") or ())
        elif kind == "touch":
            cost.touched.update(entry.get("paths") or ())
    anchored = {entry.id: entry.anchors.paths for entry in anchor_entries(store, persist=False)}
    for cost in sessions.values():
        for memory_id in cost.injected - cost.used:
            patterns = anchored.get(memory_id, ())
            if any(path_matches(p, path) for p in patterns for path in cost.touched):
                cost.used.add(memory_id)
    injected_in: dict[str, int] = defaultdict(int)
    ever_used: set[str] = set()
    for cost in sessions.values():
        for memory_id in cost.injected:
            injected_in[memory_id] += 1
        ever_used |= cost.used
    candidates = sorted(
        (-count, memory_id)
        for memory_id, count in injected_in.items()
        if count >= never_used_sessions and memory_id not in ever_used
    )
    never_used = [{"id": memory_id, "sessions": -count} for count, memory_id in candidates]
    rows = [cost.to_dict() for cost in sessions.values() if cost.injections]
    return {
        "sessions": rows,
        "tokens": sum(row["tokens"] for row in rows),
        "tokens_by_event": dict(sorted(by_event.items())),
        "injected": sum(row["memories"] for row in rows),
        "used": sum(row["used"] for row in rows),
        "never_used": never_used,
        "never_used_after_sessions": never_used_sessions,
    }
