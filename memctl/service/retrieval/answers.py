"""The candidates that hold the kind of answer a question asks for (core.recall.answer_kinds).

Reading a text for a time or a place takes ~20-40 µs; what each candidate holds is kept by a
digest of its text and date (digest_cache).
"""

from __future__ import annotations

from memctl.core.recall.answer_kinds import TIME, states_place
from memctl.service.retrieval.digest_cache import DigestCache
from memctl.service.retrieval.timing import tells_a_time

CACHE_SIZE = 8192
# Only the head of the ranking is read: a bonus of half one retriever's top score seldom lifts a
# candidate from further down into the answer, and reading every candidate for its time (a
# conversation's neighbours make them 200 or more) took ~40 ms in a fresh process, against ~8.
HEAD = 50
_held: DigestCache[bool] = DigestCache(CACHE_SIZE)


def holds_answer(kind: str, row: dict) -> bool:
    """Does the memory of this index row hold a `kind` answer (a time it tells, a place)?"""
    text, created = row.get("text") or "", row.get("created") or ""
    return _held.get(
        (kind, created, text),
        lambda: tells_a_time(row) if kind == TIME else states_place(text),
    )


def add_answer_bonus(
    scores: dict[str, float], rows: dict[str, dict], kind: str | None, bonus: float
) -> None:
    """Asked when or where, the best HEAD candidates holding that kind of answer gain `bonus`,
    when some of them hold one and some do not (else it would tell none apart)."""
    if kind is None or bonus <= 0:
        return
    head = sorted(scores, key=lambda memory_id: (-scores[memory_id], memory_id))[:HEAD]
    holders = [memory_id for memory_id in head if holds_answer(kind, rows.get(memory_id) or {})]
    if 0 < len(holders) < len(head):
        for memory_id in holders:
            scores[memory_id] += bonus
