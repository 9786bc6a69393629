"""What the top-level options resolve to, shared by every command."""

from __future__ import annotations

from dataclasses import dataclass

import typer

from memctl.config import Store, open_store, open_user_store


@dataclass
class GlobalOptions:
    store: str | None = None


def current_store(ctx: typer.Context, finish_forget: bool = True) -> Store:
    """The store the command works on; a forget killed midway there is finished first."""
    options = ctx.find_root().obj
    explicit = options.store if isinstance(options, GlobalOptions) else None
    store = open_store(explicit)
    if finish_forget:
        finish_interrupted_forget(store)
    return store


def finish_interrupted_forget(store: Store, quiet: bool = False) -> list | None:
    """Finish a forget that was killed midway (its journal is in the state area): its results,
    or None when there was none."""
    from memctl.store.forget_journal import journal_path

    if not journal_path(store.state_dir).is_file():
        return None
    from memctl.cli.output import stderr
    from memctl.service.memories.forgetting import resume_forget

    results = resume_forget(store)
    if results and not quiet:
        ids = ", ".join(result.id for result in results)
        stderr.print(f"Finished an interrupted forget of {ids}.", markup=False)
    return results


def _print_version(value: bool) -> None:
    if value:
        from memctl.cli.version import version_line

        typer.echo(version_line())
        raise typer.Exit()


def main_options(
    ctx: typer.Context,
    store: str = typer.Option(
        None,
        "--store",
        "-s",
        envvar="MEMCTL_STORE",
        help="The .memory folder to use, or the project folder holding it (default: nearest upward).",
    ),
    version: bool = typer.Option(
        False,
        "--version",
        is_eager=True,
        callback=_print_version,
        help="Print memctl's version and exit.",
    ),
) -> None:
    from memctl.config import warn_config_again

    warn_config_again()  # Why: the resident engine runs many commands in one process
    ctx.obj = GlobalOptions(store=store)


def current_stores(ctx: typer.Context, store_only: bool = False) -> list[tuple[str, Store]]:
    """The project store, then the user store unless `store_only` or there is none."""
    project = current_store(ctx)
    user = None if store_only else open_user_store(besides=project)
    return [("project", project)] + ([("user", user)] if user is not None else [])


def store_only_option() -> bool:
    return typer.Option(
        False,
        "--store-only",
        "--no-user",
        help="Read only this store, not the user store beside it.",
    )


def user_store_or_fail() -> Store:
    """The user store, or a clear error saying how to create it."""
    from memctl.config import user_store_path
    from memctl.core.errors import StoreNotFound

    store = open_user_store()
    if store is None:
        raise StoreNotFound(
            f"No user store at {user_store_path()}. Create it with `memctl init --user`."
        )
    return store
