"""`memctl hook ...`: what installed hooks run. Hidden from `memctl --help`; see `memctl hooks`."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import typer

from memctl.cli.output import handles_errors, stderr
from memctl.cli.state import GlobalOptions
from memctl.config import Store, open_store, read_environment
from memctl.core.errors import StoreNotFound, UsageError


def explicit_store(ctx: typer.Context) -> str | None:
    options = ctx.find_root().obj
    return options.store if isinstance(options, GlobalOptions) else None


def _read_stdin() -> str:
    try:
        return "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read()
    except (OSError, ValueError, UnicodeDecodeError):
        return ""


def _exit_now_if_abandoned() -> None:
    """A handler that overran its budget still runs in a daemon thread: leave without it.

    Only in a real process (stdout not swapped by a test runner), where nothing else runs.
    """
    if sys.stdout is not sys.__stdout__:
        return
    if any(t.name == "memctl-hook" and t.is_alive() for t in threading.enumerate()):
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
        os._exit(0)


def answer_claude_code_hook(
    event: str,
    explicit: str | None,
    plain: bool,
    foreground: bool,
    store_only: bool,
    store: Store | None = None,
) -> None:
    """Run one Claude Code hook on the payload in stdin and print what it gives: the command
    and the engine's typed request alike (the engine passes the store it has open)."""
    from memctl.agents.claude_code import CHECK_ENV

    if os.environ.get(CHECK_ENV):
        return  # Why: `memctl hooks status` checks the command starts; nothing else runs
    from memctl.agents.claude_code_events import run_claude_code_hook

    output = run_claude_code_hook(
        event,
        _read_stdin(),
        explicit_store=explicit,
        env=read_environment(),
        cwd=Path.cwd(),
        plain=plain,
        background=not foreground,
        store_only=store_only,
        store=store,
    )
    if output:
        sys.stdout.write(output if output.endswith("\n") else output + "\n")


def claude_code_command(
    ctx: typer.Context,
    event: str = typer.Argument(
        ...,
        help="session-start, user-prompt-submit, pre-tool-use, stop, pre-compact or session-end.",
        metavar="EVENT",
    ),
    plain: bool = typer.Option(
        False, "--plain", help="Print context as plain text instead of hook JSON."
    ),
    foreground: bool = typer.Option(
        False, "--foreground", help="Ingest transcripts here, not in a detached process."
    ),
    store_only: bool = typer.Option(
        False,
        "--store-only",
        "--no-user",
        help="Leave the user store out: read and write only the project store.",
    ),
) -> None:
    """Run one Claude Code hook: hook JSON on stdin; context JSON (or nothing) on stdout; exit 0."""
    answer_claude_code_hook(event, explicit_store(ctx), plain, foreground, store_only)
    _exit_now_if_abandoned()


def ingest_command(
    ctx: typer.Context,
    job: Path = typer.Argument(
        ..., help="A job file written by a PreCompact/SessionEnd hook.", metavar="JOB"
    ),
) -> None:
    """Ingest a queued transcript (run detached by the PreCompact and SessionEnd hooks)."""
    from memctl.agents.claude_code_events import is_job_file, log_path, run_ingest_job
    from memctl.agents.hook_runner import log_hook_error

    store = open_store(explicit_store(ctx))
    if not is_job_file(store, job):
        # Why: this command renames or deletes its job; any other file is left untouched.
        stderr.print(f"Error: {job}: not a job file of this store; left as it is.", markup=False)
        raise typer.Exit(1)
    try:
        run_ingest_job(store, job)
    except Exception as exc:  # noqa: BLE001 - nobody waits for this process: log, exit 0
        import traceback

        log_hook_error(
            log_path(store),
            "ingest",
            job.stem,
            f"ingest failed: {exc}; the job is kept as *.failed",
            traceback.format_exc(),
        )
        if job.exists():
            job.replace(job.with_suffix(".failed"))


@handles_errors
def git_command(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="pre-commit, merge or arrived", metavar="NAME"),
    files: list[str] = typer.Argument(
        None,
        help="merge: %O %A %B %L %P as git passes them to a merge driver; "
        "arrived: OLD NEW (the commits before and after a merge or checkout).",
        metavar="FILES",
    ),
) -> None:
    """pre-commit: check staged memory files; a non-zero exit stops the commit.
    merge: git's merge driver for memory files; exit 1 when a conflict is left.
    arrived: note the memory files a teammate's commits between OLD and NEW brought, so
    their origin is git:<author> (run by the post-merge and post-checkout hooks)."""
    if name == "merge":
        _merge_driver(files or [])
        return
    if name == "arrived":
        _note_arrived(ctx, files or [])
        return
    if name != "pre-commit":
        raise UsageError(f"Unknown git hook '{name}'. Expected pre-commit, merge or arrived.")
    from memctl.agents.git_hooks import repo_root
    from memctl.agents.precommit import check_staged

    repo = repo_root(Path.cwd())
    try:
        store = open_store(explicit_store(ctx), cwd=repo)
    except StoreNotFound:
        return  # no store, no memory files to check
    found = check_staged(repo, store)
    for problem in found:
        stderr.print(str(problem), markup=False)
    problems = [p for p in found if not p.warning]
    if not problems:
        return
    stderr.print(
        f"memctl: commit refused: {len(problems)} problem(s) in staged memory files. Fix them "
        "and `git add` again (or commit with --no-verify to skip this check).",
        markup=False,
    )
    raise typer.Exit(code=1)


def register(app: typer.Typer) -> None:
    hook_app = typer.Typer(
        help="Entry points run by the hooks `memctl hooks install` writes; not for direct use.",
        no_args_is_help=True,
    )
    app.add_typer(hook_app, name="hook", hidden=True)
    hook_app.command("claude-code")(claude_code_command)
    hook_app.command("ingest")(ingest_command)
    hook_app.command("git")(git_command)


def _note_arrived(ctx: typer.Context, revisions: list[str]) -> None:
    """`memctl hook git arrived OLD NEW`: record teammates' memory files (service.provenance)."""
    from memctl.agents.git_hooks import repo_root
    from memctl.service.provenance import note_git_arrivals

    if len(revisions) != 2:
        raise UsageError("Usage: memctl hook git arrived OLD NEW (as the git hooks run it).")
    repo = repo_root(Path.cwd())
    try:
        store = open_store(explicit_store(ctx), cwd=repo)
    except StoreNotFound:
        return
    new = repo_rev(repo, revisions[1])
    noted = note_git_arrivals(store, repo, revisions[0], new)
    if noted:
        stderr.print(
            f"memctl: {noted} memory file(s) arrived through git; untrusted until you review "
            "them: memctl review --all",
            markup=False,
        )


def repo_rev(repo: Path, name: str) -> str:
    """The commit id `name` (HEAD, ORIG_HEAD, a sha) stands for."""
    import subprocess

    done = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", name], cwd=repo, capture_output=True, text=True
    )
    return done.stdout.strip() or name


def _merge_driver(files: list[str]) -> None:
    """`memctl hook git merge BASE OURS THEIRS [MARKER_SIZE] PATH`, run by git."""
    from memctl.agents.merge_driver import merge_files

    if len(files) not in (4, 5):
        raise UsageError("Usage: memctl hook git merge %O %A %B %L %P (as git runs it).")
    base, ours, theirs = (Path(name) for name in files[:3])
    marker_size = int(files[3]) if len(files) == 5 and files[3].isdigit() else 7
    conflicts = merge_files(base, ours, theirs, files[-1], marker_size)
    if conflicts:
        raise typer.Exit(code=1)
