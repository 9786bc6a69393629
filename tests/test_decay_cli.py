"""decay, restore, stats end to end; access statistics and recency in recall."""

from __future__ import annotations

import json
import os
import re
import subprocess
from datetime import datetime, timedelta, timezone

import pytest
from typer.testing import CliRunner

from memctl import service
from memctl.cli.app import app
from memctl.config import open_store
from memctl.core.errors import UsageError
from memctl.service.retrieval.indexing import open_index
from memctl.store.access import load_access, record_access

NOW = "2026-06-01T12:00:00Z"
runner = CliRunner()


def memory_file(memory_id: str, body: str, created: str | None, **fields) -> str:
    lines = [f"id: {memory_id}", f"title: {body[:40]}"]
    if created:
        lines.append(f"created: {created}")
    lines += [f"{key}: {value}" for key, value in fields.items()]
    return "---\n" + "\n".join(lines) + "\n---\n" + body + "\n"


def days_before(days: float, moment: str = NOW) -> str:
    base = datetime.fromisoformat(moment.replace("Z", "+00:00"))
    return (base - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
def project(store, write_file, monkeypatch):
    """Memories of every kind decay must tell apart, as seen at NOW."""
    monkeypatch.chdir(store.root.parent)
    monkeypatch.delenv("MEMCTL_STORE", raising=False)
    write_file(
        "semantic/old-trivia.md",
        memory_file(
            "oldtrivia001",
            "The office plant was bought at a flea market.",
            days_before(400),
            importance=0.1,
        ),
    )
    write_file(
        "preference/old-pinned.md",
        memory_file(
            "oldpinned001",
            "Always answer in British English.",
            days_before(400),
            importance=0.1,
            pinned="true",
        ),
    )
    write_file(
        "episodic/young.md",
        memory_file(
            "youngnote001",
            "Yesterday the staging cluster was rebooted.",
            days_before(2),
            importance=0.0,
        ),
    )
    write_file(
        "semantic/important.md",
        memory_file(
            "important001",
            "Customer data never leaves the EU region.",
            days_before(60),
            importance=1.0,
        ),
    )
    write_file(
        "semantic/expired.md",
        memory_file(
            "expired00001",
            "The VPN certificate is valid until spring.",
            days_before(20),
            importance=0.9,
            expires=days_before(1),
        ),
    )
    loose = write_file("semantic/hand-written.md", "Kites fly best in steady onshore wind.\n")
    stamp = datetime.fromisoformat(days_before(500).replace("Z", "+00:00")).timestamp()
    os.utime(loose, (stamp, stamp))  # no `created`: its age comes from the file's mtime
    for path in store.root.rglob("*.md"):  # each file has been in the store since its `created`
        created = re.search(r"^created: (\S+)$", path.read_text(encoding="utf-8"), re.MULTILINE)
        if created:
            moment = datetime.fromisoformat(created.group(1).replace("Z", "+00:00")).timestamp()
            os.utime(path, (moment, moment))
    service.sync_index(store)
    return store


def invoke(*args: str):
    return runner.invoke(app, list(args))


def snapshot(root):
    return {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


@pytest.mark.usefixtures("fake_embedder")
def test_dry_run_writes_nothing_and_shows_every_memory(project):
    before = snapshot(project.root)
    table = invoke("decay", "--now", NOW)
    assert table.exit_code == 0, table.output
    for column in ("id", "title", "type", "age", "importance", "hotness", "score", "action"):
        assert column in table.stdout
    report = json.loads(invoke("decay", "--now", NOW, "--json").stdout)
    assert report["applied"] is False and report["memories"] == 6
    assert snapshot(project.root) == before


@pytest.mark.usefixtures("fake_embedder")
def test_apply_archives_by_the_rules_and_restore_brings_back(project):
    report = json.loads(invoke("decay", "--apply", "--now", NOW, "--json").stdout)
    actions = {d["id"]: (d["action"], d["reason"]) for d in report["decisions"]}
    assert actions == {
        "oldtrivia001": ("archive", "score"),
        "hand-written": ("archive", "score"),
        "expired00001": ("archive", "expired"),
        "oldpinned001": ("keep", "pinned"),
        "youngnote001": ("keep", "min_age"),
        "important001": ("keep", "below_threshold"),
    }
    root = project.root
    assert (root / "archive/semantic/old-trivia.md").is_file()
    assert not (root / "semantic/old-trivia.md").exists()
    log = [
        json.loads(line) for line in (root / "archive/ARCHIVE_LOG.jsonl").read_text().splitlines()
    ]
    assert {entry["id"]: entry["reason"] for entry in log} == {
        "oldtrivia001": "score",
        "hand-written": "score",
        "expired00001": "expired",
    }
    assert open_index(project).rows_for_ids(["oldtrivia001"]) == []  # its rows left the main index

    query = "where was the office plant bought"
    assert "oldtrivia001" not in [
        h["id"] for h in json.loads(invoke("recall", query, "--json").stdout)
    ]
    archived = json.loads(invoke("recall", query, "--include-archived", "--json").stdout)
    assert archived[0]["id"] == "oldtrivia001"
    listed = json.loads(invoke("list", "--include-archived", "--json").stdout)
    assert len(listed) == 6

    restored = invoke("restore", "oldtrivia001")
    assert restored.exit_code == 0, restored.output
    assert (root / "semantic/old-trivia.md").is_file()
    assert json.loads(invoke("recall", query, "--json").stdout)[0]["id"] == "oldtrivia001"
    assert invoke("restore", "oldtrivia001").exit_code == 1  # not archived any more
    assert invoke("restore", "nosuchmemory").exit_code == 1


@pytest.mark.usefixtures("fake_embedder")
def test_recent_frequent_access_keeps_an_old_memory(project):
    now = datetime.now(timezone.utc)
    for _ in range(20):
        record_access(project.state_dir, ["hand-written"], now)
    report = json.loads(
        invoke("decay", "--now", now.strftime("%Y-%m-%dT%H:%M:%SZ"), "--json").stdout
    )
    actions = {d["id"]: d["action"] for d in report["decisions"]}
    assert actions["hand-written"] == "keep"  # archived above when never recalled
    assert actions["oldtrivia001"] == "archive"


@pytest.mark.usefixtures("fake_embedder")
def test_stats_json(project):
    invoke("decay", "--apply", "--now", NOW)
    stats = json.loads(invoke("stats", "--now", NOW, "--json").stdout)
    assert {"memories", "by_type", "by_scope", "archived", "index", "decay"} <= set(stats)
    assert stats["memories"] == 3 and stats["archived"] == 3
    assert stats["by_type"] == {"episodic": 1, "preference": 1, "semantic": 1}
    assert stats["by_scope"] == {"project": 3}
    main = stats["index"]["tables"]["memories"]
    assert main["rows"] == 3 and main["versions"] >= 1 and stats["index"]["bytes"] > 0
    assert sum(b["count"] for b in stats["decay"]["histogram"]) == 3
    assert invoke("stats").exit_code == 0


@pytest.mark.usefixtures("fake_embedder")
def test_recall_counts_access_without_touching_files(project):
    repo = project.root.parent
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "memories"], cwd=repo, check=True)
    before = snapshot(project.root / "semantic")

    for _ in range(2):
        assert invoke("recall", "customer data region", "-k", "1").exit_code == 0
    assert load_access(project.state_dir)["important001"].count == 2
    assert snapshot(project.root / "semantic") == before
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True
    )
    assert status.stdout == ""


def write_config(store, text: str):
    (store.root / "config.yaml").write_text(text)
    return open_store(store.root)


@pytest.mark.model
def test_recency_bonus_at_its_maximum_never_buries_an_old_relevant_memory(store, write_file):
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    write_file(
        "semantic/old.md",
        memory_file(
            "oldrelevant1",
            "The billing service listens on port 8443 behind the internal balancer.",
            days_before(730, now),
        ),
    )
    fresh = [
        "Tomatoes need watering every evening in July.",
        "The team orders sushi on Thursdays.",
        "Kites fly best in steady onshore wind.",
        "The office plant is a ficus.",
        "Ilse prefers tabs over spaces in the web console.",
        "Standup moved to half past nine.",
    ]
    for i, text in enumerate(fresh):
        write_file(f"semantic/fresh{i}.md", memory_file(f"freshnote{i:03d}", text, now))
    store = write_config(store, "recall:\n  recency_bonus: 0.5\n  recency_half_life_days: 30\n")
    assert (
        service.recall(service.RecallRequest(store, "billing service port", k=3)).hits[0].id
        == "oldrelevant1"
    )

    # The bonus is real: between two equally relevant memories, the fresh one wins.
    write_file(
        "semantic/new.md",
        memory_file(
            "newrelevant1",
            "The billing service listens on port 8443 behind the internal balancer.",
            now,
        ),
    )
    assert [
        h.id for h in service.recall(service.RecallRequest(store, "billing service port", k=2)).hits
    ] == [
        "newrelevant1",
        "oldrelevant1",
    ]


@pytest.mark.usefixtures("fake_embedder")
def test_recency_bonus_above_its_bound_is_refused(store, write_file):
    write_file("semantic/one.md", memory_file("onlymemory01", "Kites fly in onshore wind.", None))
    with pytest.raises(UsageError, match="recall.recency_bonus"):  # when the store is opened
        store = write_config(store, "recall:\n  recency_bonus: 2\n")
        service.recall(service.RecallRequest(store, "anything", k=1, mode="bm25"))
