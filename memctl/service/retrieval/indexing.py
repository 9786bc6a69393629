"""Keep the index in step with the files: embed only what is new or changed."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from memctl.config import Store
from memctl.core.chunking import split_chunks
from memctl.core.errors import InvalidMemoryFile
from memctl.core.history import current_text
from memctl.core.memory import Memory
from memctl.core.sequences import contextual_text, ordered_members, predecessors
from memctl.core.sync import (
    IndexedFile,
    SyncReport,
    embed_hash,
    file_hash,
    plan_sync,
    stat_fingerprint,
)
from memctl.store.files import FileStat, file_lock, is_archived, read_memory, scan_files
from memctl.store.index import (
    ARCHIVE_MANIFEST,
    ARCHIVE_TABLE,
    MANIFEST,
    TABLE,
    Manifest,
    MemoryIndex,
)
from memctl.store.index_maintenance import MaintenancePolicy

Progress = Callable[[int, int], None]

MODEL_ID = "all-MiniLM-L6-v2-int8"
# Bump when index_texts() or _row() change what a memory's rows hold: the next sync then re-reads
# every file (re-embedding only texts that really changed), since no file's mtime says so.
INDEX_RECIPE = 4
DIMENSION = 384


def index_text(memory: Memory) -> str:
    """What of a memory is embedded and searched (its first chunk's text for a long body)."""
    return index_texts(memory)[0]


def index_texts(memory: Memory) -> list[str]:
    """One text per index row: title, tags, body; a long body gives one per chunk, each led by
    the title and tags so every chunk is found by them."""
    chunks = split_chunks(current_text(memory.body).strip())  # a `## History` is not indexed
    if len(chunks) == 1:
        return [memory.embed_text()]
    return [dataclasses.replace(memory, body=chunk).embed_text() for chunk in chunks]


def open_index(store: Store, archive: bool = False) -> MemoryIndex:
    """The main index (memories outside archive/), or with `archive` the one over archive/."""
    policy = MaintenancePolicy.from_config(store.section("index"))
    return MemoryIndex(store.index_dir, DIMENSION, ARCHIVE_TABLE if archive else TABLE, policy)


def manifest_name(archive: bool = False) -> str:
    return ARCHIVE_MANIFEST if archive else MANIFEST


def indexed_files(store: Store, archive: bool = False) -> dict[str, FileStat]:
    """The files an index covers: archive/ only, or everything but archive/."""
    if not archive:
        return scan_files(store.root, include_archived=False)
    return {
        p: s for p, s in scan_files(store.root, include_archived=True).items() if is_archived(p)
    }


SEQUENCE_KEYS = ("session_id", "conversation_id")


def sequence_of(memory: Memory) -> str:
    """Memories written one after another in one session form a sequence (see recall's neighbours)."""
    for key in SEQUENCE_KEYS:
        value = memory.extra.get(key)
        if value not in (None, ""):
            return f"{key}={value}"
    return ""


def _row(memory: Memory, relpath: str, text: str, ehash: str, chunk: int = 0) -> dict:
    return {
        "id": memory.id,
        "sequence": sequence_of(memory),
        "chunk": chunk,
        "path": relpath,
        "title": memory.display_title,
        "type": memory.type,
        "tags": "," + ",".join(memory.tags) + "," if memory.tags else "",
        "agent": memory.agent or "",
        "scope": memory.scope,
        "archived": is_archived(relpath),
        "created": memory.created or "",
        "updated": memory.updated or memory.created or "",
        "importance": float(memory.importance),
        "pinned": bool(memory.pinned),
        "embed_hash": ehash,
        "text": text,
    }


def sync_index(
    store: Store,
    rebuild: bool = False,
    progress: Progress | None = None,
    archive: bool = False,
    known_vectors: Mapping[str, Any] | None = None,
) -> SyncReport:
    """Bring the index up to date with the files. Safe to call before every read.

    `archive` selects the separate index over archive/; the main one never holds archived files.
    `known_vectors` (embed hash -> vector, see vectors_by_hash) are used instead of embedding
    those texts again: a write that embedded its text to look for duplicates passes it on.
    """
    report = SyncReport()
    stats = indexed_files(store, archive)
    index = open_index(store, archive)
    if not rebuild and _matches_stamp(store, stats, index, archive, report):
        return report
    manifest = Manifest.load(store.index_dir, manifest_name(archive))
    stale_model = manifest.model not in (None, MODEL_ID) or manifest.dim not in (None, DIMENSION)
    # Why: no readable manifest beside an existing table means an older index layout: rebuild it.
    unknown_table = manifest.model is None and index.exists()
    if rebuild or stale_model or unknown_table or (manifest.files and not index.exists()):
        manifest = Manifest(MODEL_ID, DIMENSION, {}, INDEX_RECIPE)
        report.rebuilt = True
    elif manifest.recipe != INDEX_RECIPE and manifest.files:
        manifest.files = {
            p: dataclasses.replace(e, mtime_ns=-1, file_hash="") for p, e in manifest.files.items()
        }
    plan = plan_sync({p: (s.mtime_ns, s.size) for p, s in stats.items()}, manifest.files)
    report.unchanged = sum(1 for p in plan.unchanged if manifest.files[p].problem is None)
    report.problems = [
        manifest.files[p].problem for p in plan.unchanged if manifest.files[p].problem
    ]
    if not plan.check and not plan.removed and not report.rebuilt:
        try:
            manifest.save_stamp(
                store.index_dir, manifest_name(archive)
            )  # the next no-op is cheaper
        except OSError:
            pass  # Why: a read-only store still syncs the slow way; nothing is wrong with it.
        return report

    with file_lock(store.state_dir / "index.lock"):
        if report.rebuilt:
            index.drop()
        return _apply_plan(
            store, index, manifest, stats, plan, report, progress, archive, known_vectors or {}
        )


def _matches_stamp(store, stats, index, archive: bool, report: SyncReport) -> bool:
    """True, with the report filled in, when every file is as the last sync left it."""
    stamp = Manifest.load_stamp(store.index_dir, manifest_name(archive))
    current = (MODEL_ID, DIMENSION, INDEX_RECIPE)
    if not stamp or (stamp.get("model"), stamp.get("dim"), stamp.get("recipe")) != current:
        return False
    if stamp.get("fingerprint") != stat_fingerprint(
        {p: (s.mtime_ns, s.size) for p, s in stats.items()}
    ):
        return False
    if stats and not index.exists():
        return False
    report.unchanged = int(stamp.get("unchanged") or 0)
    report.problems = list(stamp.get("problems") or [])
    return True


def _apply_plan(
    store, index, manifest, stats, plan, report, progress, archive, known_vectors
) -> SyncReport:
    files = dict(manifest.files)
    delete_ids: list[str] = []
    derived: dict[str, Memory] = {}  # relpath -> memory whose rows are (re)written
    seen_ids = {
        e.id: p for p, e in files.items() if e.id and p not in plan.check and p not in plan.removed
    }

    for relpath in plan.removed:
        old = files.pop(relpath)
        if old.id and old.problem is None:
            delete_ids.append(old.id)
            report.removed += 1

    for relpath in plan.check:
        stat = stats[relpath]
        old = files.get(relpath)
        try:
            raw = (store.root / relpath).read_bytes()
        except OSError as exc:
            report.problems.append(
                {"path": str(store.root / relpath), "line": 0, "problem": f"unreadable: {exc}"}
            )
            continue  # Why: an unreadable file is "changed", never "deleted"; keep its old rows.
        fhash = file_hash(raw)
        if old is not None and old.file_hash == fhash:
            files[relpath] = dataclasses.replace(old, mtime_ns=stat.mtime_ns, size=stat.size)
            if old.problem:
                report.problems.append(old.problem)
            else:
                report.unchanged += 1
            continue
        try:
            memory = read_memory(store.root, relpath, raw)
            if memory.id in seen_ids and seen_ids[memory.id] != relpath:
                raise InvalidMemoryFile(
                    store.root / relpath,
                    2,
                    f"duplicate id '{memory.id}' (also in {seen_ids[memory.id]})",
                )
        except InvalidMemoryFile as exc:
            problem = exc.to_dict()
            report.problems.append(problem)
            if old is not None and old.id and old.problem is None:
                delete_ids.append(old.id)
                report.removed += 1
            files[relpath] = IndexedFile(stat.mtime_ns, stat.size, fhash, None, None, problem)
            continue
        seen_ids[memory.id] = relpath
        if old is not None and old.id and old.problem is None:
            delete_ids.append(old.id)
            report.updated += 1
        else:
            report.added += 1
        delete_ids.append(memory.id)  # a moved file: drop the row stored under its old path
        derived[relpath] = memory
        files[relpath] = IndexedFile(
            stat.mtime_ns,
            stat.size,
            fhash,
            None,
            memory.id,
            None,
            sequence_of(memory),
            _order_key(memory),
        )

    previous = _rederive_neighbours(store, manifest.files, files, derived, delete_ids)
    pending = _pending_rows(store, derived, previous, files)
    rows, vectors = _embed_rows(store, index, pending, report, progress, known_vectors)
    index.apply(sorted(set(delete_ids)), rows, vectors)
    manifest.files = files
    manifest.model, manifest.dim, manifest.recipe = MODEL_ID, DIMENSION, INDEX_RECIPE
    store.index_dir.mkdir(parents=True, exist_ok=True)
    manifest.save(store.index_dir, manifest_name(archive))
    return report


def _order_key(memory: Memory) -> str:
    return f"{memory.created or ''}\x00{memory.id}"  # the order recall's neighbours use


def _rederive_neighbours(store, old_files, files, derived, delete_ids) -> dict[str, str | None]:
    """Memories whose predecessor in their sequence changed (a new, edited, moved or deleted
    memory before them) are embedded again with their new context. Returns each touched
    sequence member's predecessor."""
    touched = {old_files[p].sequence for p in old_files if p not in files or p in derived}
    touched |= {files[p].sequence for p in derived}
    touched.discard("")
    if not touched:
        return {}

    def order_of(entries):
        return predecessors(
            ordered_members(
                (e.sequence, e.order, p)
                for p, e in entries.items()
                if e.sequence in touched and e.problem is None
            )
        )

    before, now = order_of(old_files), order_of(files)
    for relpath, previous in now.items():
        if relpath in derived or (
            before.get(relpath, previous) == previous and previous not in derived
        ):
            continue
        memory = _read_quietly(store, relpath)
        if memory is None:
            continue  # Why: the next sync reports it; its old rows stay meanwhile.
        derived[relpath] = memory
        delete_ids.append(memory.id)
    return now


def _pending_rows(store, derived, previous, files) -> list[tuple]:
    """(relpath, memory, row text, embedded text, embed hash, chunk) for every row to write."""
    pending = []
    for relpath, memory in derived.items():
        texts = index_texts(memory)
        embedded = list(texts)
        before = previous.get(relpath)
        if len(texts) == 1 and before:
            earlier = derived.get(before) or _read_quietly(store, before)
            if earlier is not None:
                embedded[0] = contextual_text(texts[0], current_text(earlier.body).strip())
        hashes = [embed_hash(MODEL_ID, text) for text in embedded]
        pending.extend(
            (relpath, memory, text, vector_text, h, n)
            for n, (text, vector_text, h) in enumerate(zip(texts, embedded, hashes, strict=False))
        )
        files[relpath] = dataclasses.replace(files[relpath], embed_hash=hashes[0])
    return pending


def _read_quietly(store, relpath: str) -> Memory | None:
    try:
        return read_memory(store.root, relpath)
    except (OSError, InvalidMemoryFile):
        return None


def vectors_by_hash(texts: list[str], vectors) -> dict[str, Any]:
    """`known_vectors` for sync_index: these texts' vectors, by the hash the index keys them on."""
    return {embed_hash(MODEL_ID, text): vector for text, vector in zip(texts, vectors, strict=True)}


def _embed_rows(store, index, pending, report, progress, known_vectors):
    import numpy as np

    hashes = {entry[4] for entry in pending}
    reusable = {h: known_vectors[h] for h in hashes if h in known_vectors}
    reusable.update(index.vectors_for(sorted(hashes - reusable.keys())))
    todo = [(i, entry[3]) for i, entry in enumerate(pending) if entry[4] not in reusable]
    # Why: a batch is padded to its longest text; batching texts of similar length wastes less.
    todo.sort(key=lambda item: len(item[1]))
    vectors: dict[int, object] = {}
    if todo:
        from memctl.integrations.query_embedder import embed_documents

        settings = store.section("embedding")
        batch_size = int(settings.get("batch_size") or 64)
        step = max(batch_size, 1) * 4
        for start in range(0, len(todo), step):
            batch = todo[start : start + step]
            embedded = embed_documents([t for _, t in batch], batch_size, settings.get("threads"))
            for (i, _), vector in zip(batch, embedded, strict=False):
                vectors[i] = vector
            if progress:
                progress(min(start + step, len(todo)), len(todo))
        report.embedded = len(todo)
    rows = [
        _row(memory, relpath, text, ehash, chunk)
        for relpath, memory, text, _, ehash, chunk in pending
    ]
    matrix = np.zeros((len(pending), DIMENSION), dtype=np.float32)
    for i, (_, _, _, _, ehash, _) in enumerate(pending):
        matrix[i] = vectors[i] if i in vectors else reusable[ehash]
    return rows, matrix
