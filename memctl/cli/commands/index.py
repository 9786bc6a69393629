from __future__ import annotations

import sys

import typer

from memctl.cli.output import handles_errors, print_json, stdout, warn_problems
from memctl.cli.state import current_store
from memctl.service import sync_index


def progress_reporter():
    """A rich progress bar on a terminal, nothing otherwise."""
    if not sys.stderr.isatty():
        return None, None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    from memctl.cli.output import stderr

    bar = Progress(
        "Embedding",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=stderr,
        transient=True,
    )
    task = bar.add_task("embed", total=None)

    def update(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)

    return bar, update


def register(app: typer.Typer) -> None:
    @app.command("index")
    @handles_errors
    def index_command(
        ctx: typer.Context,
        rebuild: bool = typer.Option(
            False, "--rebuild", help="Drop the index and embed every file again."
        ),
        as_json: bool = typer.Option(False, "--json", help="Print counts and problems as JSON."),
    ) -> None:
        """Sync the index with the files: embed new or changed files, drop deleted ones.

        Then tidy it: fold in new rows, drop old versions, and from index.ann_min_rows rows
        keep an ANN index on the vectors.
        """
        store = current_store(ctx)
        bar, update = progress_reporter()
        if bar:
            with bar:
                report = sync_index(store, rebuild=rebuild, progress=update)
        else:
            report = sync_index(store, rebuild=rebuild)
        from memctl.service.retrieval.maintenance import maintain_index

        tidied = maintain_index(store)
        if as_json:
            print_json(
                {**report.to_dict(), "maintenance": {k: v.to_dict() for k, v in tidied.items()}}
            )
            return
        warn_problems(report.problems)
        stdout.print(
            f"added {report.added}, updated {report.updated}, removed {report.removed}, "
            f"unchanged {report.unchanged}, embedded {report.embedded}"
            + (f", {len(report.problems)} file(s) with problems" if report.problems else "")
        )
