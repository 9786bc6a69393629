"""Rows of the index as arrow tables, read as lance reads them: a MemoryFilter applied as
store.index.filter_sql() says in SQL, and the cosine distance recall sees (the same code for
rows lance found and rows a server kept, so both answer alike)."""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING

from memctl.core.ports import MemoryFilter, Row

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

VECTOR = "vector"
# The MemoryFilter fields row_mask() knows; a filter using any other falls back to lance.
_KNOWN_FILTER_FIELDS = {
    "types",
    "exclude_types",
    "tags",
    "agent",
    "scope",
    "archived",
    "exclude_ids",
    "created_since",
    "created_until",
}


def cosine_distances(vectors, query) -> np.ndarray:
    """1 - cosine similarity of each row with the query, in float64: the distance recall sees,
    computed alike whether lance or the kept matrix found the rows (the same bytes either way)."""
    import numpy as np

    rows = np.asarray(vectors, dtype=np.float64)
    q = np.asarray(query, dtype=np.float64)
    dots = (rows * q).sum(axis=1)
    norms = np.sqrt((rows * rows).sum(axis=1)) * np.sqrt((q * q).sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        similarity = np.where(norms > 0, dots / norms, 0.0)
    return 1.0 - similarity


def ranked_rows(table: pa.Table, query, limit: int) -> list[Row]:
    """The rows of `table` (with a vector column) nearest the query, nearest first, each with
    its `_distance` and without the vector; ties keep the table's order."""
    import numpy as np

    if table.num_rows == 0:
        return []
    vectors = table.column(VECTOR).combine_chunks().flatten().to_numpy()
    distances = cosine_distances(vectors.reshape(table.num_rows, -1), query)
    order = np.argsort(distances, kind="stable")[:limit]
    rows = table.drop_columns([c for c in (VECTOR, "_distance") if c in table.column_names])
    found = rows.take(order.tolist()).to_pylist()  # Why a list: see index.float32_array
    for row, distance in zip(found, distances[order].tolist(), strict=True):
        row["_distance"] = distance
    return found


def filter_supported(where: MemoryFilter | None) -> bool:
    if where is None:
        return True
    defaults = MemoryFilter()
    return all(
        field.name in _KNOWN_FILTER_FIELDS
        or getattr(where, field.name) == getattr(defaults, field.name)
        for field in fields(where)
    )


def row_mask(rows: pa.Table, where: MemoryFilter | None) -> np.ndarray | None:
    """Which rows `where` lets through, as store.index.filter_sql() says in SQL; None: all."""
    if where is None:
        return None
    import pyarrow as pa
    import pyarrow.compute as pc

    conditions = []
    if where.types:
        conditions.append(pc.is_in(rows.column("type"), value_set=pa.array(where.types)))
    if where.exclude_types:
        conditions.append(
            pc.invert(pc.is_in(rows.column("type"), value_set=pa.array(where.exclude_types)))
        )
    for tag in where.tags:  # stored as ",a,b,": the tag between its delimiters, literally
        conditions.append(pc.match_substring(rows.column("tags"), "," + tag + ","))
    if where.agent is not None:
        conditions.append(pc.equal(rows.column("agent"), where.agent))
    if where.scope is not None:
        conditions.append(pc.equal(rows.column("scope"), where.scope))
    if where.archived is not None:
        conditions.append(pc.equal(rows.column("archived"), where.archived))
    if where.exclude_ids:
        conditions.append(
            pc.invert(pc.is_in(rows.column("id"), value_set=pa.array(where.exclude_ids)))
        )
    if where.created_since is not None:
        conditions.append(pc.greater_equal(rows.column("created"), where.created_since))
    if where.created_until is not None:
        conditions.append(pc.less(rows.column("created"), where.created_until))
    if not conditions:
        return None
    combined = conditions[0]
    for condition in conditions[1:]:
        combined = pc.and_(combined, condition)
    return pc.fill_null(combined, False).to_numpy(zero_copy_only=False)
