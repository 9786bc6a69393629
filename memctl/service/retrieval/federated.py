"""Reading the project store and the person's user store together.

Each store is searched, synced and indexed on its own, exactly as when it is alone; this module
only merges the answers into one list whose items say which store they came from. With no user
store (or `--store-only`), every function here returns what the one-store call returns.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from memctl.config import Store, open_user_store
from memctl.core.codebase.anchors import PROJECT_KEY
from memctl.core.files.memory import Memory
from memctl.core.learning.routing import PROJECT, USER
from memctl.core.recall.federation import interleave_by_rank, merge_by_heads
from memctl.service.memories.lookup import Listing, list_memories
from memctl.service.retrieval.embedding import model_settings
from memctl.service.retrieval.explain import Trace
from memctl.service.retrieval.recall import Hit, recall_one_store, start_query_embedding
from memctl.service.retrieval.request import RecallRequest, Stores

# A hit found by its words needs only half the cosine of one found by meaning alone (the rule the
# prompt hook uses), and an exact identifier beats every cosine.
LEXICAL_SOURCES = frozenset({"bm25", "identifier"})
IDENTIFIER_RELEVANCE = 10.0
# Why: recall always returns its k nearest, related or not, and a small user store's nearest are
# often unrelated preferences. Its hits join the project's only from this relevance on (a cosine
# of 0.3 by meaning alone, 0.15 with matching words: the prompt hook's default floor). The
# project's own hits are never dropped, so its answer is never smaller than it was alone.
OTHER_STORE_FLOOR = 0.3


@dataclass
class StoreHit(Hit):
    """A recall hit and the store it came from (`project` or `user`)."""

    store: str = PROJECT

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "store": self.store}


def stores_to_read(project: Store, store_only: bool = False) -> Stores:
    """[("project", store)], plus ("user", the user store) when it exists and is wanted."""
    user = None if store_only else open_user_store(besides=project)
    return [(PROJECT, project)] + ([(USER, user)] if user is not None else [])


def user_store_of(stores: Stores) -> Store | None:
    return next((store for label, store in stores if label == USER), None)


def federated_recall(
    stores: Stores,
    request: RecallRequest,
    *,
    query_vector: Future | None = None,
    traces: list[Trace] | None = None,
) -> list[Hit]:
    """The request recalled in every store, merged into one list of k (the request's, else the
    project's recall.k); one store: its own answer. `traces[i]`, if given, is filled with store
    i's ranking (--explain)."""
    k = request.k if request.k is not None else request.store.settings.recall.k
    mode = request.mode
    each_trace: list[Trace | None] = list(traces) if traces else [None] * len(stores)
    if len(stores) == 1:
        return recall_one_store(
            stores[0][1], request, k=k, query_vector=query_vector, trace=each_trace[0]
        )
    query_vectors = _query_vectors(stores, request.query, mode, query_vector)
    answers = [
        recall_one_store(store, request, k=k, query_vector=vector, trace=trace)
        for (_, store), vector, trace in zip(stores, query_vectors, each_trace, strict=True)
    ]
    for number in range(1, len(stores)):
        kept = this_project_only(stores[0][1], answers[number])
        if len(kept) < len(answers[number]):
            # Why again, deeper: another project's memories took places in this store's top k;
            # its top k among this project's (and shared) memories is what the merge needs.
            deeper = recall_one_store(
                stores[number][1], request, k=k * 4, query_vector=query_vectors[number]
            )
            kept = this_project_only(stores[0][1], deeper)[:k]
        answers[number] = kept
    if mode == "bm25" or any(vector is None for vector in query_vectors):
        merged = interleave_by_rank(answers, k)
    else:
        relevance = _relevance(stores, answers, [v.result() for v in query_vectors if v])
        answers = [answers[0]] + [
            [hit for hit in hits if relevance[id(hit)] >= OTHER_STORE_FLOOR] for hits in answers[1:]
        ]
        merged = merge_by_heads(answers, lambda hit: relevance[id(hit)], k)
    return [_tagged(hit, stores[number][0]) for number, hit in merged]


def this_project_only(project: Store, hits: list[Hit]) -> list[Hit]:
    """Hits of the user store minus those another project wrote (front matter `project:`)."""
    from memctl.service.anchoring import project_of

    if not any(hit.memory.extra.get(PROJECT_KEY) for hit in hits):
        return hits
    name = project_of(project)[1]
    return [hit for hit in hits if hit.memory.extra.get(PROJECT_KEY) in (None, name)]


def _query_vectors(
    stores: Stores, query: str, mode: str, given: Future | None
) -> list[Future | None]:
    """One query embedding per store: made once per embedding model and shared by every store
    that uses it (`given`, if any, was made with the first store's model)."""
    if mode not in ("hybrid", "vector") or not query.strip():
        return [None] * len(stores)
    by_model: dict[Any, Future] = {}
    if given is not None:
        by_model[model_settings(stores[0][1])] = given
    vectors: list[Future | None] = []
    for _, store in stores:
        settings = model_settings(store)
        if settings not in by_model:
            by_model[settings] = start_query_embedding(query, settings)
        vectors.append(by_model[settings])
    return vectors


def _relevance(
    stores: Stores, answers: list[list[Hit]], query_vectors: list[Any]
) -> dict[int, float]:
    """A measure every store shares: the cosine of each hit's vector to the query (doubled for
    a hit that also matched words), an exact identifier above any cosine. `query_vectors[i]`:
    the query embedded with store i's model."""
    import numpy as np

    from memctl.service.retrieval.indexing import open_index

    relevance: dict[int, float] = {}
    for (_, store), hits, query_vector in zip(stores, answers, query_vectors, strict=True):
        query = np.asarray(query_vector, dtype=np.float32)
        vectors = open_index(store).vectors_for_ids(sorted({hit.id for hit in hits}))
        for hit in hits:
            vector = vectors.get(hit.id)
            cosine = (
                float(np.dot(np.asarray(vector, dtype=np.float32), query))
                if vector is not None
                else 0.0
            )
            if "identifier" in hit.sources:
                relevance[id(hit)] = IDENTIFIER_RELEVANCE + cosine
            elif LEXICAL_SOURCES & set(hit.sources):
                relevance[id(hit)] = 2 * cosine
            else:
                relevance[id(hit)] = cosine
    return relevance


def _tagged(hit: Hit, label: str) -> StoreHit:
    values = {field.name: getattr(hit, field.name) for field in dataclasses.fields(hit)}
    values["store"] = label
    return StoreHit(**values)


@dataclass
class FederatedListing(Listing):
    """Memories of several stores: `memories` as in a Listing, `stores[i]` names the store of
    `memories[i]` and `roots[i]` the folder its path is relative to."""

    stores: list[str] = dataclasses.field(default_factory=list)
    roots: list[Any] = dataclasses.field(default_factory=list)


def federated_list(
    stores: Stores,
    types: list[str] | None = None,
    tags: list[str] | None = None,
    include_archived: bool = False,
) -> FederatedListing:
    """Every store's memories, oldest first, the project's first when two were made together."""
    entries: list[tuple[tuple, str, Any, tuple[str, Memory]]] = []
    problems: list[dict] = []
    for order, (label, store) in enumerate(stores):
        listing = list_memories(store, types, tags, include_archived)
        problems.extend(listing.problems)
        for relpath, memory in listing.memories:
            entries.append(
                ((memory.created or "", order, memory.id), label, store.root, (relpath, memory))
            )
    entries.sort(key=lambda entry: entry[0])
    return FederatedListing(
        memories=[entry[3] for entry in entries],
        problems=problems,
        stores=[entry[1] for entry in entries],
        roots=[entry[2] for entry in entries],
    )
