"""Hybrid recall: vector (cosine) and full-text (BM25) candidates, fused, then neighbours and bonuses."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass
from datetime import datetime, timezone

from memctl.config import RecallSettings, Store
from memctl.core.errors import UsageError
from memctl.core.evidence import (
    cosine_scale,
    coverage,
    matched_terms,
    text_stems,
)
from memctl.core.evidence import weighted_match as prior_match
from memctl.core.fusion import (
    FusionWeights,
    adaptive_weights,
    blended_lexical,
    lexical_ties,
    lexical_trust,
    prior_share,
)
from memctl.core.memory import parse_time
from memctl.core.ports import Index, MemoryFilter, Row
from memctl.core.query import ParsedQuery, parse_query
from memctl.core.ranking import (
    contains_identifier,
    normalized_scores,
    reciprocal_rank_fusion,
    score_fusion,
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
from memctl.service.retrieval.indexing import open_index, sync_index
from memctl.service.retrieval.query_vectors import start_query_embedding
from memctl.service.retrieval.stages import Candidates, Ranking, run_stages
from memctl.service.retrieval.text_prefetch import take_prefetched
from memctl.service.retrieval.timing import (
    explicit_window,
    in_window,
    iso,
    query_window,
    telling_window,
)
from memctl.store.access import record_access

MODES = ("hybrid", "bm25", "vector")
# recall.fusion -> how each retriever's scores are scaled before the weighted sum ("rrf" uses ranks).
FUSION_SCALES = {"adaptive": "stdev", "zscore": "stdev", "score": "range"}
# Why: an exact identifier hit must outrank anything fusion and neighbours can produce. A list
# scaled by its standard deviation tops out near sqrt(candidates), neighbours add at most as much.
IDENTIFIER_BONUS = 1000.0


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
    query: str,
    k: int | None = None,
    mode: str = "hybrid",
    types: list[str] | None = None,
    tags: list[str] | None = None,
    agent: str | None = None,
    include_archived: bool = False,
    sync: bool = True,
    query_vector: Future | None = None,
    include_private: bool = True,
    *,
    min_relevance: float | None = None,
    include_superseded: bool = False,
    with_neighbours: bool = False,
    since: str | datetime | None = None,
    until: str | datetime | None = None,
    as_of: str | datetime | None = None,
    trace: Trace | None = None,
    weigh_meaning: bool = True,
) -> list[Hit]:
    """At most `k` memories of one store about `query`, best first; none when nothing is
    relevant enough. The faces call the use-case (service.retrieval.use_case.recall), which
    reads the user store too and sets the floor by purpose; this is its one-store step.

    `k` defaults to recall.k; `query_vector` may come from start_query_embedding(), begun
    before the caller's own sync. `include_private=False` leaves out private memories: what an
    agent's context gets unless the user shares them (see service.privacy).
    `min_relevance` overrides recall.min_relevance (0 keeps every candidate). A memory that a
    newer one supersedes is left out unless `include_superseded`. `since`/`until` keep only
    memories dated in [since, until); a time expression in the query ("last week", "in May",
    上周) favours memories of that time, resolved against `as_of` (default: now).
    `trace`, if given, is filled with each candidate's score after each stage (--explain).
    A hit's relevance weighs its cosine to the query in every mode, bm25 included, so it means
    the same in each; `weigh_meaning=False` weighs its words only (no model is loaded).
    """
    k = store.settings.recall.k if k is None else k
    if mode not in MODES:
        raise UsageError(f"Unknown recall mode '{mode}'. Choose one of: {', '.join(MODES)}.")
    if k < 1:
        raise UsageError("-k must be at least 1.")
    if not query.strip():
        raise UsageError("The query is empty.")
    # Why: loading the ONNX model overlaps with syncing and importing lance (both ~0.3 s).
    if query_vector is None and (mode != "bm25" or weigh_meaning):
        query_vector = start_query_embedding(query, model_settings(store))
    if sync:
        sync_index(store)
    if sync and include_archived:
        sync_index(store, archive=True)
    floor = store.settings.recall.min_relevance if min_relevance is None else min_relevance
    bounds = explicit_window(since, until)
    where = build_filter(types, tags, agent, include_private, bounds)
    options = _Options(floor, include_superseded, with_neighbours, bounds, as_of, trace)
    return read_repairing(
        store,
        lambda: _search(store, query, k, mode, where, include_archived, query_vector, options),
        archive=include_archived,
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

    chunk_rows: dict[tuple[str, int], dict] = {}
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

    chunk_scores, top_single = _fuse(
        settings, vector_rows, text_rows, chunk_rows, weights, store_size
    )
    if trace is not None:
        trace.record("fusion", _best_chunks({}, chunk_rows, chunk_scores))
    for row in identifier_rows:
        key = _chunk_key(row, chunk_rows)
        chunk_scores[key] = chunk_scores.get(key, 0.0) + IDENTIFIER_BONUS

    sources: dict[str, set[str]] = {}
    for name, found in (
        ("vector", vector_rows),
        ("bm25", text_rows),
        ("identifier", identifier_rows),
    ):
        for row in found or ():
            sources.setdefault(row["id"], set()).add(name)
    rows: dict[str, dict] = {}  # memory id -> the row of its best chunk
    candidates = Candidates(_best_chunks(rows, chunk_rows, chunk_scores), rows, sources)
    if trace is not None and identifier_rows:
        trace.record("identifier", candidates.scores)
    ranking = Ranking(parsed, settings, mode, top_single, indexes)
    run_stages(candidates, ranking, trace.record if trace is not None else None)
    scores = candidates.scores

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
        inside = [hit for hit in hits if in_window(hit.date, *options.bounds)]
        if trace is not None:
            for hit in set(hits) - set(inside):
                trace.cut[hit.id] = OUTSIDE_DATES
        hits = inside
    if options.with_neighbours:
        attach_neighbours(store, indexes, hits)
    _count_access(store, hits)
    return hits


def _fuse(
    settings: RecallSettings,
    vector_rows: list[dict] | None,
    text_rows: list[dict] | None,
    chunk_rows: dict,
    weights: dict[str, float],
    store_size: int,
) -> tuple[dict[tuple[str, int], float], float]:
    """One score per chunk from the retrievers that ran (None: that side did not run), and the
    score the top candidate of the weaker retriever gets alone: the scale of the bonuses."""
    lists: list[list[tuple[tuple[str, int], float]]] = []
    names: list[str] = []
    base = FusionWeights(bm25=settings.bm25_weight, vector=settings.vector_weight)
    if vector_rows is not None:
        lists.append([(_chunk_key(row, chunk_rows), 1.0 - row["_distance"]) for row in vector_rows])
        names.append("vector")
    if text_rows is not None:
        lists.append([(_chunk_key(row, chunk_rows), row["_score"]) for row in text_rows])
        names.append("bm25")
    fusion = settings.fusion
    if fusion == "rrf":
        rank_k = settings.rrf_k
        fixed = [getattr(base, name) for name in names]
        fused = reciprocal_rank_fusion(
            [[key for key, _ in scored] for scored in lists], fixed, rank_k
        )
        return fused, min(fixed) / (rank_k + 1)
    normalized = [normalized_scores(scored, FUSION_SCALES[fusion]) for scored in lists]
    if text_rows is not None:
        share = prior_share(store_size, settings.prior_half_size)
        if share > 0:
            normalized[-1] = _with_prior(normalized[-1], text_rows, chunk_rows, weights, share)
    chosen = base
    if fusion == "adaptive" and len(lists) == 2 and settings.lexical_ties:
        matched = {
            key: frozenset(matched_terms(weights, text_stems(chunk_rows[key]["text"])))
            for key, _ in lists[1]
        }
        normalized[-1] = lexical_ties(normalized[-1], matched, weights, settings.coverage_full)
    if fusion == "adaptive" and len(lists) == 2:
        best_coverage = max(
            (coverage(weights, text_stems(chunk_rows[key]["text"])) for key, _ in lists[1][:5]),
            default=0.0,
        )
        evidence = adaptive_weights(
            base,
            best_coverage,
            [score for _, score in lists[0]],
            settings.peak_gain,
            settings.coverage_chance,
        )
        # Why blended by store size: per-query evidence wins where BM25's statistics are noise
        # (small stores, across scripts) and lost on LoCoMo's stores of 400-700 turns, where the
        # fixed weights were better. The half size is the word-frequency prior's; the share
        # falls off with the square of the size, so a store of thousands is all fixed weights.
        share = prior_share(store_size**2, settings.prior_half_size**2)
        trust = lexical_trust(best_coverage, settings.coverage_chance, settings.coverage_full)
        chosen = FusionWeights(
            bm25=min(base.bm25 + share * (evidence.bm25 - base.bm25), base.bm25 * trust),
            vector=base.vector + share * (evidence.vector - base.vector),
        )
    fixed = [getattr(chosen, name) for name in names]
    # Why only retrievers that found something and count: a side with no candidates or no
    # weight (no query word matched) would make every bonus vanish, the date's included.
    tops = [
        weight * max(scores.values())
        for scores, weight in zip(normalized, fixed, strict=False)
        if scores and weight > 0
    ]
    return score_fusion(normalized, fixed), max(min(tops, default=0.0), 1e-9)


def _with_prior(bm25, text_rows, chunk_rows, weights, share) -> dict:
    """BM25 blended with a match score that weighs words by the frequency-list prior."""
    keys = [_chunk_key(row, chunk_rows) for row in text_rows]
    lengths = [len(chunk_rows[key]["text"].split()) for key in keys]
    average = sum(lengths) / len(lengths) if lengths else 1.0
    matched = [(key, prior_match(weights, chunk_rows[key]["text"], average)) for key in keys]
    return blended_lexical(bm25, normalized_scores(matched, "stdev"), share)


def _anchor_date(store: Store, anchor: str) -> datetime | None:
    """The date of the memory an event phrase ("the migration") clearly names, if one does."""
    found = recall_one_store(
        store, anchor, k=1, mode="bm25", sync=False, min_relevance=0.5, weigh_meaning=False
    )
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


def _chunk_key(row: dict, chunk_rows: dict[tuple[str, int], dict]) -> tuple[str, int]:
    key = (row["id"], int(row.get("chunk") or 0))
    chunk_rows.setdefault(key, row)
    return key


def _best_chunks(rows: dict[str, dict], chunk_rows: dict, chunk_scores: dict) -> dict[str, float]:
    """A memory scores as its best chunk, and is represented by that chunk's row."""
    best: dict[str, tuple[float, int]] = {}  # id -> (score, -chunk): ties go to the earlier chunk
    for (memory_id, chunk), score in chunk_scores.items():
        best[memory_id] = max(best.get(memory_id, (score, -chunk)), (score, -chunk))
    for memory_id, (_, negative_chunk) in best.items():
        rows[memory_id] = chunk_rows[(memory_id, -negative_chunk)]
    return {memory_id: score for memory_id, (score, _) in best.items()}


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
