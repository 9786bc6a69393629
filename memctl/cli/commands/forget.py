from __future__ import annotations

import typer

from memctl.cli.output import handles_errors, print_json, stdout
from memctl.cli.state import current_store
from memctl.service.forgetting import forget_memory


def register(app: typer.Typer) -> None:
    @app.command("forget")
    @handles_errors
    def forget_command(
        ctx: typer.Context,
        memory_id: str = typer.Argument(..., metavar="ID", help="The memory's id."),
        as_json: bool = typer.Option(False, "--json", help="Print what was removed as JSON."),
    ) -> None:
        """Forget a memory: remove its file and its rows in the index."""
        store = current_store(ctx)
        result = forget_memory(store, memory_id)
        if as_json:
            print_json(result)
            return
        stdout.print(f"Forgot {memory_id} ({result['path']})")
