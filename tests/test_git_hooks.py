"""Git hooks installed into a real `git init` repo, run by real git; shell snippet run by bash."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest

from memctl.agents.git_hooks import (
    CHAINED_SUFFIX,
    HOOK_NAMES,
    git_hooks_status,
    hooks_dir,
    install_git_hooks,
    shell_snippet,
    uninstall_git_hooks,
)
from memctl.core.errors import MemctlError, UsageError

FAKE_MEMCTL = """#!/bin/sh
echo "$@" >> "$MEMCTL_FAKE_LOG"
exit "${MEMCTL_FAKE_EXIT:-0}"
"""


@pytest.fixture
def env(tmp_path):
    """Environment with a fake `memctl` first on PATH that records its arguments."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "memctl"
    fake.write_text(FAKE_MEMCTL, encoding="utf-8")
    fake.chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    return {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "MEMCTL_FAKE_LOG": str(tmp_path / "memctl-calls.log"),
    }


@pytest.fixture
def repo(tmp_path, env):
    root = tmp_path / "repo"
    root.mkdir()
    git(root, env, "init", "-q", "-b", "main")
    return root


def git(root, env, *args, check=True):
    return subprocess.run(
        ["git", *args], cwd=root, env=env, capture_output=True, text=True, check=check
    )


def calls(env) -> list[str]:
    path = Path(env["MEMCTL_FAKE_LOG"])
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def commit_file(root, env, name, text, check=True):
    (root / name).write_text(text, encoding="utf-8")
    git(root, env, "add", name)
    return git(root, env, "commit", "-q", "-m", f"add {name}", check=check)


def test_install_writes_executable_hooks(repo):
    result = install_git_hooks(repo)
    folder = repo / ".git" / "hooks"
    assert result.hooks_dir == folder.resolve()
    assert result.written == list(HOOK_NAMES)
    for name in HOOK_NAMES:
        assert (folder / name).stat().st_mode & stat.S_IXUSR
    assert git_hooks_status(repo) == {name: "memctl" for name in HOOK_NAMES}


def test_install_twice_is_a_no_op(repo):
    install_git_hooks(repo)
    again = install_git_hooks(repo)
    assert again.written == [] and again.unchanged == list(HOOK_NAMES)


def test_pre_commit_runs_memctl_and_its_failure_stops_the_commit(repo, env):
    install_git_hooks(repo)

    assert commit_file(repo, env, "a.md", "ok\n").returncode == 0
    assert calls(env) == ["hook git pre-commit"]

    refusing = {**env, "MEMCTL_FAKE_EXIT": "1"}
    failed = commit_file(repo, refusing, "b.md", "bad\n", check=False)
    assert failed.returncode != 0
    assert git(repo, env, "ls-tree", "-r", "--name-only", "HEAD").stdout.split() == ["a.md"]


def test_post_checkout_resyncs_the_index(repo, env):
    install_git_hooks(repo)
    commit_file(repo, env, "a.md", "one\n")
    git(repo, env, "checkout", "-q", "-b", "feature")

    deadline = time.monotonic() + 10  # the re-sync runs in the background; wait for it
    while "index" not in calls(env) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "index" in calls(env)


def test_foreign_hook_is_refused_and_nothing_is_written(repo):
    folder = hooks_dir(repo)
    theirs = folder / "pre-commit"
    theirs.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    theirs.chmod(0o755)

    with pytest.raises(MemctlError) as caught:
        install_git_hooks(repo)

    assert str(theirs) in str(caught.value)
    assert "--chain" in str(caught.value)
    assert theirs.read_text(encoding="utf-8") == "#!/bin/sh\nexit 0\n"
    assert not (folder / "post-merge").exists()


def test_chain_keeps_the_foreign_hook_and_runs_it_first(repo, env, tmp_path):
    folder = hooks_dir(repo)
    ran = tmp_path / "their-hook-ran"
    theirs = folder / "pre-commit"
    theirs.write_text(f"#!/bin/sh\ntouch '{ran}'\n", encoding="utf-8")
    theirs.chmod(0o755)

    result = install_git_hooks(repo, chain=True)

    assert result.chained == ["pre-commit"]
    assert git_hooks_status(repo)["pre-commit"] == "memctl+chained"
    assert commit_file(repo, env, "a.md", "ok\n").returncode == 0
    assert ran.exists()
    assert calls(env) == ["hook git pre-commit"]


def test_chained_hook_failure_still_stops_the_commit(repo, env):
    folder = hooks_dir(repo)
    (folder / "pre-commit").write_text("#!/bin/sh\nexit 3\n", encoding="utf-8")
    (folder / "pre-commit").chmod(0o755)
    install_git_hooks(repo, chain=True)

    assert commit_file(repo, env, "a.md", "x\n", check=False).returncode != 0
    assert calls(env) == []


def test_uninstall_removes_ours_and_restores_chained(repo):
    folder = hooks_dir(repo)
    (folder / "post-merge").write_text("#!/bin/sh\necho theirs\n", encoding="utf-8")
    install_git_hooks(repo, chain=True)

    removed = uninstall_git_hooks(repo)

    assert removed == list(HOOK_NAMES)
    assert (folder / "post-merge").read_text(encoding="utf-8") == "#!/bin/sh\necho theirs\n"
    assert not (folder / ("post-merge" + CHAINED_SUFFIX)).exists()
    assert not (folder / "pre-commit").exists()


def test_uninstall_leaves_foreign_hooks(repo):
    folder = hooks_dir(repo)
    install_git_hooks(repo)
    (folder / "pre-commit").write_text("#!/bin/sh\necho replaced by user\n", encoding="utf-8")

    removed = uninstall_git_hooks(repo)

    assert "pre-commit" not in removed
    kept = (folder / "pre-commit").read_text(encoding="utf-8")
    assert kept == "#!/bin/sh\necho replaced by user\n"


def test_hooks_path_setting_is_honoured(repo, env):
    git(repo, env, "config", "core.hooksPath", "githooks")
    result = install_git_hooks(repo)
    assert result.hooks_dir == (repo / "githooks").resolve()
    assert commit_file(repo, env, "a.md", "ok\n").returncode == 0
    assert calls(env) == ["hook git pre-commit"]


def test_not_a_repository(tmp_path, env, monkeypatch):
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    with pytest.raises(MemctlError):
        install_git_hooks(plain)


# --- shell snippet ----------------------------------------------------------------------------


def test_bash_snippet_adds_and_recalls(tmp_path, env):
    rc = tmp_path / "rc.bash"
    rc.write_text(shell_snippet("bash"), encoding="utf-8")
    script = (
        f"source '{rc}'\nsource '{rc}'\n"
        "mem use pnpm, not npm\necho 'piped note' | mem\nmemq package manager\n"
    )
    done = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert calls(env) == [
        "add -- use pnpm, not npm",
        "add -- piped note",
        "recall -- package manager",
    ]


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh not installed")
def test_zsh_snippet_does_not_glob(tmp_path, env):
    rc = tmp_path / "rc.zsh"
    rc.write_text(shell_snippet("zsh"), encoding="utf-8")
    script = f"source '{rc}'\nsource '{rc}'\nmem why does this fail?\n"
    done = subprocess.run(["zsh", "-i", "-c", script], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert calls(env) == ["add -- why does this fail?"]


def test_unknown_shell_is_a_usage_error():
    with pytest.raises(UsageError):
        shell_snippet("fish")
