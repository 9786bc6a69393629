"""`memctl serve` runs the user's engine; `memctl server status|stop` look after it."""

from __future__ import annotations

import typer

from memctl.cli.output import handles_errors, stdout
from memctl.cli.state import current_store
from memctl.core.errors import UsageError


@handles_errors
def serve_command(
    ctx: typer.Context,
    idle_minutes: float = typer.Option(
        None,
        "--idle-minutes",
        help="Close a store after this long without a request, for every store (default: "
        "each store's server.idle_minutes, 30); 0 never. The engine leaves once none is open.",
    ),
) -> None:
    """Run the user's engine in the foreground (for systemd, launchd, debugging).

    One engine serves every store; hot commands start it in the background by themselves.
    Its socket is in $MEMCTL_RUNTIME_DIR, else $XDG_RUNTIME_DIR/memctl, else ~/.cache/memctl.

    Example: memctl serve --idle-minutes 0
    """
    if idle_minutes is not None and idle_minutes < 0:
        raise UsageError("--idle-minutes must be 0 (never) or more.")
    from memctl.cli.resident import ResidentCommands
    from memctl.server.daemon import serve

    code = serve(ResidentCommands(), idle_minutes=idle_minutes)
    # Why: the server has shut down cleanly; tearing down the interpreter (lance's and ONNX
    # Runtime's native pools) only keeps a process around that its successor waits for.
    import os
    import sys

    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


@handles_errors
def status_command(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print the status as JSON."),
) -> None:
    """Is the engine running: pid, socket, version, uptime, requests, memory, open stores."""
    import sys

    from memctl.server.control import render_status, server_status

    sys.stdout.write(render_status(server_status(_store_root(ctx)), as_json))


@handles_errors
def stop_command() -> None:
    """Stop the engine, for every store (the next hot command starts a new one unless
    server.auto is false or MEMCTL_NO_SERVER=1)."""
    from memctl.server.control import stop_server

    pid = stop_server()
    if pid is None:
        stdout.print("No engine runs.", markup=False)
    else:
        stdout.print(f"Stopped the engine (pid {pid}).", markup=False)


def register(app: typer.Typer) -> None:
    app.command("serve")(serve_command)
    server_app = typer.Typer(
        help=(
            "The user's engine, one for every store (started by hot commands): status and stop.\n\n"
            "Example: memctl server status"
        ),
        no_args_is_help=True,
    )
    app.add_typer(server_app, name="server")
    server_app.command("status")(status_command)
    server_app.command("stop")(stop_command)


def _store_root(ctx: typer.Context):
    """This command's store, when there is one (status works without)."""
    from memctl.core.errors import StoreNotFound

    try:
        return current_store(ctx, finish_forget=False).root
    except StoreNotFound:
        return None
