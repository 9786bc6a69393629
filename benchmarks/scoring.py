"""Pure scoring for the LoCoMo benchmark: evidence-id cleaning, ranking metrics, aggregation."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

CATEGORY_NAMES = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
MODES = ("hybrid", "bm25", "vector")
KS = (5, 10)

_CANONICAL_ID = re.compile(r"D(\d+):(\d+)")
_ENTRY_SEPARATORS = re.compile(r"[;,\s]+")

# The kinds of cleaning, in the order they are reported.
CLEANING_KINDS = (
    "entries_split",  # one entry held several ids ('D8:6; D9:17')
    "ids_repaired",  # malformed id mapped onto an existing turn ('D:11:26' -> 'D11:26')
    "ids_unparseable_dropped",  # nothing turn-like left to repair ('D')
    "ids_missing_turn_dropped",  # well-formed (or repaired) id of a turn the conversation lacks
    "ids_duplicate_dropped",  # the same turn listed twice for one question
    "questions_no_evidence_skipped",  # the question came with an empty evidence list
    "questions_all_evidence_dropped_skipped",  # every id was dropped during cleaning
)


@dataclass
class CleanedEvidence:
    ids: list[str]
    counts: Counter = field(default_factory=Counter)


def repair_id(token: str) -> str | None:
    """The canonical 'D<session>:<turn>' a token stands for, or None if it holds no two numbers."""
    token = token.strip()
    if not token.upper().startswith("D"):
        return None
    numbers = re.findall(r"\d+", token[1:])
    if len(numbers) != 2:
        return None
    return f"D{int(numbers[0])}:{int(numbers[1])}"


def clean_evidence(evidence: Iterable[str], existing_ids: set[str]) -> CleanedEvidence:
    """Split multi-id entries, repair malformed ids, drop ids of turns that do not exist."""
    counts: Counter = Counter()
    kept: list[str] = []
    for entry in evidence:
        tokens = [t for t in _ENTRY_SEPARATORS.split(str(entry)) if t]
        if len(tokens) > 1:
            counts["entries_split"] += 1
        for token in tokens:
            candidate = repair_id(token)
            if candidate is None:
                counts["ids_unparseable_dropped"] += 1
                continue
            if candidate not in existing_ids:
                counts["ids_missing_turn_dropped"] += 1
                continue
            if candidate != token:
                counts["ids_repaired"] += 1
            if candidate in kept:
                counts["ids_duplicate_dropped"] += 1
                continue
            kept.append(candidate)
    return CleanedEvidence(kept, counts)


def clean_question_evidence(evidence: Sequence[str], existing_ids: set[str]) -> CleanedEvidence:
    """Like clean_evidence, and also counts why a question ends with nothing to score against."""
    if not evidence:
        return CleanedEvidence([], Counter({"questions_no_evidence_skipped": 1}))
    cleaned = clean_evidence(evidence, existing_ids)
    if not cleaned.ids:
        cleaned.counts["questions_all_evidence_dropped_skipped"] += 1
    return cleaned


def _unique_prefix(ranked: Sequence[str | None], k: int) -> list[str | None]:
    """The top k, with a repeated id counted only at its first rank."""
    seen: set[str] = set()
    out: list[str | None] = []
    for item in ranked[:k]:
        if item is not None and item in seen:
            out.append(None)
            continue
        if item is not None:
            seen.add(item)
        out.append(item)
    return out


def recall_any(ranked: Sequence[str | None], relevant: set[str], k: int) -> float:
    return 1.0 if any(item in relevant for item in ranked[:k]) else 0.0


def recall_all(ranked: Sequence[str | None], relevant: set[str], k: int) -> float:
    if not relevant:
        raise ValueError("recall_all needs at least one relevant id")
    return 1.0 if relevant <= set(ranked[:k]) else 0.0


def ndcg(ranked: Sequence[str | None], relevant: set[str], k: int) -> float:
    """Binary-relevance NDCG@k; the ideal ranking puts min(|relevant|, k) hits first."""
    if not relevant:
        raise ValueError("ndcg needs at least one relevant id")
    top = _unique_prefix(ranked, k)
    dcg = sum(1.0 / math.log2(rank + 2) for rank, item in enumerate(top) if item in relevant)
    ideal = sum(1.0 / math.log2(rank + 2) for rank in range(min(len(relevant), k)))
    return dcg / ideal


def score_ranking(
    ranked: Sequence[str | None], relevant: set[str], ks: Sequence[int] = KS
) -> dict[str, float]:
    """All metrics of one question's ranking, keyed like 'recall_any@5'."""
    scores: dict[str, float] = {}
    for name, metric in (("recall_any", recall_any), ("recall_all", recall_all), ("ndcg", ndcg)):
        for k in ks:
            scores[f"{name}@{k}"] = metric(ranked, relevant, k)
    return scores


def metric_names(ks: Sequence[int] = KS) -> list[str]:
    names = [f"recall_any@{k}" for k in ks] + [f"recall_all@{k}" for k in ks]
    return names + [f"ndcg@{k}" for k in ks]


def mean_scores(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return {}
    return {name: sum(row[name] for row in rows) / len(rows) for name in rows[0]}


def aggregate(results: Iterable[tuple[str, str, dict[str, float]]]) -> dict:
    """(category name, mode, scores) rows -> {"overall": {mode: means}, "by_category": {cat: {mode: means}}}."""
    overall: dict[str, list] = {}
    by_category: dict[str, dict[str, list]] = {}
    for category, mode, scores in results:
        overall.setdefault(mode, []).append(scores)
        by_category.setdefault(category, {}).setdefault(mode, []).append(scores)
    order = {name: i for i, name in enumerate(CATEGORY_NAMES.values())}
    return {
        "overall": {mode: mean_scores(rows) for mode, rows in overall.items()},
        "by_category": {
            cat: {mode: mean_scores(rows) for mode, rows in modes.items()}
            for cat, modes in sorted(
                by_category.items(), key=lambda kv: order.get(kv[0], len(order))
            )
        },
        "counts": {cat: len(next(iter(modes.values()))) for cat, modes in by_category.items()},
    }
