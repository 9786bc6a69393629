from __future__ import annotations

from pathlib import Path

import typer

from memctl.cli.output import handles_errors, print_json, stdout
from memctl.service import init_store


def register(app: typer.Typer) -> None:
    @app.command("init")
    @handles_errors
    def init_command(
        directory: Path = typer.Argument(
            Path("."), help="Project folder; the store is created as DIR/.memory."
        ),
        multilingual: bool = typer.Option(
            False,
            "--multilingual",
            help="Embed with the multilingual model (Chinese, Japanese, Korean, ... and across "
            "languages) instead of choosing by the store's text (embedding.model: auto).",
        ),
        as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
    ) -> None:
        """Create a memory store (.memory/ with config.yaml, README and .gitignore)."""
        store = init_store(directory, multilingual=multilingual)
        if as_json:
            print_json({"store": str(store.root)})
        else:
            stdout.print(f"Created {store.root}")
            stdout.print('Next: memctl add "something worth remembering"')
