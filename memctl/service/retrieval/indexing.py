"""Keep the index in step with the files: embed only what is new or changed."""

from __future__ import annotations

import dataclasses
import os
import stat as stat_module
import sys
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from memctl.config import Store
from memctl.core import ports
from memctl.core.errors import InvalidMemoryFile
from memctl.core.files.chunking import split_chunks
from memctl.core.files.embedding import AUTO, BUNDLED_MODEL, EmbeddingModel
from memctl.core.files.history import current_text, earlier_identifiers
from memctl.core.files.memory import Memory
from memctl.core.files.sync import (
    IndexedFile,
    SyncReport,
    embed_hash,
    file_hash,
    plan_sync,
    stat_fingerprint,
)
from memctl.core.language.text_tokens import searchable_text
from memctl.core.language.tokens import estimate_tokens
from memctl.core.ports import Index
from memctl.core.recall.sequences import contextual_text, ordered_members, predecessors
from memctl.service.retrieval.embedding import (
    chosen_model,
    configured_model,
    index_model,
    model_settings,
    settle_model,
)
from memctl.store.files import (
    FileStat,
    check_inside_store,
    file_lock,
    is_archived,
    is_scanned_path,
    max_file_bytes,
    note_lenient_values,
    read_memory,
    read_memory_bytes,
    scan_files,
)
from memctl.store.index import (
    ARCHIVE_MANIFEST,
    ARCHIVE_TABLE,
    MANIFEST,
    TABLE,
    Manifest,
    ManifestFile,
    MemoryIndex,
)
from memctl.store.index_health import describe, looks_damaged, table_problem
from memctl.store.index_maintenance import MaintenancePolicy
from memctl.store.remote_index import index_settings, layered, local_changes

Progress = Callable[[int, int], None]

MODEL_ID = BUNDLED_MODEL  # the default model (see service/retrieval/embedding.py)
# Bump when index_texts() or _row() change what a memory's rows hold: the next sync then re-reads
# every file (re-embedding only texts that really changed), since no file's mtime says so.
# 5: CJK runs cut into bigrams for BM25; 6: files under private/ are private rows; 7: a model's
# vector revision is part of the embed hash (core.files.embedding.VECTOR_REVISIONS); 8: a row's
# `created` is the memory's date (`occurred_at`, else `created`), as ISO 8601 UTC; 9: the
# identifiers of a memory's `## History` values are in its first row's searchable text
INDEX_RECIPE = 9
MODEL_MAX_TOKENS = 512  # the embedding model truncates longer texts


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


def open_index(store: Store, archive: bool = False, model: EmbeddingModel | None = None) -> Index:
    """The main index (memories outside archive/), or with `archive` the one over archive/.
    With `index.mode: remote`, the main index is the published one under the local overlay.
    `model`: the embedding model whose vectors it holds (the store's, by default)."""
    local = local_index(store, archive, model)
    if archive or not remote_mode(store):
        return local
    return layered(store.index_dir, local, store.section("index"), made_with(store))  # type: ignore[return-value]


def local_index(
    store: Store, archive: bool = False, model: EmbeddingModel | None = None
) -> MemoryIndex:
    dimension = (model or index_model(store)).dim
    policy = MaintenancePolicy.from_settings(store.settings.index)
    return MemoryIndex(store.index_dir, dimension, ARCHIVE_TABLE if archive else TABLE, policy)


def remote_mode(store: Store) -> bool:
    return index_settings(store.section("index"))[1] == "remote"


def made_with(store: Store) -> dict:
    """What rows must have been made with to be read by this memctl (checked on a published index)."""
    model = index_model(store)
    return {"model": model.id, "dim": model.dim, "recipe": INDEX_RECIPE}


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
        # Why the memory's date, not its file's: time windows, --since/--until and the order
        # of a session's memories are about when things happened.
        "created": memory.dated,
        "updated": memory.updated or memory.created or "",
        "importance": float(memory.importance),
        "pinned": bool(memory.pinned),
        "embed_hash": ehash,
        # CJK runs cut into words; what BM25 and identifiers see. Why the earlier identifiers:
        # a value moved into `## History` keeps its ticket or region findable.
        "text": searchable_text(text) + _earlier(memory, chunk),
    }


def _earlier(memory: Memory, chunk: int) -> str:
    found = earlier_identifiers(memory.body) if chunk == 0 else []
    return "\n" + " ".join(found) if found else ""


@dataclass(frozen=True)
class SyncTicket:
    """A guard's word as a sync starts: which files (relative paths) changed since the last sync
    it saw finish, or None when it cannot tell (then every file is stat'ed)."""

    token: object
    changed: frozenset[str] | None = None


class FreshnessGuard(Protocol):
    """Something that watches a store's files (the resident server) and can vouch that none
    changed since a sync it saw start, so a read need not stat every file to know."""

    def vouches(self, root: Path, archive: bool) -> bool: ...

    def sync_started(self, root: Path, archive: bool) -> SyncTicket | None: ...

    def sync_finished(self, ticket: SyncTicket | None, complete: bool) -> None: ...


_guard: FreshnessGuard | None = None


def set_freshness_guard(guard: FreshnessGuard | None) -> None:
    global _guard
    _guard = guard


def sync_index(
    store: Store,
    rebuild: bool = False,
    progress: Progress | None = None,
    archive: bool = False,
    verify: bool = False,
    known_vectors: Mapping[str, Any] | None = None,
    written: Collection[str] = (),
) -> SyncReport:
    """Bring the index up to date with the files. Safe to call before every read.

    `archive` selects the separate index over archive/; the main one never holds archived files.
    `verify` (`memctl index`) checks the table itself too. A damaged table, found so or by an
    error while syncing, is rebuilt from the files with a notice on stderr.
    `known_vectors` (embed hash -> vector, see vectors_by_hash) are used instead of embedding
    those texts again: a write that embedded its text to look for duplicates passes it on.
    `written` (relative paths): a writer that synced just before writing these files names
    them, and only they are looked at (store size does not matter); a change to any other file
    is left to the next sync, which finds it (the stamp no longer matches the files).
    """
    _index_path_is_a_folder(store)
    for folder in (store.index_dir, store.state_dir):  # Why first: the manifest is SQLite
        check_inside_store(folder / "x", store.root)
    guard = _guard
    if guard is None:
        changed = frozenset(written) if written and not rebuild else None
        return _checked_sync(store, rebuild, progress, archive, verify, changed, known_vectors)
    if not rebuild and not verify and guard.vouches(store.root, archive):
        report = SyncReport()
        if _matches_stamp(store, None, open_index(store, archive), archive, report):
            return report
    ticket = guard.sync_started(store.root, archive)
    if ticket is None:  # Why: a guard that does not watch this store knows nothing of it
        changed = frozenset(written) if written and not rebuild else None
    elif rebuild or ticket.changed is None:
        changed = None
    else:
        changed = ticket.changed | frozenset(written)
    report = _checked_sync(store, rebuild, progress, archive, verify, changed, known_vectors)
    # Why: a problem the stamp does not hold (an unreadable file) must be found again next time.
    stamp = Manifest.load_stamp(store.index_dir, manifest_name(archive))
    guard.sync_finished(ticket, complete=stamp.get("problems", []) == report.problems)
    return report


def _checked_sync(
    store: Store,
    rebuild: bool,
    progress: Progress | None,
    archive: bool,
    verify: bool,
    changed: frozenset[str] | None = None,
    known_vectors: Mapping[str, Any] | None = None,
) -> SyncReport:
    """A sync that notices a damaged table (checked when `verify`, or by an error) and rebuilds.
    `changed`: the only files that may differ from the manifest (from a guard), or None."""
    damage = index_damage(store, archive) if verify and not rebuild else None
    try:
        report = _sync(
            store,
            rebuild or bool(damage),
            progress,
            archive,
            None if damage else changed,
            known_vectors,
        )
    except Exception as exc:
        if rebuild or damage or not looks_damaged(exc):
            raise
        damage = describe(exc)
        report = _sync(store, True, progress, archive, None, known_vectors)
    if damage:
        notify_repair(damage)
        report.repaired = damage
    return report


def index_damage(store: Store, archive: bool = False) -> str | None:
    """What is wrong with the index table (see store.index_health), or None when it is whole."""
    index = local_index(store, archive)
    if not index.exists():
        return None
    with file_lock(store.state_dir / "index.lock"):  # Why: a sync in progress is not damage
        manifest = Manifest.load(store.index_dir, manifest_name(archive))
        expected = sum(1 for e in manifest.files.values() if e.problem is None and e.id)
        return table_problem(index, expected if manifest.model else None, read_all=True)


def _index_path_is_a_folder(store: Store) -> None:
    """`.index` replaced by a plain file (a bad merge, a stray copy): move it aside, with a
    notice, so the index is rebuilt in its place; memctl never deletes a file it did not make."""
    path = store.index_dir
    if path.is_symlink() or not os.path.lexists(path) or path.is_dir():
        return  # Why symlinks pass: writes through one are refused (store.files.check_inside_store)
    aside = path.with_name(f"{path.name}.not-a-folder")
    number = 1
    while os.path.lexists(aside):
        number += 1
        aside = path.with_name(f"{path.name}.not-a-folder.{number}")
    os.rename(path, aside)
    notify_repair(f"{path} was not a folder; moved it to {aside.name}")


def notify_repair(problem: str) -> None:
    """The one line a command prints when it had to rebuild a damaged index."""
    sys.stderr.write(f"memctl: the index was damaged ({problem}); rebuilt it from the files.\n")


def _sync(
    store: Store,
    rebuild: bool,
    progress: Progress | None,
    archive: bool,
    changed: frozenset[str] | None = None,
    known_vectors: Mapping[str, Any] | None = None,
) -> SyncReport:
    report = SyncReport()
    model = index_model(store)
    remote = not archive and remote_mode(store)
    if changed is not None and not remote and not rebuild:
        partial = _sync_paths(store, archive, changed, known_vectors, model)
        if partial is not None:
            return partial
    stats = indexed_files(store, archive)
    index = local_index(store, archive)
    if remote:
        # Why: the published index holds everything else; the local table is only the overlay.
        stats = local_changes(
            store.root, store.index_dir, store.section("index"), stats, made_with(store)
        )
    if not rebuild and _matches_stamp(store, stats, index, archive, report, model):
        return report
    if not archive:  # Why: the archive's index follows the main one's model
        settled = settle_model(store, model, sorted(stats))
        if settled != model:
            model, index = settled, local_index(store, archive, settled)
    manifest = Manifest.load(store.index_dir, manifest_name(archive))
    stale_model = manifest.model not in (None, model.id) or manifest.dim not in (None, model.dim)
    # Why: no readable manifest beside an existing table means an older index layout: rebuild it.
    unknown_table = manifest.model is None and index.exists()
    if rebuild or stale_model or unknown_table or (manifest.files and not index.exists()):
        manifest = Manifest(model.id, model.dim, {}, INDEX_RECIPE)
        report.rebuilt = True
    elif manifest.recipe != INDEX_RECIPE and manifest.files:
        manifest.files = {
            p: dataclasses.replace(e, mtime_ns=-1, file_hash="") for p, e in manifest.files.items()
        }
    plan = plan_sync({p: (s.mtime_ns, s.size) for p, s in stats.items()}, manifest.files)
    report.unchanged = sum(1 for p in plan.unchanged if manifest.files[p].problem is None)
    report.problems = [
        problem for p in plan.unchanged if (problem := manifest.files[p].problem) is not None
    ]
    if not plan.check and not plan.removed and not report.rebuilt:
        try:
            manifest.save_stamp(
                store.index_dir, manifest_name(archive)
            )  # the next no-op is cheaper
        except OSError:
            pass  # Why: a read-only store still syncs the slow way; nothing is wrong with it.
        return report

    known = dict(known_vectors or {})
    with file_lock(store.state_dir / "index.lock"):
        if report.rebuilt:
            if unknown_table and not rebuild:
                # Why: a lost manifest says nothing about the rows; their vectors are still good.
                known = {**table_vectors(index), **known}
            index.drop()
        return _apply_plan(
            store,
            index,
            manifest,
            stats,
            plan,
            report,
            progress,
            archive,
            model,
            known,
        )


def table_vectors(index: MemoryIndex) -> dict[str, Any]:
    """Every vector of the table by embed hash ({} when it cannot be read)."""
    try:
        table = index.scan(["embed_hash", "vector"])
    except Exception:  # noqa: BLE001 - a damaged table has nothing to give; rebuild regardless
        return {}
    if table is None:
        return {}
    hashes = table.column("embed_hash").to_pylist()
    return dict(zip(hashes, table.column("vector").to_numpy(zero_copy_only=False), strict=True))


def _sync_paths(
    store: Store,
    archive: bool,
    paths: frozenset[str],
    known_vectors: Mapping[str, Any] | None,
    model: EmbeddingModel,
) -> SyncReport | None:
    """Sync only these files (relative paths), reading only their manifest entries. None when a
    full sync is due instead (no manifest, another model or recipe, a folder among them)."""
    wanted = sorted(p for p in paths if is_archived(p) == archive and is_scanned_path(p))
    manifest_file = ManifestFile(store.index_dir, manifest_name(archive))
    head = manifest_file.head()
    if head is None or (head.model, head.dim, head.recipe) != (model.id, model.dim, INDEX_RECIPE):
        return None
    index = local_index(store, archive, model)
    if head.entries and not index.exists():
        return None
    stats: dict[str, FileStat] = {}
    for relpath in wanted:
        try:
            found = os.lstat(store.root / relpath)
        except OSError:
            continue
        if stat_module.S_ISDIR(found.st_mode):
            return None  # Why: a folder where a file was: its contents are not in `paths`
        stats[relpath] = FileStat(relpath, found.st_mtime_ns, found.st_size)
    if not archive and configured_model(store) == AUTO and chosen_model(store) is None:
        return None  # Why: `auto` has not decided yet: the full sync decides from every file
    with file_lock(store.state_dir / "index.lock"):
        manifest = Manifest(head.model, head.dim, manifest_file.entries(wanted), head.recipe)
        plan = plan_sync({p: (s.mtime_ns, s.size) for p, s in stats.items()}, manifest.files)
        report = SyncReport()
        if plan.check or plan.removed:
            _apply_plan(
                store,
                index,
                manifest,
                stats,
                plan,
                report,
                None,
                archive,
                model,
                dict(known_vectors or {}),
                manifest_file,
            )
    stamp = Manifest.load_stamp(store.index_dir, manifest_name(archive))
    report.unchanged = max(int(stamp.get("unchanged") or 0) - report.added - report.updated, 0)
    fresh = [p for p in report.problems if p not in stamp.get("problems", [])]
    report.problems = list(stamp.get("problems") or []) + fresh
    return report


def _matches_stamp(
    store, stats, index, archive: bool, report: SyncReport, model: EmbeddingModel | None = None
) -> bool:
    """True, with the report filled in, when every file is as the last sync left it.

    `stats` None: a freshness guard vouched for the files, so they are not compared."""
    stamp = Manifest.load_stamp(store.index_dir, manifest_name(archive))
    model = model or index_model(store)
    current = (model.id, model.dim, INDEX_RECIPE)
    if not stamp or (stamp.get("model"), stamp.get("dim"), stamp.get("recipe")) != current:
        return False
    if stats is not None and stamp.get("fingerprint") != stat_fingerprint(
        {p: (s.mtime_ns, s.size) for p, s in stats.items()}
    ):
        return False
    if (stamp.get("unchanged") if stats is None else stats) and not index.exists():
        return False
    report.unchanged = int(stamp.get("unchanged") or 0)
    report.problems = list(stamp.get("problems") or [])
    return True


def _apply_plan(
    store,
    index,
    manifest,
    stats,
    plan,
    report,
    progress,
    archive,
    model: EmbeddingModel,
    known_vectors: Mapping[str, Any],
    partial: ManifestFile | None = None,
) -> SyncReport:
    """Read the files the plan names, write their rows and their manifest entries.

    `partial`: `manifest` holds only the entries of the planned files; the others are looked
    up there as needed (an id already taken, the rest of a sequence)."""
    files = dict(manifest.files)
    delete_ids: list[str] = []
    derived: dict[str, Memory] = {}  # relpath -> memory whose rows are (re)written
    looked_at = set(plan.check) | set(plan.removed)
    seen_ids = {e.id: p for p, e in files.items() if e.id and p not in looked_at}

    for relpath in plan.removed:
        old = files.pop(relpath)
        if old.id and old.problem is None:
            delete_ids.append(old.id)
            report.removed += 1

    limit = max_file_bytes(store)
    for relpath in plan.check:
        stat = stats[relpath]
        old = files.get(relpath)
        try:
            raw = read_memory_bytes(store.root, relpath, limit)
        except InvalidMemoryFile as exc:
            problem = exc.to_dict()
            report.problems.append(problem)
            if old is not None and old.id and old.problem is None:
                delete_ids.append(old.id)
                report.removed += 1
            files[relpath] = IndexedFile(stat.mtime_ns, stat.size, "", None, None, problem)
            continue
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
            if partial is not None and memory.id not in seen_ids:
                owners = partial.paths_of_ids([memory.id]).get(memory.id, [])
                seen_ids.update((memory.id, p) for p in owners if p not in looked_at)
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
        note_lenient_values(store.root / relpath, memory)  # printed once, as the file changes
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

    old_files = manifest.files
    if partial is not None:  # Why: a sequence's order needs all of its members
        sequences = {e.sequence for e in (*old_files.values(), *files.values()) if e.sequence}
        members = partial.sequence_entries(sequences) if sequences else {}
        old_files = {**members, **old_files}
        files.update((p, e) for p, e in members.items() if p not in files and p not in looked_at)
    previous = _rederive_neighbours(store, old_files, files, derived, delete_ids)
    pending = _pending_rows(store, derived, previous, files, model.id)
    rows, vectors = _embed_rows(store, index, pending, report, progress, model, known_vectors)
    index.apply(sorted(set(delete_ids)), rows, vectors)
    manifest.files = files
    manifest.model, manifest.dim, manifest.recipe = model.id, model.dim, INDEX_RECIPE
    store.index_dir.mkdir(parents=True, exist_ok=True)
    written = looked_at | set(derived)
    (partial or ManifestFile(store.index_dir, manifest_name(archive))).update(
        {p: files[p] for p in written if p in files},
        [p for p in written if p not in files],
        model.id,
        model.dim,
        INDEX_RECIPE,
        replace_all=report.rebuilt,
    )
    return report


def _order_key(memory: Memory) -> str:
    return f"{memory.dated}\x00{memory.id}"  # the order recall's neighbours use (the row's date)


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


def _pending_rows(store, derived, previous, files, model_id: str) -> list[tuple]:
    """(relpath, memory, row text, embedded text, embed hash, chunk) for every row to write."""
    pending: list[tuple[str, Memory, str, str, str, int]] = []
    for relpath, memory in derived.items():
        texts = index_texts(memory)
        embedded = list(texts)
        before = previous.get(relpath)
        if len(texts) == 1 and before:
            earlier = derived.get(before) or _read_quietly(store, before)
            if earlier is not None:
                embedded[0] = contextual_text(texts[0], current_text(earlier.body).strip())
        hashes = [embed_hash(model_id, text) for text in embedded]
        pending.extend(
            (relpath, memory, text, vector_text, h, n)
            for n, (text, vector_text, h) in enumerate(zip(texts, embedded, hashes, strict=False))
        )
        files[relpath] = dataclasses.replace(files[relpath], embed_hash=hashes[0])
    return pending


def _read_quietly(store, relpath: str) -> Memory | None:
    try:
        return read_memory(store.root, relpath, max_bytes=max_file_bytes(store))
    except (OSError, InvalidMemoryFile):
        return None


# Why: the model's memory grows with batch size x padded length: 64 texts of 512 tokens took
# 8.4 GB, 16 of them 1.9 GB at the same speed. Long texts go 8 at a time, short ones 64.
BATCH_TOKENS = 8 * MODEL_MAX_TOKENS


def token_bounded_batches(items: list[tuple[int, str]], max_items: int) -> list[list]:
    """Consecutive batches of at most `max_items` texts and BATCH_TOKENS (padded) tokens."""
    batches: list[list] = []
    current: list = []
    longest = 0
    for item in items:
        tokens = min(estimate_tokens(item[1]) + 2, MODEL_MAX_TOKENS)
        if current and (
            len(current) >= max_items or max(longest, tokens) * (len(current) + 1) > BATCH_TOKENS
        ):
            batches.append(current)
            current, longest = [], 0
        current.append(item)
        longest = max(longest, tokens)
    if current:
        batches.append(current)
    return batches


def vectors_by_hash(model: str, texts: list[str], vectors) -> dict[str, Any]:
    """`known_vectors` for sync_index: these texts' vectors, by the hash the index keys them on
    (`model`: the id of the model that made them)."""
    return {embed_hash(model, text): vector for text, vector in zip(texts, vectors, strict=True)}


def embed_batched(texts: list[str], settings, progress: Progress | None = None) -> list[Any]:
    """Vectors for texts to store, in their order: a few through the light path, more in
    batches of texts of similar length (a batch is padded to its longest text) bounded by
    BATCH_TOKENS (the model's memory grows with batch size x padded length)."""
    from memctl.integrations.query_embedder import FEW_TEXTS, embed_documents

    # Why: a few texts go through the light path (no fastembed import, see embed_documents).
    few = len(texts) <= FEW_TEXTS
    todo = sorted(enumerate(texts), key=lambda item: len(item[1]))
    batches = [todo] if few else token_bounded_batches(todo, max(settings.batch_size, 1))
    vectors: list[Any] = [None] * len(texts)
    done = 0
    for batch in batches:
        embedded = embed_documents([t for _, t in batch], settings, few=few)
        for (i, _), vector in zip(batch, embedded, strict=False):
            vectors[i] = vector
        done += len(batch)
        if progress:
            progress(done, len(texts))
    return vectors


def _embed_rows(store, index, pending, report, progress, model: EmbeddingModel, known_vectors):
    import numpy as np

    hashes = {entry[4] for entry in pending}
    reusable = {h: known_vectors[h] for h in hashes if h in (known_vectors or {})}
    # Why: in remote mode a moved file or a front-matter edit reuses the published vector.
    source = open_index(store) if index.table == TABLE and remote_mode(store) else index
    reusable.update(source.vectors_for(sorted(hashes - reusable.keys())))
    todo = [i for i, entry in enumerate(pending) if entry[4] not in reusable]
    vectors: dict[int, ports.Vector] = {}
    if todo:
        texts = [pending[i][3] for i in todo]
        embedded = embed_batched(texts, model_settings(store, model), progress)
        vectors = dict(zip(todo, embedded, strict=True))
        report.embedded = len(todo)
    from memctl.integrations.query_embedder import end_of_embedding_pass

    end_of_embedding_pass()  # Why: a bulk writer may let the model go before the rows are written
    rows = [
        _row(memory, relpath, text, ehash, chunk)
        for relpath, memory, text, _, ehash, chunk in pending
    ]
    matrix = np.zeros((len(pending), model.dim), dtype=np.float32)
    for i, (_, _, _, _, ehash, _) in enumerate(pending):
        matrix[i] = vectors[i] if i in vectors else reusable[ehash]
    return rows, matrix
