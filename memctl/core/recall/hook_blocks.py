"""Short Markdown blocks of memories for an agent's context, cut to a token budget.

Pure text functions: the hooks and the MCP server decide which memories; this decides how
many fit and how they read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memctl.core.files.history import agent_body
from memctl.core.language.text import clip
from memctl.core.language.tokens import estimate_tokens
from memctl.core.trust.fence import fence, neutralise, note_label

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(])|(?<=[。！？；])")
_SLASH_COMMAND = re.compile(r"^/[\w:-]+(\s|$)")
_ACKNOWLEDGEMENT = re.compile(
    r"^(?:ok(?:ay)?|k|yes|yep|yeah|no|nope|sure|thanks?(?: you)?|thx|ty|great|cool|nice|"
    r"perfect|done|go(?: ahead| on)?|continue|proceed|next|do it|lgtm|sounds good|got it|"
    r"好的?|谢谢|嗯|行|可以|继续|收到)[\s.!。！]*$",
    re.IGNORECASE,
)


_PAST = re.compile(
    r"\b(?:last time|last session|previous(?:ly)?|earlier|yesterday|ago|did (?:we|i|you)|"
    r"have (?:we|i|you)|we (?:did|tried|decided|agreed|discussed|chose|changed|fixed)|"
    r"what happened|history|remind me|recall|remember)\b|上次|之前|昨天|以前|曾经|记得|历史",
    re.IGNORECASE,
)


def asks_about_past(prompt: str) -> bool:
    """The prompt asks about earlier work ("what did we decide last time?"), so what happened
    once (an episode) may be the answer; a task prompt ("add a test for X") needs rules."""
    return _PAST.search(prompt) is not None


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
    """`- **title**: body (type, id; origin ..., date)`, neutralised (core.trust.fence), on one line.

    The text comes first and whole (memory_text), without its `## History`; the metadata
    closes the line, so no sentence resumes after it.
    """
    label = f"; {note_label(item.origin, item.date)}" if item.origin else ""
    meta = f"({item.type}, {item.id}{label})"
    text = memory_text(item.title, agent_body(item.body), max_chars - len(meta) - 3)
    return f"- {text} {meta}"


def memory_text(title: str, body: str, room: int) -> str:
    """A memory's title and body as one passage of at most `room` characters, neutralised:
    cut at a sentence end when one falls in its second half, else between words. A title that
    only opens the body (a cut first sentence) is not repeated: the body's first sentence is
    the bold headline."""
    room = max(room, 40)
    body = " ".join(neutralise(body).split())
    title = " ".join(neutralise(title).split())
    # NFKC (in neutralise) turns a cut title's "…" into "...".
    opening = title.removesuffix("...").rstrip("…").rstrip()
    if not body or body == opening:
        return f"**{whole_sentences(title, room)}**"
    if opening and body.startswith(opening):
        return _bold_first_sentence(whole_sentences(body, room))
    head = whole_sentences(title, room)
    rest = room - len(head) - 6
    return f"**{head}**" + (f": {whole_sentences(body, rest)}" if rest >= 20 else "")


def _bold_first_sentence(text: str) -> str:
    found = _SENTENCE_END.search(text)
    if found is None:
        return f"**{text}**"
    return f"**{text[: found.start()].rstrip()}** {text[found.end() :]}".rstrip()


def whole_sentences(text: str, limit: int) -> str:
    """`text` if it fits in `limit` characters; else its leading sentences that fit, when they
    fill at least half of it, else the text cut between words with "…"."""
    if len(text) <= limit:
        return text
    cut = max(
        (m.end() for m in _SENTENCE_END.finditer(text, 0, limit + 1) if m.end() <= limit),
        default=0,
    )
    if cut >= limit // 2:
        return text[:cut].rstrip()
    return clip(text, limit)


def fit_block(heading: str, items: list[BlockItem], budget_tokens: int, footer: str = "") -> Block:
    """The heading and as many items as fit in `budget_tokens`, in the order given, fenced as
    notes (core.trust.fence).

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
