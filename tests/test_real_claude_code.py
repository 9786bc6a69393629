"""memctl's hooks inside the real Claude Code client: what they inject reaches the model.

The client comes from npm (tests/real_claude.py installs it once into a cache); the model is a
loopback mock that records every request, so the assertions read exactly what Claude Code sent.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.real_claude import all_text, client_env, mock_anthropic, require_claude, run_claude
from tests.server_support import COMMAND

pytestmark = pytest.mark.slow

DEPLOY = "Deploys go through make release-canary, then kubectl argo rollouts promote api"
UNRELATED = "The docs site is built with mkdocs and published from the gh-pages branch"


def memctl(project: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [*COMMAND, *args], cwd=project, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    home = tmp_path / "home"
    root = home / "project"
    root.mkdir(parents=True)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("MEMCTL_")},
        "HOME": str(home),
        "MEMCTL_USER_STORE": str(home / "user-memory"),
        "MEMCTL_NO_SERVER": "1",
    }
    memctl(root, env, "init")
    memctl(root, env, "add", DEPLOY, "--type", "procedural", "--tag", "deploy")
    memctl(root, env, "add", UNRELATED, "--type", "semantic")
    # Hooks call this interpreter's memctl, as an installed one would be found on PATH.
    memctl(root, env, "hooks", "install", "claude-code", "--command", shlex.join(COMMAND))
    return root, env


def test_prompt_hook_memory_reaches_the_model(project: tuple[Path, dict[str, str]]) -> None:
    root, env = project
    binary = require_claude()
    with mock_anthropic(["Noted."]) as api:
        done = run_claude(
            binary,
            "how do we deploy the api to production?",
            cwd=root,
            env=client_env(root.parent, api.url, {"PATH": env["PATH"], **_memctl_env(env)}),
        )
        assert done.returncode == 0, done.stderr
        requests = api.conversation_requests()
    assert requests, "the client sent no conversation request to the mock API"
    seen = all_text(requests[0])
    assert "how do we deploy the api to production?" in seen
    assert "make release-canary" in seen  # the project memory, injected by memctl's hooks


def _memctl_env(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith("MEMCTL_")}
