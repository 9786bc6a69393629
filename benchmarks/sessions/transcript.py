"""Read a Claude Code transcript (JSONL) into the events the benchmark replays and labels cite.

Line numbers are 1-based lines of the file, as a labeller sees them in an editor. Only what a
person typed counts as a prompt: tool results, slash-command echoes, task notifications,
compaction summaries and interrupts are not.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NOT_TYPED = (
    "<command-",
    "<local-command",
    "Caveat:",
    "This session is being continued",
    "<task-notification",
    "[Request interrupted",
    "<bash-stdout",
    "<system-reminder",
)


@dataclass(frozen=True)
class Event:
    """One thing that happened at `line`: a typed prompt, a tool call, or a tool's result."""

    line: int
    kind: str  # prompt | tool | result | reply
    text: str = ""  # prompt text, reply text, or tool result text
    tool: str = ""  # tool name for kind=tool
    tool_input: dict[str, Any] = field(default_factory=dict)
    tool_use_id: str = ""
    is_error: bool = False
    timestamp: str = ""


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(block.get("text", ""))
            for block in content
            if isinstance(block, dict) and block.get("type") == "text"
        )
    return ""


def typed_prompt(record: dict[str, Any]) -> str | None:
    """The text a person typed, or None when the record is not a typed prompt."""
    if record.get("type") != "user" or record.get("isMeta") or record.get("isSidechain"):
        return None
    content = record.get("message", {}).get("content")
    if isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    ):
        return None
    text = _text_of(content).strip()
    if not text or text.startswith(NOT_TYPED):
        return None
    if text.startswith("<bash-input>"):
        return text  # a `!command` the person ran themself: it is theirs
    return text


def records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict):
                yield number, record


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", ""))
            for b in content
            if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def events(path: Path) -> list[Event]:
    """Typed prompts, main-thread tool calls and results, and the agent's replies, in order."""
    found: list[Event] = []
    for number, record in records(path):
        if record.get("isSidechain"):
            continue
        stamp = str(record.get("timestamp") or "")
        prompt = typed_prompt(record)
        if prompt is not None:
            found.append(Event(number, "prompt", prompt, timestamp=stamp))
            continue
        content = record.get("message", {}).get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if record.get("type") == "assistant" and kind == "tool_use":
                found.append(
                    Event(
                        number,
                        "tool",
                        tool=str(block.get("name") or ""),
                        tool_input=block.get("input")
                        if isinstance(block.get("input"), dict)
                        else {},
                        tool_use_id=str(block.get("id") or ""),
                        timestamp=stamp,
                    )
                )
            elif record.get("type") == "assistant" and kind == "text":
                found.append(Event(number, "reply", str(block.get("text") or ""), timestamp=stamp))
            elif record.get("type") == "user" and kind == "tool_result":
                found.append(
                    Event(
                        number,
                        "result",
                        _result_text(block.get("content")),
                        tool_use_id=str(block.get("tool_use_id") or ""),
                        is_error=bool(block.get("is_error")),
                        timestamp=stamp,
                    )
                )
    return found


def session_meta(path: Path) -> dict[str, str]:
    """sessionId and cwd of the transcript's first record that has them."""
    for _, record in records(path):
        if record.get("sessionId") and record.get("cwd"):
            return {"session_id": str(record["sessionId"]), "cwd": str(record["cwd"])}
    return {"session_id": path.stem, "cwd": ""}
