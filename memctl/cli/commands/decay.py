"""decay and restore: forgetting as a feature, undone on demand."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import typer
from rich.table import Table

from memctl.cli.output import handles_errors, print_json, stdout, warn_problems
from memctl.cli.state import current_store
from memctl.core.errors import UsageError
from memctl.core.files.memory import parse_time
from memctl.core.language.text import clip, counted

if TYPE_CHECKING:
    from rich.console import JustifyMethod

NOW_HELP = "Score as if it were this time (ISO date or datetime); default now."


def parse_now(value: str | None) -> datetime | None:
    if value is None:
        return None
    moment = parse_time(value)
    if moment is None:
        raise UsageError(f"--now '{value}' is not an ISO date or datetime (e.g. 2026-01-31).")
    return moment


@handles_errors
def decay_command(
    ctx: typer.Context,
    apply: bool = typer.Option(
        False, "--apply", help="Archive what the plan marks (default: dry run)."
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Only show the plan; write nothing (the default)."
    ),
    now: str = typer.Option(None, "--now", help=NOW_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the plan as JSON."),
) -> None:
    """Score every memory and archive the most forgettable ones.

    Forget score = 0.4 x age + 0.35 x (1 - importance) + 0.25 x (1 - hotness); weights and
    thresholds under `decay:` in config.yaml. Pinned memories and ones younger than
    min_age_days are kept. Archived files move to .memory/archive/; `memctl restore ID`
    brings one back.

    Example: memctl decay (shows the plan), then memctl decay --apply
    """
    from memctl.service.lifecycle.decaying import run_decay

    if apply and dry_run:
        raise UsageError("--apply and --dry-run contradict each other; give one.")
    store = current_store(ctx)
    report = run_decay(store, apply=apply, now=parse_now(now))
    warn_problems(report.problems)
    if as_json:
        print_json(report.to_dict())
        return
    columns = ("id", "title", "type", "age", "importance", "hotness", "score", "action")
    rows = [
        (
            d.id,
            _short(d.title),
            d.type,
            f"{d.age_days:.0f}d",
            f"{d.importance:.2f}",
            f"{d.hotness:.2f}",
            f"{d.score:.3f}",
            f"{d.action} ({d.reason})",
        )
        for d in report.decisions
    ]
    table = Table(box=None, pad_edge=False)
    for i, column in enumerate(columns):
        numeric = column in ("age", "importance", "hotness", "score")
        justify: JustifyMethod = "right" if numeric else "left"
        # Why: on a narrow terminal only the title shrinks; ids and numbers stay whole.
        width = max([len(column)] + [len(row[i]) for row in rows])
        table.add_column(
            column,
            justify=justify,
            no_wrap=True,
            overflow="ellipsis" if column == "title" else "fold",
            min_width=None if column == "title" else width,
        )
    for row in rows:
        style = "red" if row[-1].startswith("archive") else None
        table.add_row(*row, style=style)
    stdout.print(table)
    count = len(report.to_archive)
    if report.applied:
        stdout.print(
            f"Archived {count} of {counted(len(report.decisions), 'memory', 'memories')} into "
            f"{store.archive_dir}/"
        )
    else:
        stdout.print(
            f"{count} of {counted(len(report.decisions), 'memory', 'memories')} would be archived; "
            "run `memctl decay --apply` to archive them."
        )


@handles_errors
def restore_command(
    ctx: typer.Context,
    memory_id: str = typer.Argument(..., metavar="ID", help="The archived memory's id."),
    as_json: bool = typer.Option(False, "--json", help="Print what moved as JSON."),
) -> None:
    """Bring an archived memory back from .memory/archive/ and index it again.

    Example: memctl restore 1m80k2c9a7qz (ids are in memctl list --include-archived)
    """
    from memctl.service.lifecycle.decaying import restore_memory

    store = current_store(ctx)
    result = restore_memory(store, memory_id)
    if as_json:
        print_json(result)
        return
    stdout.print(f"Restored {result['id']} to {store.root / result['to']}", markup=False)


def register(app: typer.Typer) -> None:
    app.command("decay")(decay_command)
    app.command("restore")(restore_command)


def _short(title: str, limit: int = 48) -> str:
    return clip(title, limit)
