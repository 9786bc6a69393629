"""Forget reaches derived memories: compaction's knowledge is re-summarised without the forgotten
episode (or dropped when none remain), and a forget killed midway is finished by the next command."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from memctl import service
from memctl.cli.app import app
from memctl.service.lifecycle.compaction import compact
from memctl.service.lifecycle.decaying import append_log, log_path
from memctl.service.memories.forgetting import forget_memories
from memctl.service.memories.lookup import get_memory, list_memories
from memctl.store.forget_journal import journal_path
from memctl.store.purge import raw_texts

pytestmark = pytest.mark.usefixtures("fake_embedder")

T0 = 1_750_000_000.0
SECRET = "zebraquokka"  # in one episode only
EPISODES = {
    "ep0restart01": f"The payments worker ran out of memory at 03:12 on host {SECRET}.",
    "ep0restart02": "The payments worker was restarted after the nightly batch job stalled.",
    "ep0restart03": "The payments worker crashed again; raising the memory limit fixed it.",
}
runner = CliRunner()


def episode_file(memory_id: str, n: int, summary: str) -> str:
    return (
        f"---\nid: {memory_id}\ntype: episodic\ntitle: Payments worker incident {n}\n"
        f"tags: [payments]\ntarget: payments-worker\noccurred_at: 2025-03-0{n}\n"
        f"created: 2025-03-0{n}\n---\n## Summary\n{summary}\n\n## Lessons\n- lesson {n} from"
        f" {'the ' + SECRET + ' host' if n == 1 else 'the logs'}\n"
    )


@pytest.fixture
def consolidated(store, write_file):
    """Three episodes, one knowledge memory `compact` derived from them, an archive log line."""
    for n, (memory_id, summary) in enumerate(EPISODES.items(), start=1):
        write_file(f"episodic/{memory_id}.md", episode_file(memory_id, n, summary))
    report = compact(store, now=T0)
    [item] = report.consolidations
    _, knowledge = get_memory(store, item.knowledge_id)
    assert SECRET in knowledge.body  # the premise: the knowledge holds the episode's text
    append_log(store, {"action": "archive", "id": "ep0restart01", "title": f"On {SECRET}"})
    return store, knowledge.id


def texts_in_index(store) -> list[str]:
    return [t for table in sorted(store.index_dir.glob("*.lance")) for t in raw_texts(table)]


def test_forgetting_an_episode_rewrites_the_knowledge_derived_from_it(consolidated):
    store, knowledge_id = consolidated
    locks = store.state_dir / "locks"
    assert (locks / "ep0restart01.lock").exists()  # compact marked the episode under its lock

    [result] = forget_memories(store, ["ep0restart01"])

    assert result.derived == [
        {
            "id": knowledge_id,
            "action": "rewrite",
            "lost": ["ep0restart01"],
            "remaining": ["ep0restart02", "ep0restart03"],
        }
    ]
    _, knowledge = get_memory(store, knowledge_id)
    assert SECRET not in knowledge.body and "ep0restart01" not in knowledge.body
    assert "(from 2 episodes)" in knowledge.title
    assert sorted(r["target"] for r in knowledge.relations) == ["ep0restart02", "ep0restart03"]
    assert "lesson 2 from the logs" in knowledge.body  # re-summarised from what remains
    on_disk = [p.read_text() for p in store.root.rglob("*.md")]
    assert not [text for text in on_disk if SECRET in text]
    assert SECRET not in log_path(store).read_text()
    assert not [t for t in texts_in_index(store) if SECRET in t]
    assert not (locks / "ep0restart01.lock").exists() and (locks / "ep0restart02.lock").exists()
    hits = service.recall(service.RecallRequest(store, "payments worker memory limit", k=5)).hits
    assert knowledge_id in [hit.id for hit in hits]  # indexed again, new text


def test_the_plan_lists_derived_memories_before_yes_and_the_last_source_drops_them(
    consolidated,
):
    store, knowledge_id = consolidated
    args = ["--store", str(store.root), "forget", "ep0restart02"]

    asked = runner.invoke(app, args)  # no terminal to confirm on: nothing changes
    assert asked.exit_code == 2  # a usage error: run again with --yes
    assert f"will rewrite {knowledge_id}" in asked.stdout and "--yes" in asked.stderr
    assert get_memory(store, "ep0restart02")

    done = runner.invoke(app, [*args[:3], "--query", "payments worker", "--yes", "--json"])
    assert done.exit_code == 0, done.output
    results = json.loads(done.stdout)
    assert sorted(r["id"] for r in results) == sorted([*EPISODES, knowledge_id])
    assert list_memories(store).memories == []
    assert not [t for t in texts_in_index(store) if SECRET in t or "payments" in t]


KILL_AFTER_REWRITE = """
import os, sys
import memctl.service.memories.forgetting as forgetting
rewrite = forgetting._rewrite_derived
def rewrite_then_die(*args, **kwargs):
    rewrite(*args, **kwargs)
    os._exit(9)  # killed right after the derived memory was rewritten
forgetting._rewrite_derived = rewrite_then_die
from memctl.cli.app import main
sys.argv = ["memctl", *sys.argv[1:]]
main()
"""


@pytest.mark.slow
def test_a_forget_killed_midway_is_finished_by_the_next_command(consolidated):
    store, knowledge_id = consolidated
    killed = subprocess.run(
        [sys.executable, "-c", KILL_AFTER_REWRITE, "--store", str(store.root)]
        + ["forget", "ep0restart01", "--yes"],
        capture_output=True,
        text=True,
        env={**os.environ, "MEMCTL_NO_SERVER": "1"},
        check=False,
    )
    assert killed.returncode == 9, killed.stderr
    assert journal_path(store.state_dir).is_file()
    assert (store.root / "episodic/ep0restart01.md").exists()  # killed before the removal
    assert SECRET not in json.dumps(json.loads(journal_path(store.state_dir).read_text()))

    listed = runner.invoke(app, ["--store", str(store.root), "list", "--json"])

    assert listed.exit_code == 0, listed.output
    assert "Finished an interrupted forget of ep0restart01" in listed.stderr
    assert "ep0restart01" not in listed.stdout
    assert not journal_path(store.state_dir).exists()
    assert not [p for p in store.root.rglob("*.md") if SECRET in p.read_text()]
    assert SECRET not in log_path(store).read_text()
    assert not [t for t in texts_in_index(store) if SECRET in t]
    _, knowledge = get_memory(store, knowledge_id)
    assert "(from 2 episodes)" in knowledge.title
    again = runner.invoke(app, ["--store", str(store.root), "forget", "--resume"])
    assert again.exit_code == 0 and "No interrupted forget" in again.stdout


def test_an_id_only_left_in_the_archive_log_can_still_be_forgotten(store):
    append_log(store, {"action": "archive", "id": "gone0memory1", "title": f"On {SECRET}"})

    done = runner.invoke(app, ["--store", str(store.root), "forget", "gone0memory1"])

    assert done.exit_code == 0, done.output
    assert SECRET not in log_path(store).read_text()


def test_the_told_time_cache_of_a_resident_process_keeps_no_memory_words():
    """Recall remembers the time each candidate's words name; a forgotten memory's words must
    not outlive it in a long-running server's cache."""
    from memctl.service.retrieval import timing

    told = timing.told_window(f"Last week I met {SECRET} in Boston.", "2023-11-02T10:00:00Z")
    assert told is not None and told.since is not None
    cached = repr(list(timing._told.items()))
    assert SECRET not in cached and "Boston" not in cached


def test_what_recall_read_of_a_candidate_is_kept_without_its_words():
    """Asked where, recall remembers which candidates name a place; the same rule holds."""
    from memctl.service.retrieval import answers

    row = {"text": f"{SECRET} moved the backups to S3 in Frankfurt.", "created": ""}
    assert answers.holds_answer("place", row)
    cached = repr(answers._held.items())
    assert SECRET not in cached and "Frankfurt" not in cached
