"""Action-time memory inside the real Claude Code client: when the model reads a file, the
memory anchored to that file reaches the model's next request (PreToolUse additionalContext).

The client comes from npm (tests/real_claude.py); the model is a loopback mock that asks for a
Read of the file on its first turn, then answers.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.real_claude import (
    ToolCall,
    all_text,
    client_env,
    mock_anthropic,
    require_claude,
    run_claude,
)
from tests.server_support import COMMAND

pytestmark = pytest.mark.slow

RULE = "After editing the rate limits, run make limits-check; prod reads them at boot only"


def test_the_memory_anchored_to_a_file_reaches_the_model_when_it_reads_it(tmp_path: Path):
    binary = require_claude()
    home = tmp_path / "home"
    root = home / "project"
    (root / "config").mkdir(parents=True)
    target = root / "config" / "limits.toml"
    target.write_text("[api]\nrequests_per_minute = 600\n")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("MEMCTL_")},
        "HOME": str(home),
        "MEMCTL_USER_STORE": str(home / "user-memory"),
        "MEMCTL_NO_SERVER": "1",
    }

    def memctl(*args: str) -> None:
        done = subprocess.run(
            [*COMMAND, *args], cwd=root, env=env, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stderr

    subprocess.run(["git", "init", "-q", str(root)], check=True)
    memctl("init")
    memory = root / ".memory" / "procedural" / "limits-rule-aaaaaaaaaaaa.md"
    memory.parent.mkdir(parents=True, exist_ok=True)
    memory.write_text(
        f"---\nid: aaaaaaaaaaaa\ntype: procedural\npaths:\n- config/limits.toml\n---\n\n{RULE}\n"
    )
    memctl("hooks", "install", "claude-code", "--command", shlex.join(COMMAND))
    # Only the tool hook, so the memory can reach the model by no other way.
    settings_path = root / ".claude" / "settings.json"
    settings = json.loads(settings_path.read_text())
    settings["hooks"] = {"PreToolUse": settings["hooks"]["PreToolUse"]}
    settings_path.write_text(json.dumps(settings))
    memctl_env = {k: v for k, v in env.items() if k.startswith("MEMCTL_")}
    turns = [ToolCall("Read", {"file_path": str(target)}), "The limit is 600 per minute."]
    with mock_anthropic(turns) as api:
        done = run_claude(
            binary,
            "what is the api request limit?",
            cwd=root,
            env=client_env(home, api.url, {"PATH": env["PATH"], **memctl_env}),
        )
        assert done.returncode == 0, done.stderr
        requests = api.conversation_requests()
    assert len(requests) >= 2, "the client did not come back after the tool call"
    assert "make limits-check" not in all_text(requests[0])  # nothing anchored was touched yet
    after = all_text(requests[1])
    assert "requests_per_minute = 600" in after  # the tool ran
    assert "make limits-check" in after  # and the anchored memory came with it
