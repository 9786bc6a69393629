from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from memctl import service
from memctl.cli.app import app
from memctl.core.learning.supersession import SupersedeLimits, subject_clash, supersedes
from memctl.service.memories.lookup import get_memory

pytestmark = pytest.mark.model  # the bundled embedding model, on small data

LIMITS = SupersedeLimits()


def test_a_new_value_with_a_change_cue_supersedes_the_same_subject():
    old = "Our CI runs on GitHub Actions."
    assert supersedes(
        old, "Our CI now runs on GitLab CI; we moved off GitHub Actions.", 0.7, LIMITS
    )
    assert supersedes("测试数据库的端口是 5433。", "测试数据库的端口现在改为 6543。", 0.3, LIMITS)
    # Same words, no new value: a repeat, not an update.
    assert not supersedes(old, "Our CI now runs on GitHub Actions.", 0.95, LIMITS)


def test_another_subject_or_a_distant_statement_is_not_an_update():
    staging, production = (
        "The staging database listens on port 5433.",
        ("The production database listens on port 5432."),
    )
    assert subject_clash(staging, production)
    assert not supersedes(staging, production, 0.9, LIMITS)
    assert not supersedes(
        "Our CI runs on GitHub Actions.", "We now deploy on Tuesdays.", 0.3, LIMITS
    )


def test_supersede_marks_both_files_and_recall_shows_the_current_one(store):
    old = service.add_memory(store, "Our CI runs on GitHub Actions.")
    new = service.add_memory(store, "Our CI now runs on GitLab CI; we moved off GitHub Actions.")
    assert new.action == "superseded" and new.created and new.supersedes == old.memory.id
    assert {"type": "supersedes", "target": old.memory.id} in new.memory.relations
    _, stored_old = get_memory(store, old.memory.id)
    assert stored_old.extra["superseded_by"] == new.memory.id
    assert "GitHub Actions" in stored_old.body  # the old statement is kept as written

    hits = service.recall(service.RecallRequest(store, "which CI system do we use", k=5)).hits
    assert [hit.id for hit in hits] == [new.memory.id]
    assert hits[0].supersedes == [old.memory.id] and hits[0].superseded_by is None

    both = service.recall(
        service.RecallRequest(store, "which CI system do we use", k=5, include_superseded=True)
    ).hits
    by_id = {hit.id: hit for hit in both}
    assert set(by_id) == {old.memory.id, new.memory.id}
    assert by_id[old.memory.id].superseded_by == new.memory.id
    assert by_id[old.memory.id].to_dict()["current"] is False


def test_cli_says_which_memory_is_current(store, monkeypatch):
    monkeypatch.setenv("MEMCTL_STORE", str(store.root))
    runner = CliRunner()
    runner.invoke(app, ["add", "The staging database listens on port 5433."])
    added = runner.invoke(app, ["add", "The staging database now listens on port 6543."])
    assert added.exit_code == 0 and "supersedes" in added.stdout
    shown = json.loads(
        runner.invoke(
            app, ["recall", "staging database port", "--include-superseded", "--json"]
        ).stdout
    )
    assert [hit["current"] for hit in shown] == [True, False]
    assert "6543" in shown[0]["body"] and shown[1]["superseded_by"] == shown[0]["id"]


def test_a_different_subject_stays_current(store):
    service.add_memory(store, "The staging database listens on port 5433.")
    other = service.add_memory(store, "The production database listens on port 5432.")
    assert other.action == "created" and other.memory.relations == []
    hits = service.recall(
        service.RecallRequest(store, "database port", k=5, min_relevance=0.0)
    ).hits
    assert len(hits) == 2 and all(hit.superseded_by is None for hit in hits)
