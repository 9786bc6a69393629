"""Dedup and merge on write, on real files, the real index and the bundled model."""

from __future__ import annotations

import json
import multiprocessing

import pytest
from typer.testing import CliRunner

from memctl import service
from memctl.cli.app import app
from memctl.config import open_store
from memctl.core.files.history import split_history
from memctl.core.files.memory import Memory
from memctl.service.memories.add import rewrite_memory
from memctl.store.files import read_memory, scan_files, write_memory

runner = CliRunner()


def files(store) -> list[str]:
    return sorted(scan_files(store.root))


def stored(store, memory_id: str) -> Memory:
    _, memory = service.get_memory(store, memory_id)
    return memory


@pytest.mark.model
def test_a_near_duplicate_merges_without_a_new_file_or_a_new_embedding(store):
    first = service.add_memory(store, "We deploy with make release", type="procedural")
    second = service.add_memory(
        store, "We deploy with make release.", type="procedural", sync=False
    )

    assert (second.created, second.merged_into, second.action) == (False, first.memory.id, "merged")
    assert second.similarity >= 0.95
    assert files(store) == [first.path.relative_to(store.root).as_posix()]
    merged = stored(store, first.memory.id)
    assert merged.extra["mentions"] == 2
    assert merged.confidence == pytest.approx(first.memory.confidence + 0.05)
    assert merged.version == first.memory.version + 1
    assert merged.updated >= first.memory.updated
    report = service.sync_index(store)
    assert report.updated == 1 and report.embedded == 0  # only mentions changed: vector reused


@pytest.mark.model
def test_dedup_can_be_turned_off_and_episodes_are_never_merged(store):
    service.add_memory(store, "We deploy with make release", type="procedural")
    service.add_memory(store, "We deploy with make release", type="procedural", dedup=False)
    service.add_memory(store, "Deployed release 1.4 to production", type="episodic")
    service.add_memory(store, "Deployed release 1.4 to production", type="episodic")
    assert len(files(store)) == 4


@pytest.mark.model
def test_the_threshold_comes_from_config(store):
    (store.root / "config.yaml").write_text("write:\n  dedup_threshold: 0.999\n")
    strict = open_store(store.root)
    # (knowledge has no subject rule, so only the dedup threshold decides)
    service.add_memory(strict, "We deploy with make release", type="knowledge")
    result = service.add_memory(strict, "We deploy with make release.", type="knowledge")
    assert result.created and len(files(strict)) == 2


@pytest.mark.model
def test_tabs_then_spaces_keeps_the_old_value_in_history_and_show_displays_it(store, monkeypatch):
    tabs = service.add_memory(store, "I prefer tabs for indentation", type="preference")
    spaces = service.add_memory(store, "I prefer spaces for indentation", type="preference")

    assert (spaces.action, spaces.merged_into) == ("updated", tabs.memory.id)
    assert len(files(store)) == 1
    memory = stored(store, tabs.memory.id)
    current, history = split_history(memory.body)
    assert current == "I prefer spaces for indentation"
    assert (
        len(history) == 1
        and "replaced" in history[0]
        and "I prefer tabs for indentation" in history[0]
    )
    assert (
        memory.source == "corrected_memory" and memory.extra["subject"] == "preference:indentation"
    )

    monkeypatch.setenv("MEMCTL_STORE", str(store.root))
    shown = runner.invoke(app, ["show", tabs.memory.id])
    assert shown.exit_code == 0, shown.output
    assert "## History" in shown.stdout and "I prefer tabs for indentation" in shown.stdout
    data = json.loads(runner.invoke(app, ["show", tabs.memory.id, "--json"]).stdout)
    assert data["history"] == history and "## History" in data["body"]

    hits = service.recall(service.RecallRequest(store, "which indentation does the user like")).hits
    assert [h.id for h in hits] == [tabs.memory.id]


@pytest.mark.model
def test_a_lower_confidence_value_does_not_replace_the_stored_one(store, monkeypatch):
    tabs = service.add_memory(
        store, "I prefer tabs for indentation", type="preference", confidence=0.9
    )
    monkeypatch.setenv("MEMCTL_STORE", str(store.root))
    added = runner.invoke(
        app,
        ["add", "I prefer spaces for indentation", "--type", "preference", "--confidence", "0.6"],
    )
    assert added.exit_code == 0, added.output
    assert f"Kept {tabs.memory.id}" in added.stdout

    memory = stored(store, tabs.memory.id)
    current, history = split_history(memory.body)
    assert current == "I prefer tabs for indentation" and memory.confidence == 0.9
    assert "not adopted" in history[0] and "I prefer spaces for indentation" in history[0]
    assert len(files(store)) == 1


@pytest.mark.model
def test_the_cli_says_merged_into(store, monkeypatch):
    monkeypatch.setenv("MEMCTL_STORE", str(store.root))
    first = json.loads(
        runner.invoke(app, ["add", "Run the linter before every commit", "--json"]).stdout
    )
    text = runner.invoke(app, ["add", "Run the linter before every commit."])
    assert f"merged into {first['id']}" in text.stdout
    again = json.loads(
        runner.invoke(app, ["add", "Run the linter before every commit", "--json"]).stdout
    )
    assert (again["created"], again["merged_into"], again["action"]) == (
        False,
        first["id"],
        "merged",
    )


def test_a_concurrent_writer_is_not_overwritten(store):
    """The optimistic check: a file that changed after it was read is merged again, freshly."""
    added = service.add_memory(store, "Use pnpm for every package", sync=False, dedup=False)
    relpath = added.path.relative_to(store.root).as_posix()
    calls = []

    def bump_mentions(current: Memory):
        if not calls:  # another process writes between our read and our lock
            other = read_memory(store.root, relpath)
            other.extra["mentions"], other.version = 5, other.version + 1
            write_memory(added.path, other)
        calls.append(current.version)
        current.extra["mentions"] = int(current.extra.get("mentions", 1)) + 1
        return current, "merged"

    _, written, _ = rewrite_memory(store, added.memory.id, relpath, bump_mentions)
    assert calls == [1, 2]
    assert written.extra["mentions"] == 6 and written.version == 3
    assert read_memory(store.root, relpath).extra["mentions"] == 6


def _add_from_process(root: str, start, same_text: str, own_text: str) -> None:
    from memctl.config import open_store
    from memctl.service import add_memory
    from memctl.service.memories.add import embed_texts

    store = open_store(root)
    embed_texts(store, ["warm up"])  # load the model before the race starts
    start.wait()
    add_memory(store, same_text, type="procedural")
    add_memory(store, own_text, type="semantic")


@pytest.mark.slow
@pytest.mark.model
def test_concurrent_adds_from_several_processes_lose_nothing(store):
    service.add_memory(store, "The first memory makes the index exist", sync=True)
    own = [
        "The billing service is written in Go",
        "Staging deploys run every night at two",
        "The mobile app targets Android 14 and later",
    ]
    same = "Always rebase feature branches on main before merging"
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(len(own))
    workers = [
        context.Process(target=_add_from_process, args=(str(store.root), start, same, text))
        for text in own
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=240)
    assert [w.exitcode for w in workers] == [0] * len(own)

    memories = [read_memory(store.root, p) for p in files(store)]
    repeated = [m for m in memories if m.body.strip() == same]
    assert len(repeated) == 1
    assert repeated[0].extra["mentions"] == len(own)
    assert sorted(m.body.strip() for m in memories if m.body.strip() in own) == sorted(own)
