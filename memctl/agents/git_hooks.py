"""Git hooks and shell snippets that fit memctl into a repository and a shell.

pre-commit runs `memctl hook git pre-commit` (staged memory files must parse, carry no conflict
markers and no unredacted secrets; a non-zero exit stops the commit). It fails closed: when
memctl cannot run, the commit is refused (`git commit --no-verify` skips the check). post-merge and
post-checkout re-sync the index in the background so git never waits for embeddings.
A hook that memctl did not write is never overwritten: it is refused, or with `chain=True` kept
as `<name>.pre-memctl` and run first.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from memctl.core.errors import MemctlError, UsageError
from memctl.store.files import atomic_write
from memctl.store.git import run_git

MARKER = "# memctl-managed-hook"
CHAINED_SUFFIX = ".pre-memctl"
HOOK_NAMES = ("pre-commit", "post-merge", "post-checkout")

_HEADER = """#!/bin/sh
{marker}: {name}
# Written by `memctl hooks install git`; `memctl hooks uninstall git` removes it
# (and puts back a hook it was chained to). Edits here are replaced on reinstall.
hook_dir=$(dirname "$0")
"""

_PRE_COMMIT_BODY = """if [ -x "$hook_dir/{name}{chained}" ]; then
    "$hook_dir/{name}{chained}" "$@" || exit $?
fi
if command -v {program} >/dev/null 2>&1; then
    exec {prefix} hook git pre-commit
fi
echo "memctl: commit refused: '{program}' cannot run (not found on PATH), so staged memory \
files could not be checked for secrets. Install memctl or fix PATH; to commit anyway, \
git commit --no-verify." >&2
exit 1
"""

_RESYNC_BODY = """status=0
if [ -x "$hook_dir/{name}{chained}" ]; then
    "$hook_dir/{name}{chained}" "$@"
    status=$?
fi
if command -v {program} >/dev/null 2>&1; then
    {arrived}( {prefix} index >/dev/null 2>&1 & )
fi
exit $status
"""

# Memory files a teammate's commits brought are noted first (quick, and before any agent reads
# them), so their origin is `git:<author>` (see service.provenance).
_ARRIVED = {
    "post-merge": "{prefix} hook git arrived ORIG_HEAD HEAD >/dev/null 2>&1\n    ",
    "post-checkout": ('[ "$3" = 1 ] && {prefix} hook git arrived "$1" "$2" >/dev/null 2>&1\n    '),
}


def hook_script(name: str, command_prefix: str = "memctl") -> str:
    """The text of memctl's git hook `name` (one of HOOK_NAMES)."""
    if name not in HOOK_NAMES:
        raise UsageError(f"Unknown git hook '{name}'. Expected one of: {', '.join(HOOK_NAMES)}.")
    words = shlex.split(command_prefix) or ["memctl"]
    body = _PRE_COMMIT_BODY if name == "pre-commit" else _RESYNC_BODY
    values = {
        "name": name,
        "chained": CHAINED_SUFFIX,
        "marker": MARKER,
        "program": shlex.quote(words[0]),
        "prefix": shlex.join(words),
    }
    values["arrived"] = _ARRIVED.get(name, "").format(**values)
    return _HEADER.format(**values) + body.format(**values)


def is_memctl_hook(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            return MARKER.encode() in handle.read(4096)
    except OSError:
        return False


def hooks_dir(repo_root: Path) -> Path:
    """The folder git runs hooks from (honours core.hooksPath and worktrees)."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--git-path", "hooks"],
            cwd=repo_root,
            capture_output=True,
            text=True,
            check=False,
        )
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise MemctlError(f"Cannot run git in {repo_root}: {exc}") from None
    if done.returncode != 0:
        raise MemctlError(f"{repo_root} is not inside a git repository ({done.stderr.strip()}).")
    return (Path(repo_root) / done.stdout.strip()).resolve()


def _write_hook(path: Path, text: str) -> None:
    atomic_write(path, text.encode("utf-8"))
    os.chmod(path, 0o755)


@dataclass
class GitHooksResult:
    hooks_dir: Path
    written: list[str] = field(default_factory=list)  # new or refreshed
    unchanged: list[str] = field(default_factory=list)
    chained: list[str] = field(default_factory=list)  # an existing hook kept as <name>.pre-memctl


def install_git_hooks(
    repo_root: Path, *, chain: bool = False, command_prefix: str = "memctl"
) -> GitHooksResult:
    """Write memctl's hooks; checks every hook first, so a refusal changes nothing."""
    folder = hooks_dir(repo_root)
    result = GitHooksResult(hooks_dir=folder)
    foreign = [
        name
        for name in HOOK_NAMES
        if (folder / name).exists() and not is_memctl_hook(folder / name)
    ]
    if foreign and not chain:
        listed = ", ".join(str(folder / name) for name in foreign)
        raise MemctlError(
            f"Not overwriting git hook(s) memctl did not write: {listed}. Re-run with --chain "
            f"to keep each as <name>{CHAINED_SUFFIX} and run it before memctl, or call "
            "`memctl hook git pre-commit` / `memctl index` from your own hook."
        )
    blocked = [name for name in foreign if (folder / (name + CHAINED_SUFFIX)).exists()]
    if blocked:
        listed = ", ".join(str(folder / (name + CHAINED_SUFFIX)) for name in blocked)
        raise MemctlError(f"Cannot chain: {listed} already exists. Move it away and retry.")
    folder.mkdir(parents=True, exist_ok=True)
    for name in HOOK_NAMES:
        path, text = folder / name, hook_script(name, command_prefix)
        if name in foreign:
            os.replace(path, folder / (name + CHAINED_SUFFIX))
            result.chained.append(name)
        elif (
            path.exists()
            and path.read_text(encoding="utf-8", errors="replace") == text
            and os.access(path, os.X_OK)
        ):
            result.unchanged.append(name)
            continue
        _write_hook(path, text)
        result.written.append(name)
    return result


def uninstall_git_hooks(repo_root: Path) -> list[str]:
    """Remove memctl's hooks, restoring hooks they were chained to; other hooks stay."""
    folder = hooks_dir(repo_root)
    removed = []
    for name in HOOK_NAMES:
        path, kept = folder / name, folder / (name + CHAINED_SUFFIX)
        if path.exists() and is_memctl_hook(path):
            path.unlink()
            removed.append(name)
        if kept.exists() and not path.exists():
            os.replace(kept, path)
    return removed


def git_hooks_status(repo_root: Path) -> dict[str, str]:
    """hook name -> 'memctl', 'memctl+chained', 'other' or 'absent'."""
    folder = hooks_dir(repo_root)
    status = {}
    for name in HOOK_NAMES:
        path = folder / name
        if not path.exists():
            status[name] = "absent"
        elif is_memctl_hook(path):
            chained = (folder / (name + CHAINED_SUFFIX)).exists()
            status[name] = "memctl+chained" if chained else "memctl"
        else:
            status[name] = "other"
    return status


# --- reading the index (staged content) ------------------------------------------------------


def repo_root(cwd: Path) -> Path:
    """The top folder of the work tree containing `cwd`."""
    return Path(run_git(cwd, "rev-parse", "--show-toplevel").decode().strip()).resolve()


def staged_paths(root: Path) -> list[str]:
    """Paths (relative to the repository root) added, copied, modified or renamed in the index."""
    out = run_git(
        root, "diff", "--cached", "--name-only", "-z", "--diff-filter=ACMR", "--no-renames"
    )
    return [p.decode("utf-8", errors="surrogateescape") for p in out.split(b"\0") if p]


def staged_content(root: Path, relpath: str) -> bytes:
    """The bytes that would be committed for `relpath` (`git show :path`), not the work tree's."""
    return run_git(root, "show", f":{relpath}")


# --- shell rc snippet -----------------------------------------------------------------------

_SNIPPET = """# >>> memctl >>>
# From `memctl hooks shell {shell}`; delete this block to undo.
#   mem TEXT...      remember TEXT       (`some-command | mem` remembers its output)
#   memq QUERY...    recall what memctl knows about QUERY
function mem {{
    if [ "$#" -gt 0 ]; then
        {prefix} add -- "$*"
    elif [ ! -t 0 ]; then
        {prefix} add -- "$(cat)"
    else
        echo "usage: mem TEXT...   or   some-command | mem" >&2
        return 2
    fi
}}
function memq {{
    if [ "$#" -eq 0 ]; then
        echo "usage: memq QUERY..." >&2
        return 2
    fi
    {prefix} recall -- "$*"
}}
{extra}# <<< memctl <<<
"""

# zsh would expand `?` and `*` in `mem why is this failing?` and stop on "no matches found".
# (`function name {` rather than `name() {` so re-sourcing the rc file is not broken by the alias.)
_ZSH_EXTRA = "alias mem='noglob mem'\nalias memq='noglob memq'\n"


def shell_snippet(shell: str, command_prefix: str = "memctl") -> str:
    """Lines for ~/.bashrc or ~/.zshrc: `mem` to remember, `memq` to recall."""
    if shell not in ("bash", "zsh"):
        raise UsageError(f"Unsupported shell '{shell}'. Expected bash or zsh.")
    prefix = shlex.join(shlex.split(command_prefix) or ["memctl"])
    return _SNIPPET.format(shell=shell, prefix=prefix, extra=_ZSH_EXTRA if shell == "zsh" else "")
