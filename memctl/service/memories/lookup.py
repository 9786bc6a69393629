"""Read memories from the files: list, show, find by id, forget."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memctl.config import Store
from memctl.core.errors import InvalidMemoryFile, MemoryNotFound
from memctl.core.memory import Memory
from memctl.store.files import find_by_id, read_memory, scan_files


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
    for relpath in sorted(scan_files(store.root, include_archived=include_archived)):
        try:
            memory = read_memory(store.root, relpath)
        except InvalidMemoryFile as exc:
            problems.append(exc.to_dict())
            continue
        if types and memory.type not in types:
            continue
        if tags and not set(tags) <= set(memory.tags):
            continue
        memories.append((relpath, memory))
    memories.sort(key=lambda item: (item[1].created or "", item[1].id))
    return Listing(memories, problems)


def get_memory(store: Store, memory_id: str) -> tuple[Path, Memory]:
    relpath = find_by_id(store.root, memory_id)
    if relpath is None:
        raise MemoryNotFound(memory_id)
    return store.root / relpath, read_memory(store.root, relpath)
