"""`memctl mcp`: the store as an MCP server over stdio.

Tools recall, add, context and forget call the same service functions as the CLI, so a memory
added here is validated, redacted and deduplicated exactly like `memctl add`. Every memory is
also a resource, `memctl://memory/{id}` (its Markdown file), listed with `memctl://memories`.
Private memories stay out of tools and resources unless a call passes `include_private` or
config.yaml sets `privacy.share_private_with_agents` (see service.privacy).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from typing import Any

from memctl.config import Store
from memctl.core.errors import MemctlError
from memctl.core.recall.recall_fields import FLAG, INT, LIST, MCP, TEXT, fields_of

SERVER_NAME = "memctl"
INDEX_URI = "memctl://memories"
MEMORY_URI = "memctl://memory/{memory_id}"
INSTRUCTIONS = (
    "Local project memory. Call `recall` before answering questions about this project's "
    "conventions, decisions or history; call `add` when the user states something worth "
    "keeping (a preference, a decision, how to do a task). `context` gives a ready-made block."
)


def memory_uri(memory_id: str) -> str:
    return MEMORY_URI.format(memory_id=memory_id)


RECALL_HELP = (
    "Find memories by meaning and exact words, in this project's store and the user's "
    "own store. Returns the best `k` (without `k`: up to recall.k, only those relevant "
    "enough). Private memories only with include_private=true, when the user asked. "
    "With `paths` (files you are about to read or change): the memories anchored to them "
    "and the best matches for them and the query; stale ones are marked."
)
ADD_HELP = (
    "Remember something durable: one fact, preference, decision or procedure per call. "
    "type is one of episodic, semantic, procedural, preference, profile, knowledge. "
    "Secrets and personal data are redacted before anything is written. When the "
    "words are not your own, say where they came from in `origin`: tool:<name>, "
    "url:<url>, file:<path>."
)
CONTEXT_HELP = (
    "A Markdown block of what this project remembers, within `budget` tokens; with "
    "`query`, focused on it. Private memories only with include_private=true."
)
FORGET_HELP = "Forget a memory by id: its file and index rows are removed."


def build_server(store: Store) -> Any:
    """An MCP server bound to `store`; `.run("stdio")` serves it. Each tool and resource is a
    module-level function of the store (below), bound to it here."""
    from mcp.server.mcpserver import MCPServer
    from mcp.types import Resource

    class MemoryServer(MCPServer):
        async def list_resources(self):
            """The fixed resources, then one per memory (read fresh on every listing)."""
            listed = list(await super().list_resources())
            for relpath, memory in shared_memories(store):
                listed.append(
                    Resource(
                        uri=memory_uri(memory.id),
                        name=memory.id,
                        title=memory.display_title,
                        description=f"{memory.type} memory ({relpath})",
                        mime_type="text/markdown",
                    )
                )
            return listed

    server = MemoryServer(SERVER_NAME, instructions=INSTRUCTIONS, log_level="WARNING")
    server.add_tool(
        _bound(store, recall_tool, recall_signature()), "recall", description=RECALL_HELP
    )
    server.add_tool(_bound(store, add_tool), "add", description=ADD_HELP)
    context_signature = _signature_without_store(context_tool)
    context_signature = context_signature.replace(
        parameters=[
            param.replace(default=store.settings.context.budget)
            if param.name == "budget"
            else param
            for param in context_signature.parameters.values()
        ]
    )
    server.add_tool(
        _bound(store, context_tool, context_signature), "context", description=CONTEXT_HELP
    )
    server.add_tool(_bound(store, forget_tool), "forget", description=FORGET_HELP)
    # Why plain lambdas here: a resource template names its parameters in the URI, and the
    # server reads them from the function's own code.
    server.resource(
        INDEX_URI,
        name="memories",
        mime_type="application/json",
        description="Every memory: id, title, type, tags and its resource URI.",
    )(lambda: memories_index(store))
    server.resource(
        MEMORY_URI,
        name="memory",
        mime_type="text/markdown",
        description="One memory's Markdown file, front matter included.",
    )(lambda memory_id: memory_file(store, memory_id))
    return server


def _signature_without_store(function: Callable[..., Any]) -> inspect.Signature:
    signature = inspect.signature(function, eval_str=True)
    return signature.replace(parameters=list(signature.parameters.values())[1:])


def _bound(
    store: Store, function: Callable[..., Any], signature: inspect.Signature | None = None
) -> Callable[..., Any]:
    """`function(store, ...)` as the server sees a tool: its parameters without the store."""

    def call(**arguments: Any) -> Any:
        return function(store, **arguments)

    call.__name__ = function.__name__
    call.__doc__ = function.__doc__
    call.__signature__ = signature or _signature_without_store(function)  # type: ignore[attr-defined]
    return call


def recall_signature() -> inspect.Signature:
    """The recall tool's parameters, generated from the request's fields (core.recall.recall_fields)."""
    parameters = []
    for spec in fields_of(MCP):
        annotation, default = {
            TEXT: (str, spec.default if spec.default is not None else ""),
            INT: (int | None, None),
            LIST: (list[str] | None, None),
            FLAG: (bool, bool(spec.default)),
        }[spec.kind]
        parameters.append(
            inspect.Parameter(
                spec.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
            )
        )
    return inspect.Signature(parameters, return_annotation=list[dict])


def refuse_long_query(store: Store, query: str | None) -> None:
    """A query over limits.max_query_bytes is refused before any work (a 20 MB one once took
    the server to 7.6 GB)."""
    from mcp.server.mcpserver.exceptions import ToolError

    from memctl.core.files.input_limits import check_query

    try:
        check_query(query or "", store.settings.limits.max_query_bytes)
    except MemctlError as exc:
        raise ToolError(str(exc)) from None


def tool_call(store: Store, work: Callable[[], Any]) -> Any:
    """Run a tool's work on a store no interrupted forget is left in; a library error becomes
    the message the model reads (and can correct its call from)."""
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        finish_interrupted_forget(store)
        return work()
    except MemctlError as exc:
        raise ToolError(str(exc)) from None


def opted_in(store: Store, include_private: bool) -> bool:
    from memctl.service.privacy import shares_private

    return shares_private(store, True if include_private else None)


def shared_memories(store: Store) -> list[tuple[str, Any]]:
    from memctl import service
    from memctl.service.privacy import shares_private

    everything = shares_private(store)
    return [
        (relpath, memory)
        for relpath, memory in service.list_memories(store).memories
        if everything or memory.scope != "private"
    ]


def recall_tool(store: Store, **fields: Any) -> list[dict]:
    """The `recall` tool: the recall use-case's hits (quarantined ones left out), or with
    `paths`, what the action-time hook would inject."""
    from memctl.service.retrieval.federated import stores_to_read
    from memctl.service.retrieval.use_case import RecallRequest, recall

    refuse_long_query(store, fields.get("query"))
    include_private = bool(fields.get("include_private"))
    if fields.get("paths"):
        return tool_call(
            store,
            lambda: action_items(
                store,
                fields["paths"],
                fields.get("query") or "",
                fields.get("k") or store.settings.hooks.action_k,
                opted_in(store, include_private),
            ),
        )

    def answer() -> list[dict]:
        stores = stores_to_read(store)
        request = RecallRequest.from_fields(
            fields, stores, include_private=opted_in(store, include_private)
        )
        return hit_items(recall(request).hits, stores)

    return tool_call(store, answer)


def hit_items(hits: list, stores: list[tuple[str, Store]]) -> list[dict]:
    """The hits as JSON (Hit.to_dict, with origin), quarantined ones left out: what a tool
    returns enters the agent's context."""
    from memctl.core.trust.provenance import trust_of
    from memctl.service.provenance import gate_for, injectable

    gates = {label: gate_for(each) for label, each in stores}
    return [
        {**hit.to_dict(), "origin": origin, "trust": trust_of(origin)}
        for hit, origin in injectable(hits, gates)
    ]


def add_tool(
    store: Store,
    text: str,
    type: str = "semantic",
    title: str | None = None,
    tags: list[str] | None = None,
    importance: float | None = None,
    pinned: bool = False,
    agent: str | None = None,
    origin: str | None = None,
) -> dict:
    """The `add` tool: `memctl add`, with the origin an agent may state."""
    from memctl import service

    result = tool_call(
        store,
        lambda: service.add_memory(
            store,
            text,
            type=type,
            title=title,
            tags=tags or [],
            importance=importance,
            pinned=pinned,
            agent=agent,
            extra={"origin": agent_origin(origin)},
        ),
    )
    return result.to_dict()


def context_tool(
    store: Store, query: str | None = None, budget: int = 0, include_private: bool = False
) -> str:
    """The `context` tool: `memctl context` (its budget's default is the store's)."""
    from memctl.config import open_user_store
    from memctl.service.retrieval.context import agent_context

    refuse_long_query(store, query)
    return tool_call(
        store,
        lambda: agent_context(
            store,
            query=query,
            budget=budget,
            user_store=open_user_store(besides=store),
            include_private=opted_in(store, include_private),
        ),
    )


def forget_tool(store: Store, id: str) -> dict:  # `id`: the argument name the client sees
    """The `forget` tool: `memctl forget ID`."""
    from memctl.service.memories.forgetting import forget_memory

    return tool_call(store, lambda: forget_memory(store, id))


def memories_index(store: Store) -> str:
    """The `memctl://memories` resource: every shared memory's id, title, type, tags, URI."""
    finish_interrupted_forget(store)
    return json.dumps(
        [
            {
                "id": m.id,
                "title": m.display_title,
                "type": m.type,
                "tags": list(m.tags),
                "uri": memory_uri(m.id),
            }
            for _, m in shared_memories(store)
        ],
        ensure_ascii=False,
    )


def memory_file(store: Store, memory_id: str) -> str:
    """The `memctl://memory/{id}` resource: one memory's Markdown file."""
    from mcp.server.mcpserver.exceptions import ResourceError

    from memctl import service
    from memctl.service.privacy import shares_private

    try:
        finish_interrupted_forget(store)
        path, memory = service.get_memory(store, memory_id)
        if memory.scope == "private" and not shares_private(store):
            raise MemctlError(
                f"Memory '{memory_id}' is private; it is shared with agents only when "
                "config.yaml sets privacy.share_private_with_agents."
            )
        return path.read_text(encoding="utf-8")
    except (MemctlError, OSError) as exc:
        raise ResourceError(str(exc)) from None


def agent_origin(stated: str | None) -> str:
    """An agent's memory is `agent`, or the untrusted origin it names; it cannot claim `user`."""
    from memctl.core.errors import UsageError
    from memctl.core.trust.provenance import UNTRUSTED, check_origin, trust_of

    if not stated:
        return "agent"
    try:
        origin = check_origin(stated)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return origin if trust_of(origin) == UNTRUSTED else "agent"


def finish_interrupted_forget(store: Store) -> None:
    """A forget killed midway (by the CLI or by this server) is finished before any tool or
    resource reads the store: what it was removing never reaches the agent."""
    from memctl.store.forget_journal import journal_path

    if journal_path(store.state_dir).is_file():
        from memctl.service.memories.forgetting import resume_forget

        resume_forget(store)


def serve_stdio(store: Store) -> None:
    from memctl.mcp.transport import serve_stdio as serve_checked

    serve_checked(build_server(store))


def action_items(store, paths: list[str], text: str, k: int, include_private: bool) -> list[dict]:
    """MCP `recall` with `paths`: what the action-time hook would inject, with the text."""
    from memctl.service.retrieval.action import ActionRequest, action_recall

    settings = store.settings.hooks
    result = action_recall(
        [("project", store)],
        ActionRequest(
            paths=tuple(paths),
            text=text,
            budget=max(settings.action_budget, 2000),
            k=k,
            min_relevance=settings.action_min_relevance,
            include_private=include_private,
        ),
    )
    return [item.to_dict() for item in [*result.items, *result.stale]]
