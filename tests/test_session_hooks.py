"""What the hooks hand an agent over one session: the session start, each prompt and each tool
call share one budget, so each memory is shown once, the start is spent on the project's rules,
and a file about to be touched brings the notes that name it. Fake embedder tier."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memctl.cli.app import app

runner = CliRunner()


def invoke(*args: str, input: str | None = None):
    return runner.invoke(app, list(args), input=input)


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], check=True, capture_output=True, text=True
    ).stdout


def note(root: Path, name: str, kind: str, body: str, front: str = "") -> None:
    path = root / ".memory" / kind / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nid: {name}\ntype: {kind}\n{front}---\n\n{body}\n", encoding="utf-8")


@pytest.fixture
def project(tmp_path, monkeypatch, fake_embedder):
    for key, value in {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }.items():
        monkeypatch.setenv(key, value)
    root = tmp_path / "shop"
    for folder in ("src/billing", "src/shipping"):
        (root / folder).mkdir(parents=True)
    (root / "src" / "billing" / "invoice.py").write_text("def total():\n    return 0\n")
    (root / "src" / "shipping" / "label.py").write_text("def label():\n    return ''\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    monkeypatch.chdir(root)
    monkeypatch.delenv("MEMCTL_STORE", raising=False)
    assert invoke("init").exit_code == 0
    note(
        root,
        "billingnote1",
        "semantic",
        "Invoices under src/billing/ are immutable once sent; issue a credit note instead.",
    )
    note(root, "deploynote01", "procedural", "Deploy with `make release`, never by hand.")
    note(root, "teanote00001", "semantic", "The office kettle is descaled on Fridays.")
    return root


def hook(root: Path, event: str, session: str, **fields) -> str:
    payload = {"hook_event_name": event, "session_id": session, "cwd": str(root), **fields}
    slug = {
        "SessionStart": "session-start",
        "UserPromptSubmit": "user-prompt-submit",
        "PreToolUse": "pre-tool-use",
    }[event]
    result = invoke("hook", "claude-code", slug, input=json.dumps(payload))
    assert result.exit_code == 0, result.output
    if not result.stdout.strip():
        return ""
    return json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]


def read(root: Path, session: str, path: str) -> str:
    return hook(root, "PreToolUse", session, tool_name="Read", tool_input={"file_path": path})


def test_a_read_brings_the_note_that_names_the_files_folder(project):
    assert invoke("index").exit_code == 0
    shown = read(project, "s1", str(project / "src" / "billing" / "invoice.py"))
    assert "issue a credit note" in shown
    assert "make release" not in shown and "kettle" not in shown
    assert "credit note" not in read(project, "s2", "src/shipping/label.py")
    # Once per session: the next tool call on the same file does not repeat it.
    assert "credit note" not in read(project, "s1", "src/billing/invoice.py")


def test_a_folder_much_of_the_store_names_says_nothing_about_one_file(project):
    for number in range(6):
        note(project, f"srcnote{number:05d}", "semantic", f"Rule {number} for everything in src/.")
    assert invoke("index").exit_code == 0
    shown = read(project, "s1", "src/shipping/label.py")
    assert "Rule " not in shown


def test_a_grown_store_starts_with_its_rules_not_its_latest_episodes(project):
    note(
        project,
        "fmtrule0001",
        "procedural",
        "Run `make fmt` before every commit.",
        "apply: always\n",
    )
    for number in range(8):
        note(
            project,
            f"episode{number:05d}",
            "episodic",
            f"Session {number}: worked through the shipping label layout, round {number}. "
            + "Talked it over at length and changed the margins again. " * 4,
            f"created: '2026-0{1 + number % 8}-1{number}T10:00:00Z'\n",
        )
    assert invoke("index").exit_code == 0
    start = hook(project, "SessionStart", "s1", source="startup")
    assert "make fmt" in start
    assert start.count("Session ") <= 1  # one line of the latest session at most
    assert "Session 7" in start or "Session " not in start


def test_a_memory_shown_at_session_start_is_not_injected_again(project):
    note(
        project,
        "pnpmrule0001",
        "preference",
        "Use pnpm, never npm, to install packages in this repository.",
        "apply: always\n",
    )
    assert invoke("index").exit_code == 0
    start = hook(project, "SessionStart", "s1", source="startup")
    assert "never npm" in start
    prompt = "use pnpm or npm to install packages in this repository?"
    again = hook(project, "UserPromptSubmit", "s1", prompt=prompt)
    assert "never npm" not in again
    fresh = hook(project, "UserPromptSubmit", "s2", prompt=prompt)
    assert "never npm" in fresh  # another session never saw it


def test_the_users_corrections_open_the_rules_for_every_task(project):
    for number in range(3):
        note(
            project,
            f"0checklist{number:03d}",
            "preference",
            f"Checklist item {number}: keep the changelog tidy.",
            "apply: always\n",
        )
    added = invoke(
        "add", "--type", "preference", "--apply", "always", "Never add Co-Authored-By lines."
    )
    assert added.exit_code == 0, added.output
    assert invoke("index").exit_code == 0
    start = hook(project, "SessionStart", "s1", source="startup")
    assert start.index("Co-Authored-By") < start.index("Checklist item 0")


def test_a_task_prompt_gets_the_rule_before_what_happened_once(project):
    note(
        project,
        "labelrule001",
        "procedural",
        "Zebra templates for shipping labels: keep the barcode, then run `make labels`.",
    )
    note(
        project,
        "labelepisode",
        "episodic",
        "Updated the zebra templates for shipping labels.",
        "created: '2026-03-01T10:00:00Z'\n",
    )
    assert invoke("index").exit_code == 0
    prompt = "Update the zebra templates for shipping labels but keep the barcode"
    task = hook(project, "UserPromptSubmit", "s1", prompt=prompt)
    assert "make labels" in task
    if "Updated the zebra" in task:
        assert task.index("make labels") < task.index("Updated the zebra")
    past = hook(
        project,
        "UserPromptSubmit",
        "s2",
        prompt="What did we change in the zebra templates for shipping labels last time?",
    )
    assert "Updated the zebra templates" in past


def test_a_prompt_naming_a_file_gets_the_note_about_its_folder(project):
    config = project / ".memory" / "config.yaml"
    text = config.read_text(encoding="utf-8")
    config.write_text(text.replace("prompt_named_k: 0", "prompt_named_k: 3"), encoding="utf-8")
    assert invoke("index").exit_code == 0
    block = hook(
        project,
        "UserPromptSubmit",
        "s1",
        prompt="Round the totals in src/billing/invoice.py to whole cents",
    )
    assert "issue a credit note" in block
    later = read(project, "s1", "src/billing/invoice.py")
    assert "credit note" not in later  # shown once per session
