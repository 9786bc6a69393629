"""Offline episode drafting: the summary of a conversation keeps its key facts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memctl.core.language.tokens import estimate_tokens
from memctl.core.learning.conversation import Turn
from memctl.core.learning.episodes import (
    draft_conversation,
    render_episode_body,
    roll_summary,
    turn_sentences,
)

FIXTURE = Path(__file__).parent / "fixtures" / "sessions" / "checkout_incident.jsonl"


def fixture_turns() -> list[Turn]:
    return [
        Turn(d["role"], d["content"]) for d in map(json.loads, FIXTURE.read_text().splitlines())
    ]


def check_keeps_key_facts(embed):
    turns = fixture_turns()
    draft = draft_conversation(turns, ratio=0.25, embed=embed)
    original = sum(len(s) for _, s in turn_sentences(turns))
    sentences_kept = (
        len(draft.summary)
        - draft.summary.count("User: ") * 6
        - draft.summary.count("Assistant: ") * 11
    )
    assert (
        0.15 * original <= sentences_kept <= 0.35 * original
    )  # the seeds' 20-30%, give or take a sentence
    for fact in (
        "Priya",
        "v2.14.2",
        "120",
        "0.2%",
    ):  # a name, the decision, the new value, the result
        assert fact in draft.summary, fact
    assert any("roll back to v2.14.2" in d for d in draft.decisions)
    assert any("pool size to 120" in d for d in draft.decisions)
    assert any("0.2%" in o for o in draft.outcomes)
    assert "You are the on-call assistant" not in render_episode_body(
        draft
    )  # system prompts stay out
    return draft


@pytest.mark.model
def test_summary_keeps_names_numbers_and_decisions_on_embeddings():
    from memctl.integrations.embedder import get_embedder

    check_keeps_key_facts(get_embedder().embed)


def test_summary_keeps_names_numbers_and_decisions_without_a_model():
    draft = check_keeps_key_facts(None)
    assert draft.importance > 0.5  # decisions and an incident weigh more
    assert "Priya" in draft.key_topics or "pool" in draft.key_topics


def test_the_rolling_summary_is_compressed_when_it_grows_too_long():
    summary = ""
    for n in range(30):
        summary = roll_summary(
            summary,
            f"User: Ticket PAY-{n} was about the refund export for merchant {n}.",
            max_tokens=120,
        )
    assert 60 <= estimate_tokens(summary) <= 120
    assert "PAY-29" in summary  # the newest stretch survives whole; older ones shrink
