"""Writing many memories at once: the write path of `add`, paid once per batch.

`memctl import`, `memctl extract` and the hooks' transcript ingest hand over every memory
together. The batch is embedded in one call, the index is synced once before the first
decision and once after the last write, and each memory is deduplicated against the index
and against the memories written before it in the same batch, in order, with the same rules
as `memctl add` (core/revisions.decide). Redaction and the low-value filter stay with the
callers, per item, as before.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memctl.config import Store
from memctl.core.errors import InvalidMemoryFile, MemctlError
from memctl.core.files.memory import Memory
from memctl.core.learning.revisions import Decision, Neighbor, decide, derive_subject
from memctl.core.ports import MemoryFilter
from memctl.service.after_reply import index_after_write, later
from memctl.service.memories.add import (
    AddResult,
    apply_decision,
    embed_texts,
    locate_file,
    locks_dir,
    nearest_memories,
    relpaths,
    supersede_limits,
    superseding,
    thresholds,
    write_new,
)
from memctl.service.retrieval.embedding import index_model, model_settings
from memctl.service.retrieval.indexing import (
    embed_batched,
    index_text,
    local_index,
    remote_mode,
    sync_index,
    vectors_by_hash,
)
from memctl.store.files import (
    file_lock,
    folder_syncs_deferred,
    max_file_bytes,
    observing_writes,
    read_memory,
)

# From this many memories to compare, the index's vectors are read once and compared in
# memory; below it each memory asks the index (cheaper than reading 100k vectors).
IN_MEMORY_FROM = 32
PREFETCH_ROWS = 64  # items whose stored neighbours are found in one matrix product


@dataclass
class BatchItem:
    """One memory to write. `dedup` False writes it as given (an episode, a restored record);
    `update_of` / `duplicate_of` name the target (an id), and `target_item` names an earlier
    item of the batch (0-based) whose written memory is the target of `op`."""

    memory: Memory
    dedup: bool = True
    update_of: str | None = None
    duplicate_of: str | None = None
    target_item: int | None = None
    op: str | None = None  # "update" or "merge" with target_item
    on_write: Callable[[Path, bytes], None] | None = None  # told before its files are replaced


class BatchStopped(MemctlError):
    """A write failed part way; `position` is the item, `written` how many were written."""

    def __init__(
        self,
        position: int,
        written: int,
        cause: MemctlError,
        results: list[AddResult] | None = None,
    ):
        self.position, self.written, self.cause = position, written, cause
        self.results = results or []  # those of the items before `position`
        self.kind = cause.kind
        super().__init__(str(cause))


def save_batch(
    store: Store,
    items: list[BatchItem],
    *,
    sync: bool = True,
    supersede: bool = False,
    few: bool | None = None,
) -> list[AddResult]:
    """Write every item in order through dedup; one result per item.

    `supersede`: a new value for a stored memory's subject replaces it as a new file, as
    `memctl add` does (add.superseding). `few` True embeds each text as a single add does.
    Indexing what was written is `later` work (after the reply in the server)."""
    if not items:
        return []
    deciding = [i for i, item in enumerate(items) if _searches(item)]
    for i in deciding:
        memory = items[i].memory
        if "subject" not in memory.extra:
            subject = derive_subject(memory.body, memory.type)
            if subject:
                memory.extra["subject"] = subject
    texts = [index_text(items[i].memory) for i in deciding]
    model = index_model(store)  # Why: key the vectors by the model that made them
    # Why sorted by length in token-bounded batches (embed_batched): less padding, bounded memory.
    vectors: dict[int, Any] = {}
    if texts:
        embedded = (
            embed_texts(store, texts, True) if few else embed_batched(texts, model_settings(store))
        )
        vectors = dict(zip(deciding, embedded, strict=True))
    known = vectors_by_hash(model.id, texts, list(vectors.values()))
    results: list[AddResult] = []
    with file_lock(locks_dir(store) / "add.lock"), folder_syncs_deferred():
        sync_index(store)
        # Why: with index.mode remote the rows to compare with are mostly in the published
        # index, which only the searches of nearest_memories see.
        in_memory = len(deciding) >= IN_MEMORY_FROM and not remote_mode(store)
        neighbours = BatchNeighbours(store, in_memory=in_memory)
        neighbours.expect({i: (items[i].memory.scope, vectors[i]) for i in deciding})
        limits = supersede_limits(store) if supersede else None
        for position, item in enumerate(items):
            try:
                with observing_writes(item.on_write):
                    result = _save_one(
                        store, item, vectors.get(position), neighbours, results, limits, position
                    )
            except MemctlError as exc:
                if sync and results:
                    _index_later(store, known, results)
                raise BatchStopped(position, len(results), exc, results) from exc
            results.append(result)
            if position in vectors:
                neighbours.written(result, vectors[position])
        if sync:
            # Why only these: the index was synced just above, under the same lock.
            _index_later(store, known, results)
    return results


def _index_later(store: Store, known, results: list[AddResult]) -> None:
    written = _written(store, results)
    work = lambda: sync_index(store, known_vectors=known, written=written)  # noqa: E731
    later(index_after_write(store.index_dir, work))


def _written(store: Store, results: list[AddResult]) -> list[str]:
    return sorted({p for result in results for p in relpaths(store, result.written)})


def _searches(item: BatchItem) -> bool:
    return (
        item.dedup
        and not (item.update_of or item.duplicate_of or item.target_item is not None)
        and item.memory.type != "episodic"
    )


def _save_one(
    store,
    item: BatchItem,
    vector,
    neighbours,
    results: list[AddResult],
    limits=None,
    position: int | None = None,
) -> AddResult:
    memory = item.memory
    target_id, op = item.update_of or item.duplicate_of, "update" if item.update_of else "merge"
    if item.target_item is not None:
        earlier = results[item.target_item]
        target_id, op = earlier.merged_into or earlier.memory.id, item.op or "merge"
    if target_id:
        relpath = neighbours.locate(target_id)
        decision = Decision(op, Neighbor(neighbours.memory(relpath), relpath, None), "named target")
    elif vector is None:
        return write_new(store, memory)
    else:
        found = neighbours.nearest(memory, vector, position)
        decision = decide(memory, memory.extra.get("subject"), found, thresholds(store))
        if limits is not None and decision.op == "add":
            decision = superseding(memory, found, limits) or decision
    result = apply_decision(store, memory, decision)
    if decision.target is not None:
        neighbours.changed(decision.target.relpath)
    return result


class BatchNeighbours:
    """The stored memories a batch item may merge into: the index as synced before the batch,
    plus the memories the batch has written so far."""

    def __init__(self, store: Store, in_memory: bool):
        self.store = store
        self.limit = store.settings.write.subject_candidates
        limits = thresholds(store)
        # Why: below every threshold a neighbour cannot change decide()'s answer; skip its file.
        self.floor = min(limits.dedup, limits.subject, limits.loose_subject)
        self._files: dict[str, Memory] = {}
        self._stored = _StoredVectors(store) if in_memory else None
        self._new = _GrowingVectors()  # what this batch wrote: memory, path; and vectors

    def expect(self, queries: dict[int, tuple[str, Any]]) -> None:
        """The (scope, vector) each item will ask about, by position: with the index's vectors
        in memory, their stored neighbours are found for all of them at once."""
        if self._stored is not None:
            self._stored.prefetch(queries, self.limit, self.floor)

    def nearest(self, memory: Memory, vector, position: int | None = None) -> list[Neighbor]:
        if self._stored is None:
            found = nearest_memories(self.store, memory, vector, self.limit)
        else:
            found = [
                Neighbor(self.memory(path), path, score)
                for path, score in self._stored.nearest(
                    memory.scope, vector, self.limit, self.floor, position
                )
                if self._readable(path)
            ]
        for (written, path), score in self._new.nearest(vector, self.floor):
            if written.scope == memory.scope and written.type != "episodic":
                found.append(Neighbor(written, path, score))
        ranked = sorted(found, key=lambda n: n.similarity or 0.0, reverse=True)
        return ranked[: self.limit]

    def _readable(self, relpath: str) -> bool:
        try:
            self.memory(relpath)
        except (OSError, InvalidMemoryFile):
            return False
        return True

    def memory(self, relpath: str) -> Memory:
        if relpath not in self._files:
            limit = max_file_bytes(self.store)
            self._files[relpath] = read_memory(self.store.root, relpath, max_bytes=limit)
        return self._files[relpath]

    def locate(self, memory_id: str) -> str:
        return locate_file(self.store, memory_id, None)

    def written(self, result: AddResult, vector) -> None:
        if result.action == "created":
            path = str(result.path.relative_to(self.store.root))
            self._new.add((result.memory, path), vector)

    def changed(self, relpath: str) -> None:
        self._files.pop(relpath, None)


class _StoredVectors:
    """Every index row a write may merge into, its vector in one matrix."""

    def __init__(self, store: Store):
        import numpy as np

        table = local_index(store).scan(
            ["id", "path", "scope", "vector"],
            MemoryFilter(archived=False, exclude_types=("episodic",)),
        )
        rows = 0 if table is None else table.num_rows
        self.ids: list[str] = [] if table is None else table.column("id").to_pylist()
        self.paths: list[str] = [] if table is None else table.column("path").to_pylist()
        scopes = [] if table is None else table.column("scope").to_pylist()
        self.by_scope = {s: np.asarray([x == s for x in scopes], dtype=bool) for s in set(scopes)}
        self.matrix = np.zeros((rows, index_model(store).dim), dtype=np.float32)
        self._ready: dict[int, list[tuple[str, float]]] = {}
        if table is not None and rows:
            flat = table.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
            self.matrix = flat.reshape(rows, -1).astype(np.float32, copy=False)

    def prefetch(self, queries: dict[int, tuple[str, Any]], limit: int, floor: float) -> None:
        """Answer `nearest` ahead for these (scope, vector) by position, PREFETCH_ROWS at a
        time: one matrix product reads the stored vectors once per block, not once per item."""
        import numpy as np

        positions = list(queries)
        for start in range(0, len(positions), PREFETCH_ROWS):
            block = positions[start : start + PREFETCH_ROWS]
            scores = np.asarray([queries[p][1] for p in block], dtype=np.float32) @ self.matrix.T
            for row, position in enumerate(block):
                self._ready[position] = self._best(queries[position][0], scores[row], limit, floor)

    def nearest(
        self, scope: str, vector, limit: int, floor: float, position: int | None = None
    ) -> list[tuple[str, float]]:
        """(path, cosine) of the `limit` closest memories at or above `floor`, one per id."""
        import numpy as np

        if position in self._ready:
            return self._ready.pop(position)
        if not len(self.ids):
            return []
        return self._best(scope, self.matrix @ np.asarray(vector, dtype=np.float32), limit, floor)

    def _best(self, scope: str, scores, limit: int, floor: float) -> list[tuple[str, float]]:
        import numpy as np

        mask = self.by_scope.get(scope)
        if mask is None or not len(self.ids):
            return []
        similarity = np.where(mask, scores, -2.0)
        take = min(limit * 3, len(similarity))  # a long memory has several chunk rows
        top = np.argpartition(-similarity, take - 1)[:take]
        best: dict[str, tuple[float, str]] = {}
        for row in top[np.argsort(-similarity[top])]:
            score = float(similarity[row])
            if score < floor:
                break
            best.setdefault(self.ids[row], (score, self.paths[row]))
        return [(path, score) for score, path in sorted(best.values(), reverse=True)[:limit]]


class _GrowingVectors:
    """Items with their vectors, appended one at a time, compared all at once."""

    def __init__(self):
        self.items: list[Any] = []
        self._matrix: Any = None

    def add(self, item: Any, vector) -> None:
        import numpy as np

        if self._matrix is None or len(self.items) == len(self._matrix):
            grown = np.zeros((max(64, 2 * len(self.items)), len(vector)), dtype=np.float32)
            if self._matrix is not None:
                grown[: len(self.items)] = self._matrix
            self._matrix = grown
        self._matrix[len(self.items)] = vector
        self.items.append(item)

    def nearest(self, vector, floor: float) -> list[tuple[Any, float]]:
        if not self.items:
            return []
        scores = self._matrix[: len(self.items)] @ vector
        return [(self.items[i], float(scores[i])) for i in (scores >= floor).nonzero()[0]]
