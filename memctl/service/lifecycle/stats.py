"""What a store holds: counts, the archive, the index on disk, how forgettable memories are."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

from memctl.config import Store
from memctl.service.lifecycle.decaying import plan, scan_memories
from memctl.service.retrieval.embedding import recorded_model
from memctl.service.retrieval.indexing import open_index
from memctl.store.access import load_access
from memctl.store.index import ARCHIVE_TABLE, TABLE

HISTOGRAM_BINS = 10


def store_stats(store: Store, now: datetime | None = None) -> dict[str, Any]:
    """Read-only: neither the files nor the index are touched."""
    scanned = scan_memories(store, shared=True)
    decay = plan(store, now, scanned)
    memories = [entry.memory for entry in scanned[0]]
    archived, archive_problems = scan_memories(store, archive=True, shared=True)
    accessed = load_access(store.state_dir)
    return {
        "memories": len(memories),
        "by_type": dict(sorted(Counter(m.type for m in memories).items())),
        "by_scope": dict(sorted(Counter(m.scope for m in memories).items())),
        "pinned": sum(1 for m in memories if m.pinned),
        "archived": len(archived),
        "accessed": sum(1 for m in memories if m.id in accessed),
        "index": index_stats(store),
        "decay": {
            "to_archive": len(decay.to_archive),
            "histogram": score_histogram([d.score for d in decay.decisions]),
        },
        "problems": decay.problems + archive_problems,
    }


def score_histogram(scores: list[float], bins: int = HISTOGRAM_BINS) -> list[dict[str, Any]]:
    """Equal-width bins over [0, 1]; the last one includes 1."""
    counts = [0] * bins
    for score in scores:
        counts[min(bins - 1, max(0, int(score * bins)))] += 1
    return [
        {"from": round(i / bins, 3), "to": round((i + 1) / bins, 3), "count": counts[i]}
        for i in range(bins)
    ]


def index_stats(store: Store) -> dict[str, Any]:
    tables = {}
    for archive in (False, True):
        index = open_index(store, archive)
        if index.exists():
            tables[ARCHIVE_TABLE if archive else TABLE] = index.table_stats()
    return {
        "path": str(store.index_dir),
        "bytes": _size(store.index_dir),
        "model": recorded_model(store),  # what the vectors came from (`auto` picks it)
        "tables": tables,
    }


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else 0
