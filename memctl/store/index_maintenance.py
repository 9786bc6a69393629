"""Writing the index table with pylance, and keeping it small and fast as it is written to.

A write deletes the rows it replaces and appends the new ones as a fragment; nothing is
rebuilt. The new fragment is indexed at once as a small new segment of the full-text index
(lance would find unindexed rows too, but scores them with other statistics), and segments are
merged with their peers size-tiered (the policy is core/index_policy.py). Old table versions, and fragments
mostly made of deleted rows, are removed every few versions, once no reader can still be
reading them. `maintain()` does all of it at once, plus the vector
index past `ann_min_rows`, for `memctl index` and for a server's idle time.

Only `lance` and `pyarrow` are used: `import lancedb` costs ~2 s, lance ~0.3 s. The caller
holds the index write lock.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from typing import Any

from memctl.config import IndexSettings
from memctl.core.files.index_policy import (
    FANOUT,
    FragmentInfo,
    segments_to_merge,
    stale_segments_to_merge,
    tail_to_fold,
    versions_to_remove,
    wasteful_fragments,
)

# Column -> (index name, tokenizer settings). The settings are lancedb's create_fts_index
# defaults (English stemming, stop words removed, ASCII folding), so a table lancedb indexed
# and one indexed here search alike.
TEXT_INDEXES: dict[str, tuple[str, dict[str, Any]]] = {
    "text": (
        "text_idx",
        {
            "base_tokenizer": "simple",
            "language": "English",
            "with_position": False,
            "max_token_length": 40,
            "lower_case": True,
            "stem": True,
            "remove_stop_words": True,
            "ascii_folding": True,
        },
    ),
}
VECTOR_COLUMN = "vector"
VECTOR_INDEX = "vector_idx"
# Why this type: measured on synthetic notes at 50k rows (benchmarks/perf_writes.py --ann).
VECTOR_INDEX_TYPE = "IVF_HNSW_SQ"
# How a search uses the ANN index: IVF partitions probed, then the best `refine_factor` x k
# candidates re-ranked by their exact vectors. Measured by benchmarks/perf_writes.py --ann.
ANN_SEARCH = {"nprobes": 20, "refine_factor": 5}
# A single write of this many rows (a bulk sync) is indexed at once rather than left unindexed.
BULK_ROWS = FANOUT**3
_DELETE_BATCH = 1000


@dataclass(frozen=True)
class MaintenancePolicy:
    """The `index:` section of config.yaml."""

    # An old version stays this long after a newer one replaced it, for readers still on it
    # (a reader that loses a file anyway reads again from the newest: MemoryIndex._to_table).
    keep_versions_seconds: float = 2.0
    cleanup_every_versions: int = 6  # old versions are looked for this often (in versions)
    ann_min_rows: int = 50_000  # from this many rows the vector column gets an ANN index
    fanout: int = FANOUT

    @classmethod
    def from_settings(cls, index: IndexSettings) -> MaintenancePolicy:
        return cls(
            keep_versions_seconds=index.keep_versions_seconds,
            cleanup_every_versions=index.cleanup_every_versions,
            ann_min_rows=index.ann_min_rows,
        )


@dataclass
class MaintenanceReport:
    folded_fragments: int = 0  # unindexed fragments rewritten as one and indexed
    merged_segments: int = 0  # full-text index segments merged into others
    rewritten_fragments: int = 0  # fragments rewritten to merge them or drop deleted rows
    versions_removed: int = 0
    bytes_removed: int = 0
    vector_index: str = "none"  # none | built | updated | dropped | current

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# One lance Session per table for the life of the process: its caches (the full-text index's
# posting lists, fragment and index metadata) outlive the dataset objects, so a resident server
# that opens the newest version per request finds them warm (a text search at 1k rows: 18 ms
# with a new session, 9 ms with a kept one). Bounded, so a long-lived server stays small.
_SESSIONS: dict[str, Any] = {}
INDEX_CACHE_BYTES = 256 << 20
METADATA_CACHE_BYTES = 64 << 20


_cache_bytes = (INDEX_CACHE_BYTES, METADATA_CACHE_BYTES)


def limit_session_caches(index_bytes: int, metadata_bytes: int) -> None:
    """The caches of each table's session from now on (the engine keeps them small: it holds
    a session per table of every open store, and each write's new version fills them)."""
    global _cache_bytes
    _cache_bytes = (index_bytes, metadata_bytes)


def session_for(uri: str):
    import lance

    session = _SESSIONS.get(uri)
    if session is None:
        session = lance.Session(
            index_cache_size_bytes=_cache_bytes[0],
            metadata_cache_size_bytes=_cache_bytes[1],
        )
        _SESSIONS[uri] = session
    return session


def forget_sessions_under(folder: str) -> int:
    """Drop the kept sessions of every table under `folder` ("" for all); how many."""
    prefix = folder.rstrip("/") + "/" if folder else ""
    gone = [uri for uri in _SESSIONS if uri.startswith(prefix) or uri == folder]
    for uri in gone:
        _SESSIONS.pop(uri, None)
    return len(gone)


def dataset_at(uri: str):
    """The table's newest version (lance.dataset with the table's kept session)."""
    import lance

    return lance.dataset(uri, session=session_for(uri))


def forget_session(uri: str) -> None:
    """Drop the kept caches of a table that was removed or rebuilt from scratch."""
    _SESSIONS.pop(uri, None)


def open_dataset(uri: str):
    """The table's newest version, or None when there is no table."""
    try:
        return dataset_at(uri)
    except ValueError:  # Why: lance says "Dataset at path ... was not found" as a ValueError
        return None


# --- writes ---------------------------------------------------------------------------------


def write_rows(uri: str, delete_ids: list[str], data, policy: MaintenancePolicy) -> None:
    """Delete every row of `delete_ids`, append `data` (a pyarrow table, may be None), then fold
    in piled-up fragments and remove old versions when it is time."""
    import lance

    dataset = open_dataset(uri)
    has_rows = data is not None and data.num_rows > 0
    if dataset is None:
        if has_rows:
            dataset = lance.write_dataset(data, uri, mode="create")
            ensure_text_indexes(dataset)
        return
    first_version = dataset.version
    present = _present_ids(dataset, delete_ids)
    for start in range(0, len(present), _DELETE_BATCH):
        dataset.delete(_in_list("id", present[start : start + _DELETE_BATCH]))
    if has_rows:
        dataset = lance.write_dataset(data, dataset, mode="append")
    # Why force: lance scores rows outside the full-text index with other statistics (the same
    # text scored 2.4 unindexed against 3.2 indexed), so a new memory would rank below its
    # twins until folded. Indexing the new fragment as a delta segment costs milliseconds.
    dataset, _ = fold_new_rows(dataset, policy, force=True)
    step = policy.cleanup_every_versions
    if dataset.version // step != first_version // step:
        dataset = rewrite_wasteful(dataset)[0]
        remove_old_versions(dataset, policy.keep_versions_seconds)


def rewrite_wasteful(dataset):
    """Rewrite the fragments whose rows are mostly deleted (edits and forgets leave them).
    Returns the dataset at its newest version and how many were rewritten."""
    wasteful = wasteful_fragments(fragment_infos(dataset))
    for fragment_id in wasteful:  # Why one by one: an index segment may cover only some
        _compact_only(dataset, [fragment_id])
        dataset = dataset_at(dataset.uri)
    return dataset, len(wasteful)


def _present_ids(dataset, ids: list[str]) -> list[str]:
    """The ids that have rows: a delete matching nothing would still commit a version."""
    wanted = sorted(set(ids))
    if not wanted:
        return []
    found: set[str] = set()
    for start in range(0, len(wanted), _DELETE_BATCH):
        batch = wanted[start : start + _DELETE_BATCH]
        table = dataset.to_table(columns=["id"], filter=_in_list("id", batch))
        found.update(table.column("id").to_pylist())
    return sorted(found)


def _in_list(column: str, values: list[str]) -> str:
    return f"{column} IN (" + ",".join("'" + v.replace("'", "''") + "'" for v in values) + ")"


# --- folding new fragments into the full-text index ------------------------------------------


def fold_new_rows(dataset, policy: MaintenancePolicy, force: bool = False):
    """Rewrite the unindexed fragments as one, index it, and merge segments that are due.

    Returns the dataset at its newest version and what was done.
    """

    report = MaintenanceReport()
    if _missing_text_indexes(dataset):
        ensure_text_indexes(dataset)
        return dataset_at(dataset.uri), report
    fragments = fragment_infos(dataset)
    unindexed_rows = sum(f.rows for f in fragments if not f.indexed)
    tail = tail_to_fold(fragments, policy.fanout, force=force or unindexed_rows >= BULK_ROWS)
    stale = {
        name: _stale_segments(dataset, name, policy.fanout) for name, _ in TEXT_INDEXES.values()
    }
    if not tail and not any(stale.values()):
        return dataset, report
    if len(tail) > 1:
        _compact_only(dataset, tail)
        dataset = dataset_at(dataset.uri)
    report.folded_fragments = len(tail)
    for column, (name, _) in TEXT_INDEXES.items():
        segments = dataset.stats.index_stats(name)["num_indexed_rows_per_delta"]
        merge = max(segments_to_merge(segments, unindexed_rows, policy.fanout), stale[name])
        dataset.optimize.optimize_indices(index_names=[name], num_indices_to_merge=merge)
        dataset = dataset_at(dataset.uri)
        report.merged_segments += merge
        if merge and column == "text":
            covered = _newest_segment_fragments(dataset, name)
            if len(covered) > 1:
                _compact_only(dataset, covered)
                dataset = dataset_at(dataset.uri)
                report.rewritten_fragments += len(covered)
    return dataset, report


def _stale_segments(dataset, name: str, fanout: int) -> int:
    """How many of the newest segments of a text index to merge so that none counts mostly
    deleted rows in its BM25 statistics (see core.files.index_policy.stale_segments_to_merge)."""
    stats = dataset.stats.index_stats(name)
    counted = [segment.get("num_docs", 0) for segment in stats.get("segments", ())]
    return stale_segments_to_merge(stats["num_indexed_rows_per_delta"], counted, fanout)


def fragment_infos(dataset) -> list[FragmentInfo]:
    """Each fragment's rows and deletions, and whether every text index covers it."""
    covered: set[int] | None = None
    for name, _ in TEXT_INDEXES.values():
        ids = {
            int(i)
            for desc in dataset.describe_indices()
            if desc.name == name
            for segment in desc.segments
            for i in segment.fragment_ids
        }
        covered = ids if covered is None else covered & ids
    infos = []
    for fragment in dataset.get_fragments():
        meta = fragment.metadata
        deleted = meta.deletion_file.num_deleted_rows if meta.deletion_file else 0
        infos.append(
            FragmentInfo(meta.id, meta.physical_rows, deleted or 0, meta.id in (covered or set()))
        )
    return infos


def _newest_segment_fragments(dataset, name: str) -> list[int]:
    for desc in dataset.describe_indices():
        if desc.name == name and desc.segments:
            return sorted(int(i) for i in desc.segments[-1].fragment_ids)
    return []


def _compact_only(dataset, fragment_ids: list[int]) -> None:
    """Rewrite exactly these fragments (lance merges runs of them that no index splits)."""
    keep = set(fragment_ids)
    others = [f.fragment_id for f in dataset.get_fragments() if f.fragment_id not in keep]
    dataset.optimize.compact_files(
        target_rows_per_fragment=1 << 30,
        excluded_fragment_ids=others,
        materialize_deletions=True,
        materialize_deletions_threshold=0.0,
    )


def _missing_text_indexes(dataset) -> list[str]:
    names = {desc.name for desc in dataset.describe_indices()}
    return [column for column, (name, _) in TEXT_INDEXES.items() if name not in names]


def ensure_text_indexes(dataset) -> None:
    """Index every row of the text columns that have no index yet."""
    if dataset.count_rows() == 0:
        return
    for column in _missing_text_indexes(dataset):
        name, params = TEXT_INDEXES[column]
        dataset.create_scalar_index(column, "INVERTED", name=name, **params)


# --- old versions ---------------------------------------------------------------------------


def remove_old_versions(dataset, keep_seconds: float, now: float | None = None) -> tuple[int, int]:
    """Delete versions replaced more than `keep_seconds` ago, and the files only they used.

    Returns (versions removed, bytes removed).
    """
    now = time.time() if now is None else now
    history = [(v["version"], v["timestamp"].timestamp()) for v in dataset.versions()]
    doomed = versions_to_remove(history, now, keep_seconds)
    if not doomed:
        return 0, 0
    # Why delete_unverified: files no version lists are otherwise kept for 7 days in case a
    # write is still under way; every writer holds the index lock, so none is.
    stats = dataset.cleanup_old_versions(
        versions=doomed, delete_unverified=True, error_if_tagged_old_versions=False
    )
    return int(stats.old_versions), int(stats.bytes_removed)


# --- the whole pass -------------------------------------------------------------------------


def maintain(
    uri: str, policy: MaintenancePolicy, *, vectors: bool = True, now: float | None = None
) -> MaintenanceReport:
    """Everything at once: fold unindexed rows, rewrite mostly-deleted fragments, keep the vector
    index in step with the row count (when `vectors`), remove old versions."""

    dataset = open_dataset(uri)
    if dataset is None:
        return MaintenanceReport()
    dataset, report = fold_new_rows(dataset, policy, force=True)
    dataset, rewritten = rewrite_wasteful(dataset)
    report.rewritten_fragments += rewritten
    if vectors:
        report.vector_index = update_vector_index(dataset_at(uri), policy)
    report.versions_removed, report.bytes_removed = remove_old_versions(
        dataset_at(uri), policy.keep_versions_seconds, now
    )
    return report


def update_vector_index(dataset, policy: MaintenancePolicy) -> str:
    """An ANN index on the vector column from `ann_min_rows` rows, none below (a flat scan is
    exact and fast enough there). Rows added since it was trained are added to it; it is
    trained again once the table has doubled since."""
    rows = dataset.count_rows()
    indexed = {desc.name: desc for desc in dataset.describe_indices()}
    if rows < policy.ann_min_rows:
        if VECTOR_INDEX in indexed:
            dataset.drop_index(VECTOR_INDEX)
            return "dropped"
        return "none"
    if VECTOR_INDEX not in indexed:
        build_vector_index(dataset, rows)
        return "built"
    # Why: without it lance prints a deprecation warning about centroids to the user's stderr;
    # the counts read here do not need them.
    os.environ.setdefault("LANCE_INCLUDE_VECTOR_CENTROIDS", "false")
    stats = dataset.stats.index_stats(VECTOR_INDEX)
    trained = int(stats.get("num_indexed_rows") or 0)
    unindexed = int(stats.get("num_unindexed_rows") or 0)
    if trained and rows >= 2 * trained:
        build_vector_index(dataset, rows)
        return "built"
    if unindexed:
        dataset.optimize.optimize_indices(index_names=[VECTOR_INDEX], num_indices_to_merge=1)
        return "updated"
    return "current"


def build_vector_index(dataset, rows: int) -> None:
    """IVF partitions of ~4k rows, each an HNSW graph over 8-bit scalar-quantized vectors."""
    dataset.create_index(
        VECTOR_COLUMN,
        VECTOR_INDEX_TYPE,
        name=VECTOR_INDEX,
        metric="cosine",
        replace=True,
        num_partitions=max(1, rows // 4096),
    )


def has_vector_index(dataset) -> bool:
    return any(desc.name == VECTOR_INDEX for desc in dataset.describe_indices())
