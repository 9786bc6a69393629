"""memctl's hooks inside the real Claude Code client: what they inject reaches the model.

The client comes from npm (tests/real_claude.py installs it once into a cache); the model is a
loopback mock that records every request, so the assertions read exactly what Claude Code sent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.real_claude import MemctlProject, all_text

pytestmark = pytest.mark.slow

DEPLOY = "Deploys go through make release-canary, then kubectl argo rollouts promote api"
UNRELATED = "The docs site is built with mkdocs and published from the gh-pages branch"


@pytest.fixture
def project(tmp_path: Path) -> MemctlProject:
    project = MemctlProject.make(tmp_path / "home")
    project.memctl("init")
    project.memctl("add", DEPLOY, "--type", "procedural", "--tag", "deploy")
    project.memctl("add", UNRELATED, "--type", "semantic")
    project.install_hooks()
    return project


def test_prompt_hook_memory_reaches_the_model(project: MemctlProject) -> None:
    seen = all_text(project.ask("how do we deploy the api to production?")[0])
    assert "how do we deploy the api to production?" in seen
    assert "make release-canary" in seen  # the project memory, injected by memctl's hooks
