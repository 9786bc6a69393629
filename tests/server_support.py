"""Running memctl as a user's shell does, with and without the user's engine, and making sure
no engine outlives its test.

Each test module gets its own engine folder (MEMCTL_RUNTIME_DIR, see the `engine_home`
fixture), so its engine is its own: tests never meet a developer's engine or each other's."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memctl.server import location
from memctl.server.control import server_status, stop_server

REPO = Path(__file__).resolve().parents[1]
SCRIPT = Path(sys.executable).with_name("memctl")
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "memctl"]
PATIENCE_S = 180.0  # a server warms up in seconds; a loaded CI machine may take much longer


RUNTIME_ENV = location.RUNTIME_DIR_ENV


@pytest.fixture(scope="module", autouse=True)
def engine_home() -> Iterator[Path]:
    """A private engine folder for this module's tests (short: a socket path has ~107 bytes),
    set in os.environ so the control helpers and the memctl processes agree on it."""
    folder = Path(tempfile.mkdtemp(prefix="memctl-engine-"))
    before = os.environ.get(RUNTIME_ENV)
    os.environ[RUNTIME_ENV] = str(folder)
    try:
        yield folder
    finally:
        stop_everything()
        if before is None:
            os.environ.pop(RUNTIME_ENV, None)
        else:
            os.environ[RUNTIME_ENV] = before
        import shutil

        shutil.rmtree(folder, ignore_errors=True)


def memctl_env(server: bool = True, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("MEMCTL_")
        or k in (RUNTIME_ENV, "MEMCTL_HOOK_BUDGET")
        or k.startswith("MEMCTL_ENGINE_")
    }
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.pop("CLAUDE_PROJECT_DIR", None)
    if not server:
        env["MEMCTL_NO_SERVER"] = "1"
    env.update(extra or {})
    return env


def memctl(
    *args: str,
    cwd: Path,
    server: bool = True,
    stdin: bytes | None = None,
    env: dict[str, str] | None = None,
    pythonpath: Path | None = None,
) -> subprocess.CompletedProcess:
    """One `memctl ARGS` process, as from a shell; bytes in, bytes out."""
    environment = memctl_env(server, env)
    if pythonpath is not None:
        environment["PYTHONPATH"] = str(pythonpath)
    return subprocess.run(
        [*COMMAND, *args],
        cwd=cwd,
        env=environment,
        input=stdin if stdin is not None else b"",
        capture_output=True,
        timeout=600,
        check=False,
    )


def wait_until(condition: Callable[[], object], what: str, timeout: float = PATIENCE_S):
    """Poll until `condition()` is truthy; its value. Fails the test after `timeout` seconds
    (a bound on waiting, not a claim about speed)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting: {what}")
        time.sleep(0.1)


def status(root: Path | None = None) -> dict:
    return server_status(root)


def running_pid(root: Path | None = None) -> int | None:
    current = server_status(root)
    return current["pid"] if current["running"] else None


def store_requests(root: Path) -> int:
    """How many requests the engine answered for this store (0: not open)."""
    stores = server_status(root)["stores"] or []
    return next((s["requests"] for s in stores if s["store"] == str(root)), 0)


def wait_for_server(root: Path | None = None, not_pid: int | None = None) -> int:
    """The pid of the serving engine (one other than `not_pid`), once it answers."""

    def serving():
        pid = running_pid(root)
        return pid if pid is not None and pid != not_pid else None

    return wait_until(serving, "an engine to serve")


def server_processes(root: Path | None = None) -> list[int]:
    """Pids of `memctl serve` processes of this test module's engine folder (their
    environment names it)."""
    found = []
    needle = f"{RUNTIME_ENV}={os.environ.get(RUNTIME_ENV, '')}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parts = (entry / "cmdline").read_bytes().split(b"\0")
            if b"serve" not in parts:
                continue
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if needle in environ:
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def start_server(root: Path | None, log: Path) -> subprocess.Popen:
    """`memctl serve` in the foreground, as a user or systemd starts it; returns once serving."""
    with open(log, "ab") as output:
        process = subprocess.Popen(
            [*COMMAND, "serve"],
            env=memctl_env(True),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
        )
    wait_until(lambda: running_pid(root) == process.pid, "the started server to serve")
    return process


def stop_everything(root: Path | None = None) -> None:
    """Stop this module's engine, politely first; leaves none behind."""
    with contextlib.suppress(Exception):
        stop_server(wait_s=30)
    deadline = time.monotonic() + 60
    while True:
        pids = [pid for pid in server_processes(root) if alive(pid)]
        if not pids:
            return
        late = time.monotonic() > deadline
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL if late else signal.SIGTERM)
        time.sleep(0.2)


def socket_of(root: Path | None = None) -> Path:
    return Path(location.socket_path(os.environ))


def engine_log() -> Path:
    return Path(location.log_path(os.environ))
