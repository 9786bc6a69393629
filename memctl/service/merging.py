"""Dedup and merge on write: a new memory either becomes a file or changes an existing one.

Concurrency: every deciding write holds the store's add lock (`.state/locks/add.lock`) from
the index search to the index update, so two processes adding the same text cannot both
decide "new". Changing an existing file also holds that memory's own lock
(`.state/locks/<id>.lock`), re-reads the file inside it and redoes the change when the file
moved on (another `version`, other bytes) since it was first read.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from memctl.config import Store
from memctl.core.memory import Memory, now_iso
from memctl.core.revisions import (
    Decision,
    Neighbor,
    Thresholds,
    decide,
    derive_subject,
    reinforced,
    revised,
)
from memctl.errors import InvalidMemoryFile, MemoryNotFound, ModelUnavailable
from memctl.service.indexing import index_text, open_index, sync_index
from memctl.service.writing import AddResult
from memctl.store.files import file_lock, find_by_id, path_for, read_memory, write_memory
from memctl.store.index import sql_quote

Change = Callable[[Memory], tuple[Memory, str]]


def thresholds(store: Store) -> Thresholds:
    settings = store.section("write")
    return Thresholds(
        dedup=float(settings.get("dedup_threshold", 0.95)),
        subject=float(settings.get("subject_similarity", 0.4)),
        loose_subject=float(settings.get("loose_subject_similarity", 0.6)),
    )


def locks_dir(store: Store) -> Path:
    return store.state_dir / "locks"


def save_memory(
    store: Store,
    memory: Memory,
    *,
    sync: bool = True,
    update_of: str | None = None,
    duplicate_of: str | None = None,
) -> AddResult:
    """Write `memory` through dedup: merge into a near duplicate, update a changed value, or add.

    `update_of` / `duplicate_of` name the target directly (extract's UPDATE / NOOP) and skip
    the search. The index is synced before the search whatever `sync` says; `sync=False`
    only skips indexing the result.
    """
    if "subject" not in memory.extra:
        subject = derive_subject(memory.body, memory.type)
        if subject:
            memory.extra["subject"] = subject
    try:
        vector = None if (update_of or duplicate_of) else embed_texts(store, [index_text(memory)])[0]
    except ModelUnavailable:
        write_new(store, memory)  # Why: keep the text as a file; the model error still surfaces
        raise
    with file_lock(locks_dir(store) / "add.lock"):
        sync_index(store)
        if duplicate_of or update_of:
            target_id = duplicate_of or update_of
            relpath = _locate(store, target_id, None)
            decision = Decision("merge" if duplicate_of else "update",
                                Neighbor(read_memory(store.root, relpath), relpath, None), "named target")
        else:
            decision = decide(memory, memory.extra.get("subject"), nearest_memories(store, memory, vector),
                              thresholds(store))
        result = apply_decision(store, memory, decision)
        if sync:
            sync_index(store)
    return result


def apply_decision(store: Store, memory: Memory, decision: Decision) -> AddResult:
    if decision.op == "add" or decision.target is None:
        return write_new(store, memory)
    target = decision.target
    now = now_iso()
    if decision.op == "merge":
        change: Change = lambda current: (reinforced(current, memory, now), "merged")
    else:
        change = lambda current: revised(current, memory, now)
    try:
        path, written, action = rewrite_memory(store, target.memory.id, target.relpath, change)
    except MemoryNotFound:
        return write_new(store, memory)  # Why: the target was forgotten meanwhile; keep the text.
    return AddResult(memory=written, path=path, created=False, merged_into=written.id,
                     action=action,
                     similarity=None if target.similarity is None else round(target.similarity, 4))


def write_new(store: Store, memory: Memory) -> AddResult:
    path = path_for(store.root, memory)
    write_memory(path, memory)
    return AddResult(memory=memory, path=path)


def rewrite_memory(store: Store, memory_id: str, relpath: str | None, change: Change) -> tuple[Path, Memory, str]:
    """Read-modify-write one memory under its lock; `version` goes up by one."""
    relpath = _locate(store, memory_id, relpath)
    seen_raw = (store.root / relpath).read_bytes()
    seen = read_memory(store.root, relpath, seen_raw)
    planned, action = change(seen)
    with file_lock(locks_dir(store) / f"{memory_id}.lock"):
        relpath = _locate(store, memory_id, relpath)
        fresh_raw = (store.root / relpath).read_bytes()
        fresh = read_memory(store.root, relpath, fresh_raw)
        if fresh.version != seen.version or fresh_raw != seen_raw:
            planned, action = change(fresh)  # Why: someone wrote it since we read; redo on theirs.
        planned.version = fresh.version + 1
        write_memory(store.root / relpath, planned)
    return store.root / relpath, planned, action


def _locate(store: Store, memory_id: str, relpath: str | None) -> str:
    """The file of `memory_id`: the hinted path if it still holds that id, else a search."""
    if relpath and (store.root / relpath).is_file():
        try:
            if read_memory(store.root, relpath).id == memory_id:
                return relpath
        except InvalidMemoryFile:
            pass
    found = find_by_id(store.root, memory_id)
    if found is None:
        raise MemoryNotFound(memory_id)
    return found


# --- the index side -----------------------------------------------------------------------

def embed_texts(store: Store, texts: list[str]):
    """Vectors exactly as the index makes them (same model, same settings)."""
    from memctl.integrations.embedder import get_embedder

    settings = store.section("embedding")
    return get_embedder(int(settings.get("batch_size") or 64), settings.get("threads")).embed(texts)


def nearest_memories(store: Store, memory: Memory, vector, limit: int | None = None) -> list[Neighbor]:
    """The stored memories nearest to `vector` that a write may merge into: same scope, live,
    not episodic (an episode is an event; two alike are still two events)."""
    limit = limit or max(int(store.section("write").get("subject_candidates", 5)), 1)
    where = f"scope = {sql_quote(memory.scope)} AND archived = false AND type != 'episodic'"
    rows = open_index(store).search_vector(vector, limit * 3, where)
    best: dict[str, dict] = {}
    for row in rows:  # a long memory may have several chunk rows; keep its closest
        if row["id"] not in best or row["_distance"] < best[row["id"]]["_distance"]:
            best[row["id"]] = row
    neighbors = []
    for row in sorted(best.values(), key=lambda r: r["_distance"])[:limit]:
        try:
            found = read_memory(store.root, row["path"])
        except (OSError, InvalidMemoryFile):
            continue
        neighbors.append(Neighbor(found, row["path"], 1.0 - float(row["_distance"])))
    return neighbors

