"""What the top-level options resolve to, shared by every command."""

from __future__ import annotations

from dataclasses import dataclass

import typer

from memctl.config import Store, open_store


@dataclass
class GlobalOptions:
    store: str | None = None


def current_store(ctx: typer.Context) -> Store:
    options = ctx.find_root().obj
    explicit = options.store if isinstance(options, GlobalOptions) else None
    return open_store(explicit)


def main_options(
    ctx: typer.Context,
    store: str = typer.Option(
        None,
        "--store",
        "-s",
        envvar="MEMCTL_STORE",
        help="The .memory folder to use (default: nearest upward).",
    ),
) -> None:
    ctx.obj = GlobalOptions(store=store)
