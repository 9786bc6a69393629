"""The project-task benchmark: its scoring math on hand-made data, its item reader, and the
integrity of the committed data (labels, touched files, the dev/test split)."""

from __future__ import annotations

import math

import pytest

from benchmarks.project_tasks.channels import score_injections
from benchmarks.project_tasks.data_files import Dataset, load
from benchmarks.project_tasks.items import extract_items
from benchmarks.project_tasks.metrics import (
    Labels,
    essential_recall,
    ndcg,
    precision,
    score_shown,
    shown_from,
    summarize,
)
from benchmarks.project_tasks.sources import expand_labels

# --- metrics ------------------------------------------------------------------------------


def test_graded_ndcg_rewards_essential_first():
    grades = {"a": 2, "b": 1}
    assert ndcg(["a", "b", "x"], grades) == pytest.approx(1.0)
    # b then a: (1/log2 2 + 3/log2 3) / (3/log2 2 + 1/log2 3)
    expected = (1 + 3 / math.log2(3)) / (3 + 1 / math.log2(3))
    assert ndcg(["b", "a"], grades) == pytest.approx(expected)
    assert ndcg(["b", "a"], grades) < ndcg(["a", "b"], grades)
    assert ndcg(["x", "y"], grades) == 0.0
    assert ndcg(["a"], {}) is None  # nothing relevant: scored by abstention instead


def test_ndcg_counts_a_repeated_id_once_and_only_the_top_five():
    grades = {"a": 2}
    assert ndcg(["a", "a"], grades) == pytest.approx(1.0)
    assert ndcg(["x1", "x2", "x3", "x4", "x5", "a"], grades) == 0.0


def test_essential_recall_counts_needs_not_memories():
    needs = {"m1": "snap", "m2": "snap", "m3": "docs"}  # m1 and m2 say the same thing
    assert essential_recall(["m2"], needs) == pytest.approx(0.5)
    assert essential_recall(["m1", "m2"], needs) == pytest.approx(0.5)
    assert essential_recall(["m1", "m3"], needs) == pytest.approx(1.0)
    assert essential_recall(["m1"], {}) is None


def test_precision_of_what_was_returned():
    assert precision(["a", "x", "y", "b"], {"a": 2, "b": 1}) == pytest.approx(0.5)
    assert precision([], {"a": 2}) is None


def test_abstention_and_token_share_over_tasks():
    tokens = {"a": 30, "x": 10, "y": 20}
    relevant = Labels({"a": 2}, {"a": "a"})
    nothing = Labels({})
    rows = [
        score_shown(shown_from({"prompt": ["a", "x"]}, relevant, tokens), relevant, ["a", "x"]),
        score_shown(shown_from({"prompt": ["y"]}, nothing, tokens), nothing, ["y"]),
        score_shown(shown_from({"prompt": []}, nothing, tokens), nothing, []),
    ]
    figures = summarize(rows)
    assert figures["false_injection"] == pytest.approx(0.5)  # one of the two empty-handed tasks
    assert figures["abstention_tasks"] == 2
    assert figures["tokens_per_task"] == pytest.approx(60 / 3)
    assert figures["relevant_token_share"] == pytest.approx(30 / 60)
    assert figures["essential_recall@5"] == pytest.approx(1.0)
    assert figures["ndcg@5"] == pytest.approx(1.0)  # only the task with a relevant memory


def test_leakage_counts_hits_from_other_projects():
    labels = Labels({"p-1": 1})
    shown = shown_from({"prompt": ["p-1", "q-1"]}, labels, {}, "p", {"p-1": "p", "q-1": "q"})
    assert summarize([score_shown(shown, labels)])["leakage"] == pytest.approx(0.5)


def _tiny() -> Dataset:
    repos = [{"key": "p", "split": "test", "language": "Go"}]
    memories = [
        {"id": "p-001", "project": "p", "text": "Run go generate after editing templates."},
        {"id": "p-002", "project": "p", "text": "Use testify for assertions."},
        {"id": "p-003", "project": "p", "text": "Releases are cut by maintainers."},
    ]
    tasks = [
        {
            "id": "p-t01",
            "project": "p",
            "split": "test",
            "touched": ["server/gen.tmpl"],
            "labels": {
                "p-001": {"grade": 2, "reason": "", "need": "p-001"},
                "p-002": {"grade": 1, "reason": "", "need": None},
            },
        },
        {"id": "p-t02", "project": "p", "split": "test", "touched": ["README.md"], "labels": {}},
    ]
    return Dataset(repos, memories, tasks)


def test_channels_are_scored_as_a_union_and_alone():
    injections = {
        "p-t01": {"prompt": ["p-002", "p-003"], "action": ["p-001", "p-002"]},
        "p-t02": {"session": ["p-003"]},
    }
    figures = score_injections(injections, split="test", data=_tiny())["test"]
    assert figures["union"]["essential_recall@5"] == pytest.approx(1.0)
    assert figures["channels"]["prompt"]["essential_recall@5"] == 0.0
    assert figures["channels"]["action"]["essential_recall@5"] == pytest.approx(1.0)
    assert figures["union"]["returned_per_task"] == pytest.approx((3 + 1) / 2)  # p-002 once
    assert figures["union"]["false_injection"] == pytest.approx(1.0)  # the session block
    assert figures["channels"]["prompt"]["false_injection"] == 0.0


def test_channels_refuse_unknown_memory_ids():
    with pytest.raises(ValueError, match="unknown memory ids"):
        score_injections({"p-t01": {"prompt": ["nope"]}}, data=_tiny())


# --- reading agent files ------------------------------------------------------------------

AGENT_FILE = """# Guide

This guide explains how to contribute to the project in some detail.

## Adding a tool

1. Implement the tool in `pkg/tools`.
2. Run `UPDATE_SNAPS=true go test ./...`.

## Layout

```
├── cmd/
└── pkg/
```

## Commands

```bash
# Run the linter
script/lint
go test ./...  # all tests
```

When you change the schema:

- bump the version
- update the docs

- Style:
  - tabs in Go files
"""


def test_items_carry_their_context():
    texts = [item.text for item in extract_items(AGENT_FILE)]
    assert "This guide explains how to contribute to the project in some detail." in texts
    assert "Adding a tool: Implement the tool in `pkg/tools`." in texts
    assert "Run the linter: `script/lint`" in texts
    assert "all tests: `go test ./...`" in texts
    assert "When you change the schema: bump the version" in texts
    assert "Style: tabs in Go files" in texts
    assert not any("cmd/" in t for t in texts)  # a directory tree is not an instruction
    assert "Style:" not in texts  # a lead-in alone is not an item


def test_authored_label_groups_expand_and_refuse_duplicates():
    labels = expand_labels("p", [["001 002", 2, "same rule twice"], ["003", 1, "useful"]])
    assert labels["p-002"]["need"] == "p-001"
    assert labels["p-003"] == {"grade": 1, "reason": "useful", "need": None}
    with pytest.raises(ValueError, match="labelled twice"):
        expand_labels("p", [["001", 2, "a"], ["001", 1, "b"]])


# --- the committed data -------------------------------------------------------------------


@pytest.fixture(scope="module")
def data() -> Dataset:
    return load()


def test_every_label_names_an_existing_memory_of_its_project(data):
    projects = {m["id"]: m["project"] for m in data.memories}
    assert len(projects) == len(data.memories), "memory ids are unique"
    for task in data.tasks:
        for memory_id, label in task["labels"].items():
            assert projects.get(memory_id) == task["project"], (task["id"], memory_id)
            assert label["grade"] in (1, 2) and label["reason"]
            assert (label["need"] is not None) == (label["grade"] == 2)


def test_every_task_has_touched_files_a_commit_and_a_prompt(data):
    for task in data.tasks:
        assert task["touched"], task["id"]
        assert len(task["commit"]) == 40 and task["prompt"].strip()


def test_dev_and_test_are_disjoint_by_repository_and_span_languages(data):
    halves = {s: {r["repo"] for r in data.repos if r["split"] == s} for s in ("dev", "test")}
    assert halves["dev"] and halves["test"] and not halves["dev"] & halves["test"]
    for split in ("dev", "test"):
        languages = {r["language"] for r in data.repos if r["split"] == split}
        assert len(languages) >= 3, split
        assert all(t["split"] == split for t in data.tasks_of(split))


def test_some_tasks_have_nothing_relevant(data):
    for split in ("dev", "test"):
        tasks = data.tasks_of(split)
        share = sum(1 for t in tasks if not t["labels"]) / len(tasks)
        assert 0.1 <= share <= 0.4, (split, share)
