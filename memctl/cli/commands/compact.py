from __future__ import annotations

import typer
from rich.table import Table

from memctl.cli.output import handles_errors, print_json, stdout, warn_problems
from memctl.cli.state import current_store
from memctl.service.lifecycle.compaction import compact


@handles_errors
def compact_command(
    ctx: typer.Context,
    dry_run: bool = typer.Option(
        False, "--dry-run", "-n", help="Show what would be written; write nothing."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Trim sessions over their limits, end idle ones, and consolidate episodes into knowledge.

    Groups of 3+ episodes about one target (shared target or tag, or similar text) become one
    knowledge memory derived from them; the episodes stay, marked as consolidated.

    Example: memctl compact --dry-run
    """
    report = compact(current_store(ctx), dry_run=dry_run)
    if as_json:
        print_json(report.to_dict())
        return
    warn_problems(report.problems)
    if not report.sessions and not report.consolidations:
        stdout.print("Nothing to compact.")
        return
    table = Table(box=None, pad_edge=False)
    for column in ("action", "from", "writes"):
        table.add_column(column)
    for fold in report.sessions:
        source = f"session {fold.session_id} ({fold.turns} turns)"
        writes = fold.episode_id or (f"episode '{fold.title}'" if fold.title else fold.note or "-")
        table.add_row(fold.action, source, writes)
    for item in report.consolidations:
        key = f" '{item.group.key}'" if item.group.key else ""
        ids = ", ".join(item.group.ids)
        source = f"{len(item.group.ids)} episodes by {item.group.reason}{key}: {ids}"
        table.add_row(
            "consolidate",
            source,
            item.knowledge_id or f"knowledge '{item.title}'",
        )
    stdout.print(table)
    if dry_run:
        stdout.print("Dry run: nothing was written.")
    for warning in [f.warning for f in report.sessions] + [
        c.warning for c in report.consolidations
    ]:
        if warning:
            stdout.print(f"Warning: {warning}", markup=False)


def register(app: typer.Typer) -> None:
    app.command("compact")(compact_command)
