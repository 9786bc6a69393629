"""Working memory (`task`), `memctl compact` (consolidation, dry run) and the LLM path."""

from __future__ import annotations

import hashlib
import json

import pytest

from memctl import service
from memctl.config import open_store
from memctl.core.errors import MemctlError, UsageError
from memctl.service.lifecycle.compaction import compact
from memctl.service.lifecycle.session import add_turn, end_session
from memctl.service.lifecycle.task import (
    begin_task,
    current_task,
    finish_task,
    note_task,
    step_task,
)
from memctl.service.memories.lookup import get_memory, list_memories

T0 = 1_750_000_000.0


def configure(store, text: str):
    with open(store.root / "config.yaml", "a", encoding="utf-8") as handle:
        handle.write("\n" + text)
    return open_store(store.root)


def run_task(store, goal, *, target=None, failed=False, lessons=(), now=T0):
    begin_task(store, goal, ["check the logs", "restart the container"], target=target, now=now)
    step_task(store, "1", status="done", result="OOM killer hit the worker at 03:12", now=now + 1)
    step_task(
        store,
        "2",
        status="failed" if failed else "done",
        result="exit code 137" if failed else "healthy",
        now=now + 2,
    )
    return finish_task(store, failed=failed, lessons=lessons, now=now + 3)


def snapshot(root):
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.usefixtures("fake_embedder")
def test_task_done_gives_an_episode(store):
    begin_task(store, "Restart nginx on web-3", ["check config", "restart"], target="web-3", now=T0)
    step_task(store, "check config", status="done", result="nginx -t reports syntax ok", now=T0 + 1)
    step_task(store, "tail the error log", now=T0 + 2)  # a new step, in progress
    note_task(store, "ticket", "OPS-118", now=T0 + 3)
    assert [s.status for s in current_task(store).steps] == ["done", "pending", "in_progress"]
    done = finish_task(store, lessons=["reload is enough for config changes"], now=T0 + 10)

    assert current_task(store) is None
    _, episode = get_memory(store, done.episode_id)
    assert episode.type == "episodic" and episode.title == "Task: Restart nginx on web-3"
    assert episode.extra["outcome"] == "partial"  # two steps were not finished
    assert episode.extra["target"] == "web-3" and "web-3" in episode.tags
    assert episode.extra["lessons"] == ["reload is enough for config changes"]
    assert [s["status"] for s in episode.extra["steps"]] == ["done", "pending", "in_progress"]
    assert "nginx -t reports syntax ok" in episode.body and "ticket: OPS-118" in episode.body


@pytest.mark.usefixtures("fake_embedder")
def test_failures_and_lessons_weigh_more(store):
    success = run_task(store, "Rotate the TLS certificate", now=T0)
    failure = run_task(store, "Rotate the TLS certificate again", failed=True, now=T0 + 100)
    lesson = run_task(
        store, "Rotate it a third time", failed=True, lessons=["renew 30 days early"], now=T0 + 200
    )
    assert success.outcome == "success" and failure.outcome == "failed"
    assert success.importance < failure.importance < lesson.importance


def test_task_commands_need_a_task_and_refuse_a_second_one(store):
    with pytest.raises(MemctlError, match="No task in progress"):
        step_task(store, "anything")
    begin_task(store, "First", now=T0)
    with pytest.raises(MemctlError, match="already in progress"):
        begin_task(store, "Second", now=T0)
    with pytest.raises(UsageError, match="no step 4"):
        step_task(store, "4", status="done")


@pytest.mark.model
def test_consolidation_links_its_sources_and_does_not_repeat(store):
    ids = [
        run_task(
            store,
            f"Restart the payments worker ({n})",
            target="payments-worker",
            lessons=["raise the memory limit to 2 GiB"],
            now=T0 + 100 * n,
        ).episode_id
        for n in range(3)
    ]
    other = run_task(store, "Renew the domain", target="dns", now=T0 + 500).episode_id

    report = compact(store, now=T0 + 1000)
    assert len(report.consolidations) == 1
    item = report.consolidations[0]
    assert item.group.reason == "target" and sorted(item.group.ids) == sorted(ids)
    _, knowledge = get_memory(store, item.knowledge_id)
    assert knowledge.type == "knowledge"
    assert sorted(r["target"] for r in knowledge.relations) == sorted(ids)
    assert {r["type"] for r in knowledge.relations} == {"derived_from"}
    assert "raise the memory limit to 2 GiB" in knowledge.body
    for episode_id in ids:
        _, episode = get_memory(store, episode_id)
        assert episode.extra["consolidated_into"] == knowledge.id and episode.version == 2
    _, untouched = get_memory(store, other)
    assert "consolidated_into" not in untouched.extra

    again = compact(store, now=T0 + 2000)
    assert again.consolidations == []
    assert len(list_memories(store, types=["knowledge"]).memories) == 1


@pytest.mark.model
def test_similar_episodes_without_a_shared_target_are_consolidated(store):
    texts = [
        "## Summary\nThe nightly backup of the orders database failed: the backup-1 disk was full.",
        "## Summary\nThe orders database backup failed again overnight: backup-1 ran out of disk.",
        "## Summary\nNightly orders DB backup failed, the backup-1 disk was full again.",
        "## Summary\nWe chose a teal colour palette for the marketing landing page.",
    ]
    ids = [
        service.add_memory(store, t, type="episodic", title=f"Episode {n}", sync=False).memory.id
        for n, t in enumerate(texts)
    ]
    report = compact(store, now=T0)
    assert [sorted(c.group.ids) for c in report.consolidations] == [sorted(ids[:3])]
    assert report.consolidations[0].group.reason == "similarity"


@pytest.mark.model
def test_dry_run_writes_nothing(store):
    store = configure(store, "session:\n  max_turns: 2\n")
    for n in range(3):
        run_task(store, f"Restart the cache ({n})", target="cache", now=T0 + 10 * n)
    for n, (role, text) in enumerate(
        [
            ("user", "We use Redis 7 for the cache."),
            ("assistant", "Noted: Redis 7."),
            ("user", "Eviction policy is allkeys-lru."),
            ("assistant", "Got it."),
            ("user", "Max memory is 4 GB."),
            ("assistant", "Recorded."),
        ]
    ):
        add_turn(store, "s1", role, text, now=T0 + 100 + n, compact=False)
    before = snapshot(store.root)

    report = compact(store, dry_run=True, now=T0 + 200)
    assert snapshot(store.root) == before
    assert [f.action for f in report.sessions] == ["trim"] and report.sessions[0].episode_id is None
    assert report.sessions[0].title  # what would be written
    assert len(report.consolidations) == 1 and report.consolidations[0].knowledge_id is None
    assert report.written == 0

    real = compact(store, now=T0 + 200)
    assert real.written == 2 and snapshot(store.root) != before


MOCK = json.dumps(
    {
        "title": "Checkout outage after v2.14.3",
        "summary": "Priya rolled checkout-api back to v2.14.2 after a 7.5% error rate; pool: 120.",
        "rolling_summary": "Checkout outage handled by rollback; pool size will be 120.",
        "key_topics": ["checkout-api", "connection pool"],
        "decisions": ["Roll back to v2.14.2", "Raise the pool size to 120"],
        "facts": ["Pool size was 50"],
        "preferences": ["Incident updates go to #payments-incidents"],
        "outcomes": ["Error rate dropped to 0.2%"],
        "importance": 0.9,
        "topic": "checkout-api incidents",
        "content": "Checkout errors after deploys came from an exhausted connection pool.",
        "key_points": ["Check the pool size before deploying a new database client"],
        "confidence": 0.85,
    }
)


@pytest.mark.model
def test_the_llm_writes_summaries_and_knowledge_when_configured(store):
    store = configure(store, f"llm:\n  model: gpt-4o-mini\n  mock_response: {json.dumps(MOCK)}\n")
    episode_ids = []
    for n in range(3):
        session_id = f"s{n}"
        for k, (role, text) in enumerate(
            [
                ("user", "Checkout errors after the deploy."),
                ("assistant", "Rolling back."),
                ("user", "Rolled back, errors gone."),
                ("assistant", "Good."),
            ]
        ):
            add_turn(store, session_id, role, text, now=T0 + 10 * n + k)
        fold = end_session(store, session_id, now=T0 + 50)
        assert fold.writer == "llm:gpt-4o-mini" and fold.usage["calls"] == 1
        episode_ids.append(fold.episode_id)
    _, episode = get_memory(store, episode_ids[0])
    assert episode.title == "Checkout outage after v2.14.3"
    assert "## Preferences\n- Incident updates go to #payments-incidents" in episode.body
    assert episode.extra["decisions"] == ["Roll back to v2.14.2", "Raise the pool size to 120"]
    assert episode.importance == 0.9

    report = compact(store, now=T0 + 100)
    assert len(report.consolidations) == 1 and report.consolidations[0].writer == "llm:gpt-4o-mini"
    _, knowledge = get_memory(store, report.consolidations[0].knowledge_id)
    assert (
        knowledge.title == "About checkout-api incidents (from 3 episodes)"
        and knowledge.confidence == 0.85
    )
    assert "exhausted connection pool" in knowledge.body


@pytest.mark.model
def test_malformed_llm_output_falls_back_to_the_extractive_summary(store):
    store = configure(store, "llm:\n  model: gpt-4o-mini\n  mock_response: 'not json at all'\n")
    for k, (role, text) in enumerate(
        [
            ("user", "Deploy v3.1 to staging."),
            ("assistant", "Deployed v3.1."),
            ("user", "Tests passed on staging."),
            ("assistant", "Great."),
        ]
    ):
        add_turn(store, "s1", role, text, now=T0 + k)
    fold = end_session(store, "s1", now=T0 + 10)
    assert fold.writer == "extractive" and "LLM summary failed" in fold.warning
    assert get_memory(store, fold.episode_id)[1].extra["summarized_by"] == "extractive"
