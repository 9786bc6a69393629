"""`memctl server status` and `memctl server stop`, and what the server itself asks of the
one holding its store's lock."""

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


def server_status(root: Path) -> dict[str, Any]:
    """`memctl server status`: the server's own account, or that none answers."""
    answer = _ask(root, {"op": "status"})
    if answer is not None and answer.get("running"):
        return {key: answer.get(key) for key in STATUS_KEYS}
    return {
        "running": False,
        "pid": None,
        "socket": str(location.socket_path(root, os.environ)),
        "version": None,
        "uptime_s": None,
        "requests": None,
        "store": str(root),
    }


STATUS_KEYS = ("running", "pid", "socket", "version", "uptime_s", "requests", "store")


def stop_server(root: Path, wait_s: float = 30.0) -> int | None:
    """Ask the store's server to stop and wait until it let go of its lock; its pid, or None
    when no server ran. One that does not answer is sent SIGTERM."""
    answer = _ask(root, {"op": "stop", "reason": "memctl server stop"})
    pid = answer.get("pid") if answer else None
    if answer is None:
        pid = read_info(root).get("pid")
        if not isinstance(pid, int) or not _lock_held(root):
            return None
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + wait_s
    while _lock_held(root) and time.monotonic() < deadline:
        time.sleep(0.05)
    return pid if isinstance(pid, int) else None


def read_info(root: Path) -> dict[str, Any]:
    """What the server holding the lock wrote down: pid, state, socket, code, config."""
    try:
        with open(location.info_path(root), encoding="utf-8") as info:
            data = json.load(info)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _ask(root: Path, header: dict[str, Any]) -> dict[str, Any] | None:
    """A control request at our socket path, else at the one the running server wrote down."""
    answer = control_request(root, header, timeout=2.0)
    recorded = read_info(root).get("socket")
    if answer is None and recorded and recorded != str(location.socket_path(root, os.environ)):
        answer = control_request(root, header, timeout=2.0, path=recorded)
    return answer


def _lock_held(root: Path) -> bool:
    path = location.lock_path(root)
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
