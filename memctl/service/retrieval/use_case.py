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

from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from memctl.config import Store
from memctl.core.errors import UsageError
from memctl.core.recall_fields import LIST, WIRE, fields_of, request_fields
from memctl.service.retrieval.embedding import model_settings
from memctl.service.retrieval.explain import OTHER_STORE, Trace
from memctl.service.retrieval.federated import (
    Stores,
    federated_recall,
    stores_to_read,
)
from memctl.service.retrieval.indexing import sync_index
from memctl.service.retrieval.recall import MODES, Hit, start_query_embedding

RECALL, PROMPT, CONTEXT = "recall", "prompt", "context"
PURPOSES = (RECALL, PROMPT, CONTEXT)


@dataclass(frozen=True)
class RecallRequest:
    """One question to recall: the query, how many hits, filters, and what the answer is for.

    Its fields that a face sets are declared once in memctl.core.recall_fields (flags, kind,
    help): the CLI options, the engine's wire form and the MCP tool's parameters are generated
    from there, and `from_fields`/`to_fields` read and write that form.
    """

    store: Store  # the project store
    query: str
    k: int | None = None  # None: recall.k (and the configured floor)
    mode: str = "hybrid"
    types: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    agent: str | None = None
    include_archived: bool = False
    include_private: bool = True  # the faces that serve an agent pass service.privacy's answer
    min_relevance: float | None = None
    include_superseded: bool = False
    with_neighbours: bool = False
    since: str | None = None
    until: str | None = None
    as_of: str | None = None
    store_only: bool = False  # True: the project store alone, not the user store
    stores: Stores | None = None  # the stores to read, when the face resolved them itself
    purpose: str = RECALL  # RECALL, PROMPT (the prompt hook) or CONTEXT (`memctl context`)
    explain: bool = False
    sync: bool = True
    # The query embedded with the project store's model, when the face began it early.
    query_vector: Future | None = field(default=None, compare=False)

    @classmethod
    def from_fields(cls, fields: Mapping[str, Any], stores: Stores, **more: Any) -> RecallRequest:
        """The request a face's fields ask (the CLI's parameters, the engine's wire dict, the
        MCP tool's arguments) over `stores`, the project's first; `more` sets the rest."""
        values: dict[str, Any] = {}
        for spec in request_fields():
            if spec.name in fields and fields[spec.name] is not None:
                value = fields[spec.name]
                values[spec.name] = tuple(value) if spec.kind == LIST else value
        return cls(store=stores[0][1], stores=stores, **{**values, **more})

    def to_fields(self) -> dict[str, Any]:
        """The engine's wire form of this request (memctl.server.typed reads a command line
        into the same form)."""
        return {
            spec.name: list(value) if spec.kind == LIST else value
            for spec in fields_of(WIRE)
            if spec.request and (value := getattr(self, spec.name)) != spec.default
        }

    def floor(self) -> float | None:
        """The relevance floor; None: each store's recall.min_relevance."""
        if self.min_relevance is not None:
            return self.min_relevance
        if self.purpose == PROMPT:
            return self.store.settings.hooks.prompt_min_relevance
        if self.purpose == CONTEXT:
            return self.store.settings.context.min_relevance
        return 0.0 if self.k is not None else None


@dataclass
class RecallResult:
    hits: list[Hit]
    stores: list[str]  # the stores read, "project" first
    problems: list[dict] = field(default_factory=list)  # files sync could not read
    traces: list[Trace] = field(default_factory=list)  # one per store, with request.explain

    def explain(self, shown: int | None = None) -> list[dict[str, Any]]:
        return [trace.to_dict(shown) for trace in self.traces]


def check(request: RecallRequest) -> None:
    if request.mode not in MODES:
        raise UsageError(
            f"Unknown recall mode '{request.mode}'. Choose one of: {', '.join(MODES)}."
        )
    if request.k is not None and request.k < 1:
        raise UsageError("-k must be at least 1.")
    if request.min_relevance is not None and not 0.0 <= request.min_relevance <= 1.0:
        raise UsageError(f"--min-relevance must be between 0 and 1 (got {request.min_relevance}).")
    if not request.query.strip():
        raise UsageError("The query is empty.")


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
    hits = federated_recall(
        stores,
        request.query,
        k=request.k if request.k is not None else request.store.settings.recall.k,
        mode=request.mode,
        types=list(request.types) or None,
        tags=list(request.tags) or None,
        agent=request.agent,
        include_archived=request.include_archived,
        sync=False,
        query_vector=vector,
        include_private=request.include_private,
        min_relevance=request.floor(),
        include_superseded=request.include_superseded,
        with_neighbours=request.with_neighbours,
        since=request.since,
        until=request.until,
        as_of=request.as_of,
        traces=traces or None,
    )
    if traces:
        kept = {(getattr(hit, "store", "project"), hit.id) for hit in hits}
        for trace in traces:
            for memory_id in trace.order:
                if trace.cut.get(memory_id) is None and (trace.store, memory_id) not in kept:
                    if memory_id in trace.relevance:
                        trace.cut[memory_id] = OTHER_STORE
    return RecallResult(hits, [label for label, _ in stores], problems, traces)
