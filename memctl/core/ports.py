"""What the use-cases need from the search index and the embedding model.

Declared here, in the core, so services depend on these shapes and not on LanceDB, SQL or
ONNX Runtime: store/index.py implements `Index` (and alone turns a `MemoryFilter` into SQL),
integrations/embedder.py and integrations/query_embedder.py implement the embedders.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    Vector = NDArray[np.float32]  # one unit-length embedding
    Vectors = NDArray[np.float32]  # one embedding per row

Row = dict[str, Any]  # one index row: the columns asked for, plus `_distance` or `_score`


@dataclass(frozen=True)
class MemoryFilter:
    """Which memories a search or a listing may return: every condition given must hold.

    Values are compared as they are, never read as patterns: a tag `a_b` matches only `a_b`.
    """

    types: tuple[str, ...] = ()  # one of these types
    exclude_types: tuple[str, ...] = ()  # none of these types
    tags: tuple[str, ...] = ()  # every one of these tags
    agent: str | None = None  # written by this agent
    scope: str | None = None  # "project" or "private"
    archived: bool | None = None  # None: archived or not
    exclude_ids: tuple[str, ...] = ()  # none of these memories (e.g. hidden by an overlay)
    created_since: str | None = None  # created at or after this ISO 8601 UTC time
    created_until: str | None = None  # created before this ISO 8601 UTC time


class QueryEmbedder(Protocol):
    """Embeds one query at a time (light to load: a hook runs it in a fresh process)."""

    model_id: str
    dim: int

    def embed_query(self, text: str) -> Vector: ...


class Embedder(QueryEmbedder, Protocol):
    """Embeds texts for the index, in batches."""

    batch_size: int

    def embed(self, texts: Sequence[str]) -> Vectors: ...


class Index(Protocol):
    """The search index over the memory files: a cache, rebuilt from them at will."""

    def exists(self) -> bool: ...

    def count(self) -> int: ...

    def table_stats(self) -> dict[str, int]:
        """rows, versions and bytes on disk."""
        ...

    def search_vector(
        self, query_vector: Vector, limit: int, where: MemoryFilter | None = None
    ) -> list[Row]:
        """Nearest rows by cosine, each with `_distance`."""
        ...

    def search_text(self, query: str, limit: int, where: MemoryFilter | None = None) -> list[Row]:
        """Best rows by BM25, each with `_score`."""
        ...

    def rows(self, where: MemoryFilter | None, columns: Sequence[str]) -> list[Row]: ...

    def newest_rows(
        self, where: MemoryFilter | None, columns: Sequence[str], field: str, limit: int
    ) -> list[Row]:
        """The first `limit` rows, newest `field` (ISO time) first, ties by id."""
        ...

    def rows_for_ids(self, ids: Sequence[str]) -> list[Row]: ...

    def sequence_rows(self, sequences: Sequence[str]) -> list[Row]: ...

    def vectors_for_ids(self, ids: Sequence[str]) -> dict[str, Vector]: ...

    def vectors_for(self, embed_hashes: Sequence[str]) -> dict[str, Vector]: ...

    def apply(
        self, delete_ids: Sequence[str], rows: Sequence[Row], vectors: Vectors | None = None
    ) -> None: ...

    def purge(self, ids: Sequence[str]) -> None: ...

    def drop(self) -> None: ...
