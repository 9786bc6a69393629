"""Short-term memory: session buffers, trimming into episodes, ending, idle sessions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memctl.config import open_store
from memctl.core.errors import InvalidMemoryFile, UsageError
from memctl.core.learning.buffer import BufferLimits, exchanges, plan_trim
from memctl.service.lifecycle.session import add_turn, end_session, get_session, list_sessions
from memctl.service.memories.lookup import get_memory
from memctl.store.sessions import turns_path

pytestmark = pytest.mark.usefixtures("fake_embedder")

FIXTURE = Path(__file__).parent / "fixtures" / "sessions" / "checkout_incident.jsonl"
T0 = 1_750_000_000.0


def configure(store, text: str):
    with open(store.root / "config.yaml", "a", encoding="utf-8") as handle:
        handle.write("\n" + text)
    return open_store(store.root)


def feed(store, session_id: str, turns, start: float = T0, **options):
    results = []
    for n, (role, content) in enumerate(turns):
        results.append(add_turn(store, session_id, role, content, now=start + n, **options))
    return results


def fixture_turns():
    return [(d["role"], d["content"]) for d in map(json.loads, FIXTURE.read_text().splitlines())]


def test_trimming_keeps_system_messages_and_ends_under_budget():
    roles = ["system"] + ["user", "assistant"] * 6 + ["system"]
    tokens = [300] + [100] * 12 + [50]
    limits = BufferLimits(max_turns=10, max_tokens=1200, keep_ratio=0.8)
    removed = plan_trim(roles, tokens, limits)
    kept = [i for i in range(len(roles)) if i not in removed]
    assert 0 in kept and len(roles) - 1 in kept  # both system messages stay
    assert sum(tokens[i] for i in kept) <= 0.8 * 1200
    assert removed == sorted(removed) and removed[0] == 1  # oldest first
    assert roles[next(i for i in kept if roles[i] != "system")] == "user"  # no orphaned reply


def test_a_buffer_within_its_limits_is_left_alone():
    assert plan_trim(["user", "assistant"], [10, 10], BufferLimits(10, 8000)) == []
    assert exchanges(["system", "user", "assistant", "user"]) == 2


def test_passing_the_turn_limit_trims_into_an_episode(store):
    store = configure(store, "session:\n  max_turns: 4\n")
    results = feed(store, "s1", fixture_turns())
    folds = [fold for r in results for fold in r.folds]
    assert folds and all(f.action == "trim" and f.episode_id for f in folds)

    view = get_session(store, "s1")
    assert view.turns[0].role == "system"  # the system message survives every trim
    assert exchanges([t.role for t in view.turns]) <= 4
    assert view.meta.summary and view.meta.episodes == [f.episode_id for f in folds]

    _, episode = get_memory(store, folds[0].episode_id)
    assert episode.type == "episodic" and episode.source == "system_generated"
    assert episode.extra["session_id"] == "s1"
    assert episode.extra["occurred_at"] == "2025-06-15T15:06:41Z"  # the first trimmed turn's time
    assert episode.extra["turns"] >= 2
    assert isinstance(episode.extra["key_topics"], list) and episode.extra["key_topics"]
    assert {"decisions", "outcomes"} <= set(episode.extra)
    assert episode.body.startswith("## Summary")


def test_passing_the_token_budget_trims_to_80_percent(store):
    store = configure(store, "session:\n  max_tokens: 300\n  max_turns: 100\n")
    feed(
        store,
        "s1",
        [("system", "Be brief.")]
        + [
            (
                "user" if i % 2 == 0 else "assistant",
                f"Message {i} about the Zephyr rollout and its canary stage number {i}. " * 3,
            )
            for i in range(12)
        ],
    )
    view = get_session(store, "s1")
    assert view.tokens <= 0.8 * 300 + max(t.tokens for t in view.turns)  # trimmed at the last add
    assert view.turns[0].role == "system"
    assert view.meta.trimmed > 0


def test_session_end_writes_what_remains(store):
    feed(store, "s1", fixture_turns()[:7])
    fold = end_session(store, "s1", now=T0 + 100)
    assert fold.episode_id
    _, episode = get_memory(store, fold.episode_id)
    assert episode.extra["turns"] == 6  # system message not included
    assert get_session(store, "s1").meta.ended
    again = end_session(store, "s1", now=T0 + 200)
    assert again.episode_id is None and "already ended" in again.note


def test_a_session_with_one_exchange_ends_without_an_episode(store):
    feed(
        store,
        "short",
        [("user", "What time is it in Lisbon?"), ("assistant", "It is 14:00 there.")],
    )
    fold = end_session(store, "short", now=T0 + 10)
    assert fold.episode_id is None and "exchanges" in fold.note


def test_idle_sessions_are_ended_by_the_next_session_command(store):
    feed(store, "old", fixture_turns()[1:7])
    later = T0 + 3 * 3600  # default ttl: 120 minutes
    result = add_turn(store, "new", "user", "Starting something else.", now=later)
    assert [f.session_id for f in result.folds] == ["old"]
    assert result.folds[0].action == "end_idle" and result.folds[0].episode_id
    ended = {v.meta.id: v.meta.ended for v in list_sessions(store)}
    assert ended["old"] and not ended["new"]


def test_adding_to_an_ended_session_reopens_it_without_rewriting_old_turns(store):
    feed(store, "s1", fixture_turns()[1:7])
    first = end_session(store, "s1", now=T0 + 50)
    result = add_turn(store, "s1", "user", "Back again: the alert fired twice.", now=T0 + 60)
    assert result.reopened
    add_turn(store, "s1", "assistant", "Then raise the threshold to 110.", now=T0 + 61)
    second = end_session(store, "s1", now=T0 + 70)
    _, episode = get_memory(store, second.episode_id)
    assert second.episode_id != first.episode_id and episode.extra["turns"] == 2


def test_bad_input_is_refused_clearly(store):
    with pytest.raises(UsageError, match="role"):
        add_turn(store, "s1", "robot", "hi")
    with pytest.raises(UsageError, match="Session id"):
        add_turn(store, "../escape", "user", "hi")
    add_turn(store, "s1", "user", "hello", now=T0)
    path = turns_path(store.state_dir, "s1")
    path.write_text(path.read_text() + "{not json\n")
    with pytest.raises(InvalidMemoryFile) as caught:
        get_session(store, "s1")
    assert caught.value.path == str(path) and caught.value.line == 2
