from __future__ import annotations

import typer
from rich.markup import escape
from rich.table import Table

from memctl.cli.commands.add import read_text_argument
from memctl.cli.output import handles_errors, print_json, stderr, stdout
from memctl.cli.state import current_store
from memctl.core.errors import MemctlError
from memctl.core.learning.conversation import ROLES
from memctl.service.lifecycle.session import (
    FoldReport,
    SessionView,
    add_turn,
    end_idle_sessions,
    end_session,
    get_session,
    latest_session,
    list_sessions,
)


def counted(number: int, noun: str) -> str:
    """`1 turn`, `2 turns`."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def describe_fold(fold: FoldReport) -> str:
    verb = {"trim": "Trimmed", "end": "Ended", "end_idle": "Ended idle session"}.get(
        fold.action, fold.action
    )
    subject = (
        f"{verb} {fold.session_id}"
        if fold.action != "trim"
        else f"Trimmed {counted(fold.turns, 'turn')} of {fold.session_id}"
    )
    if fold.episode_id:
        return f"{subject}: wrote episode {fold.episode_id} ({fold.episode_path})"
    if fold.title:
        return f"{subject}: would write episode '{fold.title}'"
    return f"{subject}: {fold.note or 'no episode written'}"


def report_folds(folds: list[FoldReport]) -> None:
    for fold in folds:
        stderr.print(describe_fold(fold), markup=False)
        if fold.warning:
            stderr.print(f"Warning: {fold.warning}", markup=False)


def print_session(view: SessionView) -> None:
    meta = view.meta
    state = f"ended {meta.ended}" if meta.ended else "open"
    stdout.print(
        f"Session {meta.id} · {state} · {counted(len(view.turns), 'turn')} · "
        f"{counted(view.tokens, 'token')} · "
        f"last active {meta.last_active}",
        markup=False,
    )
    if meta.trimmed:
        stdout.print(f"Trimmed so far: {counted(meta.trimmed, 'turn')}", markup=False)
    if meta.episodes:
        stdout.print(f"Episodes: {', '.join(meta.episodes)}", markup=False)
    if view.over_limits and not meta.ended:
        stdout.print("Over its limits: `memctl compact` trims it.", markup=False)
    if meta.summary:
        stdout.print("\n[bold]Summary so far[/]", markup=True)
        stdout.print(meta.summary, markup=False)
    if view.turns:
        stdout.print("\n[bold]Turns[/]", markup=True)
    for turn in view.turns:
        stdout.print(
            f"[dim]{escape(turn.ts)}[/] [bold]{escape(turn.role)}[/]: {escape(turn.content)}",
            markup=True,
        )


@handles_errors
def add_command(
    ctx: typer.Context,
    text: str = typer.Argument(
        ..., help="The turn's text. Use - to read it from standard input.", metavar="TEXT"
    ),
    session: str = typer.Option(
        ..., "--session", "-S", help="Session id (letters, digits, . _ -)."
    ),
    role: str = typer.Option("user", "--role", "-r", help=f"One of: {', '.join(ROLES)}."),
    agent: str = typer.Option(None, "--agent", help="Which agent this session belongs to."),
    no_compact: bool = typer.Option(
        False, "--no-compact", help="Never trim now; leave it to `memctl compact`."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Add a turn to a session; past its limits, the oldest turns become an episode.

    Example: memctl session add --session s1 --role user "Let's use Postgres 16"
    """
    store = current_store(ctx)
    result = add_turn(
        store,
        session,
        role,
        read_text_argument(text),
        compact=False if no_compact else None,
        agent=agent,
    )
    if as_json:
        print_json(result.to_dict())
        return
    report_folds(result.folds)
    if result.redacted:
        from memctl.service.memories.redaction import describe_counts

        stdout.print(f"Redacted before storing: {describe_counts(result.redacted)}", markup=False)
    view = result.view
    stdout.print(
        f"Added {'an' if role == 'assistant' else 'a'} {role} turn to {session} "
        f"({counted(result.turn.tokens, 'token')}; the buffer holds "
        f"{counted(len(view.turns), 'turn')}, {counted(view.tokens, 'token')}).",
        markup=False,
    )
    if view.over_limits:
        stdout.print("The session is over its limits: `memctl compact` trims it.", markup=False)


@handles_errors
def show_command(
    ctx: typer.Context,
    session: str = typer.Argument(
        None, help="Session id (default: the most recently active).", metavar="SESSION"
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the session as JSON."),
) -> None:
    """Show a session: its rolling summary and the turns in its buffer."""
    store = current_store(ctx)
    report_folds(end_idle_sessions(store))
    view = get_session(store, session) if session else latest_session(store)
    if view is None:
        raise MemctlError(
            "No sessions yet. Add a turn with `memctl session add --session ID TEXT`."
        )
    if as_json:
        print_json(view.to_dict())
    else:
        print_session(view)


@handles_errors
def end_command(
    ctx: typer.Context,
    session: str = typer.Argument(..., help="Session id.", metavar="SESSION"),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """End a session: the turns not yet in an episode become one (with 2+ exchanges)."""
    store = current_store(ctx)
    folds = end_idle_sessions(store)
    fold = end_session(store, session)
    if as_json:
        print_json(fold.to_dict())
        return
    report_folds(folds)
    stdout.print(describe_fold(fold), markup=False)


@handles_errors
def list_command(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print the sessions as JSON."),
) -> None:
    """List sessions, open ones first."""
    store = current_store(ctx)
    folds = end_idle_sessions(store)
    views = list_sessions(store)
    if as_json:
        print_json([view.to_dict(with_turns=False) for view in views])
        return
    report_folds(folds)
    if not views:
        stdout.print("No sessions yet.")
        return
    table = Table(box=None, pad_edge=False)
    for column in ("session", "state", "turns", "tokens", "last active", "episodes"):
        table.add_column(column)
    for view in views:
        state = "ended" if view.meta.ended else ("over limits" if view.over_limits else "open")
        table.add_row(
            view.meta.id,
            state,
            str(len(view.turns)),
            str(view.tokens),
            view.meta.last_active,
            str(len(view.meta.episodes)),
        )
    stdout.print(table)


def register(app: typer.Typer) -> None:
    group = typer.Typer(
        help=(
            "Short-term memory: each session's conversation buffer, trimmed into episodes.\n\n"
            'Example: memctl session add -S s1 "Let\'s use Postgres 16", then '
            "memctl context -S s1."
        ),
        no_args_is_help=True,
    )
    app.add_typer(group, name="session")
    group.command("add")(add_command)
    group.command("show")(show_command)
    group.command("end")(end_command)
    group.command("list")(list_command)
