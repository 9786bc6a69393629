"""Recall as the benchmarks ask it: the use-case every face calls (memctl.service.recall)."""

from __future__ import annotations

from typing import Any


def recall_hits(store: Any, query: str, k: int, **asked: Any) -> list:
    """The k best hits for `query` from `store` alone, above recall.min_relevance (the floor
    `memctl recall` applies without -k), unless `asked` says otherwise (mode, sync, as_of,
    min_relevance: any field of RecallRequest)."""
    from memctl import service

    fields = {"min_relevance": store.settings.recall.min_relevance, "store_only": True, **asked}
    return service.recall(service.RecallRequest(store, query, k=k, **fields)).hits
