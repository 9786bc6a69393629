"""The LLM side of `memctl extract`: the prompt, and a strict check of the JSON it returns."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from memctl.core.learning.conversation import Turn

OPS = ("ADD", "UPDATE", "NOOP")
EXTRACT_TYPES = ("preference", "profile", "semantic", "procedural")
MAX_ITEMS = 100

SYSTEM_PROMPT = """You maintain the long-term memory of a coding assistant.
From the conversation, list the durable memories it states explicitly:
- preference: how the user likes things done (tools, style, formats)
- profile: facts about the user (name, role, employer, timezone, location)
- semantic: decisions the team made, facts about the project
- procedural: how to do something, rules to follow, lessons learned
Keep only what a speaker plainly said. Never guess, infer or add details. Skip questions,
small talk, one-off task status, code, and anything the assistant merely suggested.
Write each memory as one standalone sentence ("The user prefers ...", "The team decided ...").

Compare each memory with the existing memories listed by id:
- ADD: not stored yet (target_id null)
- UPDATE: the conversation gives a new value for what an existing memory says (target_id = its id)
- NOOP: an existing memory already says it (target_id = its id)
confidence (0 to 1): how explicitly and firmly it was stated.

Reply with JSON only, in this shape (an empty list when there is nothing durable):
{"memories": [{"op": "ADD", "type": "preference", "text": "...", "target_id": null,
  "confidence": 0.9, "reason": "..."}]}"""


class BadPlan(ValueError):
    """The reply is JSON but not a valid plan; llm.complete_json treats it as malformed."""


@dataclass(frozen=True)
class LLMItem:
    op: str
    type: str
    text: str
    target_id: str | None
    confidence: float
    reason: str


def build_messages(
    turns: list[Turn], existing: list[tuple[str, str, str]], max_chars: int
) -> list[dict]:
    """`existing`: (id, type, text) of the stored memories nearest to the conversation."""
    known = "\n".join(
        f"- {mid} [{mtype}]: {' '.join(text.split())}" for mid, mtype, text in existing
    )
    conversation = conversation_text(turns, max_chars)
    user = (
        f"Existing memories:\n{known or '(none)'}\n\n"
        f"Conversation:\n{conversation}\n\nReply with the JSON object only."
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def conversation_text(turns: list[Turn], max_chars: int, assistant_chars: int = 600) -> str:
    """`role: text` lines within `max_chars`: user turns whole, long assistant turns clipped,
    and if still too long, the latest turns (what was said last wins a change of mind)."""
    lines = []
    for turn in turns:
        if turn.role not in ("user", "assistant") or not turn.content.strip():
            continue
        text = turn.content.strip()
        if turn.role == "assistant" and len(text) > assistant_chars:
            text = text[:assistant_chars].rstrip() + " […]"
        lines.append(f"{turn.role}: {text}")
    kept: list[str] = []
    size = 0
    for line in reversed(lines):
        if size + len(line) + 1 > max_chars and kept:
            break
        kept.append(line[:max_chars])
        size += len(line) + 1
    return "\n".join(reversed(kept))


def checker(known_ids: Collection[str] | Callable[[str], bool]) -> Callable[[Any], list[LLMItem]]:
    """A validator for llm.complete_json: raises BadPlan naming the first problem."""
    is_known = known_ids if callable(known_ids) else known_ids.__contains__
    return lambda data: parse_items(data, is_known)


def parse_items(data: Any, is_known: Callable[[str], bool]) -> list[LLMItem]:
    if isinstance(data, dict):
        if set(data) != {"memories"}:
            raise BadPlan('expected an object with one key, "memories"')
        data = data["memories"]
    if not isinstance(data, list):
        raise BadPlan('"memories" must be a list')
    if len(data) > MAX_ITEMS:
        raise BadPlan(f"more than {MAX_ITEMS} memories")
    return [_item(index, raw, is_known) for index, raw in enumerate(data, start=1)]


def _item(index: int, raw: Any, is_known: Callable[[str], bool]) -> LLMItem:
    where = f"memory {index}"
    if not isinstance(raw, dict):
        raise BadPlan(f"{where} is not an object")
    op = raw.get("op")
    if not isinstance(op, str) or op.upper() not in OPS:
        raise BadPlan(f"{where}: op {op!r} is not one of {', '.join(OPS)}")
    op = op.upper()
    type_ = raw.get("type")
    if type_ not in EXTRACT_TYPES:
        raise BadPlan(f"{where}: type {type_!r} is not one of {', '.join(EXTRACT_TYPES)}")
    text = raw.get("text")
    if not isinstance(text, str) or not text.strip():
        raise BadPlan(f"{where}: text must be a non-empty string")
    confidence = raw.get("confidence")
    if (
        isinstance(confidence, bool)
        or not isinstance(confidence, (int, float))
        or not 0 <= confidence <= 1
    ):
        raise BadPlan(f"{where}: confidence must be a number from 0 to 1 (got {confidence!r})")
    target = raw.get("target_id")
    if target in ("", None):
        target = None
    elif not isinstance(target, str):
        raise BadPlan(f"{where}: target_id must be a string or null")
    if op == "UPDATE" and target is None:
        raise BadPlan(f"{where}: UPDATE needs the target_id of an existing memory")
    if op == "ADD" and target is not None:
        raise BadPlan(f"{where}: ADD must not name a target_id (use UPDATE or NOOP)")
    if target is not None and not is_known(target):
        raise BadPlan(f"{where}: target_id {target!r} is not an existing memory")
    reason = raw.get("reason") or ""
    if not isinstance(reason, str):
        raise BadPlan(f"{where}: reason must be a string")
    return LLMItem(op, type_, text.strip(), target, float(confidence), reason.strip())
