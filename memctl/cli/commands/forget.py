"""forget: a memory, or every memory containing some text, gone for real."""

from __future__ import annotations

import sys

import typer
from rich.table import Table
from rich.text import Text

from memctl.cli.output import handles_errors, print_json, stderr, stdout
from memctl.cli.state import current_store
from memctl.core.errors import MemctlError, UsageError

README_SECTION = 'README.md, section "Forgetting for real"'


def register(app: typer.Typer) -> None:
    @app.command("forget")
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
            False, "--yes", "-y", help="Do not ask for confirmation (--query)."
        ),
        as_json: bool = typer.Option(False, "--json", help="Print what was removed as JSON."),
    ) -> None:
        """Forget a memory for real: its file, any archived copy, every trace in the index and state.

        Example: memctl forget --query "hunter2"   (shows the matches, then asks)
        """
        from memctl.service.memories.forgetting import find_matches, forget_memories

        if (memory_id is None) == (query is None):
            raise UsageError("Give either an ID or --query TEXT.")
        store = current_store(ctx)
        if memory_id is not None:
            ids = [memory_id]
        else:
            matches = find_matches(store, query)
            if not matches:
                raise MemctlError(f"No memory contains '{query}'.")
            if not as_json:
                _show_matches(store.root, matches)
            if not yes and not _confirmed(len(matches)):
                stderr.print("Nothing was forgotten.")
                return
            ids = [memory.id for _, memory in matches]
        results = forget_memories(store, ids)
        if as_json:
            print_json([result.to_dict() for result in results])
            return
        for result in results:
            stdout.print(f"Forgot {result.id} ({result.title})", markup=False)
            for path in result.removed:
                stdout.print(f"  removed {path}", markup=False)
            for path in result.still_mentioned:
                stderr.print(f"  still mentioned in {path} (left as it is)", markup=False)
            if result.git_history:
                stdout.print(
                    f"  git history still holds {', '.join(result.git_history)}; memctl cannot "
                    f"rewrite history. To purge it, see {README_SECTION}.",
                    markup=False,
                )


def _show_matches(root, matches) -> None:
    table = Table(box=None, pad_edge=False)
    for column in ("id", "type", "title", "path"):
        table.add_column(column, overflow="fold")
    for relpath, memory in matches:
        table.add_row(memory.id, memory.type, Text(memory.display_title), Text(relpath))
    stdout.print(table)


def _confirmed(count: int) -> bool:
    what = "this memory" if count == 1 else f"these {count} memories"
    if not sys.stdin.isatty():
        raise UsageError(f"No terminal to confirm on; run again with --yes to forget {what}.")
    return typer.confirm(f"Forget {what} for good?", default=False)
