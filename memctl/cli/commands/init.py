from __future__ import annotations

from pathlib import Path

import typer

from memctl.cli.output import handles_errors, print_json, stderr, stdout
from memctl.core.errors import UsageError
from memctl.service import init_store


def register(app: typer.Typer) -> None:
    @app.command("init")
    @handles_errors
    def init_command(
        ctx: typer.Context,
        directory: Path = typer.Argument(
            None,
            help="Project folder; the store is created as DIR/.memory (default: here).",
            metavar="DIRECTORY",
        ),
        user: bool = typer.Option(
            False,
            "--user",
            help="Create your own store instead, the one every project reads "
            "($MEMCTL_USER_STORE, else $XDG_DATA_HOME/memctl, else ~/.local/share/memctl).",
        ),
        multilingual: bool = typer.Option(
            False,
            "--multilingual",
            help="Embed with the multilingual model (Chinese, Japanese, Korean, ... and across "
            "languages) instead of choosing by the store's text (embedding.model: auto).",
        ),
        as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
    ) -> None:
        """Create a memory store (.memory/ with config.yaml, README and .gitignore).

        Examples: memctl init (in the project's root); memctl init --user (your own store).
        """
        _refuse_store_option(ctx)
        if user:
            if directory is not None:
                raise UsageError("--user creates the user store where it belongs; drop DIR.")
            _init_user(as_json, multilingual)
            return
        store = init_store(
            directory if directory is not None else Path("."), multilingual=multilingual
        )
        if as_json:
            print_json({"store": str(store.root)})
        else:
            stdout.print(f"Created {store.root}")
            stdout.print('Next: memctl add "something worth remembering"')


def _refuse_store_option(ctx: typer.Context) -> None:
    """Why: `memctl --store PATH init` used to create .memory/ here, not at PATH, silently."""
    source = ctx.find_root().get_parameter_source("store")
    if getattr(source, "name", None) == "COMMANDLINE":  # not MEMCTL_STORE from the environment
        raise UsageError(
            "init takes the project folder, not --store: memctl init DIR creates DIR/.memory."
        )


def _init_user(as_json: bool, multilingual: bool = False) -> None:
    from memctl.service.init import enclosing_git_repository, init_user_store

    store = init_user_store(multilingual=multilingual)
    repository = enclosing_git_repository(store.root)
    if as_json:
        print_json({"store": str(store.root), "user": True})
    else:
        stdout.print(f"Created your user store {store.root}")
        stdout.print(
            'Next: memctl add --user "I prefer answers in short bullet points" --type preference'
        )
    if repository is not None:
        stderr.print(
            f"Note: it is inside the git repository {repository}; memctl never commits it, "
            "but a `git add` there would. Ignore it there or set MEMCTL_USER_STORE elsewhere.",
            markup=False,
        )
