"""Hybrid recall: vector (cosine) and full-text (BM25) candidates, fused by reciprocal rank."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memctl.config import Store
from memctl.core.memory import Memory
from memctl.core.ranking import contains_identifier, query_identifiers, reciprocal_rank_fusion
from memctl.errors import InvalidMemoryFile, UsageError
from memctl.service.indexing import open_index, sync_index
from memctl.store.files import read_memory
from memctl.store.index import sql_quote

MODES = ("hybrid", "bm25", "vector")
# Why: an exact identifier hit must outrank anything fusion can produce (max ~2/61 per list).
IDENTIFIER_BONUS = 1.0


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": str(self.path),
            "title": self.title,
            "type": self.type,
            "tags": self.tags,
            "score": round(self.score, 6),
            "body": self.body,
        }


def build_filter(types=None, tags=None, agent=None, include_archived=False) -> str | None:
    clauses = []
    if not include_archived:
        clauses.append("archived = false")
    if types:
        clauses.append("type IN (" + ",".join(sql_quote(t) for t in types) + ")")
    for tag in tags or ():
        clauses.append(f"tags LIKE {sql_quote('%,' + tag.replace('%', '').replace('_', '_') + ',%')}")
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
) -> list[Hit]:
    if mode not in MODES:
        raise UsageError(f"Unknown recall mode '{mode}'. Choose one of: {', '.join(MODES)}.")
    if k < 1:
        raise UsageError("-k must be at least 1.")
    if not query.strip():
        raise UsageError("The query is empty.")
    # Why: loading the ONNX model overlaps with syncing and importing lance (both ~0.3 s).
    query_vector = _embed_in_background(query) if mode in ("hybrid", "vector") else None
    if sync:
        sync_index(store)
    settings = store.section("recall")
    index = open_index(store)
    if not index.exists():
        return []
    where = build_filter(types, tags, agent, include_archived)
    pool = max(int(settings.get("candidates") or 50), k * 3)

    rankings: list[list[str]] = []
    weights: list[float] = []
    rows: dict[str, dict] = {}
    sources: dict[str, list[str]] = {}

    def take(name: str, found: list[dict]) -> list[str]:
        ranking = []
        for row in found:
            memory_id = row["id"]
            if memory_id in ranking:
                continue  # several chunks of one memory: its best one counts
            ranking.append(memory_id)
            rows.setdefault(memory_id, row)
            sources.setdefault(memory_id, []).append(name)
        return ranking

    if mode in ("hybrid", "vector"):
        rankings.append(take("vector", index.search_vector(query_vector.result(), pool, where)))
        weights.append(float(settings.get("vector_weight", 1.0)))
    if mode in ("hybrid", "bm25"):
        rankings.append(take("bm25", index.search_text(query, pool, where)))
        weights.append(float(settings.get("bm25_weight", 1.0)))

    scores = reciprocal_rank_fusion(rankings, weights, int(settings.get("rrf_k", 60)))
    if mode != "vector":
        for identifier in query_identifiers(query):
            for row in index.search_text(identifier, pool, where):
                rows.setdefault(row["id"], row)
                if contains_identifier(row["text"], identifier):
                    scores[row["id"]] = scores.get(row["id"], 0.0) + IDENTIFIER_BONUS
                    sources.setdefault(row["id"], []).append("identifier")

    ranked = sorted(scores, key=lambda i: (-scores[i], i))[:k]
    return [hit for hit in (_to_hit(store, rows[i], scores[i], sources.get(i, [])) for i in ranked) if hit]


def _embed_in_background(query: str) -> Future:
    def run():
        from memctl.integrations.query_embedder import get_query_embedder

        return get_query_embedder().embed_query(query)

    future: Future = Future()

    def target():
        try:
            future.set_result(run())
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller by .result()
            future.set_exception(exc)

    threading.Thread(target=target, daemon=True).start()
    return future


def _to_hit(store: Store, row: dict, score: float, sources: list[str]) -> Hit | None:
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
    )
