"""Git beside a store: running it (`run_git`, the one place memctl starts a git process),
where HEAD is, and which files teammates' commits brought.

`head_commit` reads `.git` files directly (no process: the hooks ask on every prompt);
`arrived_files` runs git, and only when HEAD has moved.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from memctl.core.errors import MemctlError


def _git_dir(start: Path) -> tuple[Path, Path] | None:
    """(work tree root, git dir) of the repository holding `start`; None outside one."""
    for folder in [start, *start.parents]:
        dot = folder / ".git"
        if dot.is_dir():
            return folder, dot
        if dot.is_file():  # a worktree or submodule: "gitdir: <path>"
            text = dot.read_text(encoding="utf-8", errors="replace").strip()
            if text.startswith("gitdir:"):
                target = Path(text.removeprefix("gitdir:").strip())
                return folder, (target if target.is_absolute() else folder / target)
            return None
    return None


def head_commit(start: Path) -> tuple[Path, str] | None:
    """(work tree root, HEAD's commit id), read from the git dir's files; None when unknown."""
    found = _git_dir(start.resolve())
    if found is None:
        return None
    root, git_dir = found
    try:
        head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
        if not head.startswith("ref:"):
            return root, head
        ref = head.removeprefix("ref:").strip()
        common = git_dir
        if (git_dir / "commondir").is_file():
            common = (git_dir / (git_dir / "commondir").read_text().strip()).resolve()
        for place in (git_dir / ref, common / ref):
            if place.is_file():
                return root, place.read_text(encoding="utf-8").strip()
        packed = common / "packed-refs"
        if packed.is_file():
            for line in packed.read_text(encoding="utf-8").splitlines():
                sha, _, name = line.partition(" ")
                if name.strip() == ref:
                    return root, sha
    except OSError:
        return None
    return None  # a branch without commits yet


def run_git(root: Path, *args: str, timeout: float | None = None) -> bytes:
    """`git ARGS` run in `root`: its standard output. MemctlError when git is missing, fails
    or takes longer than `timeout` seconds."""
    try:
        done = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise MemctlError(f"Cannot run git in {root}: {exc}") from None
    if done.returncode != 0:
        raise MemctlError(
            f"git {' '.join(args)} failed: {done.stderr.decode(errors='replace').strip()}"
        )
    return done.stdout


def arrived_files(root: Path, old: str, new: str, under: str) -> list[tuple[str, str, str]]:
    """(path, author, commit) of files under `under` that commits in old..new changed, with the
    author of the last such commit. Every author counts: an e-mail is whatever a commit says."""
    changed = run_git(
        root, "diff", "--name-only", "-z", "--diff-filter=AMR", old, new, "--", under or "."
    )
    found = []
    for raw in changed.split(b"\0"):
        if not raw:
            continue
        path = raw.decode("utf-8", errors="surrogateescape")
        last = run_git(root, "log", "-1", "--format=%H%x00%an%x00%ae", f"{old}..{new}", "--", path)
        commit, _, rest = last.decode("utf-8", errors="replace").strip().partition("\0")
        name, _, email = rest.partition("\0")
        if commit:
            found.append((path, name or email, commit))
    return found
