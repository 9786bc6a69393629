"""One ranked list out of several stores' ranked lists.

Recall's scores are scaled within one store's candidates (each retriever's list is shifted and
divided by its own spread), so a score of 2.1 in one store says nothing next to 2.1 in another.
The merge therefore never compares raw scores. It keeps each store's own order and, at each
step, takes the head that is more relevant by a measure every store shares (the cosine of the
memory's vector to the query: one model embeds them all); without one, it alternates by rank.
The first list (the project) wins every tie.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def merge_by_heads(
    lists: Sequence[Sequence[T]], relevance: Callable[[T], float], limit: int | None = None
) -> list[tuple[int, T]]:
    """(list number, item) pairs: each list keeps its order; at each step the more relevant
    head goes first, the earlier list on a tie."""
    positions = [0] * len(lists)
    merged: list[tuple[int, T]] = []
    while limit is None or len(merged) < limit:
        heads = [
            (number, items[positions[number]])
            for number, items in enumerate(lists)
            if positions[number] < len(items)
        ]
        if not heads:
            break
        number, item = max(heads, key=lambda head: (relevance(head[1]), -head[0]))
        merged.append((number, item))
        positions[number] += 1
    return merged


def interleave_by_rank(
    lists: Sequence[Sequence[T]], limit: int | None = None
) -> list[tuple[int, T]]:
    """(list number, item) pairs: first of each list, then second of each, ...; earlier list first."""
    merged: list[tuple[int, T]] = []
    for rank in range(max((len(items) for items in lists), default=0)):
        for number, items in enumerate(lists):
            if rank < len(items):
                merged.append((number, items[rank]))
    return merged if limit is None else merged[:limit]
