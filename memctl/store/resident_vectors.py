"""The index's rows and vectors kept in memory, for a process that lives on (the server).

A warm recall then answers its vector side by one exact matrix product over every row instead
of lance's flat scan (~21 ms at 10k rows, the product a few ms); once the table has an ANN index
(past `index.ann_min_rows`) lance's index answers it (store/index.py says why). Full-text
search, neighbours, hits' vectors and context's recent episodes take their rows from here.

Never stale: what is kept is keyed on lance's own description of the table version being read.
A fragment's data files are immutable and uniquely named, so a fragment is read once (its
columns and vectors); a write adds a fragment (only it is read), an edit or a forget marks rows
in a deletion file (only the fragment's live row offsets are read again), a compaction or a
purge rewrites fragments (their vectors are taken from the rows already kept, by id, chunk and
embed hash; only rows not seen before are read). Fragments no longer in the version read are
dropped, a table removed or rebuilt has new files: nothing of the old one is used.

Off unless `keep_resident()` was called (the server does); a one-shot process reads lance.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memctl.core.ports import MemoryFilter, Row
from memctl.store.arrow_rows import VECTOR, filter_supported, ranked_rows, row_mask

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

_ADDRESS = "_rowaddr"
_OFFSET_BITS = 32
_OFFSET_MASK = (1 << _OFFSET_BITS) - 1
_BLOCK_ROWS = 1024
_KEPT_MASKS = 16  # filters whose row masks a fragment keeps
_REUSE_FROM_ROWS = 4096  # a new fragment this large takes the vectors it can from kept rows

_tables: dict[str, ResidentTable] | None = None
_tables_lock = threading.Lock()


def keep_resident(enabled: bool = True) -> None:
    """From now on this process keeps each table it searches in memory (see module doc)."""
    global _tables
    with _tables_lock:
        _tables = {} if enabled else None


def resident_table(uri: str) -> ResidentTable | None:
    """The kept copy of the table at `uri`, or None when this process keeps none."""
    with _tables_lock:
        if _tables is None:
            return None
        table = _tables.get(uri)
        if table is None:
            table = _tables[uri] = ResidentTable()
        return table


def forget_table(uri: str) -> None:
    """Free what is kept of a table that was removed."""
    with _tables_lock:
        if _tables is not None:
            _tables.pop(uri, None)


def forget_tables_under(folder: str) -> None:
    """Free what is kept of every table under `folder` (a store the server closed)."""
    prefix = folder.rstrip("/") + "/"
    with _tables_lock:
        if _tables is not None:
            for uri in [uri for uri in _tables if uri.startswith(prefix) or uri == folder]:
                del _tables[uri]


def drop_all_tables() -> int:
    """Free every kept table (the server over its memory budget); how many there were."""
    with _tables_lock:
        if _tables is None:
            return 0
        count = len(_tables)
        _tables.clear()
        return count


@dataclass
class _Fragment:
    """One fragment's rows as first read: every column but the vector, and the vectors apart."""

    rows: pa.Table  # without the vector column
    offsets: np.ndarray  # each row's physical offset in the fragment
    vectors: np.ndarray  # float32 (rows, dim), as stored
    inverse_norms: np.ndarray  # float32 (rows,): 1 / each vector's norm (0 for a zero vector)
    deletion: Any  # the deletion file these rows were read under
    alive: np.ndarray | None  # rows still live under a later deletion file; None: all
    _first_chunks: dict[str, int] | None = None
    _masks: dict[MemoryFilter, np.ndarray | None] | None = None
    # Why: context searches twice with one query vector (knowledge, then every type).
    _last_query: bytes = b""
    _last_similarities: np.ndarray | None = None

    def mask(self, where: MemoryFilter | None) -> np.ndarray | None:
        """row_mask() of these rows, kept per filter (the prompt hook asks the same every time:
        ~9 ms at 100k rows to compute)."""
        if where is None:
            return None
        if self._masks is None:
            self._masks = {}
        if where not in self._masks:
            if len(self._masks) >= _KEPT_MASKS:
                self._masks.pop(next(iter(self._masks)))
            self._masks[where] = row_mask(self.rows, where)
        return self._masks[where]

    def similarities(self, unit_query: np.ndarray) -> np.ndarray:
        """Cosine similarity of each row with the (unit) query; a copy the caller may change."""
        key = unit_query.tobytes()
        if self._last_similarities is None or key != self._last_query:
            self._last_similarities = _products(self.vectors, unit_query) * self.inverse_norms
            self._last_query = key
        return self._last_similarities.copy()

    def first_chunks(self) -> dict[str, int]:
        """Memory id -> the position of its first chunk's row."""
        if self._first_chunks is None:
            ids = self.rows.column("id").to_pylist()
            chunks = self.rows.column("chunk").to_pylist()
            self._first_chunks = {
                i: n for n, (i, c) in enumerate(zip(ids, chunks, strict=True)) if not c
            }
        return self._first_chunks


class ResidentTable:
    """What is kept of one table: its fragments by data files (see module doc)."""

    def __init__(self) -> None:
        self._fragments: dict[tuple[str, ...], _Fragment] = {}
        self._by_fragment_id: dict[int, _Fragment] = {}
        self._lock = threading.Lock()

    def search(
        self, dataset, query, limit: int, where: MemoryFilter | None, columns: list[str]
    ) -> list[Row] | None:
        """The `limit` rows nearest the query that `where` lets through, as lance's flat scan
        answers (with `_distance`); None when the filter is one only lance can apply."""
        import numpy as np

        if not filter_supported(where):
            return None
        with self._lock:
            fragments = self._current(dataset, columns)
        query32 = np.asarray(query, dtype=np.float32)
        norm = float(np.linalg.norm(query32)) or 1.0
        unit_query = query32 / norm
        candidates: list[tuple[float, int, int]] = []  # (-similarity, fragment, row)
        for number, fragment in enumerate(fragments):
            if fragment.rows.num_rows == 0:
                continue
            similarity = fragment.similarities(unit_query)
            keep = fragment.mask(where)
            if fragment.alive is not None:
                keep = fragment.alive if keep is None else keep & fragment.alive
            if keep is not None:
                similarity = np.where(keep, similarity, -np.inf)
            # Why a margin: the float32 product only picks candidates; the order is decided by
            # the float64 distances below, so near-ties at the cut are taken in.
            take = min(len(similarity), limit + 8)
            best = np.argpartition(-similarity, take - 1)[:take]
            candidates.extend(
                (-float(similarity[i]), number, int(i)) for i in best if similarity[i] > -np.inf
            )
        candidates.sort()
        chosen = candidates[: limit + 8]
        if not chosen:
            return []
        import pyarrow as pa

        parts = []
        for number in sorted({number for _, number, _ in chosen}):
            rows = [row for _, n, row in chosen if n == number]
            fragment = fragments[number]
            part = fragment.rows.take(pa.array(rows))
            vectors = pa.FixedSizeListArray.from_arrays(
                pa.array(fragment.vectors[rows].ravel()), fragment.vectors.shape[1]
            )
            parts.append(part.append_column(VECTOR, vectors))
        table = pa.concat_tables(parts)
        return ranked_rows(table, query, limit)

    def rows_at(self, dataset, addresses: Sequence[int], columns: list[str]) -> list[Row] | None:
        """The live rows at these row addresses (of the version `dataset` is at), in order;
        None when one is not kept (lance then reads them)."""
        import numpy as np
        import pyarrow as pa

        with self._lock:
            self._current(dataset, columns)
            by_id = self._by_fragment_id
        wanted = np.asarray(addresses, dtype=np.uint64)
        fragment_ids = (wanted >> np.uint64(_OFFSET_BITS)).astype(np.int64)
        offsets = wanted & np.uint64(_OFFSET_MASK)
        found: list[Row | None] = [None] * len(addresses)
        for fragment_id in dict.fromkeys(fragment_ids.tolist()):
            fragment = by_id.get(fragment_id)
            if fragment is None:
                return None
            orders = np.flatnonzero(fragment_ids == fragment_id)
            positions = np.searchsorted(
                fragment.offsets, offsets[orders].astype(fragment.offsets.dtype)
            )
            if (positions >= len(fragment.offsets)).any():
                return None
            if (fragment.offsets[positions] != offsets[orders]).any():
                return None
            if fragment.alive is not None and not fragment.alive[positions].all():
                return None
            rows = fragment.rows.take(pa.array(positions)).to_pylist()
            for order, row in zip(orders.tolist(), rows, strict=True):
                found[order] = row
        return found  # type: ignore[return-value]

    def filtered(self, dataset, where: MemoryFilter | None, columns: list[str], kept_columns):
        """These columns of every live row `where` lets through, as a pyarrow table in lance's
        scan order; None when the filter is one only lance can apply."""
        import pyarrow as pa

        if not filter_supported(where) or not set(columns) <= set(kept_columns):
            return None
        with self._lock:
            fragments = self._current(dataset, list(kept_columns))
        parts = []
        for fragment in fragments:
            keep = fragment.mask(where)
            if fragment.alive is not None:
                keep = fragment.alive if keep is None else keep & fragment.alive
            rows = fragment.rows.select(columns)
            parts.append(rows if keep is None else rows.filter(pa.array(keep)))
        if not parts:
            return None
        return pa.concat_tables(parts)

    def matching(
        self,
        dataset,
        column: str,
        values: Sequence[str],
        columns: list[str],
        kept_columns,
        first_chunks: bool = False,
    ):
        """These columns of the live rows whose `column` is one of `values` (of first chunks
        only, when asked), as a pyarrow table in lance's scan order."""
        import pyarrow as pa
        import pyarrow.compute as pc

        with self._lock:
            fragments = self._current(dataset, list(kept_columns))
        wanted = pa.array(list(values), type=pa.string())
        parts = []
        for fragment in fragments:
            keep = pc.is_in(fragment.rows.column(column), value_set=wanted)
            if first_chunks:
                keep = pc.and_(keep, pc.equal(fragment.rows.column("chunk"), 0))
            if fragment.alive is not None:
                keep = pc.and_(keep, pa.array(fragment.alive))
            parts.append(fragment.rows.select(columns).filter(keep))
        return pa.concat_tables(parts) if parts else None

    def first_chunk_vectors(self, dataset, ids: Sequence[str], columns: list[str]) -> dict:
        """Each of these memories' first-chunk vector, of those with a live row."""
        with self._lock:
            fragments = self._current(dataset, columns)
        found = {}
        for fragment in fragments:
            positions = fragment.first_chunks()
            for memory_id in ids:
                position = positions.get(memory_id)
                if position is not None and (fragment.alive is None or fragment.alive[position]):
                    found[memory_id] = fragment.vectors[position]
        return found

    def _current(self, dataset, columns: list[str]) -> list[_Fragment]:
        """The fragments of the version `dataset` is at, reading only what is not kept yet."""
        found: dict[tuple[str, ...], _Fragment] = {}
        by_id: dict[int, _Fragment] = {}
        retired = dict(self._fragments)
        for fragment in dataset.get_fragments():
            meta = fragment.metadata
            key = tuple(data.path for data in meta.files)
            deletion = _deletion_key(meta.deletion_file)
            kept = self._fragments.get(key)
            if kept is None:
                kept = _read_fragment(fragment, deletion, columns, retired.values())
            elif kept.deletion != deletion:
                kept = _with_deletions(kept, fragment, deletion)
            found[key] = by_id[meta.id] = kept
        self._fragments = found
        self._by_fragment_id = by_id
        return list(found.values())


def _products(matrix, query) -> np.ndarray:
    """matrix @ query, in blocks small enough that BLAS runs each on one thread: on a busy
    machine its threads wait for each other (at 10k rows: 1.3 ms median this way, 16 ms whole)."""
    import numpy as np

    out = np.empty(len(matrix), dtype=np.float32)
    for start in range(0, len(matrix), _BLOCK_ROWS):
        np.dot(matrix[start : start + _BLOCK_ROWS], query, out=out[start : start + _BLOCK_ROWS])
    return out


def _deletion_key(deletion_file) -> Any:
    if deletion_file is None:
        return None
    return (deletion_file.id, deletion_file.read_version, deletion_file.num_deleted_rows)


def _read_fragment(fragment, deletion, columns: list[str], kept) -> _Fragment:
    """A fragment not seen before; vectors of rows kept elsewhere (a compaction moved them)
    are copied, only the others are read."""
    import numpy as np
    import pyarrow as pa

    rows = fragment.to_table(columns=columns, with_row_address=True)
    offsets = rows.column(_ADDRESS).to_numpy() & ((1 << _OFFSET_BITS) - 1)
    rows = rows.drop_columns([_ADDRESS]).combine_chunks()  # Why: take() on chunks is slow
    # Why only for large fragments: a write's new fragment is small and read at once; a
    # compaction's is large and mostly rows already kept.
    known = _known_vectors(kept) if rows.num_rows >= _REUSE_FROM_ROWS else {}
    found: list[Any] = [None] * rows.num_rows
    if known:
        keys = zip(
            rows.column("id").to_pylist(),
            rows.column("chunk").to_pylist(),
            rows.column("embed_hash").to_pylist(),
            strict=True,
        )
        found = [known.get(key) for key in keys]
    missing = [i for i, vector in enumerate(found) if vector is None]
    if len(missing) == len(found):
        matrix = _matrix(fragment.to_table(columns=[VECTOR]).column(VECTOR))
    else:
        matrix = np.empty((len(found), len(next(v for v in found if v is not None))), np.float32)
        for i, vector in enumerate(found):
            if vector is not None:
                matrix[i] = vector
        if missing:
            # Why positions: a fragment's take() counts its live rows, as to_table() lists them.
            read = fragment.take(pa.array(missing), columns=[VECTOR])
            matrix[missing] = _matrix(read.column(VECTOR))
    # Why: the arrow buffers read are freed to arrow's pool, which keeps them from the system.
    pa.default_memory_pool().release_unused()
    return _Fragment(rows, offsets, matrix, _inverse_norms(matrix), deletion, None)


def _matrix(column) -> np.ndarray:
    """A fixed-size-list column of vectors as a contiguous float32 matrix of its own."""
    import numpy as np

    vectors = column.combine_chunks()
    dim = vectors.type.list_size
    return np.array(vectors.flatten().to_numpy().reshape(-1, dim), dtype=np.float32, copy=True)


def _known_vectors(kept) -> dict[tuple, np.ndarray]:
    known: dict[tuple, np.ndarray] = {}
    for fragment in kept:
        keys = zip(
            fragment.rows.column("id").to_pylist(),
            fragment.rows.column("chunk").to_pylist(),
            fragment.rows.column("embed_hash").to_pylist(),
            strict=True,
        )
        for row, key in enumerate(keys):
            known[key] = fragment.vectors[row]
    return known


def _inverse_norms(vectors) -> np.ndarray:
    import numpy as np

    norms = np.linalg.norm(vectors, axis=1)
    with np.errstate(divide="ignore"):
        return np.where(norms > 0, 1.0 / norms, 0.0).astype(np.float32)


def _with_deletions(kept: _Fragment, fragment, deletion) -> _Fragment:
    """The same rows under a newer deletion file: which of them are still live."""
    import numpy as np

    live = fragment.to_table(columns=[], with_row_address=True)
    offsets = live.column(_ADDRESS).to_numpy() & ((1 << _OFFSET_BITS) - 1)
    alive = np.isin(kept.offsets, offsets)
    return _Fragment(
        kept.rows,
        kept.offsets,
        kept.vectors,
        kept.inverse_norms,
        deletion,
        alive,
        kept._first_chunks,
        kept._masks,  # Why they carry over: a mask says which rows match, not which are live
    )
