"""The write path: build a memory, then dedup and merge it into the store or add it.

Concurrency: every deciding write holds the store's add lock (`.state/locks/add.lock`) from
the index search to the index update, so two processes adding the same text cannot both
decide "new". Changing an existing file also holds that memory's own lock
(`.state/locks/<id>.lock`), re-reads the file inside it and redoes the change when the file
moved on (another `version`, other bytes) since it was first read.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from memctl.config import Store
from memctl.core.errors import (
    InvalidMemoryFile,
    LowValueContent,
    MemctlError,
    MemoryNotFound,
    ModelUnavailable,
    UsageError,
)
from memctl.core.files.frontmatter import render_memory
from memctl.core.files.history import current_text
from memctl.core.files.input_limits import check_file_size, check_input, check_utf8
from memctl.core.files.memory import (
    DEFAULT_CONFIDENCE,
    DEFAULT_IMPORTANCE,
    MEMORY_TYPES,
    Memory,
    derived_title,
    new_id,
    now_iso,
)
from memctl.core.learning.revisions import (
    Decision,
    Neighbor,
    Thresholds,
    decide,
    derive_subject,
    reinforced,
    revised,
)
from memctl.core.learning.supersession import SUPERSEDING_TYPES, SupersedeLimits, supersedes
from memctl.core.ports import MemoryFilter
from memctl.service.after_reply import index_after_write, later
from memctl.service.memories import write_queue
from memctl.service.provenance import note_written_memories
from memctl.service.retrieval.embedding import index_model
from memctl.service.retrieval.index_guard import read_repairing, verify_index
from memctl.service.retrieval.indexing import index_text, open_index, sync_index, vectors_by_hash
from memctl.store.files import (
    check_id,
    file_lock,
    find_by_id,
    lock_path,
    max_file_bytes,
    path_for,
    read_memory,
    read_memory_bytes,
    replace_if_unchanged,
    write_memory,
)
from memctl.store.manifest import id_in_use
from memctl.store.request_journal import fingerprint, journaling, landed, valid_request_id

Change = Callable[[Memory], tuple[Memory, str]]


@dataclass
class AddResult:
    memory: Memory
    path: Path
    created: bool = True
    merged_into: str | None = None
    redacted: dict[str, int] = field(default_factory=dict)
    # created | merged (near duplicate) | updated (new value, old one in history) | not_adopted
    # | superseded (a new file that replaces `supersedes`, which stays, marked superseded_by)
    action: str = "created"
    similarity: float | None = None
    supersedes: str | None = None
    written: list[Path] = field(default_factory=list)  # every file this write changed

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.memory.id,
            "path": str(self.path),
            "created": self.created,
            "merged_into": self.merged_into,
            "action": self.action,
            "similarity": self.similarity,
            "supersedes": self.supersedes,
            "redacted": self.redacted,
        }


def build_memory(
    text: str,
    *,
    type: str = "semantic",
    title: str | None = None,
    tags: tuple[str, ...] | list[str] = (),
    importance: float | None = None,
    confidence: float | None = None,
    source: str = "explicit_user_input",
    pinned: bool = False,
    private: bool = False,
    agent: str | None = None,
    created: str | None = None,
    extra: dict[str, Any] | None = None,
    memory_id: str | None = None,  # restore (import) only: keep the id, times and relations
    updated: str | None = None,
    expires: str | None = None,
    relations: list[dict[str, str]] | None = None,
    version: int = 1,  # restore only: how many times the memory was revised where it came from
) -> Memory:
    if memory_id is not None:
        check_id(memory_id)
    if type not in MEMORY_TYPES:
        raise UsageError(f"Unknown type '{type}'. Choose one of: {', '.join(MEMORY_TYPES)}.")
    for name, value in (("importance", importance), ("confidence", confidence)):
        if value is not None and not 0.0 <= value <= 1.0:
            raise UsageError(f"--{name} must be between 0 and 1 (got {value}).")
    body = text.strip()
    if not body:
        raise UsageError("Nothing to remember: the text is empty.")
    stamp = created or now_iso()
    return Memory(
        id=memory_id or new_id(),
        title=(title or derived_title(body)).strip(),
        type=type,
        tags=sorted({t.strip() for t in tags if t.strip()}),
        importance=DEFAULT_IMPORTANCE if importance is None else importance,
        confidence=DEFAULT_CONFIDENCE if confidence is None else confidence,
        source=source,
        scope="private" if private else "project",
        agent=agent,
        created=stamp,
        updated=updated or stamp,
        expires=expires,
        pinned=pinned,
        relations=[dict(r) for r in relations or ()],
        version=version,
        body=body,
        extra=dict(extra or {}),
    )


def add_memory(
    store: Store,
    text: str,
    *,
    sync: bool = True,
    redact: bool = True,
    force: bool = False,
    dedup: bool = True,
    update_of: str | None = None,
    duplicate_of: str | None = None,
    request_id: str | None = None,
    **fields: Any,
) -> AddResult:
    """Write one memory file (atomically) and, unless told otherwise, index it.

    `request_id` (the client's MEMCTL_REQUEST_ID) makes the add idempotent: run again with the
    same id after its first run's write landed (an engine killed before it replied), it writes
    nothing and answers with what landed (see store.request_journal).

    Secrets and personal data are redacted first (`redact=False` opts out for this call);
    low-value text raises LowValueContent unless `force`. With `dedup` a near duplicate is
    merged into the existing memory and a new value on the same subject updates it
    (save_memory below); `update_of` / `duplicate_of` name that memory directly.
    """
    request_id = valid_request_id(request_id)
    asked = fingerprint(
        {"text": text, "fields": fields, "update_of": update_of, "duplicate_of": duplicate_of}
    )
    if request_id is not None:
        prior = landed(store.root, store.state_dir, request_id, asked)
        if prior is not None:
            return _landed_result(store, prior, sync)
    memory, redacted = prepare_memory(store, text, redact=redact, force=force, **fields)
    # Why: an episode is an event (two alike are still two), a restored record keeps its id.
    searches = dedup and memory.type != "episodic" and not fields.get("memory_id")
    with journaling(store.root, store.state_dir, request_id, asked) as journal:
        queue = write_queue.active()
        if queue is not None and sync and not (update_of or duplicate_of):
            result = queue.submit(store, memory, searches, redacted)
        elif update_of or duplicate_of or searches:
            result = save_memory(
                store, memory, sync=sync, update_of=update_of, duplicate_of=duplicate_of
            )
            result.redacted = redacted
        else:
            memory = unused_id(store, memory)
            path = path_for(store.root, memory)
            write_memory(path, memory, max_file_bytes(store))
            note_written_memories(store, [(memory, None)])
            if sync:
                later(index_after_write(store.index_dir, lambda: sync_index(store)))
            result = AddResult(memory=memory, path=path, redacted=redacted)
        if journal is not None:
            journal.finish(result.to_dict())
    return result


def _landed_result(store: Store, record: dict[str, Any], sync: bool) -> AddResult:
    """The answer of an add whose first run's write landed (store.request_journal)."""
    answer = record.get("result") if isinstance(record.get("result"), dict) else None
    first = record["writes"][0]
    relpath = first["path"]
    if answer is not None and isinstance(answer.get("path"), str):
        with contextlib.suppress(ValueError):
            relpath = Path(answer["path"]).relative_to(store.root).as_posix()
    memory = read_memory(store.root, relpath, max_bytes=max_file_bytes(store))
    if sync:  # Why: the first run may have died before it indexed what it wrote
        later(index_after_write(store.index_dir, lambda: sync_index(store)))
    if answer is None:  # killed between the write and the result: judged from the write
        created = bool(first.get("new"))
        return AddResult(
            memory=memory,
            path=store.root / relpath,
            created=created,
            merged_into=None if created else memory.id,
            action="created" if created else "merged",
        )
    redacted = answer.get("redacted")
    return AddResult(
        memory=memory,
        path=store.root / relpath,
        created=bool(answer.get("created")),
        merged_into=answer.get("merged_into"),
        redacted=redacted if isinstance(redacted, dict) else {},
        action=str(answer.get("action") or "created"),
        similarity=answer.get("similarity"),
        supersedes=answer.get("supersedes"),
    )


def prepare_memory(
    store: Store, text: str, *, redact: bool = True, force: bool = False, **fields: Any
) -> tuple[Memory, dict[str, int]]:
    """The memory `add` would write, and what redaction took out: secrets and personal data
    redacted (unless `redact` is False), low-value text refused (LowValueContent) unless `force`."""
    # Why: imported here, the regex tables stay out of `memctl --help`.
    from memctl.core.learning.quality import low_value_reason
    from memctl.service.memories.redaction import redact_memory_fields

    check_fields(store, text, fields)  # Why: before redaction, which is slow on megabytes
    redacted: dict[str, int] = {}
    if redact:
        text, fields, redacted = redact_memory_fields(store, text, fields)
    memory = build_memory(text, **fields)  # bad options are usage errors before anything else
    if not force:
        reason = low_value_reason(memory.body, store.settings.write.min_chars)
        if reason:
            raise LowValueContent(reason)
    return memory, redacted


def check_fields(store: Store, text: str, fields: dict[str, Any]) -> None:
    """Refuse (InputRefused) what the store would refuse to read back: see core.files.input_limits."""
    check_input(text, max_file_bytes(store))
    for name in ("title", "agent"):
        if isinstance(fields.get(name), str):
            check_input(fields[name], max_file_bytes(store), f"The {name}")
    for tag in fields.get("tags") or ():
        check_utf8(str(tag), "A tag")


# --- dedup and merge ----------------------------------------------------------------------


def thresholds(store: Store) -> Thresholds:
    settings = store.settings.write
    return Thresholds(
        dedup=settings.dedup_threshold,
        subject=settings.subject_similarity,
        loose_subject=settings.loose_subject_similarity,
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
    text = index_text(memory)
    try:
        model = index_model(store)
        vector = None if (update_of or duplicate_of) else embed_texts(store, [text])[0]
    except ModelUnavailable:
        write_new(store, memory)  # Why: keep the text as a file; the model error still surfaces
        raise
    target_id = duplicate_of or update_of
    with file_lock(locks_dir(store) / "add.lock"):
        sync_index(store)
        if vector is not None and index_model(store) != model:  # `auto` chose another model
            model = index_model(store)
            vector = embed_texts(store, [text])[0]
        if target_id:
            relpath = locate_file(store, target_id, None)
            decision = Decision(
                "merge" if duplicate_of else "update",
                Neighbor(
                    read_memory(store.root, relpath, max_bytes=max_file_bytes(store)),
                    relpath,
                    None,
                ),
                "named target",
            )
        else:
            neighbors = nearest_memories(store, memory, vector)
            decision = decide(memory, memory.extra.get("subject"), neighbors, thresholds(store))
            if decision.op == "add":
                decision = superseding(memory, neighbors, supersede_limits(store)) or decision
        result = apply_decision(store, memory, decision)
        if sync:
            known = {} if vector is None else vectors_by_hash(model.id, [text], [vector])
            # Why only these: the index was synced just above, under the same lock.
            written = relpaths(store, result.written)
            # Why later: in the server, indexing the written file waits until the reply is out.
            later(
                index_after_write(
                    store.index_dir,
                    lambda: sync_index(store, known_vectors=known, written=written),
                )
            )
    return result


def supersede_limits(store: Store) -> SupersedeLimits:
    settings = store.settings.write
    return SupersedeLimits(
        similarity=settings.supersede_similarity,
        cue_similarity=settings.supersede_cue_similarity,
    )


def superseding(
    memory: Memory, neighbors: list[Neighbor], limits: SupersedeLimits
) -> Decision | None:
    """A new statement that gives another value for a stored memory's subject replaces it as a
    new file (the old one stays, marked): see core.learning.supersession."""
    if memory.type not in SUPERSEDING_TYPES:
        return None
    new_text = current_text(memory.body)
    for neighbor in sorted(neighbors, key=lambda n: -(n.similarity or 0.0)):
        old = neighbor.memory
        if old.type not in SUPERSEDING_TYPES or old.extra.get("superseded_by"):
            continue
        if supersedes(current_text(old.body), new_text, neighbor.similarity or 0.0, limits):
            return Decision("supersede", neighbor, "same subject, new value")
    return None


def apply_decision(store: Store, memory: Memory, decision: Decision) -> AddResult:
    if decision.op == "add" or decision.target is None:
        return write_new(store, memory)
    if decision.op == "supersede":
        return write_superseding(store, memory, decision.target)
    target = decision.target
    now = now_iso()

    def change(current: Memory) -> tuple[Memory, str]:
        if decision.op == "merge":
            return reinforced(current, memory, now), "merged"
        return revised(current, memory, now)

    try:
        path, written, action = rewrite_memory(store, target.memory.id, target.relpath, change)
    except MemoryNotFound:
        return write_new(store, memory)  # Why: the target was forgotten meanwhile; keep the text.
    return AddResult(
        written=[path],
        memory=written,
        path=path,
        created=False,
        merged_into=written.id,
        action=action,
        similarity=None if target.similarity is None else round(target.similarity, 4),
    )


def write_superseding(store: Store, memory: Memory, target: Neighbor) -> AddResult:
    """Write `memory` as a new file that supersedes `target`, and mark `target` superseded."""
    memory.relations = [*memory.relations, {"type": "supersedes", "target": target.memory.id}]
    result = write_new(store, memory)
    result.action = "superseded"
    result.merged_into = None
    result.similarity = None if target.similarity is None else round(target.similarity, 4)

    def mark(current: Memory) -> tuple[Memory, str]:
        extra = {**current.extra, "superseded_by": memory.id}
        return replace(current, extra=extra, updated=now_iso()), "marked"

    try:
        marked, _, _ = rewrite_memory(store, target.memory.id, target.relpath, mark)
        result.written.append(marked)
    except MemoryNotFound:
        pass  # Why: the old memory was forgotten meanwhile; the new one stands on its own.
    result.supersedes = target.memory.id
    return result


def unused_id(store: Store, memory: Memory) -> Memory:
    """The memory, with a new id if its generated one is already held by an indexed memory or
    names an existing file (two processes in the same millisecond, 1 in 32,768)."""
    for _ in range(8):
        if not (id_in_use(store.index_dir, memory.id) or path_for(store.root, memory).exists()):
            break
        memory = replace(memory, id=new_id())
    return memory


def write_new(store: Store, memory: Memory) -> AddResult:
    memory = unused_id(store, memory)
    path = path_for(store.root, memory)
    write_memory(path, memory, max_file_bytes(store))
    note_written_memories(store, [(memory, None)])
    return AddResult(memory=memory, path=path, written=[path])


def relpaths(store: Store, paths: list[Path]) -> list[str]:
    """These files' paths relative to the store (what sync_index's `written` takes)."""
    return [path.relative_to(store.root).as_posix() for path in paths]


REWRITE_ATTEMPTS = 20


def rewrite_memory(
    store: Store, memory_id: str, relpath: str | None, change: Change
) -> tuple[Path, Memory, str]:
    """Read-modify-write one memory under its lock; `version` goes up by one."""
    limit = max_file_bytes(store)
    relpath = locate_file(store, memory_id, relpath)
    seen_raw = read_memory_bytes(store.root, relpath, limit)
    seen = read_memory(store.root, relpath, seen_raw)
    planned, action = change(seen)
    with file_lock(lock_path(locks_dir(store), memory_id)):
        for _ in range(REWRITE_ATTEMPTS):
            relpath = locate_file(store, memory_id, relpath)
            fresh_raw = read_memory_bytes(store.root, relpath, limit)
            fresh = read_memory(store.root, relpath, fresh_raw)
            if fresh.version != seen.version or fresh_raw != seen_raw:
                planned, action = change(fresh)  # Why: someone wrote it since; redo on theirs.
                seen, seen_raw = fresh, fresh_raw
            planned.version = fresh.version + 1
            data = check_file_size(render_memory(planned), limit)
            # Why compare-and-swap: a hand edit holds no lock; it must never be overwritten.
            if replace_if_unchanged(store.root / relpath, data, fresh_raw):
                note_written_memories(store, [(planned, fresh)])
                return store.root / relpath, planned, action
    raise MemctlError(
        f"{store.root / relpath}: it kept changing while memctl merged into it; nothing was "
        "written, try again"
    )


def locate_file(store: Store, memory_id: str, relpath: str | None) -> str:
    """The file of `memory_id`: the hinted path if it still holds that id, else a search."""
    limit = max_file_bytes(store)
    if relpath and (store.root / relpath).is_file():
        try:
            if read_memory(store.root, relpath, max_bytes=limit).id == memory_id:
                return relpath
        except (OSError, InvalidMemoryFile):
            pass
    found = find_by_id(store.root, memory_id, max_bytes=limit)
    if found is None:
        raise MemoryNotFound(memory_id)
    return found


# --- the index side -----------------------------------------------------------------------


def embed_texts(store: Store, texts: list[str], few: bool | None = None):
    """Vectors exactly as the index makes them (same model, same settings). `few` True: each
    text alone through the light path, as a single add embeds it (see embed_documents)."""
    from memctl.integrations.query_embedder import embed_documents
    from memctl.service.retrieval.embedding import model_settings

    return embed_documents(texts, model_settings(store), few=few)


def nearest_memories(
    store: Store, memory: Memory, vector, limit: int | None = None
) -> list[Neighbor]:
    """The stored memories nearest to `vector` that a write may merge into: same scope, live,
    not episodic (an episode is an event; two alike are still two events)."""
    limit = limit or store.settings.write.subject_candidates
    where = MemoryFilter(scope=memory.scope, archived=False, exclude_types=("episodic",))
    verify_index(store)
    rows = read_repairing(store, lambda: open_index(store).search_vector(vector, limit * 3, where))
    best: dict[str, dict] = {}
    for row in rows:  # a long memory may have several chunk rows; keep its closest
        if row["id"] not in best or row["_distance"] < best[row["id"]]["_distance"]:
            best[row["id"]] = row
    neighbors = []
    for row in sorted(best.values(), key=lambda r: r["_distance"])[:limit]:
        try:
            found = read_memory(store.root, row["path"], max_bytes=max_file_bytes(store))
        except (OSError, InvalidMemoryFile):
            continue
        neighbors.append(Neighbor(found, row["path"], 1.0 - float(row["_distance"])))
    return neighbors
