"""Hybrid recall: vector (cosine) and full-text (BM25) candidates, fused, then neighbours and bonuses."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass
from datetime import datetime, timezone

from memctl.config import RecallSettings, Store
from memctl.core.files.memory import parse_time
from memctl.core.ports import Index, MemoryFilter, Row
from memctl.core.recall.evidence import (
    cosine_scale,
)
from memctl.core.recall.query import ParsedQuery, parse_query
from memctl.core.recall.ranking import (
    contains_identifier,
    sequence_neighbours,
)
from memctl.integrations.word_frequency import zipf
from memctl.service.after_reply import later
from memctl.service.retrieval.embedding import index_model, model_settings
from memctl.service.retrieval.explain import OUTSIDE_DATES, Trace
from memctl.service.retrieval.hits import (
    Evidence,
    Hit,
    attach_neighbours,
    select_hits,
)
from memctl.service.retrieval.index_guard import read_repairing, verify_index
from memctl.service.retrieval.indexing import open_index
from memctl.service.retrieval.query_vectors import start_query_embedding
from memctl.service.retrieval.request import RecallRequest
from memctl.service.retrieval.stages import (
    NOTES,
    Candidates,
    Ranking,
    Retrieved,
    Sessions,
    date_cut,
    fuse,
    identifier,
    run_stages,
)
from memctl.service.retrieval.text_prefetch import take_prefetched
from memctl.service.retrieval.timing import (
    explicit_window,
    iso,
    query_window,
    telling_window,
)
from memctl.store.access import record_access


def build_filter(
    types=None,
    tags=None,
    agent=None,
    include_private: bool = True,
    bounds: tuple[datetime | None, datetime | None] = (None, None),
) -> MemoryFilter:
    since, until = bounds
    return MemoryFilter(
        types=tuple(types or ()),
        tags=tuple(tags or ()),
        agent=agent or None,
        scope=None if include_private else "project",
        created_since=None if since is None else iso(since),
        created_until=None if until is None else iso(until),
    )


def recall_one_store(
    store: Store,
    request: RecallRequest,
    *,
    k: int | None = None,
    query_vector: Future | None = None,
    trace: Trace | None = None,
    weigh_meaning: bool = True,
) -> list[Hit]:
    """At most `k` (else the request's, else recall.k) memories of this one store about the
    request's query, best first; none when nothing is relevant enough. The faces call the
    use-case (service.retrieval.use_case.recall), which checks the request, syncs, reads the
    user store too and merges; this is its one-store step, run on an index already synced.

    `query_vector` may come from start_query_embedding(), begun before the caller's sync. The
    floor is the request's (its purpose's), else this store's recall.min_relevance. `trace`,
    if given, is filled with each candidate's score after each stage (--explain). A hit's
    relevance weighs its cosine to the query in every mode, bm25 included, so it means the
    same in each; `weigh_meaning=False` weighs its words only (no model is loaded).
    """
    k = k if k is not None else request.k if request.k is not None else store.settings.recall.k
    query, mode = request.query, request.mode
    # Why: loading the ONNX model overlaps with opening lance (~0.3 s).
    if query_vector is None and (mode != "bm25" or weigh_meaning):
        query_vector = start_query_embedding(query, model_settings(store))
    floor = request.floor()
    floor = store.settings.recall.min_relevance if floor is None else floor
    bounds = explicit_window(request.since, request.until)
    where = build_filter(
        request.types, request.tags, request.agent, request.include_private, bounds
    )
    options = _Options(
        floor, request.include_superseded, request.with_neighbours, bounds, request.as_of, trace
    )
    archived = request.include_archived
    return read_repairing(
        store,
        lambda: _search(store, query, k, mode, where, archived, query_vector, options),
        archive=archived,
    )


@dataclass(frozen=True)
class _Options:
    """What recall was asked beyond the search itself: the relevance floor, superseded
    memories, neighbours as context, the explicit date bounds and the time `now` means."""

    floor: float
    include_superseded: bool
    with_neighbours: bool
    bounds: tuple[datetime | None, datetime | None]
    as_of: str | datetime | None
    trace: Trace | None = None


def _search(
    store: Store,
    query: str,
    k: int,
    mode: str,
    where: MemoryFilter,
    include_archived: bool,
    query_vector: Future | None,
    options: _Options,
) -> list[Hit]:
    verify_index(store)
    if include_archived:
        verify_index(store, archive=True)
    settings = store.settings.recall
    trace = options.trace
    # Why: archived memories have their own table; the main one never holds them.
    indexes: list[Index] = [open_index(store)]
    if include_archived:
        indexes.append(open_index(store, archive=True))
    indexes = [index for index in indexes if index.exists()]
    if not indexes:
        if query_vector is not None:
            query_vector.exception()  # Why: let the model thread finish before the process exits.
        return []
    pool = max(settings.candidates, k * 3)
    parsed = parse_query(query, zipf)

    text_rows = (
        _search_text(indexes, parsed.searchable, pool, where)
        if mode in ("hybrid", "bm25")
        else None
    )
    identifier_rows = [] if mode == "vector" else _identifier_rows(indexes, parsed, pool, where)
    window = (
        query_window(query, options.as_of, lambda anchor: _anchor_date(store, anchor))
        if mode == "hybrid"
        else None
    )
    store_size = sum(index.count() for index in indexes)
    # Why this late: what needs no query vector is done while the model embeds the query.
    vector = None
    if query_vector is not None:
        vector = query_vector.result()
    vector_rows = (
        _search_vector(indexes, vector, pool, where)
        if vector is not None and mode in ("hybrid", "vector")
        else None
    )
    # Why: the words that name a time are answered by the date, not by the memory's words.
    window = telling_window(window, [*(text_rows or ()), *(vector_rows or ())])
    parsed = parsed.with_window(window, zipf)
    weights = dict(parsed.weights)
    if trace is not None:
        trace.query = parsed.to_dict()

    retrieved = Retrieved.of(
        vector_rows, text_rows, identifier_rows, weights, store_size, parsed.cjk
    )
    chunk_scores, top_single = fuse(retrieved, settings)
    if trace is not None:
        trace.record("fusion", Candidates.best_chunks(chunk_scores, retrieved).scores)
    candidates = Candidates.best_chunks(identifier(chunk_scores, retrieved), retrieved)
    if trace is not None and identifier_rows:
        trace.record("identifier", candidates.scores)
    sessions = session_neighbours(indexes, candidates, settings) if mode == "hybrid" else Sessions()
    ranking = Ranking(parsed, settings, mode, top_single, sessions)
    candidates = run_stages(candidates, ranking, trace.record if trace is not None else None)
    scores, rows, sources = candidates.scores, candidates.rows, candidates.sources

    ranked = sorted(scores, key=lambda i: (-scores[i], i))
    if trace is not None:
        trace.order = list(ranked)
    evidence = Evidence(
        weights,
        vector,
        vector_rows,
        {row["id"] for row in identifier_rows},
        cosine_scale(index_model(store).id),
        parsed.cjk,
        window,
    )
    hits = select_hits(
        store,
        indexes,
        ranked,
        rows,
        scores,
        sources,
        evidence,
        k,
        options.floor,
        options.include_superseded,
        trace,
    )
    if options.bounds != (None, None):
        hits, outside = date_cut(hits, options.bounds)
        if trace is not None:
            for hit in outside:
                trace.cut[hit.id] = OUTSIDE_DATES
    if options.with_neighbours:
        attach_neighbours(store, indexes, hits)
    _count_access(store, hits)
    return hits


def _anchor_date(store: Store, anchor: str) -> datetime | None:
    """The date of the memory an event phrase ("the migration") clearly names, if one does."""
    asked = RecallRequest(store, anchor, k=1, mode="bm25", min_relevance=0.5, sync=False)
    found = recall_one_store(store, asked, weigh_meaning=False)
    return parse_time(found[0].date) if found else None


def _identifier_rows(
    indexes: list[Index], query: ParsedQuery, pool: int, where: MemoryFilter
) -> list[Row]:
    """Rows that contain an exact identifier of the query verbatim."""
    return [
        row
        for identifier in query.identifiers
        for row in _search_text(indexes, identifier, pool, where)
        if contains_identifier(row["text"], identifier)
    ]


def session_neighbours(
    indexes: list[Index], candidates: Candidates, settings: RecallSettings
) -> Sessions:
    """What the neighbours stage needs from the index, read before the stages run: the order
    of the candidates' sessions and the rows of the neighbours that are not candidates."""
    weights = settings.neighbour_weights
    if not any(weights) or settings.profile == NOTES:
        return Sessions()
    rows = candidates.rows
    sequences = sorted({row["sequence"] for row in rows.values() if row.get("sequence")})
    if not sequences:
        return Sessions()
    members: dict[str, list[tuple[str, str]]] = {}
    for index in indexes:
        for row in index.sequence_rows(sequences):
            members.setdefault(row["sequence"], []).append((row.get("created") or "", row["id"]))
    ordered = {seq: [memory_id for _, memory_id in sorted(items)] for seq, items in members.items()}
    near = sequence_neighbours(ordered)
    reached = {
        other
        for memory_id in candidates.scores
        for other, distance in near.get(memory_id, ())
        if distance <= len(weights)
    }
    missing = [memory_id for memory_id in sorted(reached) if memory_id not in rows]
    found: dict[str, dict] = {}
    for index in indexes:
        for row in index.rows_for_ids(missing):
            if int(row.get("chunk") or 0) == 0:
                found.setdefault(row["id"], row)
    return Sessions(near, found)


def _count_access(store: Store, hits: list[Hit]) -> None:
    """Access statistics go to the state area; the memory files are never touched by a read."""
    ids, now = [hit.id for hit in hits], datetime.now(timezone.utc)

    def count() -> None:
        try:
            record_access(store.state_dir, ids, now)
        except OSError:
            pass  # Why: a read-only store still answers recall; only its statistics stand still.

    later(count)


def _search_vector(
    indexes: list[Index], query_vector, limit: int, where: MemoryFilter
) -> list[Row]:
    found = [row for index in indexes for row in index.search_vector(query_vector, limit, where)]
    return found if len(indexes) == 1 else sorted(found, key=lambda row: row["_distance"])[:limit]


def _search_text(indexes: list[Index], query: str, limit: int, where: MemoryFilter) -> list[Row]:
    found = [row for index in indexes for row in _text_rows(index, query, limit, where)]
    return found if len(indexes) == 1 else sorted(found, key=lambda row: -row["_score"])[:limit]


def _text_rows(index: Index, query: str, limit: int, where: MemoryFilter) -> list[Row]:
    """The full-text search's rows, from the server's prefetch when it searched the same."""
    rows = take_prefetched(index, query, limit, where)
    return rows if rows is not None else index.search_text(query, limit, where)
