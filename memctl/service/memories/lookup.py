"""Read memories from the files: list, show, find by id, forget."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memctl.config import Store
from memctl.core.errors import InvalidMemoryFile, MemoryNotFound
from memctl.core.files.memory import Memory
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
    limit: int | None = None,
    offset: int = 0,
) -> Listing:
    """The memories oldest first; with `limit`, a page of them newest first (`offset` skips
    the newest ones), reading only the files the page needs (see store.quick_keys)."""
    if limit is not None:
        return _newest(store, types, tags, include_archived, limit, offset)
    memories: list[tuple[str, Memory]] = []
    problems: list[dict] = []
    max_bytes = max_file_bytes(store)
    for relpath in sorted(scan_files(store.root, include_archived=include_archived)):
        memory = _read(store, relpath, max_bytes, problems)
        if memory is not None and _wanted(memory, types, tags):
            memories.append((relpath, memory))
    memories.sort(key=lambda item: (item[1].created or "", item[1].id))
    return Listing(memories, problems)


def _read(store: Store, relpath: str, max_bytes: int, problems: list[dict]) -> Memory | None:
    from memctl.store.parsed_memories import read_memory_kept

    try:
        # Why shared: a listing only reads them; the engine then answers from what it keeps.
        return read_memory_kept(store.root, relpath, max_bytes, shared=True)
    except InvalidMemoryFile as exc:
        problems.append(exc.to_dict())
    except OSError as exc:  # gone since the scan, or unreadable
        problems.append(
            {"path": str(store.root / relpath), "line": 0, "problem": f"unreadable: {exc}"}
        )
    return None


def _wanted(memory: Memory, types: list[str] | None, tags: list[str] | None) -> bool:
    if types and memory.type not in types:
        return False
    return not (tags and not set(tags) <= set(memory.tags))


def _newest(
    store: Store,
    types: list[str] | None,
    tags: list[str] | None,
    include_archived: bool,
    limit: int,
    offset: int,
) -> Listing:
    """A page of the newest memories. Files whose key reads plainly are ordered by it and
    parsed only when their turn comes; the others are parsed first, so the order is exact."""
    from memctl.store.quick_keys import listing_key

    max_bytes = max_file_bytes(store)
    problems: list[dict] = []
    keyed: list[tuple[tuple[str, str], str, Memory | None]] = []
    for relpath in scan_files(store.root, include_archived=include_archived):
        key = listing_key(store.root / relpath)
        if key is not None:
            keyed.append((key, relpath, None))
            continue
        memory = _read(store, relpath, max_bytes, problems)
        if memory is not None:
            keyed.append(((memory.created or "", memory.id), relpath, memory))
    keyed.sort(key=lambda entry: entry[0], reverse=True)
    page: list[tuple[str, Memory]] = []
    skipped = 0
    for _, relpath, parsed in keyed:
        if len(page) >= limit:
            break
        memory = parsed or _read(store, relpath, max_bytes, problems)
        if memory is None or not _wanted(memory, types, tags):
            continue
        if skipped < offset:
            skipped += 1
            continue
        page.append((relpath, memory))
    return Listing(page, problems)


def get_memory(store: Store, memory_id: str) -> tuple[Path, Memory]:
    limit = max_file_bytes(store)
    relpath = find_by_id(store.root, memory_id, max_bytes=limit)
    if relpath is None:
        raise MemoryNotFound(memory_id)
    try:
        return store.root / relpath, read_memory(store.root, relpath, max_bytes=limit)
    except OSError as exc:
        raise InvalidMemoryFile(store.root / relpath, 0, f"unreadable: {exc}") from None
