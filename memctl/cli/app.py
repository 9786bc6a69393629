"""The `memctl` command: a thin face over memctl.service."""

from __future__ import annotations

import typer

from memctl.cli.commands import (
    add,
    browse,
    compact,
    context,
    decay,
    exchange,
    extract,
    forget,
    hook,
    hooks,
    index,
    init,
    mcp,
    recall,
    session,
    stats,
    task,
    watch,
)
from memctl.cli.state import GlobalOptions

app = typer.Typer(
    name="memctl",
    help=(
        "Local-first memory for AI agents. Memories are Markdown files under .memory/; "
        "the search index beside them is a cache.\n\n"
        "Start with: memctl init, memctl add TEXT, memctl recall QUERY."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

COMMAND_MODULES = [init, add, recall, browse, index, forget, session, task, compact, context]
COMMAND_MODULES += [hooks, hook, watch, mcp, exchange]  # coding-agent integration
COMMAND_MODULES += [decay, stats]  # forgetting as a feature (forget itself is above)
COMMAND_MODULES += [extract]  # conversations -> durable memories
for module in COMMAND_MODULES:
    module.register(app)


@app.callback()
def main_options(
    ctx: typer.Context,
    store: str = typer.Option(
        None, "--store", "-s", envvar="MEMCTL_STORE", help="The .memory folder to use (default: nearest upward)."
    ),
) -> None:
    ctx.obj = GlobalOptions(store=store)


def main() -> None:
    app()
