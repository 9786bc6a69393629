"""memctl extract: turn a conversation into durable memories (ADD / UPDATE / NOOP)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer
from rich.table import Table

from memctl.cli.output import fail, handles_errors, print_json, stdout
from memctl.cli.state import current_stores, store_only_option


@handles_errors
def extract_command(
    ctx: typer.Context,
    file: str = typer.Argument(
        "-",
        metavar="[FILE|-]",
        help="JSONL of {role, content}, a Claude Code transcript, or plain text; - reads stdin.",
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show the plan; write nothing."),
    use_llm: bool = typer.Option(
        None,
        "--llm/--no-llm",
        help="Use the configured LLM (llm.model or MEMCTL_LLM_MODEL); default: if one is set.",
    ),
    mock_response: list[str] = typer.Option(
        None,
        "--llm-mock-response",
        hidden=True,
        help="Testing: litellm's mock_response instead of a real call; repeat for the retry.",
    ),
    store_only: bool = store_only_option(),
    as_json: bool = typer.Option(False, "--json", help="Print the plan and outcome as JSON."),
) -> None:
    """Extract preferences, profile facts, decisions, procedures and lessons from a conversation.

    Each is planned as ADD (new), UPDATE (a new value for a stored memory; the old value is
    kept in its history) or NOOP (already stored: one more mention), then written.

    With a user store (memctl init --user), what is about you (preferences, profile facts,
    statements about "I") goes there and the rest to the project: config `routing:`.

    Example: memctl extract ~/.claude/projects/app/session.jsonl --dry-run
    """
    from memctl.agents.transcripts import (
        read_conversation,
        read_conversation_file,
        read_tool_outputs,
    )
    from memctl.integrations.llm import LLMBadOutput
    from memctl.service.extraction import extract

    stores = current_stores(ctx, store_only)
    store, user_store = stores[0][1], (stores[1][1] if len(stores) > 1 else None)
    if file == "-":
        text = sys.stdin.read()
        turns = read_conversation(text, source="<stdin>")
    else:
        from memctl.store.safe_read import read_input_file

        limit = store.settings.limits.max_input_bytes
        turns = read_conversation_file(file, limit)
        text = read_input_file(Path(file), limit).decode("utf-8-sig", errors="replace")
    tool_outputs = read_tool_outputs(text)
    mock = (
        None
        if not mock_response
        else (mock_response[0] if len(mock_response) == 1 else list(mock_response))
    )
    try:
        result = extract(
            store,
            turns,
            source=file,
            dry_run=dry_run,
            use_llm=use_llm,
            mock_response=mock,
            user_store=user_store,
            tool_outputs=tool_outputs,
        )
    except LLMBadOutput as error:
        if as_json and error.reply is not None:
            print_json(
                {
                    "error": {"kind": error.kind, "message": str(error)},
                    "usage": error.reply.usage(),
                }
            )
            raise typer.Exit(code=error.exit_code) from None
        raise fail(error, as_json) from None
    if as_json:
        print_json(result.to_dict())
        return
    render_result(result)


def register(app: typer.Typer) -> None:
    app.command("extract")(extract_command)


def render_result(result) -> None:
    routed = any(item.store for item in result.plan)
    table = Table(box=None, pad_edge=False, show_lines=False)
    for column in ("#", "op", "type", *(["store"] if routed else []), "conf", "text", "target"):
        table.add_column(column, overflow="fold")
    table.add_column("reason", overflow="fold")
    for number, item in enumerate(result.plan, start=1):
        table.add_row(
            str(number),
            item.op,
            item.type,
            *([item.store or ""] if routed else []),
            f"{item.confidence:.2f}",
            item.text,
            item.target_label,
            item.reason,
        )
    mode = "LLM" if result.mode == "llm" else "rules (offline)"
    stdout.print(
        f"{len(result.plan)} memories planned from {result.turns} turns of {result.source} "
        f"[{mode}]",
        markup=False,
    )
    if result.plan:
        stdout.print(table)
    if result.redacted:
        from memctl.service.memories.redaction import describe_counts

        stdout.print(
            f"Redacted from the conversation first: {describe_counts(result.redacted)}",
            markup=False,
        )
    for skipped in result.skipped:
        stdout.print(f"skipped (low value: {skipped['reason']}): {skipped['text']}", markup=False)
    if result.usage:
        usage = result.usage
        stdout.print(
            f"LLM {usage['model']}: {usage['calls']} call(s), {usage['prompt_tokens']} prompt + "
            f"{usage['completion_tokens']} completion tokens, ${usage['cost_usd']:.6f}",
            markup=False,
        )
    if result.dry_run:
        stdout.print("Dry run: nothing written.", markup=False)
        return
    done: dict[str, int] = {}
    for outcome in result.applied:
        done[outcome["action"]] = done.get(outcome["action"], 0) + 1
    summary = ", ".join(f"{count} {action}" for action, count in done.items()) or "nothing"
    stdout.print(f"Written: {summary}.", markup=False)
    for outcome in result.applied:
        if outcome.get("anchors"):
            shown = "; ".join(f"{k}: {v}" for k, v in outcome["anchors"].items())
            stdout.print(f"  {outcome['id']} anchored to {shown}", markup=False)
