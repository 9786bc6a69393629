"""Short Markdown blocks of memories for an agent's context, cut to a token budget.

Pure text functions: the hooks and the MCP server decide which memories; this decides how
many fit and how they read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memctl.core.fence import fence, neutralise, note_label
from memctl.core.history import agent_body
from memctl.core.text import clip
from memctl.core.tokens import estimate_tokens

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_SLASH_COMMAND = re.compile(r"^/[\w:-]+(\s|$)")
_ACKNOWLEDGEMENT = re.compile(
    r"^(?:ok(?:ay)?|k|yes|yep|yeah|no|nope|sure|thanks?(?: you)?|thx|ty|great|cool|nice|"
    r"perfect|done|go(?: ahead| on)?|continue|proceed|next|do it|lgtm|sounds good|got it|"
    r"好的?|谢谢|嗯|行|可以|继续|收到)[\s.!。！]*$",
    re.IGNORECASE,
)


def is_trivial_prompt(prompt: str, min_chars: int = 12) -> bool:
    """Prompts that need no memories: acknowledgements, slash commands, a word or two."""
    text = " ".join(prompt.split())
    if not text or _SLASH_COMMAND.match(text) or _ACKNOWLEDGEMENT.match(text):
        return True
    if _CJK.search(text):
        return len(text) < max(min_chars // 3, 2)
    return len(text) < min_chars


@dataclass(frozen=True)
class BlockItem:
    """One memory as the block shows it."""

    id: str
    title: str
    type: str
    body: str
    origin: str = ""  # where its words came from (service.provenance); "" leaves the label out
    date: str = ""


@dataclass(frozen=True)
class Block:
    markdown: str
    shown: tuple[str, ...]  # ids in the block, in order
    omitted: int  # items that did not fit the budget


def memory_line(item: BlockItem, max_chars: int = 360) -> str:
    """`- **title** (type, id; origin ..., date): body`, neutralised (core.fence), flattened to
    one line and cut at `max_chars`."""
    body = " ".join(neutralise(agent_body(item.body)).split())
    title = " ".join(neutralise(item.title).split())
    # NFKC (in neutralise) turns a cut title's "…" into "...".
    shown = title.removesuffix("...").rstrip("…")
    if shown and body.startswith(shown):
        # Why back to a word start: a title cut mid-word ("kubectl argo ro…") must not leave
        # the body opening on the rest of that word ("llouts promote api").
        rest = len(shown)
        if rest < len(body) and body[rest].isalnum() and body[rest - 1].isalnum():
            rest = body.rfind(" ", 0, rest) + 1
        body = body[rest:].lstrip(" .:-—")
    label = f"; {note_label(item.origin, item.date)}" if item.origin else ""
    line = f"- **{title}** ({item.type}, {item.id}{label})"
    if body:
        line += f": {body}"
    return clip(line, max_chars)


def fit_block(heading: str, items: list[BlockItem], budget_tokens: int, footer: str = "") -> Block:
    """The heading and as many items as fit in `budget_tokens`, in the order given, fenced as
    notes (core.fence).

    An empty block ("") when not even the first item fits, so a hook prints nothing rather
    than a heading without content.
    """
    lines = [heading, ""]
    used = estimate_tokens(fence(heading)) + estimate_tokens(footer) + 2
    shown: list[str] = []
    for item in items:
        line = memory_line(item)
        cost = estimate_tokens(line) + 1
        if used + cost > budget_tokens:
            continue  # a later, shorter memory may still fit
        lines.append(line)
        shown.append(item.id)
        used += cost
    if not shown:
        return Block("", (), len(items))
    if footer:
        lines.extend(["", footer])
    return Block(fence("\n".join(lines)), tuple(shown), len(items) - len(shown))
