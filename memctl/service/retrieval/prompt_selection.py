"""Which recalled memories the prompt hook injects: those relevant enough that also share a
word with the prompt that is rare in their store (core.recall.rare_terms), so a prompt nothing in the
store is about gets nothing; and those that clearly answer the prompt (relevance at least
hooks.prompt_sure_relevance), even when every memory shares the prompt's words.

The store's term counts come from its index (the text of every memory), kept per store and
index state so that a resident server counts each store once until it changes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from memctl.config import Store
from memctl.core.recall.query import mostly_cjk
from memctl.core.recall.rare_terms import TermCounts, rarest_shared, term_counts, terms
from memctl.service.retrieval.indexing import open_index

_counts: dict[str, tuple[tuple[int, int], TermCounts]] = {}
_lock = threading.Lock()


def store_term_counts(store: Store) -> TermCounts:
    """How many of the store's memories hold each term (a memory's chunks count once)."""
    index = open_index(store)
    if not index.exists():
        return TermCounts(0, {})
    # Why this key: any memory written, changed or forgotten changes the set of embed hashes;
    # reading them is cheaper than reading (and counting) every text again.
    keys = index.rows(None, ["id", "embed_hash"])
    state = (len(keys), hash(frozenset((row["id"], row["embed_hash"]) for row in keys)))
    place = str(store.root)
    with _lock:
        kept = _counts.get(place)
    if kept is not None and kept[0] == state:
        return kept[1]
    rows = index.rows(None, ["id", "text"])
    texts: dict[str, list[str]] = {}
    for row in rows:
        texts.setdefault(row["id"], []).append(row["text"] or "")
    counts = term_counts("\n".join(parts) for parts in texts.values())
    with _lock:
        _counts[place] = (state, counts)
    return counts


def rare_term_hits(
    hits: Iterable[Any],
    prompt: str,
    stores: dict[str, Store],
    min_rarity: float,
    sure: float | None = None,
) -> list[Any]:
    """The hits that share with the prompt a term of at least `min_rarity` in their own store
    (0 keeps every hit), or whose relevance is at least `sure` (None: no such exemption). A
    memory written in another script than the prompt (an English prompt, a Chinese note) shares
    no words with it by nature: its relevance alone decides.

    Why the exemption: in a store where every memory speaks of deploys, "deploy" is rare in
    none, and the memory that answers "how do we deploy to production?" would be held back with
    the rest; its relevance says it answers (calibrated on the project-task benchmark's dev half,
    docs/prompt-hook-selection.md)."""
    hits = list(hits)
    if min_rarity <= 0:
        return hits
    asked = terms(prompt)
    prompt_cjk = mostly_cjk(prompt)
    counts: dict[str, TermCounts] = {}
    kept = []
    for hit in hits:
        label = getattr(hit, "store", "project")
        if label not in counts:
            counts[label] = store_term_counts(stores[label])
        text = f"{hit.title}\n{hit.body}"
        if (
            (sure is not None and getattr(hit, "relevance", 0.0) >= sure)
            or mostly_cjk(text) != prompt_cjk
            or rarest_shared(asked, text, counts[label]) >= min_rarity
        ):
            kept.append(hit)
    return kept
