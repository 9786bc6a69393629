"""`memctl server status` and `memctl server stop`, and what the engine itself asks of the one
holding its lock."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

from memctl.server import location
from memctl.server.client import request as control_request

STATUS_KEYS = ("running", "pid", "socket", "version", "uptime_s", "requests", "store")
ENGINE_KEYS = ("rss_mb", "memory_budget_mb", "stores", "answered_by")


def server_status(root: Path | None = None) -> dict[str, Any]:
    """`memctl server status`: the engine's own account (with `root`'s place among its open
    stores), or that none answers."""
    header: dict[str, Any] = {"op": "status"}
    if root is not None:
        header["store"] = str(root)
    answer = _ask(header)
    if answer is not None and answer.get("running"):
        return {key: answer.get(key) for key in (*STATUS_KEYS, *ENGINE_KEYS)}
    return {
        "running": False,
        "pid": None,
        "socket": location.socket_path(os.environ),
        "version": None,
        "uptime_s": None,
        "requests": None,
        "store": None if root is None else str(root),
        "rss_mb": None,
        "memory_budget_mb": None,
        "stores": [],
        "answered_by": None,
    }


def render_status(status: dict[str, Any], as_json: bool) -> str:
    """What `memctl server status` prints (the fast path and the typer command alike)."""
    if as_json:
        return json.dumps(status, ensure_ascii=False, indent=2, default=str) + "\n"
    lines = []
    for key, value in status.items():
        shown = ("yes" if value else "no") if key == "running" else value
        if key == "stores":
            shown = ", ".join(entry["store"] for entry in value) if value else None
        elif key == "answered_by":
            shown = ", ".join(f"{name} {count}" for name, count in value.items()) if value else None
        lines.append(f"{key:<16} {'-' if shown is None else shown}")
    return "\n".join(lines) + "\n"


def fast_status(argv: list[str]) -> int | None:
    """`memctl [--store S] server status [--json]` without building the CLI (~0.3 s of typer
    and rich); None for any other command line (the CLI answers it)."""
    from memctl.server.client import CommandLine

    command = CommandLine(argv)
    if command.name != "server" or command.rest not in (["status"], ["status", "--json"]):
        return None
    import sys

    root = location.find_store_root(command.store, os.getcwd(), os.environ)
    status = server_status(Path(root) if root else None)
    sys.stdout.write(render_status(status, "--json" in command.rest))
    return 0


def stop_server(wait_s: float = 30.0) -> int | None:
    """Ask the engine to stop and wait until it let go of its lock; its pid, or None when no
    engine ran. One that does not answer is sent SIGTERM."""
    answer = _ask({"op": "stop", "reason": "memctl server stop"})
    pid = answer.get("pid") if answer else None
    if answer is None:
        pid = read_info().get("pid")
        if not isinstance(pid, int) or not _lock_held():
            return None
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + wait_s
    while _lock_held() and time.monotonic() < deadline:
        time.sleep(0.05)
    return pid if isinstance(pid, int) else None


def read_info() -> dict[str, Any]:
    """What the engine holding the lock wrote down: pid, state, socket, code. Read only from
    a folder of this user's alone: another user's pid or socket is never acted on."""
    if not location.trusted_folder(location.engine_dir(os.environ)):
        return {}
    try:
        with open(location.info_path(os.environ), encoding="utf-8") as info:
            data = json.load(info)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _ask(header: dict[str, Any]) -> dict[str, Any] | None:
    """A control request at our socket path, else at the one the running engine wrote down."""
    answer = control_request(header, timeout=2.0)
    recorded = read_info().get("socket")
    if answer is None and recorded and recorded != location.socket_path(os.environ):
        answer = control_request(header, timeout=2.0, path=recorded)
    return answer


def _lock_held() -> bool:
    try:
        fd = os.open(location.lock_path(os.environ), os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
