"""review and approve: memories held in quarantine until a person has read them."""

from __future__ import annotations

import typer

from memctl.cli.output import handles_errors, print_json, stdout
from memctl.cli.state import current_store
from memctl.core.trust.fence import strip_format


@handles_errors
def review_command(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print the pending memories as JSON."),
    show_all: bool = typer.Option(
        False,
        "--all",
        help="List every memory memctl did not write on this machine (from git, a clone, "
        "another program), quarantined or not.",
    ),
) -> None:
    """List memories held in quarantine: text from an untrusted origin (a tool's output, an
    import, a teammate's commit, the web) that reads as an instruction to the agent. They
    are kept and found by `memctl recall`, but never injected into an agent's context.

    A memory whose text memctl did not write on this machine (a pull, merge, rebase or
    clone brought it) is untrusted whatever its `origin` says; `--all` lists them all.

    Release one with `memctl approve ID` (or all you read with `memctl approve --all`);
    remove one with `memctl forget ID`.

    Example: memctl review --all
    """
    from memctl.service.provenance import pending_review, unreviewed

    store = current_store(ctx)
    pending = unreviewed(store) if show_all else pending_review(store)
    if as_json:
        print_json([item.to_dict() for item in pending])
        return
    if not pending:
        stdout.print("Nothing waits for review.")
        _hint_unreviewed(store, show_all)
        return
    for item in pending:
        # Why strip_format: this is hostile text by definition; no escape codes reach the tty.
        origin = strip_format(item.origin)
        stdout.print(f"{item.id}  origin {origin}  ({item.reason})", markup=False)
        text = " ".join(strip_format(item.body).split())
        stdout.print(f"    {text[:300]}{'…' if len(text) > 300 else ''}", markup=False)
        stdout.print(f"    {item.path}", markup=False)
    what = "not reviewed" if show_all else "in quarantine"
    stdout.print(
        f"{len(pending)} memor{'y' if len(pending) == 1 else 'ies'} {what}: "
        "`memctl approve ID` releases one, `memctl forget ID` removes it.",
        markup=False,
    )
    _hint_unreviewed(store, show_all)


def _hint_unreviewed(store, show_all: bool) -> None:
    """After a clone or pull: say how many memories nobody reviewed here yet."""
    if show_all:
        return
    from memctl.service.provenance import unreviewed

    count = len(unreviewed(store))
    if count:
        stdout.print(
            f"{count} memor{'y' if count == 1 else 'ies'} arrived through git or another program "
            "and stay untrusted: read them with `memctl review --all`, then `memctl approve --all`.",
            markup=False,
        )


@handles_errors
def approve_command(
    ctx: typer.Context,
    memory_id: str = typer.Argument("", metavar="[ID]", help="The memory's id."),
    approve_every: bool = typer.Option(
        False,
        "--all",
        help="Approve every memory memctl did not write on this machine (after a clone: "
        "read them first with `memctl review --all`).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Release a memory from quarantine: you read it, and agents may see it (still fenced
    as a note with its origin). The approval is of its current text, kept in this clone's
    state: an edit, or a teammate's new version, needs a new approval.

    Example: memctl approve 01jq8x2k3m4n5p
    """
    from memctl.core.errors import UsageError
    from memctl.service.provenance import approve, approve_all

    if approve_every == bool(memory_id):
        raise UsageError("Give one memory ID, or --all (after `memctl review --all`).")
    if approve_every:
        done = approve_all(current_store(ctx))
        if as_json:
            print_json([item.to_dict() for item in done])
            return
        held = sum(item.was_quarantined for item in done)
        stdout.print(
            f"Approved {len(done)} memor{'y' if len(done) == 1 else 'ies'} "
            f"({held} released from quarantine).",
            markup=False,
        )
        return
    result = approve(current_store(ctx), memory_id)
    if as_json:
        print_json(result.to_dict())
        return
    state = "released from quarantine" if result.was_quarantined else "marked as reviewed"
    stdout.print(f"{result.id} {state} (origin {result.origin}).", markup=False)


def register(app: typer.Typer) -> None:
    app.command("review")(review_command)
    app.command("approve")(approve_command)
