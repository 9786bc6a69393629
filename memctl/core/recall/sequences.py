"""Memories written one after another in one session: their order, and the context a short one
borrows from the memory before it when it is embedded.

A turn like "Yes, last Friday, with the kids" means little alone; embedded after the turn it
answers ("Did you go camping?"), its vector says what it is about. Only the vector gets the
context: full-text search and what recall shows stay the memory's own text.
"""

from __future__ import annotations

from collections.abc import Iterable

# A memory longer than this carries its own context (and the model reads only ~256 tokens).
MAX_OWN_CHARS = 600
# How much of the previous memory is borrowed: its end, which is what the next one answers.
MAX_CONTEXT_CHARS = 400


def ordered_members(members: Iterable[tuple[str, str, str]]) -> dict[str, list[str]]:
    """(sequence, order key, item) triples -> each sequence's items in order (ties by item)."""
    grouped: dict[str, list[tuple[str, str]]] = {}
    for sequence, order, item in members:
        if sequence:
            grouped.setdefault(sequence, []).append((order, item))
    return {sequence: [item for _, item in sorted(pairs)] for sequence, pairs in grouped.items()}


def predecessors(sequences: dict[str, list[str]]) -> dict[str, str | None]:
    """Each item's previous item in its sequence (None for the first)."""
    before: dict[str, str | None] = {}
    for items in sequences.values():
        for position, item in enumerate(items):
            before[item] = items[position - 1] if position else None
    return before


def contextual_text(own: str, previous: str | None) -> str:
    """The text embedded for a memory: its own text, led by the end of the previous memory
    when there is one and the memory is short enough to need it."""
    if not previous or len(own) > MAX_OWN_CHARS:
        return own
    context = " ".join(previous.split())
    if len(context) > MAX_CONTEXT_CHARS:
        tail = context[-MAX_CONTEXT_CHARS:]
        context = "…" + (tail.split(" ", 1)[1] if " " in tail else tail)
    return f"{context}\n{own}"
