"""Which memories of a store are anchored, bound to a project, or always applied: a small table.

The action-time hook must answer in tens of milliseconds, so it cannot parse every memory file
on each tool call. The table keeps, per file, its (size, mtime) and what its front matter says
about anchors; a call stats the files and parses only those that changed. It lives in
`.state/anchor_table.json` (ids, anchors and titles; no body text) and in memory in a resident
process.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memctl.config import Store
from memctl.core.codebase.anchors import (
    APPLY_KEY,
    PROJECT_KEY,
    Anchors,
    anchor_limits,
    anchors_from,
)
from memctl.core.errors import InvalidMemoryFile
from memctl.store.files import atomic_write, max_file_bytes, scan_files
from memctl.store.parsed_memories import read_memory_kept

TABLE_NAME = "anchor_table.json"
TABLE_VERSION = 1


@dataclass(frozen=True)
class AnchorEntry:
    relpath: str
    id: str
    title: str
    type: str
    scope: str
    project: str | None
    anchors: Anchors
    superseded: bool = False
    limits: tuple[str, ...] = ()  # what the cost limits left out of its anchors

    @property
    def apply(self) -> str:
        return self.anchors.apply


def _entry_from(relpath: str, data: dict[str, Any]) -> AnchorEntry:
    return AnchorEntry(
        relpath=relpath,
        id=data["id"],
        title=data.get("title", ""),
        type=data.get("type", "semantic"),
        scope=data.get("scope", "project"),
        project=data.get("project"),
        anchors=anchors_from(data),
        superseded=bool(data.get("superseded")),
        limits=tuple(anchor_limits(data)),
    )


_MEMO: dict[Path, tuple[dict[str, Any], list[AnchorEntry]]] = {}
_LOCK = threading.Lock()


def anchor_entries(store: Store, persist: bool = True) -> list[AnchorEntry]:
    """Every memory of `store` (archive aside) that has anchors, a project or an `apply`.
    `persist=False`: read-only commands (stats, a decay dry run) write no cache file."""
    files = scan_files(store.root, include_archived=False)
    path = store.state_dir / TABLE_NAME
    with _LOCK:
        memo = _MEMO.get(store.root)
    table = memo[0] if memo else _load(path)
    rows: dict[str, Any] = table.get("rows", {}) if table.get("version") == TABLE_VERSION else {}
    fresh: dict[str, Any] = {}
    changed = len(rows) != len(files)
    limit = max_file_bytes(store)
    for relpath, stat in files.items():
        row = rows.get(relpath)
        if row is not None and row["m"] == stat.mtime_ns and row["s"] == stat.size:
            fresh[relpath] = row
            continue
        changed = True
        fresh[relpath] = _row(store, relpath, stat.mtime_ns, stat.size, limit)
    if memo is not None and not changed:
        return memo[1]
    table = {"version": TABLE_VERSION, "rows": fresh}
    entries = [_entry_from(rel, row["a"]) for rel, row in sorted(fresh.items()) if row.get("a")]
    with _LOCK:
        _MEMO[store.root] = (table, entries)
    if changed and persist:
        try:
            atomic_write(path, json.dumps(table, separators=(",", ":")).encode(), durable=False)
        except OSError:
            pass  # a cache: rebuilt on the next call
    return entries


def _row(store: Store, relpath: str, mtime: int, size: int, limit: int) -> dict[str, Any]:
    row: dict[str, Any] = {"m": mtime, "s": size}
    try:
        memory = read_memory_kept(store.root, relpath, limit)
    except (InvalidMemoryFile, OSError):
        return row  # reported by sync and `memctl list`; nothing to anchor
    keys = ("paths", "symbols", "commands", APPLY_KEY, PROJECT_KEY)
    if not any(memory.extra.get(key) for key in keys):
        return row
    row["a"] = {
        "id": memory.id,
        "title": memory.display_title,
        "type": memory.type,
        "scope": memory.scope,
        "superseded": bool(memory.extra.get("superseded_by")),
        **{key: memory.extra[key] for key in keys if memory.extra.get(key)},
    }
    return row


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
