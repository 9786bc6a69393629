from __future__ import annotations

import sys

import typer

from memctl.cli.output import handles_errors, print_json, stdout
from memctl.cli.state import current_store
from memctl.core.memory import MEMORY_TYPES
from memctl.errors import UsageError
from memctl.service import add_memory


def read_text_argument(text: str) -> str:
    """`-` means standard input, so hooks and pipes can feed long text."""
    if text == "-":
        return sys.stdin.read()
    return text


def register(app: typer.Typer) -> None:
    @app.command("add")
    @handles_errors
    def add_command(
        ctx: typer.Context,
        text: str = typer.Argument(..., help="What to remember. Use - to read it from standard input."),
        type_: str = typer.Option("semantic", "--type", "-t", help=f"One of: {', '.join(MEMORY_TYPES)}."),
        tags: list[str] = typer.Option([], "--tag", help="A tag; repeat for several."),
        importance: float = typer.Option(None, "--importance", help="0-1; how much it matters."),
        title: str = typer.Option(None, "--title", help="Title; defaults to the first line."),
        pin: bool = typer.Option(False, "--pin", help="Never let decay archive it."),
        private: bool = typer.Option(False, "--private", help="Store under private/ (kept out of git)."),
        agent: str = typer.Option(None, "--agent", help="Which agent is writing this memory."),
        as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
    ) -> None:
        """Remember something: writes one Markdown file and indexes it.

        Example: memctl add "We deploy with make release" --type procedural --tag deploy
        """
        store = current_store(ctx)
        body = read_text_argument(text)
        if not body.strip():
            raise UsageError("Nothing to remember: the text is empty.")
        result = add_memory(
            store, body, type=type_, tags=tags, importance=importance, title=title,
            pinned=pin, private=private, agent=agent,
        )
        if as_json:
            print_json(result.to_dict())
            return
        stdout.print(f"Added {result.memory.id}  {result.path}")
