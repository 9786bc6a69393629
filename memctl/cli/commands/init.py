from __future__ import annotations

from pathlib import Path

import typer

from memctl.cli.output import handles_errors, print_json, stderr, stdout
from memctl.core.errors import UsageError
from memctl.service import init_store


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
    nested: bool = typer.Option(
        False,
        "--nested",
        help="Create a store of its own inside a project that has one (commands run from "
        "here then read only this one).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Create a memory store (.memory/ with config.yaml, README and .gitignore).

    Examples: memctl init (in the project's root); memctl init --user (your own store).
    """
    project = _directory_from_store_option(ctx, directory)
    if user:
        if project is not None:
            raise UsageError("--user creates the user store where it belongs; drop DIR.")
        _init_user(as_json, multilingual)
        return
    folder = project if project is not None else Path(".")
    if not nested:
        _refuse_nested(folder)
    store = init_store(folder, multilingual=multilingual)
    if as_json:
        print_json({"store": str(store.root)})
    else:
        stdout.print(f"Created {store.root}")
        stdout.print('Next: memctl add "something worth remembering"')


def register(app: typer.Typer) -> None:
    app.command("init")(init_command)


def _directory_from_store_option(ctx: typer.Context, directory: Path | None) -> Path | None:
    """`memctl --store P/.memory init` creates P/.memory; any other --store is refused.

    Why: `--store PATH init` used to create .memory/ in the current folder, not at PATH,
    silently. A store named `.memory` says where its project is; another name does not.
    """
    root = ctx.find_root()
    if getattr(root.get_parameter_source("store"), "name", None) != "COMMANDLINE":
        return directory  # not given, or MEMCTL_STORE from the environment (not init's business)
    given = Path(str(root.params.get("store"))).expanduser()
    project = given.parent
    if given.name == ".memory" and (directory is None or directory.resolve() == project.resolve()):
        return project
    raise UsageError(
        "init takes the project folder, not --store: memctl init DIR creates DIR/.memory."
    )


def _refuse_nested(folder: Path) -> None:
    """A store inside a project that has one hides the project's from every command run below
    it: say so, unless --nested asks for exactly that."""
    from memctl.service.init import enclosing_store

    outer = enclosing_store(folder)
    if outer is not None:
        raise UsageError(
            f"This folder is inside the project of {outer}, which commands run here already "
            "read; a store here would hide it. Use that one, or run memctl init --nested to "
            "keep a separate store for this folder."
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
