"""Action-time memory inside the real Claude Code client: when the model reads a file, the
memory anchored to that file reaches the model's next request (PreToolUse additionalContext).

The client comes from npm (tests/real_claude.py); the model is a loopback mock that asks for a
Read of the file on its first turn, then answers.
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

RULE = "After editing the rate limits, run make limits-check; prod reads them at boot only"


def test_the_memory_anchored_to_a_file_reaches_the_model_when_it_reads_it(tmp_path: Path):
    binary = require_claude()
    project = MemctlProject.make(tmp_path / "home")
    root = project.root
    (root / "config").mkdir(parents=True)
    target = root / "config" / "limits.toml"
    target.write_text("[api]\nrequests_per_minute = 600\n")
    memctl = project.memctl

    subprocess.run(["git", "init", "-q", str(root)], check=True)
    memctl("init")
    memory = root / ".memory" / "procedural" / "limits-rule-aaaaaaaaaaaa.md"
    memory.parent.mkdir(parents=True, exist_ok=True)
    memory.write_text(
        f"---\nid: aaaaaaaaaaaa\ntype: procedural\npaths:\n- config/limits.toml\n---\n\n{RULE}\n"
    )
    project.install_hooks()
    # Only the tool hook, so the memory can reach the model by no other way.
    settings_path = root / ".claude" / "settings.json"
    settings = json.loads(settings_path.read_text())
    settings["hooks"] = {"PreToolUse": settings["hooks"]["PreToolUse"]}
    settings_path.write_text(json.dumps(settings))
    turns = [ToolCall("Read", {"file_path": str(target)}), "The limit is 600 per minute."]
    with mock_anthropic(turns) as api:
        done = run_claude(
            binary,
            "what is the api request limit?",
            cwd=root,
            env=project.client_env(api.url),
        )
        assert done.returncode == 0, done.stderr
        requests = api.conversation_requests()
    assert len(requests) >= 2, "the client did not come back after the tool call"
    assert "make limits-check" not in all_text(requests[0])  # nothing anchored was touched yet
    after = all_text(requests[1])
    assert "requests_per_minute = 600" in after  # the tool ran
    assert "make limits-check" in after  # and the anchored memory came with it
