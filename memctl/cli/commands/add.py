from __future__ import annotations

import sys

import typer

from memctl.cli.output import handles_errors, print_json, stdout
from memctl.cli.state import current_store, user_store_or_fail
from memctl.config import read_environment
from memctl.core.errors import UsageError
from memctl.core.files.input_limits import InputRefused
from memctl.core.files.memory import MEMORY_TYPES
from memctl.service import add_memory


def read_text_argument(text: str) -> str:
    """`-` means standard input, so hooks and pipes can feed long text (UTF-8; anything else is
    refused with the offending byte and line, never a crash)."""
    if text != "-":
        return text
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # Why: a test runner's or the resident server's text stdin
        return sys.stdin.read()
    raw = stream.read()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputRefused(
            f"Standard input is not valid UTF-8 (byte 0x{raw[exc.start]:02x} on line {line}); "
            "convert it to UTF-8 first."
        ) from None


def describe_add(result) -> str:
    """One line on what an add did: a new file, or which existing memory it changed and how."""
    memory, target = result.memory, result.merged_into
    if result.action == "merged":
        mentions = memory.extra.get("mentions", 1)
        return (
            f"Near duplicate (similarity {result.similarity:.2f}): merged into {target}; "
            f"mentions {mentions}, confidence {memory.confidence:.2f}  {result.path}"
        )
    if result.action == "updated":
        return (
            f"Updated {target}: new value stored, the old one kept in its ## History  {result.path}"
        )
    if result.action == "not_adopted":
        return (
            f"Kept {target}: its value has higher confidence ({memory.confidence:.2f}); the new "
            f"value is recorded in its ## History (raise --confidence to replace)  {result.path}"
        )
    if result.action == "superseded":
        return (
            f"Added {memory.id}: it supersedes {result.supersedes} (same subject, new value; "
            f"the old memory stays, marked superseded_by)  {result.path}"
        )
    return f"Added {memory.id}  {result.path}"


def _anchors(ctx, store, body, type_, user, paths, symbols, commands, apply, no_anchors):
    """The anchors and project binding of a new memory (see service.anchoring)."""
    from pathlib import Path

    from memctl.core.codebase.anchors import APPLY_CHOICES
    from memctl.service.anchoring import anchors_for_add

    if apply is not None and apply not in APPLY_CHOICES:
        raise UsageError(f"--apply must be one of {', '.join(APPLY_CHOICES)} (got {apply}).")
    project_state = None
    folder = Path.cwd()
    if not user:
        folder, project_state = store.root.parent, store.state_dir
    return anchors_for_add(
        folder,
        project_state,
        body,
        type_,
        to_user_store=user,
        user_types=store.settings.routing.user_types,
        propose=not no_anchors,
        paths=paths,
        symbols=symbols,
        commands=commands,
        apply=apply,
    )


@handles_errors
def add_command(
    ctx: typer.Context,
    text: str = typer.Argument(
        ..., help="What to remember. Use - to read it from standard input.", metavar="TEXT"
    ),
    type_: str = typer.Option(
        "semantic", "--type", "-t", help=f"One of: {', '.join(MEMORY_TYPES)}."
    ),
    tags: list[str] = typer.Option([], "--tag", help="A tag; repeat for several."),
    importance: float = typer.Option(None, "--importance", help="0-1; how much it matters."),
    title: str = typer.Option(None, "--title", help="Title; defaults to the first line."),
    pin: bool = typer.Option(False, "--pin", help="Never let decay archive it."),
    private: bool = typer.Option(
        False, "--private", help="Store under private/ (kept out of git)."
    ),
    agent: str = typer.Option(None, "--agent", help="Which agent is writing this memory."),
    no_redact: bool = typer.Option(
        False,
        "--no-redact",
        help="Store the text as given: skip redaction of secrets and personal data.",
    ),
    force: bool = typer.Option(
        False,
        "--force",
        hidden=True,
        help="Accepted for old scripts: add stores what you give it, however short.",
    ),
    confidence: float = typer.Option(
        None,
        "--confidence",
        help="0-1 (default 0.8); a new value replaces an old one only if at least as high.",
    ),
    no_dedup: bool = typer.Option(
        False,
        "--no-dedup",
        help="Always write a new file: no merge into a near duplicate, no update.",
    ),
    user: bool = typer.Option(
        False, "--user", help="Write to your user store (every project reads it), not here."
    ),
    paths: list[str] = typer.Option(
        [], "--path", help="Anchor: a file or glob from the project root; repeatable."
    ),
    symbols: list[str] = typer.Option(
        [], "--symbol", help="Anchor: an identifier in the code; repeatable."
    ),
    commands: list[str] = typer.Option(
        [], "--command", help="Anchor: a command it is about (`make release`); repeatable."
    ),
    apply: str = typer.Option(
        None,
        "--apply",
        help="always (every session's start), auto (when relevant or touched; default) "
        "or manual (only when asked for).",
    ),
    no_anchors: bool = typer.Option(
        False, "--no-anchors", help="Do not propose anchors from the text."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Remember something: writes one Markdown file and indexes it.

    Example: memctl add "We deploy with make release" --type procedural --tag deploy
    """
    store = user_store_or_fail() if user else current_store(ctx)
    body = read_text_argument(text)
    if not body.strip():
        raise UsageError("Nothing to remember: the text is empty.")
    anchors = _anchors(ctx, store, body, type_, user, paths, symbols, commands, apply, no_anchors)
    # Why force: a person asked for exactly this; the low-value gate is for what memctl
    # extracts or imports by itself (a short "Use pnpm" is a whole rule).
    del force
    result = add_memory(
        store,
        body,
        type=type_,
        tags=tags,
        importance=importance,
        title=title,
        pinned=pin,
        private=private,
        agent=agent,
        redact=not no_redact,
        force=True,
        confidence=confidence,
        dedup=not no_dedup,
        extra=anchors.extra or None,
        request_id=read_environment().request_id,
    )
    if as_json:
        proposed = anchors.proposed.anchors.to_dict() if anchors.proposed else None
        print_json({**result.to_dict(), "anchors_proposed": proposed})
        return
    stdout.print(describe_add(result), markup=False)
    if anchors.proposed and anchors.proposed.anchors:
        stdout.print(
            f"Anchors proposed from the text: {anchors.proposed.describe()} "
            "(edit them with `memctl edit`, or add with --no-anchors)",
            markup=False,
        )
    if apply is None and result.memory.extra.get("apply") == "always":
        stdout.print(
            "Applies always: it reads as a rule for every change, so every session starts with "
            "it (use --apply auto to show it only when relevant)",
            markup=False,
        )
    if result.redacted:
        from memctl.service.memories.redaction import describe_counts

        stdout.print(f"Redacted before storing: {describe_counts(result.redacted)}", markup=False)


def register(app: typer.Typer) -> None:
    app.command("add")(add_command)
