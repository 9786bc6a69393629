"""stale: memories whose anchored files or symbols are gone; `recall --path`: action-time recall."""

from __future__ import annotations

import typer

from memctl.cli.output import handles_errors, print_json, stderr, stdout
from memctl.cli.state import current_stores, store_only_option


@handles_errors
def stale_command(
    ctx: typer.Context,
    store_only: bool = store_only_option(),
    as_json: bool = typer.Option(False, "--json", help="Print the stale memories as JSON."),
) -> None:
    """Memories whose anchored paths match no file any more, or whose symbols are gone.

    Such memories are never injected as fact; fix their `paths:`/`symbols:` with
    `memctl edit ID`, or let `memctl decay` weigh them down. A file git renamed carries its
    anchors along (at `memctl index` and in the post-merge/post-checkout hooks).
    Example: memctl stale --json
    """
    from memctl.service.anchoring import stale_report

    report = stale_report(current_stores(ctx, store_only))
    for warning in report.warnings:
        stderr.print(f"Warning: {warning}", markup=False)
    stale = report.stale
    if as_json:
        print_json([item.to_dict() for item in stale])
        return
    if not stale:
        stdout.print("No stale memories: every anchor matches the code.")
        return
    for item in stale:
        stdout.print(f"{item.id}  {item.title}  ({item.store})", markup=False)
        stdout.print(f"    {item.why.reason()}", markup=False)
    stdout.print(f"{len(stale)} stale memories")


def register(app: typer.Typer) -> None:
    app.command("stale")(stale_command)


def path_recall(
    ctx: typer.Context, paths: list[str], text: str, k: int | None, store_only: bool, as_json: bool
) -> None:
    """`memctl recall --path FILE [TEXT]`: what the action-time hook would inject for FILE."""
    from memctl.service.retrieval.action import ActionRequest, action_recall

    stores = current_stores(ctx, store_only)
    settings = stores[0][1].settings.hooks
    result = action_recall(
        stores,
        ActionRequest(
            paths=tuple(paths),
            text=text,
            budget=settings.action_budget,
            k=settings.action_k if k is None else k,
            min_relevance=settings.action_min_relevance,
        ),
    )
    if as_json:  # Why a list of hits: the shape `recall --json` prints (docs/recall.md)
        print_json([item.to_dict() for item in [*result.items, *result.stale]])
        return
    if not (result.items or result.stale):
        stdout.print("Nothing anchored to or relevant for these paths.")
        return
    stdout.out(result.markdown, end="")
