from __future__ import annotations

import signal
import threading
import time
from functools import partial

import typer

from memctl.cli.output import handles_errors, print_json, stderr, stdout, warn_problems
from memctl.cli.state import current_store
from memctl.config import Store
from memctl.core.errors import UsageError


@handles_errors
def watch_command(
    ctx: typer.Context,
    quiet: float = typer.Option(0.5, "--quiet", help="Seconds without changes before a sync."),
    poll: bool = typer.Option(
        False, "--poll", help="Poll the disk instead of OS events (network drives)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object per sync."),
) -> None:
    """Keep the index in sync while files are edited by hand or by git; Ctrl-C stops.

    Changes are batched: a branch checkout touching hundreds of files is one sync.

    Example: memctl watch --poll (a store on a network drive)
    """
    if quiet <= 0:
        raise UsageError("--quiet must be more than 0 seconds.")
    from memctl.integrations.watcher import watch_store

    store = current_store(ctx)

    stop = threading.Event()
    _let_ctrl_c_stop()
    try:
        sync = partial(_sync_and_report, store, as_json)
        sync(0)  # start from an index that matches the files
        watch_store(
            store.root,
            sync,
            stop,
            quiet_s=quiet,
            poll=poll,
            on_error=_report_sync_error,
            on_ready=lambda: stderr.print(f"Watching {store.root} (Ctrl-C to stop)", markup=False),
        )
    except KeyboardInterrupt:
        stop.set()
    stderr.print("Stopped watching.")


def _sync_and_report(store: Store, as_json: bool, events: int) -> None:
    from memctl.service import sync_index

    report = sync_index(store)
    stamp = time.strftime("%H:%M:%S")
    if as_json:
        print_json({"time": stamp, "events": events, **report.to_dict()})
        return
    warn_problems(report.problems)
    stdout.print(
        f"{stamp} synced {events} change(s): added {report.added}, updated {report.updated}, "
        f"removed {report.removed}, embedded {report.embedded}"
        + (f", {len(report.problems)} file(s) with problems" if report.problems else ""),
        markup=False,
    )


def _report_sync_error(exc: Exception) -> None:
    stderr.print(f"Sync failed (retried on the next change): {exc}", markup=False)


def register(app: typer.Typer) -> None:
    app.command("watch")(watch_command)


def _let_ctrl_c_stop() -> None:
    """Ctrl-C stops the watch even when the parent process ignored SIGINT.

    Why: a background job of a script, or a test runner started as one, hands an ignored SIGINT
    down, and Python then never raises KeyboardInterrupt: Ctrl-C would do nothing.
    """
    in_main_thread = threading.current_thread() is threading.main_thread()
    if in_main_thread and signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
