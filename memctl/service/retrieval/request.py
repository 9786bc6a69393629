"""The recall request: one value that says what to recall, over which stores, and what for.

Its fields that a face sets are declared once in memctl.core.recall.recall_fields (flags, kind, help):
the CLI options, the engine's wire form and the MCP tool's parameters are generated from there.
The use-case (service.retrieval.use_case.recall), the merge of stores and the one-store step
all read this value; none spells the request out again.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from memctl.config import Store
from memctl.core.errors import UsageError
from memctl.core.files.input_limits import check_query
from memctl.core.recall.recall_fields import LIST, MODES, WIRE, fields_of, request_fields

Stores = list[tuple[str, Store]]

RECALL, PROMPT, CONTEXT = "recall", "prompt", "context"
PURPOSES = (RECALL, PROMPT, CONTEXT)


@dataclass(frozen=True)
class RecallRequest:
    """One question to recall: the query, how many hits, filters, and what the answer is for.

    Its fields that a face sets are declared once in memctl.core.recall.recall_fields (flags, kind,
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
    check_query(request.query, request.store.settings.limits.max_query_bytes)
