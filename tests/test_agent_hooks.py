"""`memctl hooks ...` and `memctl hook claude-code ...` as Claude Code and a user run them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memctl.agents.claude_code import HOOK_SPECS
from memctl.cli.app import app

runner = CliRunner()
FIXTURES = Path(__file__).parent / "fixtures" / "conversations"


def invoke(*args: str, input: str | None = None):
    return runner.invoke(app, list(args), input=input)


def transcript_file() -> Path:
    """Where Claude Code keeps a session's transcript (under the test's own HOME)."""
    return Path.home() / ".claude" / "projects" / "-project" / "transcript.jsonl"


def payload(event: str, cwd: Path, session: str = "sess-1", **fields) -> str:
    """Hook input as the Claude Code hooks reference documents it."""
    data = {
        "session_id": session,
        "transcript_path": str(transcript_file()),
        "cwd": str(cwd),
        "hook_event_name": event,
        **fields,
    }
    if event == "UserPromptSubmit":
        data.setdefault("permission_mode", "default")
    return json.dumps(data)


def context_of(output: str, event: str) -> str:
    data = json.loads(output)
    assert data["hookSpecificOutput"]["hookEventName"] == event
    return data["hookSpecificOutput"]["additionalContext"]


def set_config(root: Path, text: str) -> None:
    config = root / ".memory" / "config.yaml"
    config.write_text(config.read_text(encoding="utf-8") + "\n" + text, encoding="utf-8")


# --- install / uninstall / status -------------------------------------------------------------


def test_install_merges_into_project_settings_and_uninstall_restores_them(project):
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    original = {
        "model": "opus",
        "hooks": {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}
            ]
        },
    }
    settings.write_text(json.dumps(original), encoding="utf-8")

    result = invoke("hooks", "install", "claude-code", "--command", "memctl")
    assert result.exit_code == 0, result.output
    data = json.loads(settings.read_text(encoding="utf-8"))
    assert (
        data["model"] == "opus"
        and data["hooks"]["PreToolUse"][0] == original["hooks"]["PreToolUse"][0]
    )
    for spec in HOOK_SPECS:
        ours = {
            "hooks": [
                {
                    "type": "command",
                    "command": f"memctl hook claude-code {spec.slug}",
                    "timeout": spec.timeout,
                }
            ],
            **({"matcher": spec.matcher} if spec.matcher else {}),
        }
        assert data["hooks"][spec.event][-1] == ours

    status = json.loads(invoke("hooks", "status", "--json").stdout)
    assert set(status["claude_code"]["project"]["installed"]) == {s.event for s in HOOK_SPECS}
    assert status["claude_code"]["user"]["installed"] == {}
    assert status["claude_code"]["project"]["other_hooks"] == 1

    assert invoke("hooks", "uninstall", "claude-code").exit_code == 0
    assert json.loads(settings.read_text(encoding="utf-8")) == original


def test_user_scope_writes_home_settings_and_status_warns_about_both(project):
    assert invoke("hooks", "install", "claude-code", "--user").exit_code == 0
    assert (Path.home() / ".claude" / "settings.json").is_file()
    assert not (project / ".claude").exists()
    assert invoke("hooks", "install", "claude-code").exit_code == 0
    status = json.loads(invoke("hooks", "status", "--json").stdout)
    assert any("more than once" in warning for warning in status["warnings"])


def test_conflicting_scopes_and_unknown_targets_are_usage_errors(project):
    assert invoke("hooks", "install", "claude-code", "--user", "--project").exit_code == 2
    assert invoke("hooks", "install", "vscode").exit_code == 2
    assert invoke("hooks", "install", "git", "--user").exit_code == 2


def test_shell_snippet_is_printed(project):
    result = invoke("hooks", "shell", "zsh")
    assert result.exit_code == 0 and "noglob" in result.stdout and "function memq" in result.stdout


# --- SessionStart and UserPromptSubmit --------------------------------------------------------


@pytest.mark.model
def test_session_start_adds_the_context_block(project):
    assert (
        invoke("add", "Always run make check before every push", "--type", "preference").exit_code
        == 0
    )
    result = invoke(
        "hook",
        "claude-code",
        "session-start",
        input=payload("SessionStart", project, source="startup"),
    )
    assert result.exit_code == 0, result.output
    assert "make check before every push" in context_of(result.stdout, "SessionStart")


def test_session_start_with_nothing_to_recall_prints_nothing(project):
    result = invoke(
        "hook",
        "claude-code",
        "session-start",
        input=payload("SessionStart", project, source="startup"),
    )
    assert result.exit_code == 0 and result.stdout == ""


def test_hook_without_a_store_prints_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv("MEMCTL_STORE", raising=False)
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    result = invoke("hook", "claude-code", "session-start", input=payload("SessionStart", tmp_path))
    assert result.exit_code == 0 and result.stdout == ""


def test_bad_input_prints_nothing_exits_zero_and_is_logged(project):
    result = invoke("hook", "claude-code", "user-prompt-submit", input="{not json")
    assert result.exit_code == 0 and result.stdout == ""
    assert "not JSON" in (project / ".memory" / ".state" / "hooks.log").read_text(encoding="utf-8")


def test_unknown_event_still_exits_zero(project):
    result = invoke("hook", "claude-code", "post-tool-use", input=payload("PostToolUse", project))
    assert result.exit_code == 0 and result.stdout == ""


@pytest.mark.model
def test_prompt_gets_related_memories_once_per_session(project):
    assert invoke("add", "Postgres listens on port 5433 in the dev docker compose").exit_code == 0
    assert (
        invoke("add", "We release with make release from main", "--type", "procedural").exit_code
        == 0
    )
    question = payload(
        "UserPromptSubmit", project, prompt="what port does the database use locally?"
    )

    first = invoke("hook", "claude-code", "user-prompt-submit", input=question)
    assert first.exit_code == 0, first.output
    context = context_of(first.stdout, "UserPromptSubmit")
    assert "5433" in context and "make release" not in context

    again = invoke("hook", "claude-code", "user-prompt-submit", input=question)
    assert again.exit_code == 0 and again.stdout == ""  # already in this session's context

    other_session = payload(
        "UserPromptSubmit",
        project,
        session="sess-2",
        prompt="what port does the database use locally?",
    )
    assert "5433" in context_of(
        invoke("hook", "claude-code", "user-prompt-submit", input=other_session).stdout,
        "UserPromptSubmit",
    )


@pytest.mark.model
def test_prompt_hook_finishes_an_interrupted_forget_before_reading(project):
    """A forget killed midway left its journal: the hook removes the memory before it could be
    injected into the agent's prompt."""
    from memctl.config import open_store
    from memctl.store.forget_journal import journal_path, write_journal

    added = invoke("add", "The vault host is zebraquokka-7 in rack 12", "--json")
    assert added.exit_code == 0, added.output
    store = open_store(str(project / ".memory"))
    write_journal(store.state_dir, [json.loads(added.stdout)["id"]], [])

    result = invoke(
        "hook",
        "claude-code",
        "user-prompt-submit",
        input=payload(
            "UserPromptSubmit", project, prompt="which host is the vault zebraquokka on?"
        ),
    )

    assert result.exit_code == 0 and "zebraquokka" not in result.stdout
    assert not journal_path(store.state_dir).exists()
    assert not [p for p in (project / ".memory").rglob("*.md") if "zebraquokka" in p.read_text()]


@pytest.mark.model
@pytest.mark.parametrize("prompt", ["ok", "/clear", "write a haiku about autumn leaves"])
def test_trivial_or_unrelated_prompts_get_nothing(project, prompt):
    assert invoke("add", "Postgres listens on port 5433 in the dev docker compose").exit_code == 0
    result = invoke(
        "hook",
        "claude-code",
        "user-prompt-submit",
        input=payload("UserPromptSubmit", project, prompt=prompt),
    )
    assert result.exit_code == 0 and result.stdout == ""


@pytest.mark.slow
@pytest.mark.model
def test_real_process_prints_only_the_hook_json(project):
    assert (
        invoke("add", "I prefer deploys through make release", "--type", "preference").exit_code
        == 0
    )
    done = subprocess.run(
        [sys.executable, "-m", "memctl", "hook", "claude-code", "session-start"],
        input=payload("SessionStart", project, source="resume"),
        cwd="/",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "make release" in context_of(done.stdout, "SessionStart")


# --- PreCompact and SessionEnd ---------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.model
def test_session_end_hands_the_transcript_to_a_detached_ingest(project):
    transcript = transcript_file()
    transcript.parent.mkdir(parents=True)
    shutil.copyfile(FIXTURES / "claude_code_session.jsonl", transcript)
    state = project / ".memory" / ".state"
    result = invoke(
        "hook",
        "claude-code",
        "session-end",
        input=payload("SessionEnd", project, reason="prompt_input_exit"),
    )
    assert result.exit_code == 0 and result.stdout == ""

    bookkeeping = state / "hooks" / "sessions" / "sess-1.json"
    deadline = time.monotonic() + 120  # the detached process loads the model; wait for it
    while time.monotonic() < deadline and not (
        bookkeeping.exists() and json.loads(bookkeeping.read_text()).get("ingests")
    ):
        time.sleep(0.2)
    record = json.loads(bookkeeping.read_text(encoding="utf-8"))
    assert record["turns_ingested"] > 0 and record["ingests"][-1]["final"] is True
    assert list((state / "hooks" / "jobs").iterdir()) == []
    meta = json.loads((state / "sessions" / "sess-1.meta.json").read_text(encoding="utf-8"))
    assert meta["ended"]
    episodes = json.loads(invoke("list", "--type", "episodic", "--json").stdout)
    assert [e["id"] for e in episodes] == record["ingests"][-1]["episodes"]
    stored = {m["id"] for m in json.loads(invoke("list", "--json").stdout)}
    assert record["ingests"][-1]["extracted"] and set(record["ingests"][-1]["extracted"]) <= stored

    # The same transcript again (e.g. PreCompact, then SessionEnd): nothing is taken twice.
    again = invoke(
        "hook",
        "claude-code",
        "pre-compact",
        "--foreground",
        input=payload("PreCompact", project, trigger="auto", custom_instructions=""),
    )
    assert again.exit_code == 0
    record = json.loads(bookkeeping.read_text(encoding="utf-8"))
    assert record["ingests"][-1]["turns"] == 0
    assert len(json.loads(invoke("list", "--type", "episodic", "--json").stdout)) == len(episodes)


def test_missing_transcript_is_logged_not_raised(project):
    result = invoke(
        "hook",
        "claude-code",
        "pre-compact",
        "--foreground",
        input=payload("PreCompact", project, trigger="manual", custom_instructions=""),
    )
    assert result.exit_code == 0 and result.stdout == ""
    log = (project / ".memory" / ".state" / "hooks.log").read_text(encoding="utf-8")
    assert "PreCompact" in log and "transcript.jsonl" in log


def test_a_line_still_being_written_is_left_for_the_next_call(tmp_path):
    from memctl.agents.ingest import read_transcript

    lines = (FIXTURES / "claude_code_session.jsonl").read_text(encoding="utf-8").splitlines()
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(
        "\n".join(lines) + "\n" + lines[-1][: len(lines[-1]) // 2], encoding="utf-8"
    )
    partial = read_transcript(transcript)
    transcript.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert partial == read_transcript(transcript)
