from __future__ import annotations

import sys
from functools import partial
from typing import TYPE_CHECKING

import typer

from memctl.cli.output import handles_errors, print_json, stderr, stdout, warn_problems
from memctl.cli.state import current_store
from memctl.core.errors import MemctlError
from memctl.service import sync_index

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID


def progress_reporter():
    """A rich progress bar on a terminal, nothing otherwise."""
    if not sys.stderr.isatty():
        return None, None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    bar = Progress(
        "Embedding",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=stderr,
        transient=True,
    )
    task = bar.add_task("embed", total=None)
    return bar, partial(_advance, bar, task)


def _advance(bar: Progress, task: TaskID, done: int, total: int) -> None:
    bar.update(task, completed=done, total=total)


@handles_errors
def index_command(
    ctx: typer.Context,
    rebuild: bool = typer.Option(
        False, "--rebuild", help="Drop the index and embed every file again."
    ),
    publish: bool = typer.Option(
        False,
        "--publish",
        help="Then upload it to index.uri (s3://, gs://, az://) for clones in remote mode.",
    ),
    strict: bool = typer.Option(
        False,
        "--strict",
        help="For CI: also check every file for values read leniently (duplicate keys, "
        '`created: yesterday`, `pinned: "false"`, ...); exit 1 on any problem or warning.',
    ),
    model: str | None = typer.Option(
        None,
        "--model",
        metavar="MODEL",
        help="Switch the store to this embedding model (a model id or multilingual) and "
        "embed every memory with it. Under embedding.model: auto the store keeps the model "
        "chosen at its first sync until you switch it here.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print counts and problems as JSON."),
) -> None:
    """Sync the index with the files: embed new or changed files, drop deleted ones.

    With index.mode: remote, first pin the latest published index, then embed only the
    files this clone changed or added (the local overlay).
    The index table is checked too; a damaged one is rebuilt from the files.
    Then tidy it: fold in new rows, drop old versions, and from index.ann_min_rows rows
    keep an ANN index on the vectors.

    Example: memctl index --json (after editing or deleting files by hand; read commands
    sync by themselves)
    """
    store = current_store(ctx)
    if publish:
        _publish(store, as_json)
        return
    from memctl.service.anchoring import carry_renames
    from memctl.service.retrieval.remote import pull_index

    previous = None
    if model is not None:
        from memctl.service.retrieval.embedding import choose_model, index_model

        previous = index_model(store)
        choose_model(store, model)
    # Why first: a file git renamed since the last sync carries its memories' anchors along
    # (the post-merge and post-checkout hooks run `memctl index`), before they are indexed.
    carried = carry_renames(store)
    pulled = pull_index(store)
    bar, update = progress_reporter()
    try:
        if bar:
            with bar:
                report = sync_index(store, rebuild=rebuild, progress=update, verify=True)
        else:
            report = sync_index(store, rebuild=rebuild, verify=True)
    except MemctlError:
        if previous is not None:  # Why: a model that cannot run must not stay the store's
            from memctl.service.retrieval.embedding import record_choice

            record_choice(store, previous, "kept: the model asked for could not run")
        raise
    from memctl.service.retrieval.maintenance import maintain_index

    tidied = maintain_index(store)
    findings = _strict_findings(store, report.problems) if strict else []
    if as_json:
        print_json(
            {
                **report.to_dict(),
                "maintenance": {k: v.to_dict() for k, v in tidied.items()},
                "anchors_carried": carried,
                **({"published": pulled} if pulled else {}),
                **({"strict": findings} if strict else {}),
            }
        )
        if findings:
            raise typer.Exit(1)
        return
    if pulled:
        stdout.print(
            f"published index {pulled['uri']} version {pulled['version']} "
            f"({pulled['files']} files)",
            markup=False,
        )
    warn_problems(report.problems)
    if carried:
        stdout.print(f"anchors carried along git renames: {', '.join(carried)}", markup=False)
    stdout.print(
        f"added {report.added}, updated {report.updated}, removed {report.removed}, "
        f"unchanged {report.unchanged}, embedded {report.embedded}"
        + (f", {len(report.problems)} file(s) with problems" if report.problems else "")
    )
    if findings:
        warn_problems([f for f in findings if f not in report.problems])
        stderr.print(
            f"memctl index --strict: {len(findings)} problem(s) or lenient value(s).",
            markup=False,
        )
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("index")(index_command)


def _strict_findings(store, problems: list[dict]) -> list[dict]:
    from memctl.service.lint import strict_findings
    from memctl.store.files import drain_scan_problems

    # Why drained here: the sync queued some of the same warnings; each is printed once.
    merged: dict[tuple, dict] = {}
    for finding in [*drain_scan_problems(), *strict_findings(store)]:
        merged.setdefault((finding["path"], finding["line"], finding["problem"]), finding)
    return list(merged.values())


def _publish(store, as_json: bool) -> None:
    from memctl.service.retrieval.remote import publish_index

    bar, update = progress_reporter()
    if bar:
        with bar:
            result = publish_index(store, progress=update)
    else:
        result = publish_index(store)
    if as_json:
        print_json(result)
        return
    warn_problems(result["sync"]["problems"])
    stdout.print(
        f"published {result['rows']} rows of {result['files']} files to {result['uri']} "
        f"(version {result['version']}; embedded {result['sync']['embedded']} first)",
        markup=False,
    )
