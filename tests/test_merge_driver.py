"""The git merge driver: two branches edit one memory in a real repository; real git merges."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from memctl.core.files.frontmatter import parse_memory
from memctl.core.files.memory import Memory
from memctl.core.files.memory_merge import merge_memories

CHECKOUT = Path(__file__).resolve().parents[1]
MEMORY = ".memory/procedural/deploy-1m80k2c9a7qz.md"

BASE = """---
id: 1m80k2c9a7qz
title: We deploy with blue-green on Kubernetes
type: procedural
tags:
- deploy
importance: 0.6
confidence: 0.8
created: '2026-03-14T09:12:00Z'
updated: '2026-03-14T09:12:00Z'
version: 4
mentions: 2
---

Run `make release`.

Then promote the rollout with `kubectl argo rollouts promote api`.

Check the error dashboard for ten minutes afterwards.
"""

# Branch alice: a tag, importance, one more mention, and the first paragraph of the body.
ALICE = (
    BASE.replace("- deploy\n", "- deploy\n- ci\n")
    .replace("importance: 0.6", "importance: 0.9")
    .replace("updated: '2026-03-14T09:12:00Z'", "updated: '2026-04-01T10:00:00Z'")
    .replace("version: 4", "version: 5")
    .replace("mentions: 2", "mentions: 3")
    .replace("Run `make release`.", "Run `make release` from a clean main.")
)
# Branch bob: another tag, confidence, two more mentions, and the last paragraph of the body.
BOB = (
    BASE.replace("- deploy\n", "- deploy\n- k8s\n")
    .replace("confidence: 0.8", "confidence: 0.95")
    .replace("updated: '2026-03-14T09:12:00Z'", "updated: '2026-04-02T16:30:00Z'")
    .replace("version: 4", "version: 6")
    .replace("mentions: 2", "mentions: 4")
    .replace("for ten minutes afterwards.", "for thirty minutes afterwards.")
)


@pytest.fixture
def env(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    return {
        **os.environ,
        "HOME": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "PYTHONPATH": str(CHECKOUT),  # Why: git runs the driver; it must be this checkout's memctl
        "MEMCTL_NO_SERVER": "1",
    }


def run(root: Path, env: dict, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=root, env=env, capture_output=True, text=True, check=check)


def memctl(root: Path, env: dict, *args: str, check: bool = True):
    return run(root, env, sys.executable, "-m", "memctl", *args, check=check)


@pytest.fixture
def repo(tmp_path, env):
    """A repository with one memory committed on main and memctl's git hooks installed."""
    root = tmp_path / "repo"
    root.mkdir()
    run(root, env, "git", "init", "-q", "-b", "main")
    memctl(root, env, "init")
    prefix = shlex.join([sys.executable, "-m", "memctl"])
    installed = memctl(root, env, "hooks", "install", "git", "--command", prefix, "--json")
    driver = json.loads(installed.stdout)["merge_driver"]
    assert driver["pattern"] == ".memory/**/*.md merge=memctl"
    assert run(root, env, "git", "config", "merge.memctl.driver").stdout.strip() == (
        f"{prefix} hook git merge %O %A %B %L %P"
    )
    # Why: the post-merge hook re-indexes in the background; this test looks at files only.
    (root / "no-hooks").mkdir()
    run(root, env, "git", "config", "core.hooksPath", str(root / "no-hooks"))
    (root / MEMORY).parent.mkdir(parents=True, exist_ok=True)
    (root / MEMORY).write_text(BASE, encoding="utf-8")
    run(root, env, "git", "add", "-A")
    run(root, env, "git", "commit", "-q", "-m", "a memory")
    return root


def commit_on(root: Path, env: dict, branch: str, text: str, start: str = "main") -> None:
    run(root, env, "git", "checkout", "-q", "-b", branch, start)
    (root / MEMORY).write_text(text, encoding="utf-8")
    run(root, env, "git", "commit", "-q", "-am", f"edit on {branch}")


def read(root: Path) -> Memory:
    return parse_memory(MEMORY, (root / MEMORY).read_bytes(), "", "semantic")


def test_two_edits_of_one_memory_merge_field_by_field(repo, env):
    commit_on(repo, env, "alice", ALICE)
    commit_on(repo, env, "bob", BOB)
    run(repo, env, "git", "checkout", "-q", "alice")

    merged = run(repo, env, "git", "merge", "--no-edit", "bob", check=False)
    assert merged.returncode == 0, merged.stdout + merged.stderr

    memory = read(repo)
    assert memory.version == 7  # max(5, 6) + 1
    assert memory.updated == "2026-04-02T16:30:00Z"  # the later one
    assert memory.created == "2026-03-14T09:12:00Z"
    assert memory.extra["mentions"] == 5  # 2, +1 on one branch, +2 on the other
    assert memory.tags == ["deploy", "ci", "k8s"]
    assert (memory.importance, memory.confidence) == (0.9, 0.95)
    assert "from a clean main" in memory.body and "thirty minutes" in memory.body
    assert "promote the rollout" in memory.body
    assert run(repo, env, "git", "status", "--porcelain").stdout == ""  # committed, clean
    listed = memctl(repo, env, "list", "--json")
    assert listed.stderr == "" and json.loads(listed.stdout)[0]["version"] == 7


def test_a_body_conflict_leaves_markers_that_memctl_reports(repo, env):
    commit_on(repo, env, "alice", ALICE.replace("ten minutes", "five minutes"))
    commit_on(repo, env, "bob", BOB)
    run(repo, env, "git", "checkout", "-q", "alice")

    merged = run(repo, env, "git", "merge", "--no-edit", "bob", check=False)
    assert merged.returncode != 0
    assert f"CONFLICT (content): Merge conflict in {MEMORY}" in merged.stdout

    text = (repo / MEMORY).read_text(encoding="utf-8")
    assert "<<<<<<< ours\nCheck the error dashboard for five minutes afterwards.\n=======\n" in text
    assert ">>>>>>> theirs\n" in text
    assert "version: 7" in text and "- k8s" in text  # the front matter still merged

    listed = memctl(repo, env, "list")
    line = text.splitlines().index("<<<<<<< ours") + 1
    assert f"{MEMORY}:{line}: merge-conflict marker" in listed.stderr.replace("\n", "")


def test_a_file_without_front_matter_gets_gits_plain_merge(repo, env):
    notes = ".memory/semantic/notes.md"
    (repo / notes).parent.mkdir(parents=True, exist_ok=True)
    (repo / notes).write_text("one\n\ntwo\n\nthree\n", encoding="utf-8")
    run(repo, env, "git", "add", "-A")
    run(repo, env, "git", "commit", "-q", "-m", "notes")
    for branch, old, new in (("a", "one", "ONE"), ("b", "three", "THREE")):
        run(repo, env, "git", "checkout", "-q", "-b", branch, "main")
        text = (repo / notes).read_text(encoding="utf-8").replace(old, new)
        (repo / notes).write_text(text, encoding="utf-8")
        run(repo, env, "git", "commit", "-q", "-am", branch)
    run(repo, env, "git", "checkout", "-q", "a")
    assert run(repo, env, "git", "merge", "--no-edit", "b", check=False).returncode == 0
    assert (repo / notes).read_text(encoding="utf-8") == "ONE\n\ntwo\n\nTHREE\n"


def test_uninstall_removes_the_driver_and_its_attributes(repo, env):
    removed = memctl(repo, env, "hooks", "uninstall", "git", "--json")
    assert "merge driver" in json.loads(removed.stdout)["removed"]
    assert run(repo, env, "git", "config", "merge.memctl.driver", check=False).returncode == 1
    assert not (repo / ".gitattributes").exists()


def test_merging_without_a_common_ancestor_sums_mentions_and_keeps_both_tags():
    ours = Memory("x", tags=["a"], extra={"mentions": 2}, version=1, updated="2026-01-01")
    theirs = Memory("x", tags=["b"], extra={"mentions": 3}, version=3, updated="2026-02-01")
    merged = merge_memories(None, ours, theirs, "body")
    assert (merged.extra["mentions"], merged.tags, merged.version) == (5, ["a", "b"], 4)


def test_a_field_changed_on_both_sides_takes_the_later_edit_and_a_removed_tag_stays_gone():
    base = Memory("x", title="old", tags=["a", "b"], updated="2026-01-01")
    ours = Memory("x", title="ours", tags=["a"], updated="2026-03-01")  # dropped tag b
    theirs = Memory("x", title="theirs", tags=["a", "b", "c"], updated="2026-02-01")
    merged = merge_memories(base, ours, theirs, "")
    assert merged.title == "ours" and merged.tags == ["a", "c"]
