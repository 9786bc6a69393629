"""The recall use-case: `recall(RecallRequest) -> RecallResult`, the one path every face takes.

The CLI, the prompt hook, `context`, MCP and the resident server build a typed request and
render the result; none composes recall on its own. The request says which stores to read
(the project's and, unless `store_only`, the person's user store), what for (`purpose`), and
whether to trace the ranking (`explain`).

Why the floor depends on the purpose: someone who asks for `-k 10` wants ten answers, the best
first; an agent's context must not fill up with the nearest noise. So `recall` with an explicit
`k` returns k hits unless `min_relevance` is given, and abstaining is the prompt hook's and
`context`'s decision (their floors: hooks.prompt_min_relevance, context.min_relevance).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memctl.service.retrieval.embedding import model_settings
from memctl.service.retrieval.explain import OTHER_STORE, Trace
from memctl.service.retrieval.federated import federated_recall, stores_to_read
from memctl.service.retrieval.indexing import sync_index
from memctl.service.retrieval.recall import Hit, start_query_embedding
from memctl.service.retrieval.request import (
    CONTEXT,
    PROMPT,
    PURPOSES,
    RECALL,
    RecallRequest,
    Stores,
    check,
)

__all__ = [
    "CONTEXT",
    "PROMPT",
    "PURPOSES",
    "RECALL",
    "RecallRequest",
    "RecallResult",
    "Stores",
    "check",
    "recall",
]


@dataclass
class RecallResult:
    hits: list[Hit]
    stores: list[str]  # the stores read, "project" first
    problems: list[dict] = field(default_factory=list)  # files sync could not read
    traces: list[Trace] = field(default_factory=list)  # one per store, with request.explain

    def explain(self, shown: int | None = None) -> list[dict[str, Any]]:
        return [trace.to_dict(shown) for trace in self.traces]


def recall(request: RecallRequest) -> RecallResult:
    """The best hits for the request's query over its stores, best first."""
    check(request)
    stores = request.stores or stores_to_read(request.store, request.store_only)
    # Why first: loading the ONNX model overlaps with syncing and importing lance (~0.3 s each).
    vector = request.query_vector
    if vector is None:  # Why in bm25 mode too: a hit's relevance weighs its cosine in every mode
        vector = start_query_embedding(request.query, model_settings(request.store))
    problems: list[dict] = []
    if request.sync:
        for _, each in stores:
            problems += sync_index(each).problems
            if request.include_archived:
                problems += sync_index(each, archive=True).problems
    traces = [Trace(store=label) for label, _ in stores] if request.explain else []
    hits = federated_recall(stores, request, query_vector=vector, traces=traces or None)
    if traces:
        kept = {(getattr(hit, "store", "project"), hit.id) for hit in hits}
        for trace in traces:
            for memory_id in trace.order:
                if trace.cut.get(memory_id) is None and (trace.store, memory_id) not in kept:
                    if memory_id in trace.relevance:
                        trace.cut[memory_id] = OTHER_STORE
    return RecallResult(hits, [label for label, _ in stores], problems, traces)
