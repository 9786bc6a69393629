"""One engine per user: the engine's lock, and what a newcomer does when another holds it.

A second engine finds the lock taken and asks the holder who it is: a holder running the same
code is left alone (the newcomer exits); an older one is asked to stop; one that never answers
is killed once it has been silent for HUNG_AFTER_S (only if it is still a `memctl serve`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import signal
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memctl.server import location
from memctl.server.client import request as control_request
from memctl.server.control import read_info

TAKEOVER_WAIT_S = 30.0  # how long a newcomer waits for an old engine to leave
HUNG_AFTER_S = 10.0  # a lock holder silent this long (and not starting up) is killed
STARTING_TRUST_S = 120.0  # a holder says it is warming up: believed for this long


def take_lock(env: Mapping[str, str], code: str, log: logging.Logger) -> int | None:
    """The lock's file descriptor, or None when another engine should stay."""
    fd = os.open(location.lock_path(env), os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + TAKEOVER_WAIT_S
    silent_since: float | None = None
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            pass
        holder = read_info()
        answer = control_request({"op": "status"}, timeout=1.0, path=holder.get("socket"))
        if answer is not None:
            silent_since = None
            if answer.get("code") == code and not answer.get("stopping"):
                log.info("a current engine already runs (pid %s)", answer.get("pid"))
                break
            if not answer.get("stopping"):
                log.info("asking the engine of other code to stop")
                control_request(
                    {"op": "stop", "reason": "replaced by a new engine"},
                    timeout=1.0,
                    path=holder.get("socket"),
                )
        elif holder.get("state") == "starting" and (
            time.time() - float(holder.get("since") or 0) < STARTING_TRUST_S
        ):
            log.info("another engine is starting (pid %s)", holder.get("pid"))
            break
        else:
            silent_since = silent_since or time.monotonic()
            if time.monotonic() - silent_since > HUNG_AFTER_S:
                _kill_hung(holder, log)
                silent_since = None
        if time.monotonic() > deadline:
            log.warning("gave up waiting for the running engine to leave")
            break
        time.sleep(0.1)
    os.close(fd)
    return None


def _kill_hung(holder: dict[str, Any], log: logging.Logger) -> None:
    pid = holder.get("pid")
    if not isinstance(pid, int) or pid == os.getpid() or not _is_engine(pid):
        return
    log.warning("engine pid %d does not answer; killing it", pid)
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)


def _is_engine(pid: int) -> bool:
    """Is `pid` still a `memctl serve` (and not a process that reused the pid)?"""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False  # gone, or no /proc to be sure: never kill on a guess
    return b"serve" in command and any(b"memctl" in part for part in command)


def write_info(env: Mapping[str, str], state: str, socket_path: str, code: str) -> None:
    """engine.json (0600): who holds the lock, for `memctl server stop` and a newcomer."""
    info = {
        "pid": os.getpid(),
        "state": state,
        "since": time.time(),
        "socket": socket_path,
        "code": code,
    }
    path = location.info_path(env)
    temporary = f"{path}.{os.getpid()}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(json.dumps(info).encode())
    os.replace(temporary, path)
