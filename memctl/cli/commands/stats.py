"""stats: what the store holds, its index on disk, and how forgettable its memories are."""

from __future__ import annotations

import typer
from rich.table import Table

from memctl.cli.commands.decay import NOW_HELP, parse_now
from memctl.cli.output import handles_errors, print_json, stdout, warn_problems
from memctl.cli.state import current_store

BAR_WIDTH = 30


@handles_errors
def stats_command(
    ctx: typer.Context,
    now: str = typer.Option(None, "--now", help=NOW_HELP),
    never_used: int = typer.Option(
        3,
        "--never-used-after",
        help="List memories injected in at least this many sessions and never used.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the statistics as JSON."),
) -> None:
    """Counts by type and scope, the archive, the index on disk, decay scores, and what
    the hooks injected: tokens per session, how many of those memories were then used.

    Example: memctl stats --json
    """
    from memctl.service.lifecycle.ledger import ledger_summary
    from memctl.service.lifecycle.stats import store_stats

    store = current_store(ctx)
    stats = store_stats(store, parse_now(now))
    stats["injections"] = ledger_summary(store, never_used)
    warn_problems(stats["problems"])
    if as_json:
        print_json(stats)
        return
    stdout.print(
        f"{stats['memories']} memories ({stats['pinned']} pinned, "
        f"{stats['accessed']} recalled at least once), {stats['archived']} archived"
    )
    stdout.print("by type:  " + _counts(stats["by_type"]))
    stdout.print("by scope: " + _counts(stats["by_scope"]))
    index = stats["index"]
    model = f", vectors of {index['model']}" if index.get("model") else ""
    stdout.print(f"index: {_size(index['bytes'])} in {index['path']}{model}", markup=False)
    for name, table in index["tables"].items():
        stdout.print(
            f"  {name}: {table['rows']} rows, {table['versions']} versions, {_size(table['bytes'])}"
        )
    histogram = stats["decay"]["histogram"]
    stdout.print(f"decay scores ({stats['decay']['to_archive']} would be archived now):")
    top = max((b["count"] for b in histogram), default=0) or 1
    table = Table(box=None, pad_edge=False, show_header=False)
    for bucket in histogram:
        bar = "█" * round(BAR_WIDTH * bucket["count"] / top)
        table.add_row(f"  {bucket['from']:.1f}-{bucket['to']:.1f}", str(bucket["count"]), bar)
    stdout.print(table)
    _print_injections(stats["injections"])


def register(app: typer.Typer) -> None:
    app.command("stats")(stats_command)


def _print_injections(ledger: dict) -> None:
    sessions = ledger["sessions"]
    if not sessions:
        stdout.print("injected by hooks: nothing yet (.state/ledger.jsonl)")
        return
    stdout.print(
        f"injected by hooks: {ledger['tokens']} tokens over {len(sessions)} sessions; "
        f"{ledger['used']} of {ledger['injected']} injected memories were then used"
    )
    by_event = ", ".join(f"{k} {v}" for k, v in ledger["tokens_by_event"].items())
    stdout.print(f"  tokens by event: {by_event}", markup=False)
    for row in sessions[-10:]:
        stdout.print(
            f"  {row['session'][:36]}: {row['tokens']} tokens, {row['memories']} memories, "
            f"{row['used']} used",
            markup=False,
        )
    if ledger["never_used"]:
        ids = ", ".join(f"{i['id']} ({i['sessions']})" for i in ledger["never_used"][:20])
        stdout.print(
            f"  injected in {ledger['never_used_after_sessions']}+ sessions, never used "
            f"(decay candidates): {ids}",
            markup=False,
        )


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {count}" for name, count in counts.items()) or "none"


def _size(size: float) -> str:
    for unit in ("B", "KB", "MB"):
        if size < 1024:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"
