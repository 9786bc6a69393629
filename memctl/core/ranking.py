"""Ranking for hybrid recall: reciprocal-rank fusion, exact identifiers, bounded bonuses, MMR."""

from __future__ import annotations

import re
from collections.abc import Sequence

# Tokens a person types when they mean one exact thing: snake_case, camelCase, dotted or
# namespaced names, error codes, ticket numbers, versions with letters.
_IDENTIFIER = re.compile(
    r"""
    (?<![\w.-])
    (?:
        [A-Za-z_][\w]*_[\w]+                 # snake_case / SCREAMING_CASE / ERR_42
      | [a-z]+[A-Z][A-Za-z0-9]*              # camelCase
      | [A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*      # PascalCase with a second hump
      | [A-Za-z]+(?:-[A-Za-z]+)*[-#]?\d+[A-Za-z0-9-]*   # JIRA-123, TW-E4012, E1234, issue#42
      | \d+[A-Za-z][A-Za-z0-9]*              # 0x1f, 404NotFound
      | [A-Za-z_][\w]*(?:(?:\.|::)[A-Za-z_][\w]*)+(?:\(\))?   # pkg.module.func, ns::name
    )
    (?![\w-])
    """,
    re.VERBOSE,
)
_BACKTICKED = re.compile(r"`([^`\s]{2,})`")


def query_identifiers(query: str) -> list[str]:
    """Exact identifiers mentioned in a query, in order, without repeats."""
    found = _BACKTICKED.findall(query) + _IDENTIFIER.findall(query)
    seen: dict[str, None] = {}
    for token in found:
        token = token.strip(".,;:!?()[]{}\"'")
        if len(token) >= 3 and token.lower() not in seen:
            seen[token.lower()] = None
    return list(seen)


def contains_identifier(text: str, identifier: str) -> bool:
    """Whole-token, case-insensitive containment, so `user_id` does not match `user_ids`."""
    pattern = r"(?<![\w])" + re.escape(identifier) + r"(?![\w])"
    return re.search(pattern, text, flags=re.IGNORECASE) is not None


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[str]], weights: Sequence[float] | None = None, k: int = 60
) -> dict[str, float]:
    """Sum of weight / (k + rank) over the lists each id appears in (rank starts at 1)."""
    weights = weights or [1.0] * len(rankings)
    fused: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights):
        for rank, item in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + weight / (k + rank)
    return fused


def mmr_order(
    candidates: Sequence[str],
    relevance: dict[str, float],
    similarity,
    lambda_: float = 0.7,
    limit: int | None = None,
) -> list[str]:
    """Maximal marginal relevance: trade relevance against similarity to what is already picked.

    `similarity(a, b)` returns cosine similarity of two candidates.
    """
    pool = list(candidates)
    limit = len(pool) if limit is None else min(limit, len(pool))
    if not pool or lambda_ >= 1.0:
        return sorted(pool, key=lambda c: -relevance[c])[:limit]
    top = max(relevance[c] for c in pool) or 1.0
    picked: list[str] = []
    while pool and len(picked) < limit:
        def gain(c: str) -> float:
            redundancy = max((similarity(c, p) for p in picked), default=0.0)
            return lambda_ * relevance[c] / top - (1 - lambda_) * redundancy

        best = max(pool, key=gain)
        picked.append(best)
        pool.remove(best)
    return picked


def normalized_scores(scored: Sequence[tuple[str, float]]) -> dict[str, float]:
    """Scale one retriever's scores to [0, 1] over its own candidates (min-max).

    Why: BM25 scores are unbounded and cosines crowd into a narrow band; scaling each list to
    its own range lets a convex combination weigh them by how far apart candidates really are.
    """
    if not scored:
        return {}
    values = [score for _, score in scored]
    low, high = min(values), max(values)
    if high - low < 1e-12:
        return {item: 1.0 for item, _ in scored}
    return {item: (score - low) / (high - low) for item, score in scored}


def score_fusion(lists: Sequence[Sequence[tuple[str, float]]], weights: Sequence[float]) -> dict[str, float]:
    """Weighted sum of min-max normalized scores; an item missing from a list gets 0 there."""
    fused: dict[str, float] = {}
    for scored, weight in zip(lists, weights):
        for item, value in normalized_scores(scored).items():
            fused[item] = fused.get(item, 0.0) + weight * value
    return fused


def sequence_neighbours(sequences: dict[str, list[str]]) -> dict[str, list[tuple[str, int]]]:
    """For ordered sequences of ids, each id's neighbours with their distance (1 or 2)."""
    neighbours: dict[str, list[tuple[str, int]]] = {}
    for ordered in sequences.values():
        for position, item in enumerate(ordered):
            near = []
            for step in (-2, -1, 1, 2):
                other = position + step
                if 0 <= other < len(ordered):
                    near.append((ordered[other], abs(step)))
            neighbours[item] = near
    return neighbours


def spread_to_neighbours(
    scores: dict[str, float],
    neighbours: dict[str, list[tuple[str, int]]],
    weights: Sequence[float] = (0.4, 0.1),
) -> dict[str, float]:
    """Each candidate passes a share of its score to the memories written just before and after it.

    A statement and the turn that answers it are often found through only one of them; this lets
    the other follow. The share is bounded (weights[d-1] per distance d), so a neighbour can rise
    but never outrank by much the memory that actually matched.
    """
    spread = dict(scores)
    for item, score in scores.items():
        for other, distance in neighbours.get(item, ()):
            if distance <= len(weights):
                spread[other] = spread.get(other, 0.0) + weights[distance - 1] * score
    return spread
