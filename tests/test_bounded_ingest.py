"""A long transcript ingests in bounded pieces: turns buffered in one pass (the same buffer,
episodes and idle ends as one at a time), a crash midway resumes without losing or repeating a
turn, consolidation reuses the vectors its caller embedded, and a bulk ONNX session is let go
before the index is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memctl import service
from memctl.agents.ingest import ingest_transcript
from memctl.config import open_store
from memctl.service.lifecycle import session as session_module
from memctl.service.lifecycle.compaction import compact, consolidation_vectors
from memctl.service.lifecycle.episodes import word_vector_summaries
from memctl.service.lifecycle.session import add_turn, add_turns
from memctl.service.memories.lookup import list_memories
from memctl.service.retrieval.indexing import sync_index
from memctl.store.hook_state import load_session_state
from memctl.store.sessions import read_meta, read_turns

T0 = 1_750_000_000.0


def configure(store, text: str):
    with open(store.root / "config.yaml", "a", encoding="utf-8") as handle:
        handle.write("\n" + text)
    return open_store(store.root)


def small_buffer(store):
    return configure(store, "session:\n  max_turns: 2\n  ttl_minutes: 30\n  min_exchanges: 1\n")


def conversation(count: int, start: float = T0) -> list[tuple[str, str, float]]:
    """Alternating user / assistant turns, one a minute, with a two-hour pause in the middle
    (the session falls idle there and is reopened by the next turn)."""
    turns = []
    for n in range(count):
        role = "user" if n % 2 == 0 else "assistant"
        pause = 7200 if n >= count // 2 else 0
        text = (
            f"Please check the payments worker log number {n} for the OOM kill."
            if role == "user"
            else f"Checked log {n}: the worker was killed at 03:{n:02d} for memory."
        )
        turns.append((role, text, start + 60 * n + pause))
    return turns


def _episodes(store) -> list[tuple[str, str]]:
    found = list_memories(store, types=["episodic"]).memories
    return sorted((m.title, m.body) for _, m in found)


def _buffer(store, session_id: str):
    meta = read_meta(store.state_dir, session_id)
    turns = [(t.role, t.content, t.ts, t.tokens) for t in read_turns(store.state_dir, session_id)]
    return (meta.exchanges, meta.trimmed, meta.last_active, meta.ended, meta.summary), turns


@pytest.mark.usefixtures("fake_embedder")
def test_many_turns_at_once_buffer_exactly_as_one_at_a_time(tmp_path):
    one = small_buffer(service.init_store(tmp_path / "one"))
    many = small_buffer(service.init_store(tmp_path / "many"))
    # Another session, open and about to fall idle while the turns arrive: ended on the way.
    for each in (one, many):
        add_turn(each, "other", "user", "We deploy with make ship.", now=T0 - 1700, sync=False)
        add_turn(each, "other", "assistant", "Noted: make ship.", now=T0 - 1690, sync=False)
    turns = conversation(20)

    for role, text, when in turns:
        add_turn(one, "s1", role, text, now=when, sync=False)
    saved: list[int] = []
    folds = add_turns(many, "s1", turns, sync=False, saved=saved.append)

    assert _buffer(many, "s1") == _buffer(one, "s1")
    assert _buffer(many, "other") == _buffer(one, "other")
    assert read_meta(many.state_dir, "other").ended  # idle, ended while the turns came in
    assert _episodes(many) == _episodes(one)
    assert len(_episodes(many)) >= 3  # trims, the idle end of s1 and of the other session
    assert [fold.episode_id for fold in folds if fold.episode_id]
    # The buffer was written a handful of times, not twice a turn, and lastly with every turn.
    assert saved[-1] == len(turns) and len(saved) < len(turns) / 2
    assert saved == sorted(saved)


def _transcript(path: Path, turns: list[tuple[str, str, float]]) -> Path:
    from datetime import datetime, timezone

    lines = []
    for role, text, when in turns:
        stamp = datetime.fromtimestamp(when, timezone.utc).isoformat().replace("+00:00", "Z")
        content = text if role == "user" else [{"type": "text", "text": text}]
        lines.append(
            json.dumps(
                {"type": role, "timestamp": stamp, "message": {"role": role, "content": content}}
            )
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.usefixtures("fake_embedder")
def test_an_ingest_that_dies_midway_resumes_without_losing_or_repeating_a_turn(
    store, tmp_path, monkeypatch
):
    store = small_buffer(store)
    turns = conversation(24)
    transcript = _transcript(tmp_path / "long.jsonl", turns)
    real = session_module.write_conversation_episode
    written = []

    def dies_at_the_second_episode(*args, **kwargs):
        if len(written) == 1:
            raise RuntimeError("killed")
        written.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(session_module, "write_conversation_episode", dies_at_the_second_episode)
    with pytest.raises(RuntimeError, match="killed"):
        ingest_transcript(store, "s-long", transcript, final=True)
    resumed_from = load_session_state(store, "s-long")["turns_ingested"]
    assert 0 < resumed_from < len(turns)  # what was on disk, not more

    monkeypatch.setattr(session_module, "write_conversation_episode", real)
    report = ingest_transcript(store, "s-long", transcript, final=True)

    assert report.new_turns == len(turns) - resumed_from
    meta = read_meta(store.state_dir, "s-long")
    buffered = read_turns(store.state_dir, "s-long")
    # Every turn of the transcript is in the buffer or trimmed into an episode, exactly once.
    assert meta.trimmed + len(buffered) == len(turns)
    assert [t.content for t in buffered] == [text for _, text, _ in turns[-len(buffered) :]]
    assert meta.ended and load_session_state(store, "s-long")["turns_ingested"] == len(turns)


EPISODES = [
    "## Summary\nThe nightly backup of the orders database failed: the backup-1 disk was full.",
    "## Summary\nThe orders database backup failed again overnight: backup-1 ran out of disk.",
    "## Summary\nNightly orders DB backup failed, the backup-1 disk was full again.",
    "## Summary\nWe chose a teal colour palette for the marketing landing page.",
]


def test_consolidation_weighs_the_vectors_its_caller_embedded_without_embedding_again(
    store, fake_embedder
):
    for n, text in enumerate(EPISODES):
        service.add_memory(store, text, type="episodic", title=f"Episode {n}", sync=False)
    planned = compact(store, dry_run=True, now=T0)

    known = consolidation_vectors(store)  # before the index holds them: embedded here
    assert len(known) == len(EPISODES)
    embedded = len(fake_embedder.texts)
    sync_index(store, known_vectors=known)
    assert len(fake_embedder.texts) == embedded  # the sync reused every one of them
    with word_vector_summaries():  # as in a transcript ingest: summaries ranked on TF-IDF
        done = compact(store, now=T0, sync=False, known_vectors=known)

    assert len(fake_embedder.texts) == embedded  # nor did consolidation embed anything
    assert [c.group.ids for c in done.consolidations] == [
        c.group.ids for c in planned.consolidations
    ]


def test_without_enough_episodes_there_is_nothing_to_embed_for_consolidation(store, fake_embedder):
    service.add_memory(store, EPISODES[0], type="episodic", title="Only one", sync=False)
    assert consolidation_vectors(store) == {}
    assert fake_embedder.texts == []


@pytest.mark.model
def test_a_bulk_session_let_go_before_the_index_write_stores_the_same_vectors(store):
    import numpy as np

    from memctl.config import EmbeddingSettings
    from memctl.integrations import query_embedder
    from memctl.integrations.embedder import concrete
    from memctl.service.retrieval.indexing import open_index

    texts = ["Deploy with make ship.", "The payments worker runs on port 8443."]
    for text in texts:
        service.add_memory(store, text, sync=False)
    with query_embedder.one_bulk_session(release_between_passes=True):
        sync_index(store)
        assert not query_embedder._light_loaded()  # let go once the sync had its vectors
    table = open_index(store).scan(["text", "vector"])
    texts_and_vectors = zip(
        table.column("text").to_pylist(), table.column("vector").to_pylist(), strict=True
    )
    stored = dict(texts_and_vectors)
    with query_embedder.one_bulk_session():  # a session of the same kind, never let go
        again = query_embedder.get_query_embedder(concrete(EmbeddingSettings()))
        for text, vector in stored.items():
            # Why not bit for bit: two ONNX workers on a loaded machine may sum in another order.
            expected = again.embed([text])[0]
            assert np.allclose(np.asarray(vector, dtype=np.float32), expected, atol=1e-6)


def test_a_queued_transcript_is_listed_until_its_job_runs_and_then_nothing_is_pending(
    store, fake_embedder, tmp_path, monkeypatch
):
    from memctl.agents.claude_code import normalize_payload
    from memctl.agents.claude_code_events import (
        capture_transcript,
        pending_ingests,
        run_ingest_job,
    )

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    folder = Path.home() / ".claude" / "projects" / "-project"
    folder.mkdir(parents=True)
    store = configure(store, "hooks:\n  background: true\n")
    transcript = _transcript(folder / "s-later.jsonl", conversation(8))
    payload = normalize_payload(
        json.dumps(
            {
                "hook_event_name": "SessionEnd",
                "session_id": "s-later",
                "transcript_path": str(transcript),
                "cwd": str(store.root.parent),
            }
        )
    )
    started: list[list[str]] = []
    capture_transcript(store, payload, final=True, spawn=lambda argv, cwd: started.append(argv))

    pending = pending_ingests(store)  # what `memctl hooks status` lists
    assert [(p["session_id"], p["state"]) for p in pending] == [("s-later", "queued")]
    assert started[0][-1] == pending[0]["job"]
    assert _episodes(store) == []  # nothing done yet, nothing dropped either

    run_ingest_job(store, Path(pending[0]["job"]))  # what the detached `memctl hook ingest` runs
    assert pending_ingests(store) == []
    assert _episodes(store)
    assert read_meta(store.state_dir, "s-later").ended
