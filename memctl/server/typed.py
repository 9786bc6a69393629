"""Typed requests: the client reads a hot command's own arguments into a small request the
engine runs as a use-case, instead of handing it a command line to parse again.

Typed today: `recall QUERY [options]` (not `--path`) and `hook claude-code EVENT [--plain]
[--foreground] [--store-only]` for the prompt and pre-tool-use events. Anything this reader is not sure of (an unknown option, a value
that is not plainly a number, `--help`, a second word) gives None and the command line travels
as before (argv replay), so click reports usage errors exactly as it does in-process.

The request is a plain dict (`{"use_case": "recall", "request": {...}}`) keyed by the fields of
memctl.core.recall.recall_fields, which also names each field's flags and kind: this reader is generated
from that table, and the engine reads the dict back into the same request value
(memctl.service.retrieval.use_case.RecallRequest). Dataclasses, typing and `re` would each cost
the client's process milliseconds, so the table is plain data.
"""

from __future__ import annotations

from memctl.core.recall.recall_fields import FLAG, FLOAT, INT, LIST, WIRE, fields_of

TYPE_CHECKING = False  # Why not typing.TYPE_CHECKING: the client imports this
if TYPE_CHECKING:
    from typing import Any

HOOK_FLAGS = {
    "--plain": "plain",
    "--foreground": "foreground",
    "--store-only": "store_only",
    "--no-user": "store_only",
}
# Why only these: the hooks on every prompt and tool call; the others (session start and end,
# compaction) are rare, and may ingest with an LLM model that the client's environment names.
TYPED_HOOK_EVENTS = frozenset(
    {"user-prompt-submit", "UserPromptSubmit", "pre-tool-use", "PreToolUse"}
)
STORE_OPTIONS = ("--store", "-s")


def typed_request(argv: list[str]) -> dict[str, Any] | None:
    """The typed request for `memctl ARGV`, or None: replay the command line."""
    position = 0
    while position < len(argv):  # Why: only `--store` may come before the command word
        arg = argv[position]
        if arg in STORE_OPTIONS:
            position += 2
        elif arg.startswith("--store=") or (arg.startswith("-s") and len(arg) > 2):
            position += 1
        elif arg.startswith("-"):
            return None
        else:
            break
    name, rest = (argv[position], argv[position + 1 :]) if position < len(argv) else ("", [])
    if name == "recall":
        request = _recall(rest)
        return None if request is None else {"use_case": "recall", "request": request}
    if name == "hook":
        return _hook(rest)
    return None


def _options() -> dict[str, tuple[str, str]]:
    """Each recall flag the engine's form carries -> (field name, kind)."""
    return {flag: (field.name, field.kind) for field in fields_of(WIRE) for flag in field.flags}


RECALL_OPTIONS = _options()


def _recall(rest: list[str]) -> dict[str, Any] | None:
    request: dict[str, Any] = {field.name: [] for field in fields_of(WIRE) if field.kind == LIST}
    words: list[str] = []
    position = 0
    while position < len(rest):
        arg = rest[position]
        if arg == "--":
            words += rest[position + 1 :]
            break
        option, given, value = arg, False, None
        if arg.startswith("--") and "=" in arg:
            option, value = arg.split("=", 1)
            given = True
        known = RECALL_OPTIONS.get(option)
        if known is not None and known[1] == FLAG:
            if given:
                return None  # click's own message for `--json=x`
            request[known[0]] = True
        elif known is not None:
            if not given:
                if position + 1 >= len(rest):
                    return None
                position += 1
                value = rest[position]
            parsed = _value(known[1], value or "")
            if parsed is None:
                return None  # click's own message for a bad number
            if known[1] == LIST:
                request[known[0]].append(parsed)
            else:
                request[known[0]] = parsed
        elif arg.startswith("-") and arg != "-":
            return None  # --path, --help, -k5 and anything new: the command line decides
        else:
            words.append(arg)
        position += 1
    if len(words) != 1:
        return None
    request["query"] = words[0]
    return request


def _value(kind: str, value: str) -> Any:
    """The option's value as its kind reads it; None when click should judge it."""
    if kind == INT:
        return int(value) if value.isascii() and value.isdigit() else None
    if kind == FLOAT:
        plain = value.isascii() and value.replace(".", "", 1).isdigit()
        return float(value) if plain else None
    return value


def _hook(rest: list[str]) -> dict[str, Any] | None:
    if rest[:1] != ["claude-code"]:
        return None
    request: dict[str, Any] = {"use_case": "hook", "event": ""}
    events = []
    for arg in rest[1:]:
        if arg in HOOK_FLAGS:
            request[HOOK_FLAGS[arg]] = True
        elif arg.startswith("-"):
            return None
        else:
            events.append(arg)
    if len(events) != 1 or events[0] not in TYPED_HOOK_EVENTS:
        return None
    request["event"] = events[0]
    return request
