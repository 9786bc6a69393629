"""The git pre-commit hook: staged memory files must parse and carry no unredacted secrets."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys

import pytest

from memctl import service
from memctl.agents.git_hooks import install_git_hooks

pytestmark = pytest.mark.slow

GOOD = "---\nid: deploy\ntitle: Deploy\ntype: procedural\n---\n\nRun make release from main.\n"
CONFLICTED = (
    "---\nid: port\ntype: semantic\n---\n\n<<<<<<< HEAD\nPostgres is on 5432.\n=======\n"
    "Postgres is on 5433.\n>>>>>>> feature\n"
)
BROKEN_YAML = "---\nid: x\ntags: [unclosed\n---\n\nbody\n"
SECRET = (
    "---\nid: ci\ntype: procedural\n---\n\nCI pushes images with the token\n"
    "ghp_16C7e42F292c6912E7710c838347Ae178B4a in the registry step.\n"
)


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A git repository with a store and memctl's hooks, run by this Python."""
    root = tmp_path / "repo"
    root.mkdir()
    env = {
        **os.environ,
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(tmp_path),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    env.pop("MEMCTL_STORE", None)
    monkeypatch.delenv("MEMCTL_STORE", raising=False)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, env=env, check=True)
    service.init_store(root)
    install_git_hooks(root, command_prefix=shlex.join([sys.executable, "-m", "memctl"]))
    return root, env


def commit(repo, relpath: str, text: str, add: bool = True):
    root, env = repo
    path = root / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if add:
        subprocess.run(["git", "add", relpath], cwd=root, env=env, check=True)
    return subprocess.run(
        ["git", "commit", "-q", "-m", relpath],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def committed(repo) -> list[str]:
    root, env = repo
    done = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", "HEAD"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.split()


def test_a_valid_memory_commits(repo):
    done = commit(repo, ".memory/procedural/deploy.md", GOOD)
    assert done.returncode == 0, done.stderr
    assert ".memory/procedural/deploy.md" in committed(repo)


@pytest.mark.parametrize(
    "text, line, words",
    [
        (CONFLICTED, 6, "merge-conflict marker"),
        (BROKEN_YAML, 3, "broken YAML"),
    ],
)
def test_a_broken_memory_is_refused_with_its_line(repo, text, line, words):
    done = commit(repo, ".memory/semantic/port.md", text)
    assert done.returncode != 0
    assert f".memory/semantic/port.md:{line}: " in done.stderr and words in done.stderr
    assert ".memory/semantic/port.md" not in committed(repo)


def test_a_staged_secret_is_refused_without_printing_it(repo):
    done = commit(repo, ".memory/procedural/ci.md", SECRET)
    assert done.returncode != 0
    assert ".memory/procedural/ci.md:7: unredacted github_token" in done.stderr
    assert "ghp_16C7e42F" not in done.stderr


def test_the_staged_version_counts_not_the_work_tree(repo):
    root, _ = repo
    assert commit(repo, ".memory/semantic/port.md", CONFLICTED).returncode != 0
    (root / ".memory/semantic/port.md").write_text(GOOD, encoding="utf-8")  # fixed, not re-added
    again = subprocess.run(
        ["git", "commit", "-q", "-m", "retry"],
        cwd=root,
        env=repo[1],
        capture_output=True,
        text=True,
        check=False,
    )
    assert again.returncode != 0 and "merge-conflict marker" in again.stderr


def test_files_outside_the_store_and_the_store_readme_are_not_checked(repo):
    assert commit(repo, "notes/conflict.md", CONFLICTED).returncode == 0
    assert (
        commit(
            repo, ".memory/README.md", "token ghp_16C7e42F292c6912E7710c838347Ae178B4a\n"
        ).returncode
        == 0
    )


def test_private_memories_are_kept_out_of_commits(repo):
    root, env = repo
    path = root / ".memory/private/semantic/me.md"
    path.parent.mkdir(parents=True)
    path.write_text(GOOD, encoding="utf-8")
    subprocess.run(
        ["git", "add", "-f", ".memory/private/semantic/me.md"], cwd=root, env=env, check=True
    )
    done = subprocess.run(
        ["git", "commit", "-q", "-m", "private"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0 and "private memory staged" in done.stderr


def test_without_memctl_the_commit_is_refused_unless_no_verify(tmp_path, repo):
    root, env = repo
    install_git_hooks(root)  # the plain `memctl` command, as users install it
    git_only = tmp_path / "git-only-bin"
    git_only.mkdir()
    for tool in ("git", "sh", "dirname"):
        (git_only / tool).symlink_to(shutil.which(tool))
    no_memctl = {**env, "PATH": str(git_only)}
    (root / "notes.txt").write_text("with ghp_16C7e42F292c6912E7710c838347Ae178B4a\n")
    subprocess.run(["git", "add", "notes.txt"], cwd=root, env=no_memctl, check=True)

    def commit_with(*flags: str):
        return subprocess.run(
            ["git", "commit", "-q", "-m", "notes", *flags],
            cwd=root,
            env=no_memctl,
            capture_output=True,
            text=True,
            check=False,
        )

    refused = commit_with()
    assert refused.returncode != 0 and committed(repo) == []
    assert "commit refused" in refused.stderr and "--no-verify" in refused.stderr
    assert commit_with("--no-verify").returncode == 0 and committed(repo) == ["notes.txt"]
