"""Replay a later session through the hooks Claude Code would call, up to a given line.

SessionStart first, then, in transcript order, each typed prompt through UserPromptSubmit and each
Read/Edit/Write/MultiEdit/Bash call through PreToolUse, all through `run_claude_code_hook`, the
function `memctl hook claude-code EVENT` runs. Paths under the session's recorded cwd are mapped to
the replay's project folder, where the store lives. What each hook hands the agent is kept.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from benchmarks.sessions.transcript import Event, events, session_meta

ACTION_TOOLS = frozenset({"Read", "Edit", "Write", "MultiEdit", "Bash"})


@dataclass(frozen=True)
class Injection:
    line: int  # transcript line of the prompt or tool call (0: session start)
    event: str
    text: str  # the additionalContext handed to the agent


def _context_of(output: str) -> str:
    if not output.strip():
        return ""
    try:
        data = json.loads(output)
    except json.JSONDecodeError:
        return output  # plain text form
    specific = data.get("hookSpecificOutput") if isinstance(data, dict) else None
    if isinstance(specific, dict):
        return str(specific.get("additionalContext") or "")
    return ""


def _mapped(value: object, old_root: str, new_root: str) -> object:
    if isinstance(value, str) and old_root and value.startswith(old_root):
        return new_root + value[len(old_root) :]
    if isinstance(value, dict):
        return {key: _mapped(inner, old_root, new_root) for key, inner in value.items()}
    if isinstance(value, list):
        return [_mapped(inner, old_root, new_root) for inner in value]
    return value


def call_hook(event: str, payload: dict, store: Path, project: Path) -> str:
    from memctl.agents.claude_code_events import run_claude_code_hook
    from memctl.config import read_environment

    output = run_claude_code_hook(
        event,
        json.dumps(payload),
        explicit_store=str(store),
        env=read_environment({}),
        cwd=project,
        background=False,
        store_only=True,
    )
    return _context_of(output)


def warm_up(store: Path, project: Path) -> None:
    """Load the model and the index in this process before the replay, outside any hook budget.

    The hooks are thin clients of a resident engine that keeps the model loaded; replaying them
    in a fresh process would otherwise spend the first hook's whole budget loading it."""
    from memctl.agents.claude_code import normalize_payload
    from memctl.agents.claude_code_events import prompt_context, session_start_context
    from memctl.config import open_store

    opened = open_store(store)
    base = {"session_id": "warm-up", "cwd": str(project)}
    start = normalize_payload(json.dumps({**base, "hook_event_name": "SessionStart"}))
    session_start_context(opened, start)
    ask = {**base, "hook_event_name": "UserPromptSubmit", "prompt": "how do we run the tests here?"}
    prompt_context(opened, normalize_payload(json.dumps(ask)))


def replay(transcript: Path, store: Path, project: Path, stop_line: int) -> list[Injection]:
    """Every non-empty injection from session start up to (not including) `stop_line`."""
    warm_up(store, project)
    meta = session_meta(transcript)
    session_id = f"replay-{meta['session_id']}"
    old_root, new_root = meta["cwd"], str(project)
    base = {"session_id": session_id, "cwd": new_root, "transcript_path": str(transcript)}
    found: list[Injection] = []
    start = call_hook(
        "SessionStart",
        {**base, "hook_event_name": "SessionStart", "source": "startup"},
        store,
        project,
    )
    if start:
        found.append(Injection(0, "SessionStart", start))
    for event in events(transcript):
        if event.line >= stop_line:
            break
        text = _hook_for(event, base, old_root, new_root, store, project)
        if text:
            found.append(Injection(event.line, _event_name(event), text))
    return found


def _event_name(event: Event) -> str:
    return "UserPromptSubmit" if event.kind == "prompt" else "PreToolUse"


def _hook_for(
    event: Event, base: dict, old_root: str, new_root: str, store: Path, project: Path
) -> str:
    if event.kind == "prompt":
        payload = {**base, "hook_event_name": "UserPromptSubmit", "prompt": event.text}
        return call_hook("UserPromptSubmit", payload, store, project)
    if event.kind == "tool" and event.tool in ACTION_TOOLS:
        payload = {
            **base,
            "hook_event_name": "PreToolUse",
            "tool_name": event.tool,
            "tool_input": _mapped(event.tool_input, old_root, new_root),
            "tool_use_id": event.tool_use_id,
        }
        return call_hook("PreToolUse", payload, store, project)
    return ""
