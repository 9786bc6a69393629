"""Fusion that adapts to the query: each retriever weighs as much as its own evidence for it.

BM25 and the vector search disagree on how much they know per query. A BM25 list whose best
candidate holds only the query's common words ("first", "down") knows little; a vector list
whose top cosine stands well above the rest knows a lot. Both are measured on fixed scales
(weighted word coverage from core.recall.evidence, cosine), so the weights mean the same for every
query and store. Pure.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

Key = TypeVar("Key", bound=Hashable)


@dataclass(frozen=True)
class FusionWeights:
    bm25: float
    vector: float


def lexical_confidence(best_coverage: float, chance: float = 0.0) -> float:
    """How much the BM25 list knows: the weighted share of the query its best candidates hold,
    above `chance` (the share a candidate holds by sharing a word or two with any query, such
    as a CJK character pair spanning two words), rescaled to [0, 1]."""
    share = max(min(best_coverage, 1.0), 0.0)
    above = max(share - chance, 0.0) / (1.0 - chance) if chance < 1.0 else 0.0
    return above


def vector_confidence(cosines: Sequence[float], top: int = 10) -> float:
    """How peaked the vector list is: its best cosine above the mean of its top `top`, in
    standard deviations of those cosines (0 for a flat list)."""
    head = sorted(cosines, reverse=True)[:top]
    if len(head) < 3:
        return 0.0
    rest = head[1:]
    mean = sum(rest) / len(rest)
    spread = (sum((c - mean) ** 2 for c in head) / len(head)) ** 0.5
    return max((head[0] - mean) / spread, 0.0) if spread > 1e-9 else 0.0


def adaptive_weights(
    base: FusionWeights,
    best_coverage: float,
    cosines: Sequence[float],
    peak_gain: float,
    coverage_chance: float = 0.0,
) -> FusionWeights:
    """The configured weights, each scaled by its retriever's evidence for this query."""
    return FusionWeights(
        bm25=base.bm25 * lexical_confidence(best_coverage, coverage_chance),
        vector=base.vector * (1.0 + peak_gain * vector_confidence(cosines)),
    )


def lexical_trust(best_coverage: float, chance: float, full: float) -> float:
    """How far the BM25 list may be trusted at all, whatever the store's size: 0 when its best
    candidates hold no more of the query than `chance` (a word or two any text shares with it,
    such as a CJK character pair spanning two words), rising to 1 at `full`.

    Why at any size: BM25 that matched only such crumbs ranks noise, however large the store
    (a Chinese paraphrase, a query across languages); a vector list still knows something then.
    """
    if full <= chance:
        return 1.0 if best_coverage > chance else 0.0
    return min(max((best_coverage - chance) / (full - chance), 0.0), 1.0)


def blended_lexical(
    bm25: Mapping[Key, float], prior: Mapping[Key, float], prior_share: float
) -> dict[Key, float]:
    """BM25 (already normalized) mixed with the prior-weighted match (normalized the same way):
    the prior's share is large in a small store, where BM25's IDF is noise, and fades as the
    store grows."""
    return {
        item: (1.0 - prior_share) * value + prior_share * prior.get(item, 0.0)
        for item, value in bm25.items()
    }


def prior_share(store_size: int, half_size: float) -> float:
    """half_size / (half_size + store_size): 1 for an empty store, 0.5 at `half_size` memories."""
    if half_size <= 0:
        return 0.0
    return half_size / (half_size + max(store_size, 0))


def lexical_ties(
    lexical: Mapping[Key, float],
    matched: Mapping[Key, frozenset[str]],
    weights: Mapping[str, float],
    least_share: float,
) -> dict[Key, float]:
    """The candidates holding the most of the query's words (by weight, at least `least_share`
    of it) all get the lexical score of the best of them: BM25 says that these memories hold the
    query's words, and the other retriever says which of them is about the query.

    Why: among texts holding the same query words, BM25 ranks by how often and in how short a
    text they occur: weak evidence, and near-ties in practice ("where are invoices stored" over a
    note on where invoices are stored and one on invoice PDFs stored in S3), which the vector
    side separates by meaning. Only the top tier ties: below it, a memory holding fewer of the
    query's words (a speaker's name alone) is one of many, and lifting them all would hand the
    ranking of a crowd to meaning alone; and words that are a crumb of the query ("API" of a
    question on an API gateway's query depth) are no evidence to share.
    """
    total = sum(weights.values())
    if total <= 0:
        return dict(lexical)
    share = {
        group: sum(weights.get(term, 0.0) for term in group) / total
        for group in set(matched.values())
    }
    top = max(share.values(), default=0.0)
    if top < least_share:
        return dict(lexical)
    tier = {group for group, held in share.items() if held >= top - 1e-9}
    best: dict[frozenset[str], float] = {}
    for item, value in lexical.items():
        group = matched.get(item, frozenset())
        if group in tier:
            best[group] = max(best.get(group, value), value)
    return {
        item: best.get(matched.get(item, frozenset()), value) for item, value in lexical.items()
    }
