"""`memctl mcp`: the store as an MCP server over stdio.

Tools recall, add, context and forget call the same service functions as the CLI, so a memory
added here is validated, redacted and deduplicated exactly like `memctl add`. Every memory is
also a resource, `memctl://memory/{id}` (its Markdown file), listed with `memctl://memories`.
Private memories stay out of tools and resources unless a call passes `include_private` or
config.yaml sets `privacy.share_private_with_agents` (see service.privacy).
"""

from __future__ import annotations

import json
from typing import Any

from memctl.config import Store
from memctl.core.errors import MemctlError

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


def build_server(store: Store) -> Any:
    """An MCP server bound to `store`; `.run("stdio")` serves it."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ResourceError, ToolError
    from mcp.types import Resource

    from memctl import service
    from memctl.config import open_user_store
    from memctl.service.memories.forgetting import forget_memory
    from memctl.service.privacy import shares_private
    from memctl.service.provenance import gate_for
    from memctl.service.retrieval.context import agent_context
    from memctl.service.retrieval.use_case import RecallRequest
    from memctl.service.retrieval.use_case import recall as recall_use_case

    def opted_in(include_private: bool) -> bool:
        return shares_private(store, True if include_private else None)

    def shared_memories():
        everything = shares_private(store)
        return [
            (relpath, memory)
            for relpath, memory in service.list_memories(store).memories
            if everything or memory.scope != "private"
        ]

    class MemoryServer(MCPServer):
        async def list_resources(self):
            """The fixed resources, then one per memory (read fresh on every listing)."""
            listed = list(await super().list_resources())
            for relpath, memory in shared_memories():
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

    def tool_call(work):
        try:
            finish_interrupted_forget(store)
            return work()
        except MemctlError as exc:  # the model reads the message and can correct its call
            raise ToolError(str(exc)) from None

    @server.tool(
        description=(
            "Find memories by meaning and exact words, in this project's store and the user's "
            "own store. Returns the best `k` (without `k`: up to recall.k, only those relevant "
            "enough). Private memories only with include_private=true, when the user asked. "
            "With `paths` (files you are about to read or change): the memories anchored to them "
            "and the best matches for them and the query; stale ones are marked."
        )
    )
    def recall(
        query: str = "",
        k: int | None = None,
        types: list[str] | None = None,
        tags: list[str] | None = None,
        include_private: bool = False,
        paths: list[str] | None = None,
    ) -> list[dict]:
        if paths:
            return tool_call(
                lambda: action_items(
                    store,
                    paths,
                    query,
                    k or store.settings.hooks.action_k,
                    opted_in(include_private),
                )
            )
        request = RecallRequest(
            store=store,
            query=query,
            k=k,
            types=tuple(types or ()),
            tags=tuple(tags or ()),
            include_private=opted_in(include_private),
        )
        result = tool_call(lambda: recall_use_case(request))
        # Why: what a tool returns enters the agent's context; quarantined memories never do.
        gates = {"project": gate_for(store)}
        if "user" in result.stores:
            user = open_user_store(besides=store)
            if user is not None:
                gates["user"] = gate_for(user)
        listed = []
        for hit in result.hits:
            gate = gates.get(getattr(hit, "store", "project"), gates["project"])
            if not gate.quarantined(hit.memory):
                listed.append({**hit.to_dict(), "origin": gate.origin(hit.memory)})
        return listed

    @server.tool(
        description=(
            "Remember something durable: one fact, preference, decision or procedure per call. "
            "type is one of episodic, semantic, procedural, preference, profile, knowledge. "
            "Secrets and personal data are redacted before anything is written. When the "
            "words are not your own, say where they came from in `origin`: tool:<name>, "
            "url:<url>, file:<path>."
        )
    )
    def add(
        text: str,
        type: str = "semantic",
        title: str | None = None,
        tags: list[str] | None = None,
        importance: float | None = None,
        pinned: bool = False,
        agent: str | None = None,
        origin: str | None = None,
    ) -> dict:
        result = tool_call(
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
            )
        )
        return result.to_dict()

    @server.tool(
        description=(
            "A Markdown block of what this project remembers, within `budget` tokens; with "
            "`query`, focused on it. Private memories only with include_private=true."
        )
    )
    def context(
        query: str | None = None,
        budget: int = store.settings.context.budget,
        include_private: bool = False,
    ) -> str:
        return tool_call(
            lambda: agent_context(
                store,
                query=query,
                budget=budget,
                user_store=open_user_store(besides=store),
                include_private=opted_in(include_private),
            )
        )

    @server.tool(description="Forget a memory by id: its file and index rows are removed.")
    def forget(id: str) -> dict:  # `id`: the argument name the client sees
        return tool_call(lambda: forget_memory(store, id))

    @server.resource(
        INDEX_URI,
        name="memories",
        mime_type="application/json",
        description="Every memory: id, title, type, tags and its resource URI.",
    )
    def memories_index() -> str:
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
                for _, m in shared_memories()
            ],
            ensure_ascii=False,
        )

    @server.resource(
        MEMORY_URI,
        name="memory",
        mime_type="text/markdown",
        description="One memory's Markdown file, front matter included.",
    )
    def memory_file(memory_id: str) -> str:
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

    return server


def agent_origin(stated: str | None) -> str:
    """An agent's memory is `agent`, or the untrusted origin it names; it cannot claim `user`."""
    from memctl.core.errors import UsageError
    from memctl.core.provenance import UNTRUSTED, check_origin, trust_of

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
    return [{**item.to_dict(), "body": item.body} for item in [*result.items, *result.stale]]
