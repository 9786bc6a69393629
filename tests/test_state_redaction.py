"""Secrets typed into session turns and tasks never reach the files memctl keeps on disk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memctl.cli.app import app

pytestmark = pytest.mark.usefixtures("fake_embedder")

runner = CliRunner()

GITHUB_TOKEN = "ghp_Q8vT2mLx9RkP4nWz7YcB3hJd6FsA1gEu5oKi"
AWS_KEY = "AKIAZ7QK4MPL2XWN8RTB"
EMAIL = "carol.nguyen@example.org"


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MEMCTL_STORE", raising=False)
    assert runner.invoke(app, ["init"]).exit_code == 0
    return tmp_path


def invoke(*args: str):
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result


def files_holding(folder: Path, *secrets: str) -> list[str]:
    """Every file under `folder` whose raw bytes contain one of `secrets`."""
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        raw = path.read_bytes()
        found.extend(f"{path}: {s}" for s in secrets if s.encode() in raw)
    return found


def test_session_turns_are_redacted_before_the_buffer_is_written(project):
    added = invoke(
        "session",
        "add",
        "-S",
        "s1",
        "--json",
        f"Deploy with token {GITHUB_TOKEN} and mail {EMAIL} when done",
    )
    assert json.loads(added.stdout)["redacted"] == {"email": 1, "github_token": 1}
    invoke("session", "add", "-S", "s1", "-r", "assistant", f"Stored {AWS_KEY} in the vault.")

    state = project / ".memory" / ".state"
    assert any(state.rglob("*.jsonl")), "the session buffer was not written"
    assert files_holding(state, GITHUB_TOKEN, AWS_KEY, EMAIL) == []
    shown = json.loads(invoke("session", "show", "s1", "--json").stdout)
    contents = [turn["content"] for turn in shown["turns"]]
    assert "Deploy with token [REDACTED_GITHUB_TOKEN]" in contents[0]
    assert "the vault" in contents[1]  # the rest of the turn is kept

    invoke("session", "end", "s1")  # the episode it becomes is redacted as well
    assert files_holding(project / ".memory", GITHUB_TOKEN, AWS_KEY, EMAIL) == []


def test_task_state_is_redacted_before_it_is_written(project):
    invoke(
        "task",
        "start",
        f"Rotate {AWS_KEY} for {EMAIL}",
        "--plan",
        f"revoke {GITHUB_TOKEN}",
        "--plan",
        "issue a new key",
    )
    # The same text names the same step, even though the stored one is redacted.
    invoke(
        "task",
        "step",
        f"revoke {GITHUB_TOKEN}",
        "--status",
        "done",
        "--result",
        f"revoked; confirmation sent to {EMAIL}",
    )
    invoke("task", "note", "old-key", f"was {AWS_KEY}")
    state = project / ".memory" / ".state"
    assert any(state.rglob("*.json")), "the task was not written"
    assert files_holding(state, GITHUB_TOKEN, AWS_KEY, EMAIL) == []

    task = json.loads(invoke("task", "show", "--json").stdout)
    assert [step["status"] for step in task["steps"]] == ["done", "pending"]
    assert task["notes"] == {"old-key": "was [REDACTED_AWS_KEY]"}

    invoke("task", "done", "--lesson", f"never paste {GITHUB_TOKEN} into chat")
    assert files_holding(project / ".memory", GITHUB_TOKEN, AWS_KEY, EMAIL) == []
