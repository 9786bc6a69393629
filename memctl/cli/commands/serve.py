"""`memctl serve` runs the store's resident server; `memctl server status|stop` look after it."""

from __future__ import annotations

import typer

from memctl.cli.output import handles_errors, print_json, stdout
from memctl.cli.state import current_store
from memctl.core.errors import UsageError


def register(app: typer.Typer) -> None:
    @app.command("serve")
    @handles_errors
    def serve_command(
        ctx: typer.Context,
        idle_minutes: float = typer.Option(
            None,
            "--idle-minutes",
            help="Leave after this long without a request; 0 never (config server.idle_minutes, 30).",
        ),
    ) -> None:
        """Run the store's resident server in the foreground (for systemd, launchd, debugging).

        Hot commands start one in the background by themselves; see `memctl server status`.

        Example: memctl --store /path/to/project/.memory serve --idle-minutes 0
        """
        if idle_minutes is not None and idle_minutes < 0:
            raise UsageError("--idle-minutes must be 0 (never) or more.")
        from memctl.cli.resident import ResidentCommands
        from memctl.server.daemon import serve

        store = current_store(ctx)
        code = serve(store, ResidentCommands(store), idle_minutes=idle_minutes)
        # Why: the server has shut down cleanly; tearing down the interpreter (lance's and ONNX
        # Runtime's native pools) only keeps a process around that its successor waits for.
        import os
        import sys

        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)

    server_app = typer.Typer(
        help=(
            "The store's resident server (started by hot commands): status and stop.\n\n"
            "Example: memctl server status"
        ),
        no_args_is_help=True,
    )
    app.add_typer(server_app, name="server")

    @server_app.command("status")
    @handles_errors
    def status_command(
        ctx: typer.Context,
        as_json: bool = typer.Option(False, "--json", help="Print the status as JSON."),
    ) -> None:
        """Is a server running for this store: pid, socket, version, uptime, requests."""
        from memctl.server.control import server_status

        status = server_status(current_store(ctx).root)
        if as_json:
            print_json(status)
            return
        for key, value in status.items():
            shown = ("yes" if value else "no") if key == "running" else value
            stdout.print(f"{key:<9} {'-' if shown is None else shown}", markup=False)

    @server_app.command("stop")
    @handles_errors
    def stop_command(ctx: typer.Context) -> None:
        """Stop this store's server (the next hot command starts a new one unless server.auto
        is false or MEMCTL_NO_SERVER=1)."""
        from memctl.server.control import stop_server

        root = current_store(ctx).root
        pid = stop_server(root)
        if pid is None:
            stdout.print(f"No server runs for {root}.", markup=False)
        else:
            stdout.print(f"Stopped the server of {root} (pid {pid}).", markup=False)
