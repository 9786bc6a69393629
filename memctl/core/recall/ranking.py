"""Ranking for hybrid recall: score and rank fusion, exact identifiers, session neighbours."""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

from memctl.core.language.text_tokens import CJK_RUN

Key = TypeVar("Key", bound=Hashable)  # what is ranked: a memory id, or (id, chunk)

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
    rankings: Sequence[Sequence[Key]], weights: Sequence[float] | None = None, k: int = 60
) -> dict[Key, float]:
    """Sum of weight / (k + rank) over the lists each id appears in (rank starts at 1)."""
    weights = weights or [1.0] * len(rankings)
    fused: dict[Key, float] = {}
    for ranking, weight in zip(rankings, weights, strict=False):
        for rank, item in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + weight / (k + rank)
    return fused


SCALES = ("stdev", "range")


def normalized_scores(
    scored: Sequence[tuple[Key, float]], scale: str = "range"
) -> dict[Key, float]:
    """One retriever's scores shifted so its weakest candidate is 0, then divided by their spread:
    `range` (max - min: min-max scaling to [0, 1]) or `stdev` (the standard deviation).

    Why: BM25 scores are unbounded and cosines crowd into a narrow band; scaling each list by its
    own spread lets a weighted sum compare them by how far apart candidates really are. The range
    hangs on the two extreme candidates, so one outlier (a rare word only one memory has) squeezes
    every other candidate of that list toward 0; the standard deviation of all candidates moves
    much less. Equal scores (one candidate, or none that differ) all get 1 under `range`, the
    top of every list; under `stdev` they get 2, the least the top of a list with any spread
    gets (a standard deviation is at most half the range): BM25's only match is not a weaker
    match than the better of two.
    """
    if not scored:
        return {}
    values = [score for _, score in scored]
    low = min(values)
    if scale == "range":
        spread = max(values) - low
    elif scale == "stdev":
        mean = sum(values) / len(values)
        spread = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
    else:
        raise ValueError(f"unknown scale {scale!r}; expected one of {SCALES}")
    if spread < 1e-12:
        flat = 2.0 if scale == "stdev" else 1.0
        return {item: flat for item, _ in scored}
    return {item: (score - low) / spread for item, score in scored}


def score_fusion(
    normalized: Sequence[dict[Key, float]], weights: Sequence[float]
) -> dict[Key, float]:
    """Weighted sum of each retriever's normalized scores (see normalized_scores); an item missing
    from a list gets 0 there, as its weakest candidate does."""
    fused: dict[Key, float] = {}
    for scores, weight in zip(normalized, weights, strict=False):
        for item, value in scores.items():
            fused[item] = fused.get(item, 0.0) + weight * value
    return fused


_WORD = re.compile(r"\w+")


def text_words(text: str) -> float:
    """How many words a text holds, alike across scripts: Latin words, and CJK characters
    counted two to a word (the two-character words they are indexed as)."""
    wide = sum(len(run) for run in CJK_RUN.findall(text))
    return len(_WORD.findall(CJK_RUN.sub(" ", text))) + wide / 2


def length_priors(texts: Mapping[Key, str]) -> dict[Key, float]:
    """ln(1 + words) of each text, capped at the median of them: what a turn's length says of
    its chance to be the answer among these candidates.

    Why: a conversation mixes answers with chatter ("Wow, thanks!"), which can hold the
    question's words and BM25 favours for being short. A turn shorter than is usual among
    the candidates gets less; a longer one gets no more (a long turn is not more relevant for
    its length, and a pasted page would otherwise win)."""
    priors = {key: math.log1p(text_words(text)) for key, text in texts.items()}
    if not priors:
        return {}
    ordered = sorted(priors.values())
    cap = ordered[len(ordered) // 2]
    return {key: min(value, cap) for key, value in priors.items()}


# A neighbour lifted by a memory's score ends at most at this share of that score.
NEIGHBOUR_CEILING = 0.999


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
    the other follow. The share is bounded (weights[d-1] per distance d), and a neighbour lifted
    this way stays just below the best memory that lifted it: a neighbour is context for a hit,
    never ahead of the memory whose own evidence found it (its own score, if higher, stands).
    """
    spread = dict(scores)
    ceiling: dict[str, float] = {}
    for item, score in scores.items():
        for other, distance in neighbours.get(item, ()):
            if distance <= len(weights):
                spread[other] = spread.get(other, 0.0) + weights[distance - 1] * score
                ceiling[other] = max(ceiling.get(other, 0.0), score * NEIGHBOUR_CEILING)
    for other, cap in ceiling.items():
        spread[other] = max(scores.get(other, 0.0), min(spread[other], cap))
    return spread
