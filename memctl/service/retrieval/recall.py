"""Hybrid recall: vector (cosine) and full-text (BM25) candidates, fused, then neighbours and bonuses."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memctl.config import Store
from memctl.core.chunking import split_chunks
from memctl.core.decay import DAY_SECONDS, recency_bonus, recency_settings
from memctl.core.errors import InvalidMemoryFile, UsageError
from memctl.core.memory import Memory, parse_time
from memctl.core.ranking import (
    contains_identifier,
    normalized_scores,
    query_identifiers,
    reciprocal_rank_fusion,
    score_fusion,
    sequence_neighbours,
    spread_to_neighbours,
)
from memctl.core.text_tokens import searchable_text
from memctl.service.retrieval.embedding import index_model
from memctl.service.retrieval.indexing import MODEL_ID, open_index, sync_index
from memctl.store.access import record_access
from memctl.store.files import read_memory
from memctl.store.index import sql_quote

MODES = ("hybrid", "bm25", "vector")
# recall.fusion -> how each retriever's scores are scaled before the weighted sum ("rrf" uses ranks).
FUSION_SCALES = {"zscore": "stdev", "score": "range"}
# Why: an exact identifier hit must outrank anything fusion and neighbours can produce. A list
# scaled by its standard deviation tops out near sqrt(candidates), neighbours add at most as much.
IDENTIFIER_BONUS = 1000.0


@dataclass
class Hit:
    id: str
    path: Path
    title: str
    type: str
    tags: list[str]
    score: float
    body: str
    memory: Memory
    sources: list[str] = field(default_factory=list)
    snippet: str | None = None  # the best-matching chunk of a long (chunked) memory

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": str(self.path),
            "title": self.title,
            "type": self.type,
            "tags": self.tags,
            "score": round(self.score, 6),
            "body": self.body,
            "snippet": self.snippet,
        }


def build_filter(types=None, tags=None, agent=None) -> str | None:
    clauses = []
    if types:
        clauses.append("type IN (" + ",".join(sql_quote(t) for t in types) + ")")
    for tag in tags or ():
        clauses.append(
            f"tags LIKE {sql_quote('%,' + tag.replace('%', '').replace('_', '_') + ',%')}"
        )
    if agent:
        clauses.append(f"agent = {sql_quote(agent)}")
    return " AND ".join(clauses) or None


def recall(
    store: Store,
    query: str,
    k: int = 5,
    mode: str = "hybrid",
    types: list[str] | None = None,
    tags: list[str] | None = None,
    agent: str | None = None,
    include_archived: bool = False,
    sync: bool = True,
    query_vector: Future | None = None,
) -> list[Hit]:
    """`query_vector` may come from start_query_embedding(), begun before the caller's own sync."""
    if mode not in MODES:
        raise UsageError(f"Unknown recall mode '{mode}'. Choose one of: {', '.join(MODES)}.")
    if k < 1:
        raise UsageError("-k must be at least 1.")
    if not query.strip():
        raise UsageError("The query is empty.")
    # Why: loading the ONNX model overlaps with syncing and importing lance (both ~0.3 s).
    if query_vector is None and mode in ("hybrid", "vector"):
        query_vector = start_query_embedding(query, index_model(store).id)
    if sync:
        sync_index(store)
    if sync and include_archived:
        sync_index(store, archive=True)
    settings = store.section("recall")
    # Why: archived memories have their own table; the main one never holds them.
    indexes = [open_index(store)] + ([open_index(store, archive=True)] if include_archived else [])
    indexes = [index for index in indexes if index.exists()]
    if not indexes:
        if query_vector is not None:
            query_vector.exception()  # Why: let the model thread finish before the process exits.
        return []
    where = build_filter(types, tags, agent)
    pool = max(int(settings.get("candidates") or 50), k * 3)

    rows: dict[str, dict] = {}  # memory id -> the row of its best chunk
    chunk_rows: dict[tuple[str, int], dict] = {}
    text_rows = (
        _search_text(indexes, searchable_text(query), pool, where)
        if mode in ("hybrid", "bm25")
        else None
    )
    vector = query_vector.result() if mode in ("hybrid", "vector") else None
    vector_rows = _search_vector(indexes, vector, pool, where) if vector is not None else None
    identifier_rows = [] if mode == "vector" else _identifier_rows(indexes, query, pool, where)

    chunk_scores, top_single = _fuse(settings, vector_rows, text_rows, chunk_rows)
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
    scores = _best_chunks(rows, chunk_rows, chunk_scores)
    spread = [float(w) for w in settings.get("neighbour_weights") or ()]
    if mode == "hybrid" and any(spread):  # Why: bm25/vector modes stay the plain retrievers
        scores = _spread_to_neighbours(indexes, scores, rows, spread, sources)
    _add_recency_bonus(scores, rows, settings, top_single)

    ranked = sorted(scores, key=lambda i: (-scores[i], i))[:k]
    hits = [
        hit
        for hit in (_to_hit(store, rows[i], scores[i], sources.get(i, set())) for i in ranked)
        if hit
    ]
    _count_access(store, hits)
    return hits


def _fuse(
    settings: dict, vector_rows: list[dict] | None, text_rows: list[dict] | None, chunk_rows: dict
) -> tuple[dict[tuple[str, int], float], float]:
    """One score per chunk from the retrievers that ran (None: that side did not run), and the
    score the top candidate of the weaker retriever gets alone: the scale of the bonuses."""
    lists, weights = [], []
    if vector_rows is not None:
        lists.append([(_chunk_key(row, chunk_rows), 1.0 - row["_distance"]) for row in vector_rows])
        weights.append(float(settings.get("vector_weight", 0.4)))
    if text_rows is not None:
        lists.append([(_chunk_key(row, chunk_rows), row["_score"]) for row in text_rows])
        weights.append(float(settings.get("bm25_weight", 0.6)))
    fusion = settings.get("fusion", "zscore")
    if fusion == "rrf":
        rank_k = int(settings.get("rrf_k", 60))
        fused = reciprocal_rank_fusion(
            [[key for key, _ in scored] for scored in lists], weights, rank_k
        )
        return fused, min(weights) / (rank_k + 1)
    if fusion not in FUSION_SCALES:
        raise UsageError(
            f"config.yaml: recall.fusion is '{fusion}'; expected one of: "
            f"{', '.join([*FUSION_SCALES, 'rrf'])}."
        )
    normalized = [normalized_scores(scored, FUSION_SCALES[fusion]) for scored in lists]
    tops = [
        weight * max(scores.values(), default=1.0)
        for scores, weight in zip(normalized, weights, strict=False)
    ]
    return score_fusion(normalized, weights), min(tops)


def _identifier_rows(indexes, query: str, pool: int, where: str | None) -> list[dict]:
    """Rows that contain an exact identifier of the query verbatim."""
    return [
        row
        for identifier in query_identifiers(query)
        for row in _search_text(indexes, identifier, pool, where)
        if contains_identifier(row["text"], identifier)
    ]


def _spread_to_neighbours(indexes, scores, rows, weights, sources) -> dict[str, float]:
    """Memories written just before or after a candidate in the same session share its score."""
    sequences = sorted({row["sequence"] for row in rows.values() if row.get("sequence")})
    if not sequences:
        return scores
    members: dict[str, list[tuple[str, str]]] = {}
    for index in indexes:
        for row in index.sequence_rows(sequences):
            members.setdefault(row["sequence"], []).append((row.get("created") or "", row["id"]))
    ordered = {seq: [memory_id for _, memory_id in sorted(items)] for seq, items in members.items()}
    spread = spread_to_neighbours(scores, sequence_neighbours(ordered), weights)
    missing = [memory_id for memory_id in spread if memory_id not in rows]
    for index in indexes:
        for row in index.rows_for_ids(missing):
            if int(row.get("chunk") or 0) == 0:
                rows.setdefault(row["id"], row)
    for memory_id in missing:
        sources.setdefault(memory_id, set()).add("neighbour")
    return {memory_id: score for memory_id, score in spread.items() if memory_id in rows}


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


def _add_recency_bonus(
    scores: dict[str, float], rows: dict[str, dict], settings: dict, top_rank: float
) -> None:
    """Fresh memories gain at most a share of one retriever's top score: added, never multiplied."""
    share, half_life = recency_settings(settings)
    if share <= 0:
        return
    now = datetime.now(timezone.utc)
    for memory_id in scores:
        row = rows[memory_id]
        created = parse_time(row.get("created") or row.get("updated"))
        if created is not None:
            age_days = (now - created).total_seconds() / DAY_SECONDS
            scores[memory_id] += recency_bonus(age_days, share * top_rank, half_life)


def _count_access(store: Store, hits: list[Hit]) -> None:
    """Access statistics go to the state area; the memory files are never touched by a read."""
    try:
        record_access(store.state_dir, [hit.id for hit in hits], datetime.now(timezone.utc))
    except OSError:
        pass  # Why: a read-only store still answers recall; only its statistics stand still.


def _search_vector(indexes, query_vector, limit: int, where: str | None) -> list[dict]:
    found = [row for index in indexes for row in index.search_vector(query_vector, limit, where)]
    return found if len(indexes) == 1 else sorted(found, key=lambda row: row["_distance"])[:limit]


def _search_text(indexes, query: str, limit: int, where: str | None) -> list[dict]:
    found = [row for index in indexes for row in index.search_text(query, limit, where)]
    return found if len(indexes) == 1 else sorted(found, key=lambda row: -row["_score"])[:limit]


def start_query_embedding(query: str, model: str = MODEL_ID) -> Future:
    """Embed the query in a thread, so loading the model overlaps other start-up work."""

    def run():
        from memctl.integrations.query_embedder import get_query_embedder

        return get_query_embedder(model=model).embed_query(query)

    # Why: numpy imported by two threads at once (this one via onnxruntime, the caller via lance)
    # can fail with "cannot load module more than once"; importing it here first rules that out.
    import numpy  # noqa: F401

    future: Future = Future()

    def target():
        try:
            future.set_result(run())
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller by .result()
            future.set_exception(exc)

    threading.Thread(target=target, daemon=True).start()
    return future


def _to_hit(store: Store, row: dict, score: float, sources: set[str]) -> Hit | None:
    """Read the file: it is the truth, the row only a cache."""
    try:
        memory = read_memory(store.root, row["path"])
    except (OSError, InvalidMemoryFile):
        return None
    return Hit(
        id=memory.id,
        path=store.root / row["path"],
        title=memory.display_title,
        type=memory.type,
        tags=list(memory.tags),
        score=score,
        body=memory.body,
        memory=memory,
        sources=sorted(set(sources)),
        snippet=_chunk_snippet(memory.body, int(row.get("chunk") or 0)),
    )


def _chunk_snippet(body: str, chunk: int) -> str | None:
    """The text of chunk `chunk` when the body is indexed in chunks; None for a whole body."""
    chunks = split_chunks(body.strip())
    return chunks[chunk] if len(chunks) > 1 and chunk < len(chunks) else None
