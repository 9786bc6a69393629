"""`memctl hooks ...`: install memctl into Claude Code, git and the shell, and show where it is."""

from __future__ import annotations

import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import typer

from memctl.agents import claude_code, git_hooks, merge_driver
from memctl.cli.output import handles_errors, print_json, stderr, stdout
from memctl.config import find_store, home_dir
from memctl.core.errors import MemctlError, StoreNotFound, UsageError

TARGETS = ("claude-code", "git")
SCOPES = ("project", "local", "user")


def default_command_prefix() -> str:
    """The absolute path of the memctl that runs now, shell-quoted, else this Python with
    `-m memctl`.

    Why not a bare `memctl`: Claude Code and git run hooks with their own PATH, which often
    lacks the venv or pipx folder memctl was installed from (every hook then fails with exit
    127). The script beside this interpreter is the one this install made.
    """
    launched = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    candidates = [Path(sys.executable).parent / "memctl"]
    if launched is not None and launched.name == "memctl":
        candidates.insert(0, launched)
    for script in candidates:
        if script.is_file() and os.access(script, os.X_OK):
            return shlex.quote(os.path.abspath(script))
    return shlex.join([sys.executable, "-m", "memctl"])


def project_root(cwd: Path) -> Path:
    """The folder holding the nearest .memory/, else the git work tree, else `cwd`."""
    try:
        return find_store(None, cwd, env={}).parent
    except StoreNotFound:
        pass
    try:
        return git_hooks.repo_root(cwd)
    except MemctlError:
        return cwd


def store_dir_in(repo: Path) -> str:
    """The store's folder relative to the repository root (`.memory` when there is none yet)."""
    try:
        store = find_store(None, Path.cwd(), env={})
        return store.resolve().relative_to(repo.resolve()).as_posix()
    except (StoreNotFound, ValueError):
        return ".memory"


def chosen_scope(project: bool, local: bool, user: bool) -> str:
    picked = [name for name, on in (("project", project), ("local", local), ("user", user)) if on]
    if len(picked) > 1:
        raise UsageError("Choose one of --project, --local or --user.")
    return picked[0] if picked else "project"


def settings_file(scope: str) -> Path:
    return claude_code.settings_path_for(scope, project_root(Path.cwd()), home_dir())


def check_target(target: str) -> None:
    if target not in TARGETS:
        raise UsageError(f"Unknown target '{target}'. Expected one of: {', '.join(TARGETS)}.")


def failing_hooks(installed: dict[str, str]) -> dict[str, str]:
    """event -> what went wrong, for each installed command a dry call could not run."""
    failing = {}
    for event, command in installed.items():
        spec = claude_code.spec_for(event)
        called = claude_code.dry_call(command, float(spec.timeout), dict(os.environ))
        if not called.ok:
            failing[event] = called.problem
    return failing


def status_report(cwd: Path, home: Path, check: bool = True) -> dict:
    """Where memctl's hooks are installed: each Claude Code settings file and the git repo;
    with `check`, each installed Claude Code hook is called dry (see claude_code.dry_call)."""
    root = project_root(cwd)
    report: dict = {"project_root": str(root), "claude_code": {}, "git": None, "warnings": []}
    for scope in SCOPES:
        path = claude_code.settings_path_for(scope, root, home)
        try:
            found = claude_code.hooks_status(path)
            entry: dict[str, Any] = {
                "path": str(path),
                "exists": found.exists,
                "installed": found.installed,
                "missing": found.missing,
                "other_hooks": found.other_hooks,
                "plugin": found.plugin_enabled,
            }
            if check and found.installed:
                entry["failing"] = failing_hooks(found.installed)
        except MemctlError as exc:
            entry = {"path": str(path), "exists": True, "error": str(exc)}
        report["claude_code"][scope] = entry
    report["warnings"] += failing_warnings(report["claude_code"])
    installed_in = [s for s, e in report["claude_code"].items() if e.get("installed")]
    if installed_in:
        warning = plugin_warning(report["claude_code"])
        report["warnings"] += [warning] if warning else []
    if len(installed_in) > 1:
        report["warnings"].append(
            f"memctl hooks are installed in {' and '.join(installed_in)} settings; Claude Code "
            "merges them, so each event runs memctl more than once. Uninstall one."
        )
    try:
        repo = git_hooks.repo_root(cwd)
        report["git"] = {
            "repo": str(repo),
            "hooks_dir": str(git_hooks.hooks_dir(repo)),
            "hooks": git_hooks.git_hooks_status(repo),
            "merge_driver": merge_driver.merge_driver_status(repo),
        }
    except MemctlError:
        pass
    report["pending_ingests"] = _pending_ingests(cwd)
    return report


def _pending_ingests(cwd: Path) -> list[dict]:
    """Transcript ingests the hooks queued and did not finish, in the store here (if any)."""
    from memctl.agents.claude_code_events import pending_ingests
    from memctl.config import open_store

    try:
        return pending_ingests(open_store(None, cwd=cwd))
    except MemctlError:
        return []


def portable_command_found() -> bool:
    """Would the committed hooks' command (claude_code.PORTABLE_PREFIX) find memctl here?"""
    import shutil

    return shutil.which(os.environ.get("MEMCTL_BIN") or "memctl") is not None


def failing_warnings(scopes: dict[str, dict]) -> list[str]:
    """What to do about hooks that fail to start. Why two: the committed file is shared, so
    reinstalling there would only swap one machine's path for another's."""
    warnings = []
    shared = scopes.get("project", {}).get("failing")
    if shared:
        warnings.append(
            "The committed hooks run `memctl` from PATH (or $MEMCTL_BIN), which this machine "
            "does not find: put memctl on PATH for Claude Code or set MEMCTL_BIN to its path "
            "(the file is shared: do not reinstall it for one machine)."
        )
    if any(scopes.get(scope, {}).get("failing") for scope in ("local", "user")):
        warnings.append(
            "Some hooks fail to start; `memctl hooks install claude-code` with the same "
            "--local/--user rewrites them with the absolute path of this memctl."
        )
    return warnings


def plugin_warning(scopes: dict[str, dict]) -> str | None:
    """Why: the plugin brings the same hooks, so with both every event runs memctl twice."""
    plugin_in = [scope for scope, entry in scopes.items() if entry.get("plugin")]
    if not plugin_in:
        return None
    return (
        f"memctl's Claude Code plugin is enabled in {' and '.join(plugin_in)} settings and its "
        "hooks are in settings too, so each event runs memctl twice. Keep one: "
        "`memctl hooks uninstall claude-code` (--local or --user if installed there) or "
        "`claude plugin uninstall memctl@memctl`."
    )


def print_status(report: dict) -> None:
    stdout.print(f"Project: {report['project_root']}", markup=False)
    stdout.print("Claude Code settings:")
    for scope, entry in report["claude_code"].items():
        if "error" in entry:
            state = f"unreadable: {entry['error']}"
        elif not entry["exists"]:
            state = "no file"
        elif not entry["installed"]:
            state = "memctl not installed"
        elif entry["missing"]:
            state = f"partly installed (missing {', '.join(entry['missing'])})"
        elif entry.get("failing"):
            state = f"installed ({len(entry['installed'])} events), {len(entry['failing'])} failing"
        else:
            state = f"installed ({len(entry['installed'])} events)"
        others = f", {entry['other_hooks']} other hook(s)" if entry.get("other_hooks") else ""
        others += "; memctl plugin enabled" if entry.get("plugin") else ""
        stdout.print(f"  {scope:<8} {entry['path']}  {state}{others}", markup=False)
        for event, problem in (entry.get("failing") or {}).items():
            command = entry["installed"][event]
            stdout.print(f"           {event}: `{command}` {problem}", markup=False)
    if report["git"] is None:
        stdout.print("git: not in a repository")
    else:
        hooks = ", ".join(f"{name}: {state}" for name, state in report["git"]["hooks"].items())
        stdout.print(f"git hooks ({report['git']['hooks_dir']}): {hooks}", markup=False)
        stdout.print(f"git merge driver: {report['git']['merge_driver']}", markup=False)
    pending = report.get("pending_ingests") or []
    if pending:
        oldest = time.strftime("%Y-%m-%d %H:%M", time.localtime(pending[0]["queued"]))
        stdout.print(
            f"Pending transcript ingests: {len(pending)} (oldest queued {oldest}); the next "
            "session start finishes them, or `memctl hook ingest <job>` now:",
            markup=False,
        )
        for entry in pending:
            state = " (failed: see hooks.log)" if entry["state"] == "failed" else ""
            stdout.print(f"  {entry['job']}{state}", markup=False)
    else:
        stdout.print("Pending transcript ingests: none")
    for warning in report["warnings"]:
        stderr.print(f"Warning: {warning}", markup=False)


@handles_errors
def install_command(
    target: str = typer.Argument(..., help="claude-code or git.", metavar="TARGET"),
    project: bool = typer.Option(
        False, "--project", help="claude-code: <project>/.claude/settings.json (default)."
    ),
    local: bool = typer.Option(
        False,
        "--local",
        help="claude-code: <project>/.claude/settings.local.json (not committed).",
    ),
    user: bool = typer.Option(
        False, "--user", help="claude-code: ~/.claude/settings.json (every project)."
    ),
    chain: bool = typer.Option(
        False, "--chain", help="git: keep an existing hook and run it before memctl's."
    ),
    command: str = typer.Option(
        None,
        "--command",
        help="How hooks call memctl, as a shell command (default: committed project settings "
        "run memctl from PATH or $MEMCTL_BIN; --local, --user and git hooks the absolute path "
        "of this memctl).",
    ),
    store_only: bool = typer.Option(
        False,
        "--store-only",
        "--no-user",
        help="claude-code: the hooks leave your user store out (read and write the project only).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print what changed as JSON."),
) -> None:
    """Install memctl's hooks, keeping every hook and setting that is already there.

    Example: memctl hooks install claude-code    (then: memctl hooks status)
    """
    check_target(target)
    prefix = command or default_command_prefix()
    if target == "git":
        if project or local or user or store_only:
            raise UsageError("--project/--local/--user/--store-only apply to claude-code only.")
        repo = git_hooks.repo_root(Path.cwd())
        git_result = git_hooks.install_git_hooks(repo, chain=chain, command_prefix=prefix)
        driver = merge_driver.install_merge_driver(repo, store_dir_in(repo), prefix)
        if as_json:
            print_json(
                {
                    "hooks_dir": str(git_result.hooks_dir),
                    "written": git_result.written,
                    "unchanged": git_result.unchanged,
                    "chained": git_result.chained,
                    "merge_driver": {
                        "attributes": str(driver.attributes),
                        "pattern": driver.pattern,
                        "written": driver.attributes_written or driver.config_written,
                    },
                }
            )
            return
        written = ", ".join(git_result.written) or "none"
        chained = ", ".join(git_result.chained)
        stdout.print(
            f"git hooks in {git_result.hooks_dir}: written {written}"
            + (f"; chained {chained}" if git_result.chained else ""),
            markup=False,
        )
        stdout.print(
            f"merge driver: {driver.pattern} in {driver.attributes} (commit it so every "
            "clone that runs `memctl hooks install git` merges memories field by field)",
            markup=False,
        )
        return
    if chain:
        raise UsageError("--chain applies to git only.")
    scope = chosen_scope(project, local, user)
    if command is None and scope == "project":
        prefix = claude_code.PORTABLE_PREFIX  # committed: must run on every clone
    path = settings_file(scope)
    result = claude_code.install_hooks(path, command_prefix=prefix, store_only=store_only)
    if as_json:
        print_json(
            {
                "path": str(path),
                "created": result.created,
                "added": result.added,
                "updated": result.updated,
                "unchanged": result.unchanged,
            }
        )
        return
    if not result.changed:
        stdout.print(f"Already installed in {path}", markup=False)
    else:
        done = ", ".join(result.added + result.updated)
        stdout.print(f"{'Created' if result.created else 'Updated'} {path}: {done}", markup=False)
    if prefix == claude_code.PORTABLE_PREFIX and not portable_command_found():
        stderr.print(
            f"Note: {path} is committed, so its hooks run `memctl` from PATH (or $MEMCTL_BIN), "
            f"not this machine's {default_command_prefix()}; Claude Code does not find memctl "
            "on PATH here. Put it on PATH, set MEMCTL_BIN, or use --local for this machine's "
            "path.",
            markup=False,
        )
    scopes = status_report(Path.cwd(), home_dir(), check=False)["claude_code"]
    warning = plugin_warning(scopes)
    if warning:
        stderr.print(f"Warning: {warning}", markup=False)
    _warn_without_store()


@handles_errors
def uninstall_command(
    target: str = typer.Argument(..., help="claude-code or git.", metavar="TARGET"),
    project: bool = typer.Option(
        False, "--project", help="claude-code: project settings (default)."
    ),
    local: bool = typer.Option(False, "--local", help="claude-code: local project settings."),
    user: bool = typer.Option(False, "--user", help="claude-code: user settings."),
    as_json: bool = typer.Option(False, "--json", help="Print what was removed as JSON."),
) -> None:
    """Remove memctl's hooks only; other hooks and settings stay as they are."""
    check_target(target)
    if target == "git":
        repo = git_hooks.repo_root(Path.cwd())
        removed = git_hooks.uninstall_git_hooks(repo)
        if merge_driver.uninstall_merge_driver(repo):
            removed.append("merge driver")
        where = "git hooks"
    else:
        path = settings_file(chosen_scope(project, local, user))
        removed = claude_code.uninstall_hooks(path).removed
        where = str(path)
    if as_json:
        print_json({"target": target, "where": where, "removed": removed})
        return
    stdout.print(
        f"Removed from {where}: {', '.join(removed)}"
        if removed
        else f"Nothing of memctl's in {where}",
        markup=False,
    )


@handles_errors
def status_command(
    check: bool = typer.Option(
        True, "--check/--no-check", help="Call each installed Claude Code hook dry."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the status as JSON."),
) -> None:
    """Show where memctl's hooks are installed (Claude Code settings files, git).

    Each installed Claude Code hook is called dry (it starts and exits at once), so a
    command Claude Code could not run (exit 127: not found) is reported here.
    """
    report = status_report(Path.cwd(), home_dir(), check=check)
    if as_json:
        print_json(report)
        return
    print_status(report)


@handles_errors
def shell_command(
    shell: str = typer.Argument(..., help="bash or zsh.", metavar="SHELL"),
    command: str = typer.Option("memctl", "--command", help="How the snippet calls memctl."),
) -> None:
    """Print `mem` / `memq` shell functions; add them with: memctl hooks shell bash >> ~/.bashrc"""
    sys.stdout.write(git_hooks.shell_snippet(shell, command))


def register(app: typer.Typer) -> None:
    hooks_app = typer.Typer(
        help=(
            "Install memctl into Claude Code, git and your shell. Installed hooks call "
            "`memctl hook claude-code EVENT` and `memctl hook git pre-commit`, which read the "
            "hook's input and never break the agent.\n\n"
            "Examples: memctl hooks install claude-code; memctl hooks install git; "
            "memctl hooks status"
        ),
        no_args_is_help=True,
    )
    app.add_typer(hooks_app, name="hooks")
    hooks_app.command("install")(install_command)
    hooks_app.command("uninstall")(uninstall_command)
    hooks_app.command("status")(status_command)
    hooks_app.command("shell")(shell_command)


def _warn_without_store() -> None:
    try:
        find_store(None, Path.cwd())
    except StoreNotFound:
        stderr.print("Note: no .memory/ store here yet; the hooks stay silent until `memctl init`.")
