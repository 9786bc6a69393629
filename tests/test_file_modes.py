"""Files memctl creates get the mode the umask gives; a file it rewrites keeps its own mode."""

from __future__ import annotations

import os
import stat

import pytest
from typer.testing import CliRunner

from memctl.cli.app import app

pytestmark = pytest.mark.usefixtures("fake_embedder")
runner = CliRunner()


@pytest.fixture
def umask():
    """Run the test under a umask of its choosing, then put the old one back."""
    saved = os.umask(0o022)

    def set_to(mask: int) -> None:
        os.umask(mask)

    yield set_to
    os.umask(saved)


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # export writes AGENTS.md and .cursor/rules/ in the project


def memctl(project, *args: str):
    done = runner.invoke(app, ["--store", str(project / ".memory"), *args])
    assert done.exit_code == 0, done.output
    return done


def modes(project) -> dict[str, int]:
    return {
        str(p.relative_to(project)): stat.S_IMODE(p.stat().st_mode)
        for p in project.rglob("*")
        if p.is_file() and not p.name.endswith(".lock")  # lock files: opened, never written
    }


@pytest.mark.parametrize("mask, expected", [(0o022, 0o644), (0o077, 0o600)])
def test_new_files_get_the_mode_the_umask_gives(tmp_path, umask, mask, expected):
    umask(mask)
    project = tmp_path
    runner.invoke(app, ["init", str(project)])
    memctl(project, "add", "Production deploys go through make release.")
    memctl(project, "recall", "deploys")
    for fmt in ("agents-md", "cursor-rules"):
        memctl(project, "export", "--format", fmt)

    found = modes(project)
    assert any(path.startswith(".memory/semantic/") for path in found)
    assert "AGENTS.md" in found and any(path.startswith(".cursor/rules/") for path in found)
    assert {path: mode for path, mode in found.items() if mode != expected} == {}


def test_a_rewritten_file_keeps_its_mode(tmp_path, umask):
    project = tmp_path
    runner.invoke(app, ["init", str(project)])
    memctl(project, "add", "Production deploys go through make release.")
    memctl(project, "export", "--format", "agents-md")
    agents = project / "AGENTS.md"
    agents.chmod(0o640)

    memctl(project, "add", "The on-call rotation hands over every Monday at ten.")
    memctl(project, "export", "--format", "agents-md")

    assert "Monday" in agents.read_text() and stat.S_IMODE(agents.stat().st_mode) == 0o640
