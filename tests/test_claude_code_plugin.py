"""memctl's Claude Code plugin (plugin/, listed by .claude-plugin/marketplace.json).

The slow tests install it with the real client's own plugin commands into an isolated home and
run `claude -p` against a loopback mock of the Anthropic API (tests/real_claude.py): what the
plugin's hooks inject and the tools its MCP server offers must be in what the client sent.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from memctl.agents.claude_code import HOOK_SPECS
from tests.real_claude import all_text, client_env, mock_anthropic, require_claude, run_claude
from tests.server_support import COMMAND, memctl_env

REPO = Path(__file__).resolve().parents[1]
PLUGIN = REPO / "plugin"
RUNNER = PLUGIN / "hooks" / "run-memctl"

DEPLOY = "Deploys go through make release-canary, then kubectl argo rollouts promote api"
PREFERENCE = "Format Python with ruff at line length 100, never black"


def test_the_marketplace_lists_the_plugin_at_the_declared_version():
    marketplace = json.loads((REPO / ".claude-plugin" / "marketplace.json").read_text())
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    (entry,) = marketplace["plugins"]
    assert (REPO / entry["source"]).resolve() == PLUGIN
    declared = re.search(r'^version = "([^"]+)"$', (REPO / "pyproject.toml").read_text(), re.M)
    assert declared and entry["version"] == manifest["version"] == declared.group(1)
    assert manifest["mcpServers"]["memctl"]["args"][-1] == "mcp"


def test_the_plugin_hooks_are_memctls_own_events_and_timeouts():
    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
    assert set(hooks) == {spec.event for spec in HOOK_SPECS}
    for spec in HOOK_SPECS:
        ((group,),) = [hooks[spec.event]]
        (handler,) = group["hooks"]
        assert group.get("matcher") == spec.matcher
        assert handler["timeout"] == spec.timeout
        assert shlex.split(handler["command"])[-3:] == ["hook", "claude-code", spec.slug]


def _path_without_memctl() -> str:
    folders = os.environ.get("PATH", "").split(os.pathsep)
    return os.pathsep.join(f for f in folders if f and not (Path(f) / "memctl").exists())


def test_without_memctl_the_session_start_says_so_once_and_mcp_fails_loudly(tmp_path):
    env = {"PATH": _path_without_memctl(), "MEMCTL_BIN": str(tmp_path / "missing" / "memctl")}

    def hook(event: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["sh", str(RUNNER), "hook", "claude-code", event],
            input="{}", env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip

    started = hook("session-start")
    assert started.returncode == 0  # never blocks Claude Code
    message = json.loads(started.stdout)["systemMessage"]  # shown to the person, not silence
    assert "memctl not found" in message and "MEMCTL_BIN" in message  # says how to fix it
    for event in ("user-prompt-submit", "pre-tool-use", "stop"):  # once a session, not per call
        later = hook(event)
        assert (later.returncode, later.stdout) == (0, "") and "MEMCTL_BIN" in later.stderr
    mcp = subprocess.run(["sh", str(RUNNER), "mcp"], env=env, capture_output=True, text=True)
    assert mcp.returncode == 127 and "not found" in mcp.stderr


def _shim(folder: Path, name: str) -> Path:
    """An executable that runs this checkout's memctl, as an installed one would."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f'#!/bin/sh\nexec {shlex.join(COMMAND)} "$@"\n')
    path.chmod(0o755)
    return path


@pytest.mark.slow
@pytest.mark.parametrize("found_by", ["PATH", "MEMCTL_BIN"])
def test_the_installed_plugin_brings_memory_and_tools_to_the_model(tmp_path, found_by):
    binary = require_claude()
    home = tmp_path / "home"
    project = home / "project"
    project.mkdir(parents=True)
    memctl_vars = {"MEMCTL_NO_SERVER": "1", "MEMCTL_USER_STORE": str(home / "user-memory")}
    env = memctl_env(server=False, extra={"HOME": str(home), **memctl_vars})
    path = _path_without_memctl()
    if found_by == "PATH":
        path = f"{_shim(tmp_path / 'bin', 'memctl').parent}{os.pathsep}{path}"
    else:  # e.g. a virtualenv's memctl that is not on Claude Code's PATH
        memctl_vars["MEMCTL_BIN"] = str(_shim(tmp_path / "venv" / "bin", "memctl"))
    env["PATH"] = path
    for args in (
        ["init"],
        ["add", DEPLOY, "--type", "procedural"],
        ["add", PREFERENCE, "--type", "preference", "--confidence", "0.9"],
    ):
        done = subprocess.run([*COMMAND, *args], cwd=project, env=env, capture_output=True)
        assert done.returncode == 0, done.stderr
    # Why: the SessionEnd ingest would otherwise outlive the test in a detached process.
    with (project / ".memory" / "config.yaml").open("a") as config:
        config.write("\nhooks:\n  background: false\n")

    with mock_anthropic(["Noted."]) as api:
        extra = {"PATH": path, "PYTHONPATH": env.get("PYTHONPATH", ""), **memctl_vars}
        # Why: `claude -p` sends its first request without waiting for MCP servers unless told
        # to (then for MCP_CONNECT_TIMEOUT_MS); a busy machine starts `memctl mcp` in seconds.
        extra.update(MCP_CONNECTION_NONBLOCKING="false", MCP_CONNECT_TIMEOUT_MS="120000")
        client = client_env(home, api.url, extra)
        for command in (["marketplace", "add", str(REPO)], ["install", "memctl@memctl"]):
            done = subprocess.run(
                [str(binary), "plugin", *command], cwd=project, env=client,
                capture_output=True, text=True, timeout=120, check=False,
            )  # fmt: skip
            assert done.returncode == 0, done.stdout + done.stderr
        done = run_claude(
            binary, "how do we deploy the api to production?", cwd=project, env=client
        )
        assert done.returncode == 0, done.stderr
        requests = api.conversation_requests()

    assert requests, "the client sent no conversation request to the mock API"
    seen = all_text(requests[0])
    assert "make release-canary" in seen  # the prompt hook: memories related to the prompt
    assert "never black" in seen  # the session-start hook: preferences
    # The plugin's MCP server answered: its tools are offered, in full or as deferred names.
    offered = seen + "\n".join(tool.get("name", "") for tool in requests[0]["tools"])
    for tool in ("recall", "add", "context", "forget"):
        assert f"mcp__plugin_memctl_memctl__{tool}" in offered


def test_the_documented_install_command_names_this_plugin_and_marketplace():
    marketplace = json.loads((REPO / ".claude-plugin" / "marketplace.json").read_text())
    command = f"claude plugin install {marketplace['plugins'][0]['name']}@{marketplace['name']}"
    for page in (REPO / "README.md", REPO / "docs" / "claude-code-plugin.md"):
        assert command in page.read_text(encoding="utf-8"), page.name
