"""review and approve: memories held in quarantine until a person has read them."""

from __future__ import annotations

import typer

from memctl.cli.output import handles_errors, print_json, stdout
from memctl.cli.state import current_store
from memctl.core.fence import strip_format


@handles_errors
def review_command(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print the pending memories as JSON."),
) -> None:
    """List memories held in quarantine: text from an untrusted origin (a tool's output, an
    import, a teammate's commit, the web) that reads as an instruction to the agent. They
    are kept and found by `memctl recall`, but never injected into an agent's context.

    Release one with `memctl approve ID`; remove one with `memctl forget ID`.

    Example: memctl review
    """
    from memctl.service.provenance import pending_review

    pending = pending_review(current_store(ctx))
    if as_json:
        print_json([item.to_dict() for item in pending])
        return
    if not pending:
        stdout.print("Nothing waits for review.")
        return
    for item in pending:
        # Why strip_format: this is hostile text by definition; no escape codes reach the tty.
        origin = strip_format(item.origin)
        stdout.print(f"{item.id}  origin {origin}  ({item.reason})", markup=False)
        text = " ".join(strip_format(item.body).split())
        stdout.print(f"    {text[:300]}{'…' if len(text) > 300 else ''}", markup=False)
        stdout.print(f"    {item.path}", markup=False)
    stdout.print(
        f"{len(pending)} memor{'y' if len(pending) == 1 else 'ies'} in quarantine: "
        "`memctl approve ID` releases one, `memctl forget ID` removes it.",
        markup=False,
    )


@handles_errors
def approve_command(
    ctx: typer.Context,
    memory_id: str = typer.Argument(..., metavar="ID", help="The memory's id."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Release a memory from quarantine: you read it, and agents may see it (still fenced
    as a note with its origin). The approval is of its current text, kept in this clone's
    state: an edit, or a teammate's new version, needs a new approval.

    Example: memctl approve 01jq8x2k3m4n5p
    """
    from memctl.service.provenance import approve

    result = approve(current_store(ctx), memory_id)
    if as_json:
        print_json(result.to_dict())
        return
    state = "released from quarantine" if result.was_quarantined else "marked as reviewed"
    stdout.print(f"{result.id} {state} (origin {result.origin}).", markup=False)


def register(app: typer.Typer) -> None:
    app.command("review")(review_command)
    app.command("approve")(approve_command)
