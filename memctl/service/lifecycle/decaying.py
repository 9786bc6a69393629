"""Decay: score every memory, archive the most forgettable ones, restore them on demand.

Archiving is a soft delete: the file moves under `archive/` (same relative path), its rows
leave the main index, and a line goes to `archive/ARCHIVE_LOG.jsonl`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memctl.config import ARCHIVE_DIRNAME, PRIVATE_DIRNAME, Store
from memctl.core.errors import InvalidMemoryFile, MemctlError, MemoryNotFound
from memctl.core.files.memory import MEMORY_TYPES, Memory, now_iso, parse_time
from memctl.core.language.text import utc_timestamp
from memctl.core.learning.decay import ARCHIVE, DecayDecision, DecayInput, plan_decay
from memctl.service.retrieval.indexing import indexed_files, open_index, sync_index
from memctl.store.access import load_access
from memctl.store.files import (
    check_inside_store,
    file_lock,
    max_file_bytes,
    paths_with_id,
    read_memory,
)

# Not a *.md file, so the scanner never takes it for a memory.
ARCHIVE_LOG = "ARCHIVE_LOG.jsonl"


@dataclass
class DecayReport:
    now: datetime
    decisions: list[DecayDecision]
    applied: bool = False
    moved: list[dict[str, str]] = field(default_factory=list)
    problems: list[dict] = field(default_factory=list)
    paths: dict[str, str] = field(default_factory=dict, repr=False)  # id -> relative path
    private: set[str] = field(default_factory=set, repr=False)  # ids of private memories

    @property
    def to_archive(self) -> list[DecayDecision]:
        return [d for d in self.decisions if d.action == ARCHIVE]

    def to_dict(self) -> dict[str, Any]:
        return {
            "now": utc_timestamp(self.now),
            "applied": self.applied,
            "memories": len(self.decisions),
            "to_archive": len(self.to_archive),
            "decisions": [d.to_dict() for d in self.decisions],
            "moved": self.moved,
            "problems": self.problems,
        }


@dataclass
class ScannedMemory:
    relpath: str
    memory: Memory
    mtime: datetime


def scan_memories(
    store: Store, archive: bool = False, shared: bool = False
) -> tuple[list[ScannedMemory], list[dict]]:
    """Memories outside archive/ (or only those in it), with problems for unreadable files.
    `shared`: for a caller that only reads them, a long-lived process may hand out the parsed
    files it keeps (store.parsed_memories) instead of parsing each again."""
    from memctl.store.parsed_memories import read_memory_kept

    found: list[ScannedMemory] = []
    problems: list[dict] = []
    seen: dict[str, str] = {}  # id -> the relpath that has it
    for relpath, stat in sorted(indexed_files(store, archive).items()):
        try:
            memory = (
                read_memory_kept(store.root, relpath, max_file_bytes(store), shared=True)
                if shared
                else read_memory(store.root, relpath, max_bytes=max_file_bytes(store))
            )
        except InvalidMemoryFile as exc:
            problems.append(exc.to_dict())
            continue
        except OSError as exc:  # gone since the scan, or unreadable
            problems.append(
                {"path": str(store.root / relpath), "line": 0, "problem": f"unreadable: {exc}"}
            )
            continue
        if memory.id in seen:
            problems.append(
                {
                    "path": str(store.root / relpath),
                    "line": 2,
                    "problem": f"duplicate id '{memory.id}' (also in {seen[memory.id]})",
                }
            )
            continue
        seen[memory.id] = relpath
        mtime = datetime.fromtimestamp(stat.mtime_ns / 1e9, tz=timezone.utc)
        found.append(ScannedMemory(relpath, memory, mtime))
    return found, problems


STALE_WEIGHT = 0.5  # share of its importance a stale memory keeps when decay scores it


def _stale_ids(store: Store) -> set[str]:
    from memctl.service.anchoring import stale_memories

    try:
        return {item.id for item in stale_memories([("project", store)], persist=False)}
    except OSError:
        return set()


def plan(
    store: Store,
    now: datetime | None = None,
    scanned: tuple[list[ScannedMemory], list[dict]] | None = None,
) -> DecayReport:
    """What decay would do now: every memory outside archive/ with its score and action."""
    now = now or datetime.now(timezone.utc)
    settings = store.settings.decay.model()
    memories, problems = scanned or scan_memories(store)
    access = load_access(store.state_dir)
    stale = _stale_ids(store)
    items = []
    for entry in memories:
        memory, stat = entry.memory, access.get(entry.memory.id)
        items.append(
            DecayInput(
                id=memory.id,
                title=memory.display_title,
                type=memory.type,
                # Why: hand-written files often lack `created`; their mtime is the best age we have.
                created=parse_time(memory.created) or entry.mtime,
                # Why: a memory whose anchored code is gone (`memctl stale`) is worth less.
                importance=float(memory.importance) * (STALE_WEIGHT if memory.id in stale else 1),
                pinned=bool(memory.pinned),
                expires=parse_time(memory.expires),
                access_count=stat.count if stat else 0,
                last_access=stat.last_access if stat else None,
                # Why `updated`, not the file's time: a clone, a checkout or an editor's save
                # sets every file's time to today, and nothing would ever age. memctl stamps
                # `updated` when it writes or reinforces a memory (and an import when it arrives).
                entered=parse_time(memory.updated),
            )
        )
    paths = {entry.memory.id: entry.relpath for entry in memories}
    private = {entry.memory.id for entry in memories if entry.memory.scope == "private"}
    return DecayReport(
        now, plan_decay(items, now, settings), problems=problems, paths=paths, private=private
    )


def run_decay(store: Store, apply: bool = False, now: datetime | None = None) -> DecayReport:
    """Dry run by default; with `apply`, archive what the plan marks and update the index."""
    report = plan(store, now)
    if not apply:
        return report
    for decision in report.to_archive:
        source = report.paths[decision.id]
        private = decision.id in report.private
        target = archived_path(source, private)
        _move(store, source, target)
        report.moved.append({"id": decision.id, "from": source, "to": target})
        append_log(
            store,
            {
                "when": now_iso(),
                "action": "archive",
                "id": decision.id,
                "title": decision.title,
                "score": decision.score,
                "reason": decision.reason,
                "path": target,
            },
            private=private,
        )
    report.applied = True
    if report.moved:
        _sync_both(store)  # the archived files' rows leave the main index
    return report


def restore_memory(store: Store, memory_id: str) -> dict[str, str]:
    """Move an archived memory back where it came from and index it again."""
    archived = paths_with_id(store.root, memory_id, indexed_files(store, archive=True))
    if not archived:
        if paths_with_id(store.root, memory_id, indexed_files(store)):
            raise MemctlError(f"Memory '{memory_id}' is not archived.")
        raise MemoryNotFound(memory_id)
    source = archived[0]
    memory = read_memory(store.root, source, max_bytes=max_file_bytes(store))
    target = _restored_path(source, memory)
    _move(store, source, target)
    append_log(
        store,
        {
            "when": now_iso(),
            "action": "restore",
            "id": memory.id,
            "title": memory.display_title,
            "path": target,
        },
        private=memory.scope == "private",
    )
    _sync_both(store)
    return {"id": memory.id, "from": source, "to": target}


def _sync_both(store: Store) -> None:
    """The main index, and the archive's one if it was ever built (it is otherwise built on demand)."""
    sync_index(store)
    if open_index(store, archive=True).exists():
        sync_index(store, archive=True)


def archived_path(source: str, private: bool) -> str:
    """Where decay moves a memory: archive/<same path>; a private memory that lived outside
    private/ (scope: private in its front matter) goes under archive/private/, which git
    ignores like private/ itself."""
    if private and source.split("/", 1)[0] != PRIVATE_DIRNAME:
        return f"{ARCHIVE_DIRNAME}/{PRIVATE_DIRNAME}/{source}"
    return f"{ARCHIVE_DIRNAME}/{source}"


def log_path(store: Store, private: bool = False) -> Path:
    """archive/ARCHIVE_LOG.jsonl (committed with the store); private memories' events go to
    archive/private/ARCHIVE_LOG.jsonl instead, so no private title reaches git."""
    if private:
        return store.archive_dir / PRIVATE_DIRNAME / ARCHIVE_LOG
    return store.archive_dir / ARCHIVE_LOG


def log_paths(store: Store) -> list[Path]:
    return [log_path(store), log_path(store, private=True)]


def append_log(store: Store, entry: dict[str, Any], private: bool = False) -> None:
    """One JSON line per event; appended under a lock so concurrent runs never interleave."""
    path = log_path(store, private)
    check_inside_store(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n"
    with file_lock(store.state_dir / "archive.lock"), open(path, "a", encoding="utf-8") as handle:
        handle.write(line)
        handle.flush()
        os.fsync(handle.fileno())


def _restored_path(archived: str, memory: Memory) -> str:
    """archive/<rest> goes back to <rest>; a file dropped loose in archive/ to its type folder."""
    rest = archived[len(ARCHIVE_DIRNAME) + 1 :]
    top = rest.split("/", 1)[0]
    if "/" in rest and (top in MEMORY_TYPES or top == PRIVATE_DIRNAME):
        return rest
    folder = f"{PRIVATE_DIRNAME}/{memory.type}" if memory.scope == "private" else memory.type
    return f"{folder}/{Path(rest).name}"


def _move(store: Store, source: str, target: str) -> None:
    """Atomic rename; never over an existing file."""
    destination = store.root / target
    check_inside_store(destination, store.root)
    if destination.exists():
        raise MemctlError(f"Cannot move {store.root / source}: {destination} already exists.")
    destination.parent.mkdir(parents=True, exist_ok=True)
    os.rename(store.root / source, destination)
