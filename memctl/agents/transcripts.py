"""Read a conversation from JSONL messages, a Claude Code transcript, or plain text.

Formats are detected from the text itself:

* JSONL, when the first non-blank line starts with `{` and at least one line is a JSON object.
  Each line is either a message (`{"role", "content"}`, content a string or a list of parts)
  or a Claude Code transcript entry (`{"type": "user"|"assistant", "message": {...}, ...}`).
  Claude Code bookkeeping lines (summary, system, file-history-snapshot, ...) carry no
  conversation and are skipped; so are meta, sidechain (sub-agent) and compaction-summary
  entries. Only text parts are kept: tool calls, tool results, thinking and images are not
  conversation. A line that is not JSON, or a JSON line that is neither shape, is an error
  naming the line: nothing the user wrote is dropped without saying so.
* A JSON array of message objects.
* Plain text: lines starting with a role (`User:`, `Assistant:`, `用户：`, ...) start turns;
  without any, the whole text is one user turn.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from memctl.core.errors import InvalidMemoryFile, MemctlError
from memctl.core.learning.conversation import ToolCall, Turn
from memctl.core.trust.fence import CLOSE, OPEN
from memctl.store.safe_read import DEFAULT_MAX_INPUT_BYTES, file_kind, read_input_file

ROLE_ALIASES = {
    "user": "user",
    "human": "user",
    "me": "user",
    "用户": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "bot": "assistant",
    "model": "assistant",
    "claude": "assistant",
    "gpt": "assistant",
    "助手": "assistant",
    "system": "system",
    "系统": "system",
    "developer": "system",
    "tool": "tool",
    "function": "tool",
}

TEXT_PART_TYPES = {"text", "input_text", "output_text"}

# Entry flags that mark Claude Code lines which are not part of the visible conversation.
CLAUDE_SKIP_FLAGS = ("isMeta", "isSidechain", "isCompactSummary")

_ROLE_LINE = re.compile(
    r"^\s*(?:[>*#]+\s*)?(?:\*\*)?"
    r"(user|human|me|assistant|ai|bot|claude|gpt|system|用户|助手|系统)"
    r"(?:\*\*)?\s*[:：](?:\*\*)?[ \t]*(.*)$",
    re.IGNORECASE,
)
_SYSTEM_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)
# What an app wrapping Claude Code (Conductor, ...) puts before the person's words.
_HARNESS_INSTRUCTION = re.compile(
    r"<system[_-]instruction>.*?</system[_-]instruction>", re.DOTALL | re.IGNORECASE
)
_SHELL_ECHOES = (
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
)
# What memctl itself injected (core.trust.fence): notes it already holds, private ones included, so
# extraction must not write them again as new memories (a private note would become a project one).
_MEMCTL_NOTES = re.compile(re.escape(OPEN) + r".*?(?:" + re.escape(CLOSE) + r"|\Z)", re.DOTALL)
_COMMAND_TAG = re.compile(r"<(command-name|command-args)>(.*?)</\1>", re.DOTALL)
_INTERRUPTED = re.compile(r"^\[Request interrupted by user[^\]]*\]$")


def read_conversation_file(
    path: str | Path, max_bytes: int = DEFAULT_MAX_INPUT_BYTES
) -> list[Turn]:
    """Turns of a conversation file: only a regular file of at most `max_bytes` is read."""
    path = Path(path)
    try:
        raw = read_input_file(path, max_bytes)
    except OSError as exc:  # missing, a folder, unreadable: say so, not a traceback
        raise MemctlError(f"Cannot read {path}: {exc.strerror or exc}.") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InvalidMemoryFile(path, line, "not UTF-8 text") from None
    return read_conversation(text, source=str(path))


def read_conversation(text: str, *, source: str = "<input>") -> list[Turn]:
    """Turns of a conversation in any supported format; `source` names it in errors."""
    text = text.lstrip("\ufeff")
    fmt = detect_format(text)
    if fmt == "jsonl":
        return _read_jsonl(text, source)
    if fmt == "json_array":
        return _read_json_array(text, source)
    return _read_plain_text(text)


def detect_format(text: str) -> str:
    """One of "jsonl", "json_array", "text"."""
    stripped = text.strip()
    if not stripped:
        return "text"
    if stripped.startswith("["):
        try:
            value = json.loads(stripped)
        except json.JSONDecodeError:
            return "text"
        if isinstance(value, list) and all(isinstance(item, dict) for item in value):
            return "json_array"
        return "text"
    if stripped.startswith("{"):
        for line in stripped.splitlines():
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                if isinstance(json.loads(line), dict):
                    return "jsonl"
            except json.JSONDecodeError:
                continue
    return "text"


def _read_jsonl(text: str, source: str) -> list[Turn]:
    turns: list[Turn] = []
    previous_id = None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidMemoryFile(source, number, f"not valid JSON ({exc.msg})") from None
        turn = _entry_to_turn(entry, source, number)
        message_id = _message_id(entry)
        if turn is None:
            continue
        # Claude Code writes one line per content block of a message; they share message.id.
        if message_id and message_id == previous_id and turns and turns[-1].role == turn.role:
            last = turns[-1]
            content = f"{last.content}\n\n{turn.content}"
            turns[-1] = Turn(last.role, content, last.timestamp, last.line, number)
        else:
            turns.append(Turn(turn.role, turn.content, turn.timestamp, number, number))
        previous_id = message_id
    return turns


def _message_id(entry: Any) -> str | None:
    message = entry.get("message") if isinstance(entry, dict) else None
    value = message.get("id") if isinstance(message, dict) else None
    return value if isinstance(value, str) else None


def _read_json_array(text: str, source: str) -> list[Turn]:
    turns: list[Turn] = []
    for index, entry in enumerate(json.loads(text)):
        try:
            turn = _entry_to_turn(entry, source, 0)
        except InvalidMemoryFile as error:
            raise InvalidMemoryFile(source, _line_of_item(text, index), error.problem) from None
        if turn is not None:
            turns.append(turn)
    return turns


def _line_of_item(text: str, index: int) -> int:
    """Best-effort line number of the index-th object of a JSON array (for error messages)."""
    decoder = json.JSONDecoder()
    pos = text.index("[") + 1
    for current in range(index + 1):
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if current == index:
            return text.count("\n", 0, pos) + 1
        _, pos = decoder.raw_decode(text, pos)
    return 1


def _entry_to_turn(entry: Any, source: str, line: int) -> Turn | None:
    if not isinstance(entry, dict):
        raise InvalidMemoryFile(source, line, "expected a JSON object per line")
    if isinstance(entry.get("message"), dict):
        return _claude_entry_to_turn(entry, source, line)
    if "role" in entry:
        return _message_to_turn(entry, source, line)
    if isinstance(entry.get("type"), str):
        return None  # transcript bookkeeping: summary, system, file-history-snapshot, ...
    raise InvalidMemoryFile(
        source,
        line,
        "expected a message with 'role' and 'content' "
        "or a Claude Code entry with 'type' and 'message'",
    )


def _message_to_turn(entry: dict, source: str, line: int) -> Turn | None:
    role = _normalize_role(entry.get("role"), source, line)
    if "content" not in entry:
        raise InvalidMemoryFile(source, line, "message has no 'content'")
    content = _without_memctl_notes(_content_text(entry["content"], source, line))
    if not content:
        return None
    return Turn(role, content, _timestamp(entry))


def _claude_entry_to_turn(entry: dict, source: str, line: int) -> Turn | None:
    if entry.get("type") not in ("user", "assistant"):
        return None
    if any(entry.get(flag) for flag in CLAUDE_SKIP_FLAGS):
        return None
    message = entry["message"]
    role = _normalize_role(message.get("role", entry["type"]), source, line)
    content = _content_text(message.get("content", ""), source, line)
    content = _without_memctl_notes(_clean_claude_text(content))
    if not content:
        return None
    return Turn(role, content, _timestamp(entry))


def _without_memctl_notes(text: str) -> str:
    return _MEMCTL_NOTES.sub("", text).strip() if OPEN in text else text


def _normalize_role(value: Any, source: str, line: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidMemoryFile(source, line, "message 'role' must be a non-empty string")
    role = value.strip().lower()
    return ROLE_ALIASES.get(role, role)


def _content_text(content: Any, source: str, line: int) -> str:
    """The text of a message's content: a string, or the text parts of a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        raise InvalidMemoryFile(source, line, "'content' must be a string or a list of parts")
    texts = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict):
            if part.get("type", "text") in TEXT_PART_TYPES and isinstance(part.get("text"), str):
                texts.append(part["text"])
            # tool_use, tool_result, thinking, image, ...: not conversation text
        else:
            raise InvalidMemoryFile(source, line, "a content part must be an object or a string")
    return "\n\n".join(t.strip() for t in texts if t.strip())


def _clean_claude_text(text: str) -> str:
    """Drop what Claude Code injects into user turns; keep what the person typed."""
    text = _SYSTEM_REMINDER.sub("", text).strip()
    text = _HARNESS_INSTRUCTION.sub("", text).strip()
    if text.startswith(_SHELL_ECHOES):
        return ""  # a `!command` the user ran in the prompt, and its output: not their words
    if text.startswith(("<command-name>", "<command-message>")):
        # A slash command: keep it only when the person typed arguments after it.
        tags = dict(_COMMAND_TAG.findall(text))
        args = tags.get("command-args", "").strip()
        return f"{tags.get('command-name', '').strip()} {args}".strip() if args else ""
    if _INTERRUPTED.match(text):
        return ""
    return text


def _timestamp(entry: dict) -> str | None:
    value = entry.get("timestamp")
    if value is None:
        value = entry.get("created_at")
    return None if value is None else str(value)


def _read_plain_text(text: str) -> list[Turn]:
    turns: list[Turn] = []
    role: str | None = None
    lines: list[str] = []

    def flush() -> None:
        content = _without_memctl_notes("\n".join(lines).strip())
        if content:
            turns.append(Turn(role or "user", content))

    if not any(_ROLE_LINE.match(line) for line in text.splitlines()):
        content = _without_memctl_notes(text.strip())
        return [Turn("user", content)] if content else []
    for line in text.splitlines():
        match = _ROLE_LINE.match(line)
        if match:
            flush()
            role = ROLE_ALIASES[match.group(1).lower()]
            lines = [match.group(2)]
        else:
            lines.append(line)
    flush()
    return turns


# --- a hook's transcript_path --------------------------------------------------------------

TRANSCRIPT_SUFFIX = ".jsonl"


class NotATranscript(MemctlError):
    """A hook payload's `transcript_path` that is not a Claude Code transcript."""

    kind = "invalid_hook_input"


def checked_transcript_path(path: str | Path, folders: Iterable[Path]) -> Path:
    """`path` when it can be a Claude Code transcript: a `.jsonl` file inside one of `folders`
    (Claude Code's own, by default), after following every link. A payload naming anything
    else (`/etc/passwd`, a notes file with a planted "User:" line) is refused, never read."""
    given = Path(path)
    if not given.is_absolute():
        raise NotATranscript(f"transcript_path {str(path)!r} is not an absolute path; not read")
    try:
        real = given.resolve(strict=True)
    except FileNotFoundError:
        raise NotATranscript(f"transcript_path {given} does not exist") from None
    except (OSError, RuntimeError) as exc:
        raise NotATranscript(f"transcript_path {given} cannot be resolved ({exc})") from None
    kind = file_kind(os.stat(real).st_mode)
    if kind:
        raise NotATranscript(f"transcript_path {given} is {kind}, not a transcript file; not read")
    if real.suffix != TRANSCRIPT_SUFFIX:
        raise NotATranscript(
            f"transcript_path {given} is not a {TRANSCRIPT_SUFFIX} transcript; not read"
        )
    inside = []
    for folder in folders:
        try:
            inside.append(real.is_relative_to(folder.resolve()))
        except (OSError, RuntimeError):
            continue
    if not any(inside):
        names = ", ".join(str(f) for f in folders) or "none configured"
        raise NotATranscript(
            f"transcript_path {given} is outside the transcript folders ({names}); not read. "
            "Add its folder to hooks.transcript_folders in config.yaml if it is a transcript."
        )
    return given


def read_jsonl_transcript(raw: bytes, source: str) -> list[Turn]:
    """Turns of a Claude Code transcript's bytes; anything but JSONL is refused."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InvalidMemoryFile(source, line, "not UTF-8 text") from None
    if text.strip() and detect_format(text) != "jsonl":
        raise InvalidMemoryFile(source, 1, "not a JSONL transcript (one JSON object per line)")
    return read_conversation(text, source=source)


# --- tool outputs (for provenance) ---------------------------------------------------------


def read_tool_outputs(text: str) -> list[tuple[str, str]]:
    """(origin, text) of every tool result in a JSONL conversation: Claude Code's `tool_result`
    parts (named by the `tool_use` they answer) and `{"role": "tool"}` messages. Not turns of
    the conversation, but what extraction checks an item's words against (core.trust.provenance)."""
    return [(origin, body) for _, origin, body in read_tool_outputs_at(text)]


def read_tool_outputs_at(text: str) -> list[tuple[int, str, str]]:
    """(line, origin, text) of every tool result: `read_tool_outputs` with where each is, so
    that words a user typed are checked only against what tools had said before them."""
    text = text.lstrip("\ufeff")
    if detect_format(text) != "jsonl":
        return []
    names: dict[str, str] = {}
    outputs: list[tuple[int, str, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(entry, dict):
            continue
        inner = entry.get("message")
        message: dict[str, Any] = inner if isinstance(inner, dict) else entry
        role = str(message.get("role") or entry.get("type") or "").lower()
        content = message.get("content")
        if ROLE_ALIASES.get(role) == "tool":
            name = str(message.get("name") or entry.get("name") or "tool")
            outputs.append((number, _tool_origin(name), _part_text(content)))
            continue
        for part in content if isinstance(content, list) else []:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "tool_use" and isinstance(part.get("id"), str):
                names[part["id"]] = str(part.get("name") or "tool")
            elif part.get("type") == "tool_result":
                name = names.get(str(part.get("tool_use_id")), "tool")
                outputs.append((number, _tool_origin(name), _part_text(part.get("content"))))
    return [(at, origin, body) for at, origin, body in outputs if body.strip()]


def _tool_origin(name: str) -> str:
    from memctl.core.trust.provenance import make_origin

    return make_origin("tool", name or "tool")


def _part_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_part_text(part) for part in content)
    if isinstance(content, dict):
        return _part_text(content.get("text") or content.get("content") or "")
    return ""


# --- tool calls (for commands and gotchas) ---------------------------------------------------

TOOL_OUTPUT_HEAD = 600  # characters of a tool's result kept with its call


def read_tool_calls(text: str) -> list[ToolCall]:
    """The tool calls of a Claude Code JSONL transcript, in order, each with whether it
    succeeded (its `tool_result` is not an error) and the start of what it returned.
    Sub-agent (sidechain) calls are left out: they are another conversation."""
    text = text.lstrip("\ufeff")
    if detect_format(text) != "jsonl":
        return []
    calls: list[ToolCall] = []
    by_id: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if '"tool_' not in line:
            continue  # Why: most lines of a long transcript hold neither; skip their parse
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(entry, dict) or entry.get("isSidechain"):
            continue
        message = entry.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        for part in content if isinstance(content, list) else []:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "tool_use" and isinstance(part.get("id"), str):
                given = part.get("input")
                data: dict[str, Any] = given if isinstance(given, dict) else {}
                command = data.get("command")
                command = command if isinstance(command, str) else ""
                path = data.get("file_path") or data.get("notebook_path") or ""
                by_id[part["id"]] = len(calls)
                calls.append(
                    ToolCall(
                        str(part.get("name") or "tool"),
                        command,
                        path if isinstance(path, str) else "",
                        number,
                    )
                )
            elif part.get("type") == "tool_result":
                index = by_id.get(str(part.get("tool_use_id")))
                if index is None:
                    continue
                output = _part_text(part.get("content"))[:TOOL_OUTPUT_HEAD]
                calls[index] = replace(
                    calls[index],
                    ok=not part.get("is_error"),
                    result_line=number,
                    output=output,
                )
    return calls
