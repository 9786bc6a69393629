"""The second hop of hybrid recall and the set-cover order (the rules are in core.second_hop)."""

from __future__ import annotations

from collections.abc import Callable

from memctl.config import RecallSettings
from memctl.core.evidence import coverage, text_stems
from memctl.core.ports import Row
from memctl.core.second_hop import (
    LIFTERS,
    bridges,
    cover_order,
    hop_query,
    spread_along_bridges,
)
from memctl.core.text_tokens import searchable_text
from memctl.integrations.word_frequency import zipf

HOP_CANDIDATES = 30  # rows the second search returns
SearchText = Callable[[str, int], list[Row]]


def follow_bridges(
    scores: dict[str, float],
    rows: dict[str, dict],
    weights: dict[str, float],
    settings: RecallSettings,
    search_text: SearchText,
    sources: dict[str, set[str]],
) -> dict[str, float]:
    """Scores after the second hop; memories it finds join `rows` and `sources` ("hop").

    Only when the best hit lacks some of the query's words (a question whose parts lie in
    different memories): then one more full-text search, for the best hits' rare words.
    """
    if settings.second_hop <= 0 or not weights or not scores:
        return scores
    ranked = sorted(scores, key=lambda i: (-scores[i], i))
    if coverage(weights, text_stems(rows[ranked[0]]["text"])) >= 1.0:
        return scores
    lifters = [(memory_id, scores[memory_id], rows[memory_id]["text"]) for memory_id in ranked]
    found = bridges(lifters[:LIFTERS], weights, [row["text"] for row in rows.values()], zipf)
    if not found:
        return scores
    texts = {memory_id: row["text"] for memory_id, row in rows.items()}
    new_rows: dict[str, dict] = {}
    for row in search_text(searchable_text(hop_query(weights, found)), HOP_CANDIDATES):
        if row["id"] not in rows and row["id"] not in new_rows:
            new_rows[row["id"]] = row
            texts[row["id"]] = row["text"]
    spread = spread_along_bridges(scores, found, texts, weights, settings.second_hop)
    for memory_id, row in new_rows.items():
        if spread.get(memory_id, 0.0) > 0:
            rows[memory_id] = row
            sources.setdefault(memory_id, set()).add("hop")
    return {memory_id: score for memory_id, score in spread.items() if memory_id in rows}


def covering_order(
    ranked: list[str],
    scores: dict[str, float],
    rows: dict[str, dict],
    weights: dict[str, float],
    settings: RecallSettings,
    depth: int,
) -> list[str]:
    """`ranked` with its head in set-cover order (core.second_hop.cover_order)."""
    texts = {memory_id: rows[memory_id]["text"] for memory_id in ranked[:depth]}
    return cover_order(ranked, scores, texts, weights, settings.cover_gain, depth)
