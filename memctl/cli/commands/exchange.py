"""`memctl export` and `memctl import`: memories to and from agents' files and JSONL."""

from __future__ import annotations

from pathlib import Path

import typer

from memctl.cli.output import handles_errors, print_json, stderr, stdout, warn_problems, write_text
from memctl.cli.state import current_store
from memctl.core.language.text import counted


@handles_errors
def export_command(
    ctx: typer.Context,
    fmt: str = typer.Option(
        "jsonl", "--format", "-f", help="jsonl, claude-md, agents-md or cursor-rules."
    ),
    types: list[str] = typer.Option([], "--type", "-t", help="Only this type; repeatable."),
    budget: int = typer.Option(
        None, "--budget", help="At most this many tokens (most important first)."
    ),
    output: str = typer.Option(
        None,
        "--output",
        "-o",
        help="File or folder to write; - for stdout. Default: "
        "stdout for jsonl, CLAUDE.md / AGENTS.md / .cursor/rules/ in the project.",
    ),
    include_private: bool = typer.Option(
        None,
        "--include-private/--no-private",
        help="Include private memories (default: no, unless config.yaml sets "
        "privacy.share_private_with_agents).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print what was written as JSON."),
) -> None:
    """Export memories: JSONL (lossless), or a managed section of CLAUDE.md / AGENTS.md, or
    .cursor/rules/memctl-*.mdc. Re-running updates only memctl's part.

    Example: memctl export --format claude-md --budget 1500
    """
    from memctl.cli.commands.hooks import project_root
    from memctl.service.memories.exchange import export_memories

    store = current_store(ctx)
    result = export_memories(
        store,
        fmt,
        project_root=project_root(Path.cwd()),
        output=output,
        types=types or None,
        budget=budget,
        include_private=include_private,
    )
    warn_problems(result.problems)
    if result.text is not None:
        write_text(result.text)
    elif as_json:
        print_json(result.to_dict())
    else:
        where = ", ".join(str(p) for p in result.written) or "nothing changed"
        note = f" ({result.omitted} left out by --budget)" if result.omitted else ""
        stdout.print(
            f"Exported {counted(result.exported, 'memory', 'memories')}{note}: {where}",
            markup=False,
        )
        if result.quarantined:
            stdout.print(
                f"{result.quarantined} quarantined memor"
                f"{'y' if result.quarantined == 1 else 'ies'} left out: see `memctl review`.",
                markup=False,
            )
        for path in result.removed:
            stdout.print(f"Removed {path} (no memories of its type left)", markup=False)
    if result.problems:
        # Why exit 1: an export is a backup; one that silently lacks files is not reliable.
        stderr.print(
            f"Warning: {len(result.problems)} file(s) could not be read and are not in the "
            "export (listed above); fix them and export again.",
            markup=False,
        )
        raise typer.Exit(1)


@handles_errors
def import_command(
    ctx: typer.Context,
    source: Path = typer.Argument(
        ...,
        help="A .jsonl export, CLAUDE.md, AGENTS.md or a Cursor .mdc rule.",
        metavar="SOURCE",
    ),
    fmt: str = typer.Option(
        None, "--format", "-f", help="jsonl, markdown or mdc (default: from the name)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print what was added and skipped as JSON."),
    keep_origin: bool = typer.Option(
        False,
        "--keep-origin",
        help="Your own export: keep the origin each record states (user, agent, ...). "
        "Without it imported text is untrusted (import:<file>), unless a record already "
        "names an untrusted origin.",
    ),
) -> None:
    """Import memories through the normal write path: one per JSONL line, or one per bullet
    or section of a Markdown file (memctl's own managed section is skipped).

    Imported memories have the origin import:<file>: text that reads as an instruction
    to the agent waits in quarantine (memctl review).

    Example: memctl import CLAUDE.md
    """
    from memctl.service.memories.exchange import import_file

    store = current_store(ctx)
    result = import_file(store, source, fmt, keep_origin=keep_origin)
    if as_json:
        print_json(result.to_dict())
        return
    for added in result.added:
        stdout.print(
            f"Added {added.memory.id}  {added.memory.type:<10} {added.memory.display_title}",
            markup=False,
        )
    for merged in result.merged:
        stdout.print(
            f"Merged into {merged.memory.id} ({merged.action})  {merged.memory.display_title}",
            markup=False,
        )
    for skipped in result.skipped:
        stdout.print(f"Skipped {source}:{skipped['line']}: {skipped['reason']}", markup=False)
    stdout.print(
        f"Imported {counted(len(result.added), 'new memory', 'new memories')} from {source}"
        + (f", merged {len(result.merged)}" if result.merged else "")
        + (f", skipped {len(result.skipped)}" if result.skipped else ""),
        markup=False,
    )
    from memctl.service.provenance import gate_for

    gate = gate_for(store)
    held = [r.memory.id for r in result.added if gate.quarantined(r.memory)]
    if held:
        stdout.print(
            f"{len(held)} held in quarantine (they read as instructions to the agent): "
            "see `memctl review`.",
            markup=False,
        )


def register(app: typer.Typer) -> None:
    app.command("export")(export_command)
    app.command("import")(import_command)
