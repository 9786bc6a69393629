"""Hooks in this machine's settings (--local, --user) run the memctl that installed them, whatever
PATH Claude Code has; committed settings run the memctl each clone has. `hooks status` calls each
installed hook dry and reports the ones that cannot start."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memctl.agents.claude_code import CHECK_ENV, HOOK_SPECS
from memctl.cli.app import app
from memctl.cli.commands import hooks as hooks_command

runner = CliRunner()
BARE_PATH = "/usr/bin:/bin"  # what a GUI-started Claude Code may have: no venv, no pipx folder


def installed_commands(project: Path, name: str = "settings.json") -> dict[str, str]:
    data = json.loads((project / ".claude" / name).read_text(encoding="utf-8"))
    return {event: groups[0]["hooks"][0]["command"] for event, groups in data["hooks"].items()}


def run_dry(command: str, path: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": path, CHECK_ENV: "1", "MEMCTL_NO_SERVER": "1"}
    return subprocess.run(
        ["/bin/sh", "-c", command], env=env, capture_output=True, text=True, check=False
    )


@pytest.mark.slow
def test_local_hooks_run_without_memctl_on_path(project, monkeypatch):
    # memctl is on the installing shell's PATH (an activated venv) ...
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    result = runner.invoke(app, ["hooks", "install", "claude-code", "--local"])
    assert result.exit_code == 0, result.output
    commands = installed_commands(project, "settings.local.json")
    assert set(commands) == {spec.event for spec in HOOK_SPECS}
    for command in commands.values():
        assert not command.startswith("memctl ")  # ... but not on Claude Code's
    ran = run_dry(commands["SessionStart"], BARE_PATH)
    assert ran.returncode == 0, ran.stderr


@pytest.mark.slow
def test_committed_hooks_run_the_memctl_of_each_clone(project, tmp_path, monkeypatch):
    monkeypatch.delenv("MEMCTL_BIN", raising=False)
    result = runner.invoke(app, ["hooks", "install", "claude-code"])
    assert result.exit_code == 0, result.output
    commands = installed_commands(project)
    assert set(commands) == {spec.event for spec in HOOK_SPECS}
    here = str(Path(sys.executable).parent)
    for command in commands.values():
        assert here not in command and str(Path.home()) not in command
    # A teammate's clone: memctl on their PATH, or MEMCTL_BIN naming it.
    their_bin = tmp_path / "their-venv" / "bin"
    their_bin.mkdir(parents=True)
    (their_bin / "memctl").symlink_to(Path(sys.executable).parent / "memctl")
    assert run_dry(commands["SessionStart"], f"{their_bin}:{BARE_PATH}").returncode == 0
    env = {**os.environ, "PATH": BARE_PATH, CHECK_ENV: "1", "MEMCTL_NO_SERVER": "1"}
    env["MEMCTL_BIN"] = str(their_bin / "memctl")
    by_variable = subprocess.run(["/bin/sh", "-c", commands["Stop"]], env=env, check=False)
    assert by_variable.returncode == 0
    # Where memctl cannot be found, status says what to do, and not "reinstall".
    monkeypatch.setenv("PATH", BARE_PATH)
    status = json.loads(runner.invoke(app, ["hooks", "status", "--json"]).stdout)
    assert status["claude_code"]["project"]["failing"]
    (warning,) = status["warnings"]
    assert "MEMCTL_BIN" in warning and "hooks install" not in warning


def test_the_default_command_is_this_memctl_quoted(tmp_path, monkeypatch):
    script = tmp_path / "my tools" / "memctl"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n", encoding="utf-8")
    script.chmod(0o755)
    monkeypatch.setattr(sys, "argv", [str(script), "hooks", "install"])
    assert hooks_command.default_command_prefix() == shlex.quote(str(script))
    assert shlex.split(hooks_command.default_command_prefix()) == [str(script)]
    # Not started as a memctl script, and none beside this Python: the interpreter's -m.
    monkeypatch.setattr(sys, "argv", ["pytest"])
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    assert shlex.split(hooks_command.default_command_prefix()) == [
        str(tmp_path / "python"),
        "-m",
        "memctl",
    ]


def test_the_command_override_is_kept(project):
    result = runner.invoke(
        app, ["hooks", "install", "claude-code", "--command", "uvx memctl", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert installed_commands(project)["SessionEnd"] == "uvx memctl hook claude-code session-end"


@pytest.mark.slow
def test_status_reports_hooks_that_cannot_start(project):
    missing = "/nowhere/bin/memctl"
    assert (
        runner.invoke(app, ["hooks", "install", "claude-code", "--command", missing]).exit_code == 0
    )
    status = runner.invoke(app, ["hooks", "status", "--json"])
    assert status.exit_code == 0, status.output
    failing = json.loads(status.stdout)["claude_code"]["project"]["failing"]
    assert set(failing) == {spec.event for spec in HOOK_SPECS}
    assert all(problem.startswith("exit 127") for problem in failing.values())
    shown = runner.invoke(app, ["hooks", "status"])
    assert f"{len(HOOK_SPECS)} failing" in shown.stdout and "exit 127" in shown.stdout

    good = shlex.join([sys.executable, "-m", "memctl"])
    assert runner.invoke(app, ["hooks", "install", "claude-code", "--command", good]).exit_code == 0
    status = json.loads(runner.invoke(app, ["hooks", "status", "--json"]).stdout)
    assert status["claude_code"]["project"]["failing"] == {}


def test_hooks_in_settings_beside_the_enabled_plugin_are_called_out(project):
    """The plugin brings the same four hooks: with both, each event would run memctl twice."""
    user_settings = Path.home() / ".claude" / "settings.json"
    user_settings.parent.mkdir()
    user_settings.write_text(json.dumps({"enabledPlugins": {"memctl@memctl": True}}))
    status = json.loads(runner.invoke(app, ["hooks", "status", "--no-check", "--json"]).stdout)
    assert status["claude_code"]["user"]["plugin"] is True and status["warnings"] == []

    installed = runner.invoke(app, ["hooks", "install", "claude-code"])
    assert installed.exit_code == 0
    assert "plugin is enabled in user settings" in installed.stderr
    assert "memctl hooks uninstall claude-code" in installed.stderr
    status = json.loads(runner.invoke(app, ["hooks", "status", "--no-check", "--json"]).stdout)
    assert any("runs memctl twice" in warning for warning in status["warnings"])

    user_settings.write_text(json.dumps({"enabledPlugins": {"memctl@memctl": False}}))
    status = json.loads(runner.invoke(app, ["hooks", "status", "--no-check", "--json"]).stdout)
    assert status["claude_code"]["user"]["plugin"] is False and status["warnings"] == []


def test_status_says_which_transcript_ingests_are_pending_or_failed(project):
    from memctl.agents.claude_code_events import jobs_dir
    from memctl.config import open_store

    store = open_store(None, cwd=project)
    assert "Pending transcript ingests: none" in runner.invoke(app, ["hooks", "status"]).stdout
    jobs = jobs_dir(store)
    jobs.mkdir(parents=True, exist_ok=True)
    queued = {"session_id": "s-1", "transcript_path": "/t.jsonl", "final": True, "queued": 1.0}
    (jobs / "20260101T000000-s-1.json").write_text(json.dumps(queued))
    (jobs / "20260101T000001-s-2.failed").write_text(json.dumps({**queued, "session_id": "s-2"}))
    report = json.loads(runner.invoke(app, ["hooks", "status", "--json"]).stdout)
    states = {(e["session_id"], e["state"]) for e in report["pending_ingests"]}
    assert states == {("s-1", "queued"), ("s-2", "failed")}
    shown = runner.invoke(app, ["hooks", "status"]).stdout
    assert "Pending transcript ingests: 2" in shown and "failed: see hooks.log" in shown
