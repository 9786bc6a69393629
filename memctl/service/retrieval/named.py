"""The memories of a store that name a file (core.recall.named_paths), from its index.

The index's texts are read once per store and index state (like the prompt hook's term
counts), so a resident server answers each tool call from memory. Episodes are left out: what
happened to a file once is history for when it is asked about, not a rule for touching it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from memctl.config import Store
from memctl.core.ports import MemoryFilter
from memctl.core.recall.named_paths import NamedIndex, named_by
from memctl.service.retrieval.indexing import open_index

DURABLE = MemoryFilter(exclude_types=("episodic",), archived=False)

_kept: dict[str, tuple[tuple[int, int], NamedIndex, dict[str, str]]] = {}
_lock = threading.Lock()


def named_index(store: Store) -> tuple[NamedIndex, dict[str, str]]:
    """The store's durable memories' texts by word (its chunks joined per memory), and each
    one's file (relative to the store)."""
    index = open_index(store)
    if not index.exists():
        return NamedIndex({}), {}
    keys = index.rows(DURABLE, ["id", "embed_hash"])
    state = (len(keys), hash(frozenset((row["id"], row["embed_hash"]) for row in keys)))
    place = str(store.root)
    with _lock:
        kept = _kept.get(place)
    if kept is not None and kept[0] == state:
        return kept[1], kept[2]
    texts: dict[str, list[str]] = {}
    relpaths: dict[str, str] = {}
    for row in index.rows(DURABLE, ["id", "path", "text"]):
        texts.setdefault(row["id"], []).append(row["text"] or "")
        relpaths[row["id"]] = row["path"]
    found = NamedIndex({memory_id: "\n".join(parts) for memory_id, parts in texts.items()})
    with _lock:
        _kept[place] = (state, found, relpaths)
    return found, relpaths


def memories_naming(store: Store, paths: Iterable[str], max_share: float) -> list[tuple[str, str]]:
    """(id, file relative to the store) of the store's durable memories that name one of
    `paths` (relative to the project) by a distinctive key, the most specific first."""
    paths = [path for path in paths if path]
    if not paths:
        return []
    index, relpaths = named_index(store)
    return [(i, relpaths[i]) for i in named_by(index, paths, max_share)]
