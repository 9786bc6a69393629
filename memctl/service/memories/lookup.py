"""Read memories from the files: list, show, find by id, forget."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memctl.config import Store
from memctl.core.errors import InvalidMemoryFile, MemoryNotFound
from memctl.core.memory import Memory
from memctl.store.files import find_by_id, max_file_bytes, read_memory, scan_files


@dataclass
class Listing:
    memories: list[tuple[str, Memory]]
    problems: list[dict]


def list_memories(
    store: Store,
    types: list[str] | None = None,
    tags: list[str] | None = None,
    include_archived: bool = False,
) -> Listing:
    memories, problems = [], []
    limit = max_file_bytes(store)
    for relpath in sorted(scan_files(store.root, include_archived=include_archived)):
        try:
            memory = read_memory(store.root, relpath, max_bytes=limit)
        except InvalidMemoryFile as exc:
            problems.append(exc.to_dict())
            continue
        except OSError as exc:  # gone since the scan, or unreadable
            problems.append(
                {"path": str(store.root / relpath), "line": 0, "problem": f"unreadable: {exc}"}
            )
            continue
        if types and memory.type not in types:
            continue
        if tags and not set(tags) <= set(memory.tags):
            continue
        memories.append((relpath, memory))
    memories.sort(key=lambda item: (item[1].created or "", item[1].id))
    return Listing(memories, problems)


def get_memory(store: Store, memory_id: str) -> tuple[Path, Memory]:
    limit = max_file_bytes(store)
    relpath = find_by_id(store.root, memory_id, max_bytes=limit)
    if relpath is None:
        raise MemoryNotFound(memory_id)
    try:
        return store.root / relpath, read_memory(store.root, relpath, max_bytes=limit)
    except OSError as exc:
        raise InvalidMemoryFile(store.root / relpath, 0, f"unreadable: {exc}") from None
