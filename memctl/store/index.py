"""The LanceDB index: a disposable cache of the memory files, one row per memory (or chunk).

Reads and writes go through pylance (`lance`), whose import costs ~0.3 s against lancedb's
~2.5 s, so a fresh `memctl recall` or `memctl add` stays fast; store/index_maintenance.py keeps
the table small as it is written to. The manifest (JSON beside the table) lets a no-op sync
finish without either (store/manifest.py).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memctl.core.ports import MemoryFilter, Row
from memctl.store.arrow_rows import ranked_rows
from memctl.store.files import check_inside_store
from memctl.store.index_maintenance import (
    ANN_SEARCH,
    MaintenancePolicy,
    MaintenanceReport,
    dataset_at,
    forget_session,
    has_vector_index,
    maintain,
    write_rows,
)
from memctl.store.manifest import (  # noqa: F401 - the index's manifest, imported from here
    MANIFEST,
    Manifest,
    ManifestFile,
    stamp_name,
)
from memctl.store.resident_vectors import ResidentTable, forget_table, resident_table

if TYPE_CHECKING:
    import lance
    import pyarrow as pa

    from memctl.core.ports import Vector, Vectors

TABLE = "memories"
# Archived memories (archive/) live in a table of their own, synced only when asked for.
ARCHIVE_TABLE = "archive"
ARCHIVE_MANIFEST = "archive-manifest.json"
COLUMNS = (
    "id", "chunk", "path", "title", "type", "tags", "agent", "scope", "archived",
    "created", "updated", "importance", "pinned", "embed_hash", "sequence", "text",
)  # fmt: skip


def _schema(dim: int):
    import pyarrow as pa

    return pa.schema(
        [
            pa.field("id", pa.string()),
            pa.field("chunk", pa.int32()),
            pa.field("path", pa.string()),
            pa.field("title", pa.string()),
            pa.field("type", pa.string()),
            pa.field("tags", pa.string()),  # ",a,b," so a tag filter is a LIKE on the delimiters
            pa.field("agent", pa.string()),
            pa.field("scope", pa.string()),
            pa.field("archived", pa.bool_()),
            pa.field("created", pa.string()),
            pa.field("updated", pa.string()),
            pa.field("importance", pa.float32()),
            pa.field("pinned", pa.bool_()),
            pa.field("embed_hash", pa.string()),
            pa.field("sequence", pa.string()),  # "session_id=..." for memories written in sequence
            pa.field("text", pa.string()),
            pa.field("vector", pa.list_(pa.float32(), dim)),
        ]
    )


def sql_quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


LIKE_ESCAPE = "\\"


def like_literal(value: str) -> str:
    """`value` inside a LIKE pattern, matching itself only: `%` and `_` are not wildcards."""
    for special in (LIKE_ESCAPE, "%", "_"):
        value = value.replace(special, LIKE_ESCAPE + special)
    return value


def _quoted_list(values: Sequence[str]) -> str:
    return ",".join(sql_quote(value) for value in values)


def filter_sql(where: MemoryFilter | None) -> str | None:
    """The SQL condition (lance's dialect) for a filter; None when it lets every row through.

    The one place a filter becomes SQL: every value is quoted, every tag escaped for LIKE.
    """
    if where is None:
        return None
    clauses = []
    if where.types:
        clauses.append(f"type IN ({_quoted_list(where.types)})")
    if where.exclude_types:
        clauses.append(f"type NOT IN ({_quoted_list(where.exclude_types)})")
    for tag in where.tags:  # stored as ",a,b," so a tag is found between its delimiters
        pattern = sql_quote("%," + like_literal(tag) + ",%")
        clauses.append(f"tags LIKE {pattern} ESCAPE {sql_quote(LIKE_ESCAPE)}")
    if where.agent is not None:
        clauses.append(f"agent = {sql_quote(where.agent)}")
    if where.scope is not None:
        clauses.append(f"scope = {sql_quote(where.scope)}")
    if where.archived is not None:
        clauses.append(f"archived = {'true' if where.archived else 'false'}")
    if where.exclude_ids:
        clauses.append(f"id NOT IN ({_quoted_list(where.exclude_ids)})")
    if where.created_since is not None:
        clauses.append(f"created >= {sql_quote(where.created_since)}")
    if where.created_until is not None:
        clauses.append(f"created < {sql_quote(where.created_until)}")
    return " AND ".join(clauses) or None


def plain_words(query: str) -> str:
    """The query as words only: lance reads a query wrapped in double quotes as a phrase, which
    an index built without positions refuses (and a user's quotes are not search syntax here)."""
    return query.replace('"', " ")


def float32_array(values: Any) -> pa.Array:
    """`values` (a vector, or vectors flattened) as a float32 arrow array. Why not
    `pa.array(ndarray)`, or a numpy query vector handed to lance: pyarrow's numpy conversion
    imports numpy.ma on first use (~15 ms of a fresh `memctl add` or `recall`). Same float32s."""
    import numpy as np
    import pyarrow as pa

    flat = np.ascontiguousarray(values, dtype=np.float32).ravel()
    return pa.Array.from_buffers(pa.float32(), len(flat), [None, pa.py_buffer(flat)])


class MemoryIndex:
    """The LanceDB table behind the `Index` port (memctl.core.ports); written through pylance
    (store/index_maintenance.py)."""

    def __init__(
        self,
        index_dir: Path,
        dim: int,
        table: str = TABLE,
        policy: MaintenancePolicy | None = None,
    ):
        self.index_dir = index_dir
        self.dim = dim
        self.table = table
        self.policy = policy or MaintenancePolicy()
        self._dataset: lance.LanceDataset | None = None

    @property
    def table_dir(self) -> Path:
        return self.index_dir / f"{self.table}.lance"

    def exists(self) -> bool:
        return (self.table_dir / "_versions").is_dir()

    def drop(self) -> None:
        self._dataset = None
        forget_session(str(self.table_dir))
        forget_table(str(self.table_dir))
        if self.table_dir.exists():
            shutil.rmtree(self.table_dir)

    # -- writes -----------------------------------------------------------------------

    def vectors_for(self, embed_hashes: Sequence[str]) -> dict[str, Vector]:
        """Existing vectors by embed hash (of any row or chunk), so moved or metadata-only edits
        are not re-embedded."""
        if not embed_hashes or not self.exists():
            return {}
        return self._vectors_by("embed_hash", embed_hashes)

    def apply(
        self, delete_ids: Sequence[str], rows: Sequence[Row], vectors: Vectors | None = None
    ) -> None:
        """Delete rows of these ids, then add the new rows (vectors: one per row). The new rows
        are searchable at once; the indices take them in as index_maintenance decides."""
        if not delete_ids and not rows:
            return
        data = None
        if rows:
            import pyarrow as pa

            schema = _schema(self.dim)
            columns = {
                name: [row[name] for row in rows] for name in schema.names if name != "vector"
            }
            flat = float32_array(vectors)
            columns["vector"] = pa.FixedSizeListArray.from_arrays(flat, self.dim)
            data = pa.Table.from_pydict(columns, schema=schema)
        check_inside_store(self.table_dir / "_versions")
        self.index_dir.mkdir(parents=True, exist_ok=True)
        write_rows(str(self.table_dir), list(delete_ids), data, self.policy)
        self._dataset = None

    def maintain(self, *, vectors: bool = True) -> MaintenanceReport:
        """Fold in new rows, drop deleted ones, keep the vector index in step, remove old
        versions (index_maintenance.maintain); hold the index lock."""
        self._dataset = None
        return maintain(str(self.table_dir), self.policy, vectors=vectors)

    def purge(self, ids: Sequence[str]) -> None:
        """Remove these rows with no physical copy left (see store.purge); hold the index lock."""
        from memctl.store.purge import purge_rows

        self._dataset = None  # Why: purging may drop the table and always removes older versions.
        purge_rows(self.index_dir, self.table, list(ids))

    # -- reads (pylance) --------------------------------------------------------------

    def _resident(self) -> ResidentTable | None:
        """What a long-lived process keeps of this table in memory (None: read lance)."""
        return resident_table(str(self.table_dir))

    def dataset(self):
        if self._dataset is None:
            self._dataset = dataset_at(str(self.table_dir))
        return self._dataset

    def _to_table(self, **query):
        """dataset().to_table(**query), again on the newest version if a file of the one read
        was removed meanwhile (a writer cleans up versions replaced a few seconds ago)."""
        return self._retrying(lambda: self.dataset().to_table(**query))

    def _retrying(self, read: Callable[[], Any]) -> Any:
        for attempt in range(3):
            try:
                return read()
            except (ValueError, OSError) as exc:
                if "Not found" not in str(exc) or attempt == 2:
                    raise
                self._dataset = None
        raise AssertionError("unreachable")

    def count(self) -> int:
        return self.dataset().count_rows() if self.exists() else 0

    def table_stats(self) -> dict[str, int]:
        if not self.exists():
            return {"rows": 0, "versions": 0, "bytes": 0}
        dataset = self.dataset()
        size = sum(p.stat().st_size for p in self.table_dir.rglob("*") if p.is_file())
        return {"rows": dataset.count_rows(), "versions": len(dataset.versions()), "bytes": size}

    def search_vector(
        self, query_vector: Vector, limit: int, where: MemoryFilter | None = None
    ) -> list[Row]:
        """The `limit` rows nearest the query (cosine), nearest first, with `_distance`.

        A process that keeps tables resident (the server) answers from memory by an exact
        product where lance would scan flat; otherwise, and once the table has an ANN index
        (past `ann_min_rows`), lance finds the rows. Either way the distances are computed by
        the same code (arrow_rows.ranked_rows), so both answer alike.

        Why not the product past the ANN index too: at 100k rows it was no faster (18 vs
        18.5 ms, and 25 vs 20 ms with the machine loaded: a product reads every vector)."""
        if not self.exists():
            return []
        resident = self._resident()
        if resident is not None and not has_vector_index(self.dataset()):
            found = self._retrying(
                lambda: resident.search(self.dataset(), query_vector, limit, where, list(COLUMNS))
            )
            if found is not None:
                return found
        table = self._to_table(
            columns=list(COLUMNS) + ["vector", "_distance"],
            nearest={
                "column": "vector",
                "q": float32_array(query_vector),
                "k": limit,
                "metric": "cosine",
                **ANN_SEARCH,  # used only once the table has an ANN index
            },
            filter=filter_sql(where),
            prefilter=True,
        )
        return ranked_rows(table, query_vector, limit)

    def search_text(self, query: str, limit: int, where: MemoryFilter | None = None) -> list[Row]:
        if not self.exists() or not query.strip():
            return []
        resident = self._resident()
        query = plain_words(query)
        sql = filter_sql(where)
        # Why only with a filter: asked to prefilter nothing, lance still takes ~0.5 ms longer.
        filtered = {"filter": sql, "prefilter": True} if sql is not None else {}
        try:
            table = self._to_table(
                columns=["_score"] if resident else list(COLUMNS) + ["_score"],
                with_row_address=resident is not None,
                full_text_query=query,
                limit=limit,
                **filtered,
            )
        except Exception as exc:
            # Why: between a first write and its text index (another process syncing), lance
            # refuses full-text search; the vector side still answers, and the next read heals.
            if "INVERTED index" in str(exc):
                return []
            raise
        if resident is None:
            return table.to_pylist()
        # Why: a server keeps every row; reading only scores and addresses is 4x faster.
        found = resident.rows_at(
            self.dataset(), table.column("_rowaddr").to_pylist(), list(COLUMNS)
        )
        if found is None:  # a row the kept copy lacks (the table changed meanwhile): read it
            return self._to_table(
                columns=list(COLUMNS) + ["_score"], full_text_query=query, limit=limit, **filtered
            ).to_pylist()
        for row, score in zip(found, table.column("_score").to_pylist(), strict=True):
            row["_score"] = score
        return found

    def rows(self, where: MemoryFilter | None, columns: Sequence[str]) -> list[Row]:
        """These columns of every row the filter lets through."""
        table = self.scan(list(columns), where)
        return [] if table is None else table.to_pylist()

    def newest_rows(
        self, where: MemoryFilter | None, columns: Sequence[str], field: str, limit: int
    ) -> list[Row]:
        """The first `limit` rows the filter lets through, newest `field` (an ISO time) first,
        ties by id; a time that is a prefix of another counts as the newer (as a date alone).
        Sorted by arrow, not Python: context asks this of every episode (~25k at 100k)."""
        import pyarrow.compute as pc

        wanted = list(dict.fromkeys([*columns, field, "id"]))
        table = self.scan(wanted, where)
        if table is None or table.num_rows == 0:
            return []
        times = pc.fill_null(table.column(field), "")
        width = max(pc.max(pc.utf8_length(times)).as_py() or 0, 1)
        padded = pc.utf8_rpad(times, width=width, padding="\U0010ffff")
        order = pc.sort_indices(
            table.append_column("_newest", padded),
            sort_keys=[("_newest", "descending"), ("id", "ascending")],
        )
        return table.take(order[:limit]).select(list(columns)).to_pylist()

    def sequence_rows(self, sequences: Sequence[str]) -> list[Row]:
        """id, created and sequence of every first-chunk row in these sequences."""
        if not sequences or not self.exists():
            return []
        columns = ["id", "created", "sequence"]
        kept = self._kept_matching("sequence", sequences, columns, first_chunks=True)
        if kept is not None:
            return kept
        where = "chunk = 0 AND sequence IN (" + ",".join(sql_quote(s) for s in sequences) + ")"
        table = self._to_table(columns=columns, filter=where)
        return table.to_pylist()

    def _kept_matching(
        self, column: str, values: Sequence[str], columns: list[str], first_chunks: bool = False
    ) -> list[Row] | None:
        """Rows whose `column` is one of `values`, from what a server keeps (None: read lance)."""
        resident = self._resident()
        if resident is None:
            return None
        table = self._retrying(
            lambda: resident.matching(
                self.dataset(), column, values, columns, COLUMNS, first_chunks
            )
        )
        return None if table is None else table.to_pylist()

    def scan(self, columns: list[str], where: MemoryFilter | None = None) -> pa.Table | None:
        """These columns of every row matching `where`, as a pyarrow table (None: no table)."""
        if not self.exists():
            return None
        resident = self._resident()
        if resident is not None:
            kept = self._retrying(
                lambda: resident.filtered(self.dataset(), where, columns, COLUMNS)
            )
            if kept is not None:
                return kept
        return self._to_table(columns=columns, filter=filter_sql(where))

    def rows_for_ids(self, ids: Sequence[str]) -> list[Row]:
        if not ids or not self.exists():
            return []
        kept = self._kept_matching("id", ids, list(COLUMNS))
        if kept is not None:
            return kept
        where = "id IN (" + ",".join(sql_quote(i) for i in ids) + ")"
        return self._to_table(columns=list(COLUMNS), filter=where).to_pylist()

    def vectors_for_ids(self, ids: Sequence[str]) -> dict[str, Vector]:
        """Each memory's vector (of its first chunk), as recall's vector search saw it."""
        if not ids or not self.exists():
            return {}
        resident = self._resident()
        if resident is not None:
            return self._retrying(
                lambda: resident.first_chunk_vectors(self.dataset(), ids, list(COLUMNS))
            )
        return self._vectors_by("id", ids, first_chunks=True)

    def _vectors_by(
        self, column: str, values: Sequence[str], first_chunks: bool = False
    ) -> dict[str, Vector]:
        """The vector of each row whose `column` is one of `values`, by that value; read in
        batches of 500 so the filter stays short."""
        found: dict[str, Vector] = {}
        for start in range(0, len(values), 500):
            batch = ",".join(sql_quote(value) for value in values[start : start + 500])
            where = f"{'chunk = 0 AND ' if first_chunks else ''}{column} IN ({batch})"
            table = self._to_table(columns=[column, "vector"], filter=where)
            for key, vector in zip(
                table.column(column).to_pylist(),
                table.column("vector").to_numpy(zero_copy_only=False),
                strict=False,
            ):
                found[key] = vector
        return found
