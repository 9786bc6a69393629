"""forget: a memory, or every memory containing some text, gone for real."""

from __future__ import annotations

import sys

import typer
from rich.table import Table
from rich.text import Text

from memctl.cli.output import handles_errors, print_json, stderr, stdout
from memctl.cli.state import current_store, finish_interrupted_forget
from memctl.core.errors import MemctlError, UsageError

PURGE_SECTION = 'docs/privacy-and-safety.md, section "Forgetting for real"'


@handles_errors
def forget_command(
    ctx: typer.Context,
    memory_id: str = typer.Argument(None, metavar="ID", help="The memory's id."),
    query: str = typer.Option(
        None,
        "--query",
        "-q",
        help="Forget every memory whose title, tags or body contain this text (any case).",
    ),
    yes: bool = typer.Option(
        False,
        "--yes",
        "-y",
        help="Do not ask for confirmation (--query, or when derived memories change).",
    ),
    resume: bool = typer.Option(
        False, "--resume", help="Finish an interrupted forget (any command also does)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print what was removed as JSON."),
) -> None:
    """Forget a memory for real: its file, any archived copy, every trace in the index and
    state, and its text in memories derived from it (re-summarised without it, or dropped).

    Example: memctl forget --query "hunter2"   (shows the matches, then asks)
    """
    from memctl.service.memories.forgetting import find_matches, forget_memories, plan_forget

    if resume and (memory_id is not None or query is not None):
        raise UsageError("--resume takes no ID or --query.")
    store = current_store(ctx, finish_forget=False)
    finished = finish_interrupted_forget(store, quiet=as_json)
    if resume:
        if as_json:
            print_json([result.to_dict() for result in finished or []])
        elif not finished:
            stdout.print("No interrupted forget to finish.")
        return
    if (memory_id is None) == (query is None):
        raise UsageError("Give either an ID or --query TEXT.")
    if finished and memory_id in {result.id for result in finished}:
        _report(finished, as_json)  # the interrupted forget was of this very memory
        return
    if memory_id is not None:
        plan = plan_forget(store, [memory_id])
        if plan.derived and not yes:
            if not as_json:
                _show_derived(plan.derived)
            if not _confirmed(1, derived=True):
                stderr.print("Nothing was forgotten.")
                return
    else:
        matches = find_matches(store, query)
        if not matches:
            raise MemctlError(f"No memory contains '{query}'.")
        plan = plan_forget(store, [memory.id for _, memory in matches])
        if not as_json:
            _show_matches(store.root, matches)
            _show_derived(plan.derived)
        if not yes and not _confirmed(len(matches)):
            stderr.print("Nothing was forgotten.")
            return
    _report(forget_memories(store, [], plan, query=query), as_json)


def register(app: typer.Typer) -> None:
    app.command("forget")(forget_command)


def _report(results, as_json: bool) -> None:
    if as_json:
        print_json([result.to_dict() for result in results])
        return
    _print_results(results)


def _print_results(results) -> None:
    for result in results:
        stdout.print(f"Forgot {result.id} ({result.title})", markup=False)
        for path in result.removed:
            stdout.print(f"  removed {path}", markup=False)
        for change in result.derived:
            verb = "rewrote" if change["action"] == "rewrite" else "dropped"
            stdout.print(f"  {verb} {change['id']} (derived from it)", markup=False)
        for path in result.still_mentioned:
            stderr.print(f"  still mentioned in {path} (left as it is)", markup=False)
        if result.git_history:
            stdout.print(
                f"  git history still holds {', '.join(result.git_history)}; memctl cannot "
                f"rewrite history. To purge it, see {PURGE_SECTION}.",
                markup=False,
            )


def _show_matches(root, matches) -> None:
    table = Table(box=None, pad_edge=False)
    for column in ("id", "type", "title", "path"):
        table.add_column(column, overflow="fold")
    for relpath, memory in matches:
        table.add_row(memory.id, memory.type, Text(memory.display_title), Text(relpath))
    stdout.print(table)


def _show_derived(changes) -> None:
    for change in changes:
        if change.remaining:
            line = f"will rewrite {change.id} ({change.title}) from its {len(change.remaining)} other source(s)"
        else:
            line = f"will drop {change.id} ({change.title}): no source left"
        stdout.print(line, markup=False)


def _confirmed(count: int, derived: bool = False) -> bool:
    what = "this memory" if count == 1 else f"these {count} memories"
    if derived:
        what += " and change what derives from it"
    if not sys.stdin.isatty():
        raise UsageError(f"No terminal to confirm on; run again with --yes to forget {what}.")
    return typer.confirm(f"Forget {what} for good?", default=False)
