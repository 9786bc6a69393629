from __future__ import annotations

import typer

from memctl.cli.output import handles_errors
from memctl.cli.state import current_store


@handles_errors
def mcp_command(ctx: typer.Context) -> None:
    """Serve the store over MCP on stdin/stdout (tools: recall, add, context, forget).

    Example client entry: {"command": "memctl", "args": ["mcp"]}, started in the project folder.
    """
    store = current_store(ctx)
    from memctl.mcp.server import serve_stdio

    serve_stdio(store)


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp_command)
