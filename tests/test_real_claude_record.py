"""The session's own agent as the extractor, inside the real Claude Code client: with no LLM
configured, memctl's Stop hook asks the agent once to record what the session taught, and the
agent does so through memctl's MCP `add` tool.

The client comes from npm (tests/real_claude.py); the model is a loopback mock that answers the
prompt, then (asked by the Stop hook) calls the MCP tool, then stops.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.real_claude import (
    MemctlProject,
    ToolCall,
    all_text,
    mock_anthropic,
    require_claude,
    run_claude,
)

pytestmark = pytest.mark.slow

LESSON = "Never add Co-Authored-By lines to commit messages in this project"


def _mcp_config(project: MemctlProject, folder: Path) -> Path:
    from tests.server_support import COMMAND

    config = folder / "mcp.json"
    server = {"command": COMMAND[0], "args": [*COMMAND[1:], "mcp"], "env": project.env}
    config.write_text(json.dumps({"mcpServers": {"memctl": server}}))
    return config


def test_the_stop_hook_asks_the_agent_once_and_its_add_call_is_kept(tmp_path: Path):
    binary = require_claude()
    project = MemctlProject.make(tmp_path / "home")
    root = project.root
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    project.memctl("init")
    project.install_hooks()
    config = _mcp_config(project, tmp_path)
    turns = [
        "Understood, no co-author lines.",
        ToolCall("mcp__memctl__add", {"text": LESSON, "type": "procedural"}),
        "Recorded.",
    ]
    with mock_anthropic(turns) as api:
        done = run_claude(
            binary,
            "never add co-author lines to commits",
            cwd=root,
            env=project.client_env(api.url),
            extra_args=(
                "--mcp-config",
                str(config),
                "--allowedTools",
                "mcp__memctl__add",
            ),
        )
        assert done.returncode == 0, done.stderr
        requests = api.conversation_requests()
    assert len(requests) >= 3, f"the Stop hook did not make the agent go on: {done.stdout}"
    assert "record what this session taught" not in all_text(requests[0])
    asked = all_text(requests[1])
    assert "record what this session taught" in asked  # the hook's reason reached the model
    assert "corrections the user made" in asked  # with memctl's rules of what to keep
    # Asked once: the third request (after the tool call) is answered and the session stops.
    assert len(requests) == 3
    listed = project.memctl("list", "--json").stdout
    assert "Co-Authored-By" in listed, listed
