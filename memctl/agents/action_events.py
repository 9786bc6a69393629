"""Claude Code's tool calls as memctl sees them: PreToolUse injects, Stop notes what was used.

PreToolUse carries `tool_name` and `tool_input` (Read/Edit/Write/MultiEdit: `file_path`, the
edit's `new_string` / `content`; Bash: `command`). memctl answers with the memories for that
file or command (service.retrieval.action), each at most once per session, and logs the cost
in the ledger. Stop carries the agent's last reply: memories whose words or anchors it holds
count as used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memctl.agents.claude_code import HookPayload
from memctl.config import Store
from memctl.core.language.tokens import estimate_tokens
from memctl.core.recall.hook_blocks import BlockItem, fit_block
from memctl.service.after_reply import later
from memctl.service.privacy import shares_private
from memctl.store.hook_state import load_session_state

FILE_TOOLS = frozenset({"Read", "Edit", "Write", "MultiEdit", "NotebookEdit"})
CHANGING_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
ALWAYS_HEADING = "## Rules for every task here"
WHOLE_HEADING = "## What this project's memory holds"
# The order a whole store is shown in: rules first, then what they rest on, episodes last.
_TYPE_ORDER = ("preference", "procedural", "semantic", "knowledge", "profile", "episodic")


def _stores(store: Store, user_store: Store | None) -> list[tuple[str, Store]]:
    return [("project", store)] + ([("user", user_store)] if user_store is not None else [])


def tool_call(payload: HookPayload) -> tuple[str, tuple[str, ...], tuple[str, ...], str]:
    """(tool, paths, command lines, the edit's text) from a PreToolUse payload."""
    tool = str(payload.raw.get("tool_name") or "")
    data: Any = payload.raw.get("tool_input")
    data = data if isinstance(data, dict) else {}
    paths: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    text = ""
    if tool in FILE_TOOLS:
        path = data.get("file_path") or data.get("notebook_path")
        paths = (path,) if isinstance(path, str) and path else ()
        parts = [data.get("new_string"), data.get("content")]
        edits = data.get("edits")
        if isinstance(edits, list):
            parts += [e.get("new_string") for e in edits if isinstance(e, dict)]
        text = "\n".join(p for p in parts if isinstance(p, str))
    elif tool == "Bash" and isinstance(data.get("command"), str):
        commands = (data["command"],)
    return tool, paths, commands, text


def action_context(store: Store, payload: HookPayload, user_store: Store | None = None) -> str:
    """The block to add before this tool call; "" when nothing is anchored or relevant."""
    from memctl.service.retrieval.action import action_recall, relative_paths

    tool, paths, commands, text = tool_call(payload)
    if not (paths or commands):
        return ""
    stores = _stores(store, user_store)
    if tool in CHANGING_TOOLS:
        from memctl.service.anchoring import project_of
        from memctl.service.lifecycle.ledger import record_touch

        touched = relative_paths(project_of(store)[0], paths)
        later(lambda: record_touch(store, payload.session_id, touched))
    shown = frozenset(load_session_state(store, payload.session_id).get("shown") or ())
    request = action_request(store, paths, commands, text, shown)
    result = action_recall(stores, request)
    if result.shown:
        later(lambda: _note_shown(store, payload, result.shown))
        later(lambda: record(store, payload, result.shown, result.markdown))
    return result.markdown


def action_request(
    store: Store,
    paths: tuple[str, ...],
    commands: tuple[str, ...] = (),
    text: str = "",
    shown: frozenset[str] = frozenset(),
):
    """The action-time request for a tool call, with the store's hook settings; `shown`: the
    ids already shown in this session (never shown twice)."""
    from memctl.service.retrieval.action import ActionRequest

    settings = store.settings.hooks
    return ActionRequest(
        paths=paths,
        commands=commands,
        text=text[:4000],
        exclude=shown,
        budget=settings.action_budget,
        k=settings.action_k,
        named=settings.action_named_k,
        named_share=settings.action_named_share,
        min_relevance=settings.action_min_relevance,
        include_private=shares_private(store),
    )


def _note_shown(store: Store, payload: HookPayload, ids: tuple[str, ...]) -> None:
    """Add `ids` to the session's shown list; a failure is logged (at worst a memory is shown
    again), never the tool call's problem."""
    from memctl.agents.hook_runner import log_hook_error
    from memctl.store.hook_state import remember_shown

    try:
        remember_shown(store, payload.session_id, ids, reset=False)
    except OSError as error:
        log_hook_error(
            store.state_dir / "hooks.log", payload.event, payload.session_id, f"not saved: {error}"
        )


def record(store: Store, payload: HookPayload, ids, markdown: str) -> None:
    """Log one injection in the ledger (ids and tokens, never the text)."""
    from memctl.service.lifecycle.ledger import record_injection

    record_injection(store, payload.session_id, payload.event, ids, estimate_tokens(markdown))


def note_reply(store: Store, payload: HookPayload) -> None:
    from memctl.service.lifecycle.ledger import record_reply_use

    reply = payload.raw.get("last_assistant_message")
    if not isinstance(reply, str) and payload.transcript_path:
        from memctl.agents.ingest import hook_transcript, read_transcript

        path = hook_transcript(store, payload.transcript_path)
        turns = read_transcript(path, store.settings.limits.max_input_bytes)
        reply = next((t.content for t in reversed(turns) if t.role == "assistant"), "")
    if isinstance(reply, str):
        record_reply_use(store, payload.session_id, reply)


def whole_store_block(
    store: Store, user_store: Store | None, budget: int
) -> tuple[str, tuple[str, ...]] | None:
    """Every memory of the project store (current, shareable, not quarantined, not `apply:
    manual`, not another project's), with the user store's `apply: always` rules, when they
    all fit `budget`: the session then starts with the whole memory, as an agent file loaded
    whole would. None when they do not fit (the session start then shows the best of them).
    """
    from memctl.core.ports import MemoryFilter
    from memctl.service.provenance import gates_for, injectable
    from memctl.service.retrieval.indexing import open_index
    from memctl.store.files import max_file_bytes
    from memctl.store.parsed_memories import read_memory_kept

    index = open_index(store)
    if budget <= 0 or not index.exists():
        return None
    private = shares_private(store)
    where = MemoryFilter(archived=False, scope=None if private else "project")
    rows = {row["id"]: row for row in index.rows(where, ["id", "path", "text"])}
    # Why this check first: a store far over the budget is told by its index, no file read.
    if not rows or sum(estimate_tokens(row["text"] or "") for row in rows.values()) > 2 * budget:
        return None
    hidden = not_automatic(store, None)
    found = []
    for memory_id, row in rows.items():
        if memory_id in hidden:
            continue
        try:
            memory = read_memory_kept(store.root, row["path"], max_file_bytes(store))
        except Exception:  # noqa: BLE001 - unreadable since the index was read: skip it
            continue
        if memory.extra.get("superseded_by"):
            continue
        found.append(_Always(memory.id, memory.display_title, memory.type, memory, "project"))
    gates = gates_for({"project": store})
    kept = sorted(injectable(found, gates), key=lambda pair: _whole_order(*pair))
    items = [
        BlockItem(item.id, item.title, item.type, item.memory.body, origin) for item, origin in kept
    ]
    if not items:
        return None
    block = fit_block(WHOLE_HEADING, items, budget)
    if block.omitted:
        return None
    if user_store is None:
        return block.markdown, block.shown
    rules, rule_ids = always_block(
        store, user_store, budget - estimate_tokens(block.markdown), exclude=set(block.shown)
    )
    return one_fence(block.markdown, rules), block.shown + rule_ids


def _whole_order(item: _Always, origin: str) -> tuple:
    """`apply: always` first, the user's corrections first among them (_rule_order)."""
    always = item.memory.extra.get("apply") == "always"
    return (not always, *_rule_order(item, origin), item.id)


def always_block(
    store: Store, user_store: Store | None, budget: int, exclude: set[str] | None = None
) -> tuple[str, tuple[str, ...]]:
    """The `apply: always` memories of this project (and the person's), cut to `budget`;
    those in `exclude` (already shown) left out."""
    from memctl.service.anchoring import project_of
    from memctl.service.retrieval.action import usable
    from memctl.service.retrieval.anchor_table import anchor_entries
    from memctl.store.files import max_file_bytes
    from memctl.store.parsed_memories import read_memory_kept

    if budget <= 0:
        return "", ()
    from memctl.service.provenance import gates_for, injectable

    project = project_of(store)[1]
    private = shares_private(store)
    found = []
    for label, each in _stores(store, user_store):
        for entry in anchor_entries(each):
            if entry.apply != "always" or not usable(entry, project, private):
                continue
            if exclude and entry.id in exclude:
                continue
            try:
                memory = read_memory_kept(each.root, entry.relpath, max_file_bytes(each))
            except Exception:  # noqa: BLE001 - broken since the table was read: skip it
                continue
            found.append(_Always(entry.id, entry.title, entry.type, memory, label))
    if not found:
        return "", ()
    gates = gates_for(dict(_stores(store, user_store)))
    kept = sorted(injectable(found, gates), key=lambda pair: _rule_order(*pair))
    items = [
        BlockItem(hit.id, hit.title, hit.type, hit.memory.body, origin) for hit, origin in kept
    ]
    block = fit_block(ALWAYS_HEADING, items, budget)
    return block.markdown, block.shown


def _rule_order(rule: _Always, origin: str) -> tuple:
    """The user's own corrections and standing requests first (a preference or procedure in
    their words): what a person should never have to say twice; then by type and importance."""
    memory = rule.memory
    kind = memory.type if memory.type in _TYPE_ORDER else "semantic"
    correction = origin == "user" and kind in ("preference", "procedural")
    return (not correction, _TYPE_ORDER.index(kind), -float(memory.importance or 0))


@dataclass(frozen=True)
class _Always:
    """An `apply: always` memory as the quarantine gate reads it (like a recall hit)."""

    id: str
    title: str
    type: str
    memory: Any
    store: str


def one_fence(*blocks: str) -> str:
    """Fenced blocks joined into one fence (core.trust.fence: one notes block per injection)."""
    from memctl.core.trust.fence import CLOSE, OPEN, PREAMBLE, fence, is_fenced

    bodies = []
    for block in blocks:
        if not block.strip():
            continue
        if is_fenced(block):
            block = block.strip().removeprefix(OPEN).removesuffix(CLOSE).strip("\n")
            block = block.removeprefix(PREAMBLE).strip("\n")
        bodies.append(block)
    return fence("\n\n".join(bodies)) if bodies else ""


def not_automatic(store: Store, user_store: Store | None) -> set[str]:
    """Ids the prompt hook must not inject: `apply: manual`, and other projects' memories."""
    from memctl.service.anchoring import project_of
    from memctl.service.retrieval.anchor_table import anchor_entries

    project = project_of(store)[1]
    return {
        entry.id
        for _, each in _stores(store, user_store)
        for entry in anchor_entries(each)
        if entry.apply == "manual" or entry.project not in (None, project)
    }
