"""Turn conversation into episode memories: by the LLM when one is configured, else extractively."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from memctl.config import LLMSettings, Store
from memctl.core.errors import MemctlError, ModelUnavailable
from memctl.core.learning.conversation import Turn
from memctl.core.learning.episodes import (
    TOOL_OUTPUT_CHARS,
    EpisodeDraft,
    draft_conversation,
    render_episode_body,
    roll_summary,
)
from memctl.service.memories.add import AddResult, add_memory

EPISODE_SYSTEM = (
    "You turn conversation turns into a memory record for an AI agent. Use only what the turns "
    "state: never invent names, numbers, reasons, decisions or outcomes, and leave out whatever "
    "is not stated. Keep names, numbers, paths and identifiers exactly as written. "
    "Reply with one JSON object and nothing else."
)
EPISODE_ASK = """Summary of the session so far (context only):
{previous}

New turns:
{turns}

Return JSON with these keys:
"title": at most 10 words naming what the new turns were about;
"summary": the new turns in about {percent}% of their length, keeping decisions, facts,
preferences and outcomes;
"rolling_summary": the session summary so far updated with the new turns, at most {words} words;
"key_topics": up to 5 short topics;
"decisions": decisions made, one sentence each;
"facts": facts stated about the user, the project or the world;
"preferences": preferences the user stated;
"outcomes": how things turned out;
"importance": 0 to 1, higher for decisions, failures and explicit instructions.
Use [] for a list with nothing in it."""


@dataclass
class Drafted:
    draft: EpisodeDraft
    rolling_summary: str
    usage: dict[str, Any] | None = None
    warning: str | None = None


# Why: a transcript ingest folds dozens of stretches; ranking their sentences on the model
# cost ~85 s and ~1.8 GB for a 4 MB transcript, TF-IDF ranks them in well under a second.
_WORD_VECTORS_ONLY: ContextVar[bool] = ContextVar("memctl_word_vectors_only", default=False)


@contextmanager
def word_vector_summaries() -> Iterator[None]:
    """Within this block, extractive summaries rank sentences on TF-IDF, not the model."""
    token = _WORD_VECTORS_ONLY.set(True)
    try:
        yield
    finally:
        _WORD_VECTORS_ONLY.reset(token)


def sentence_embed(store: Store):
    """The bundled model as the summarizer's `embed`, loaded on first use; None when off."""
    if not store.settings.compact.sentence_embeddings or _WORD_VECTORS_ONLY.get():
        return None

    def embed(texts: list[str]):
        from memctl.service.retrieval.embedding import store_embedder

        return store_embedder(store).embed(texts)

    return embed


def with_embeddings(store: Store, make, *args, **kwargs):
    """Run an extractive step on sentence embeddings; on TF-IDF when the model is unavailable."""
    embed = sentence_embed(store)
    if embed is not None:
        try:
            return make(*args, embed=embed, **kwargs)
        except ModelUnavailable:
            pass
    return make(*args, embed=None, **kwargs)


def _count(text: str) -> int:
    from memctl.integrations.tokenizer import count_tokens

    return count_tokens(text)


def draft_turns(
    store: Store, turns: Sequence[Turn], previous_summary: str, *, allow_llm: bool = True
) -> Drafted:
    """Draft the episode for `turns` and the session's new rolling summary."""
    settings = store.settings.session
    ratio = settings.summary_ratio
    max_tokens = settings.summary_max_tokens
    warning = None
    if allow_llm:
        from memctl.integrations.llm import llm_settings

        llm = llm_settings(store)
        if llm:
            try:
                return _draft_with_llm(llm, turns, previous_summary, ratio, max_tokens)
            except MemctlError as exc:
                warning = f"LLM summary failed, wrote an extractive one instead: {exc}"
    draft = with_embeddings(store, draft_conversation, turns, ratio=ratio)
    rolling = with_embeddings(
        store, roll_summary, previous_summary, draft.summary, max_tokens, count=_count
    )
    return Drafted(draft, rolling, None, warning)


def _strings(value: Any, limit: int = 8) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return []
    return [" ".join(str(v).split()) for v in value if str(v).strip()][:limit]


def _draft_with_llm(
    llm: LLMSettings, turns: Sequence[Turn], previous: str, ratio: float, max_tokens: int
) -> Drafted:
    from memctl.integrations.llm import LLMBadOutput, complete_json

    lines = []
    for turn in turns:
        if turn.role == "system":
            continue
        text = turn.content[:TOOL_OUTPUT_CHARS] if turn.role == "tool" else turn.content
        lines.append(f"{turn.role}: {text}")
    prompt = EPISODE_ASK.format(
        previous=previous.strip() or "(none yet)",
        turns="\n".join(lines),
        percent=round(ratio * 100),
        words=max(50, int(max_tokens * 0.75)),
    )
    messages = [{"role": "system", "content": EPISODE_SYSTEM}, {"role": "user", "content": prompt}]
    data, reply = complete_json(llm, messages, mock_response=llm.mock_response)
    if not isinstance(data, dict) or not str(data.get("summary") or "").strip():
        raise LLMBadOutput(f"The LLM '{llm.model}' returned no summary.")
    try:
        importance = min(max(float(data.get("importance", 0.5)), 0.0), 1.0)
    except (TypeError, ValueError):
        importance = 0.5
    summary = str(data["summary"]).strip()
    draft = EpisodeDraft(
        title=" ".join(str(data.get("title") or "").split())[:120] or "Conversation",
        summary=summary,
        key_topics=_strings(data.get("key_topics"), 5),
        decisions=_strings(data.get("decisions")),
        outcomes=_strings(data.get("outcomes")),
        facts=_strings(data.get("facts")),
        preferences=_strings(data.get("preferences")),
        importance=round(importance, 2),
        writer=f"llm:{llm.model}",
    )
    rolling = str(data.get("rolling_summary") or "").strip()
    if not rolling:
        rolling = "\n".join(part for part in (previous.strip(), summary) if part)
    return Drafted(draft, rolling, reply.usage())


def write_conversation_episode(
    store: Store,
    draft: EpisodeDraft,
    turns: Sequence[Turn],
    *,
    session_id: str,
    agent: str | None = None,
    sync: bool = True,
) -> AddResult:
    """One episodic memory file for these turns, through the ordinary write path."""
    stamps = [turn.timestamp for turn in turns if turn.timestamp]
    extra = {
        "occurred_at": stamps[0] if stamps else None,
        "ended_at": stamps[-1] if stamps else None,
        "session_id": session_id,
        "key_topics": draft.key_topics,
        "decisions": draft.decisions,
        "outcomes": draft.outcomes,
        "turns": len(turns),
        "summarized_by": draft.writer,
    }
    return add_memory(
        store,
        render_episode_body(draft),
        type="episodic",
        title=draft.title,
        importance=draft.importance,
        source="system_generated",
        agent=agent,
        extra={key: value for key, value in extra.items() if value is not None},
        sync=sync,
        force=True,  # Why: whether a stretch of conversation is worth an episode was decided above
    )


def written_id(result: AddResult) -> str:
    return result.merged_into or result.memory.id
