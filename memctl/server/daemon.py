"""`memctl serve`: one resident process per store, answering the thin client over a Unix socket.

Life of a server:
1. It takes `.state/server.lock` (flock, held until it exits): one server per store. A second
   one finds it taken and asks the holder who it is: a holder running the same code and config
   is left alone (the newcomer exits); an older one is asked to stop; one that never answers is
   killed once it has been silent for HUNG_AFTER_S. The newcomer then gets the lock.
2. It warms up (command code, both ONNX sessions, the LanceDB table), starts the file watch,
   binds the socket (mode 0600, a stale file is replaced) and serves.
3. Each connection: the client's code and config identity must match the server's, else the
   server declines and leaves (the client runs in-process and starts the new server). Commands
   run one at a time (they redirect the process's standard streams); the reply goes out after
   the command returned, so an acknowledged write is on disk. Adds that wait while another
   command runs are taken together as one burst: one embedding call, one index sync (see
   memctl.cli.resident.ResidentCommands.run_burst); each client still gets its own answer.
4. It leaves after `server.idle_minutes` without a request, when its store folder or socket
   disappears, on SIGTERM/SIGINT, or on `memctl server stop`.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import json
import logging
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any, Protocol

from memctl.config import Store, open_store
from memctl.server import location
from memctl.server.client import request as control_request
from memctl.server.control import read_info
from memctl.server.freshness import StoreWatch
from memctl.server.identity import code_identity, memctl_version
from memctl.server.protocol import PROTOCOL, recv_message, send_message
from memctl.store.files import atomic_write

TAKEOVER_WAIT_S = 30.0  # how long a newcomer waits for an old server to leave
HUNG_AFTER_S = 10.0  # a lock holder silent this long (and not starting up) is killed
STARTING_TRUST_S = 120.0  # a holder says it is warming up: believed for this long
DRAIN_S = 300.0  # commands in flight may finish this long after a stop
READ_REQUEST_TIMEOUT_S = 10.0
MAX_BURST = 32  # adds waiting together run as one burst of at most this many
SEND_REPLY_TIMEOUT_S = 30.0  # a client that stops reading does not hold the next command up


def _first_words(header: dict[str, Any]) -> str:
    return " ".join(str(arg) for arg in (header.get("argv") or [])[:3])


class CommandRunner(Protocol):
    """Runs one CLI command line as the client would have in-process (see memctl.cli.resident)."""

    def prepare(self) -> None: ...

    def run(self, request: dict[str, Any], stdin: bytes) -> tuple[int, list[tuple[int, bytes]]]:
        """(exit code, [(1 or 2, bytes written to stdout/stderr)] in the order written)."""
        ...

    def batchable(self, request: dict[str, Any]) -> bool:
        """May this request run in a burst with others of its kind (concurrent adds)?"""
        ...

    def reads_first(self, request: dict[str, Any]) -> bool:
        """Does this command change no memory file before it first asks whether the index is
        fresh (a read: recall, context)? Its freshness barrier is then planted as it starts."""
        ...

    def run_burst(
        self, requests: list[tuple[dict[str, Any], bytes]]
    ) -> list[tuple[int, list[tuple[int, bytes]]]]:
        """What `run` gives for each request, their writes saved together."""
        ...

    def after_reply(self) -> list[str]:
        """Run what the last commands left for after their replies; the problems met."""
        ...


def make_logger(stream=None) -> logging.Logger:
    """Log lines to the standard error the server started with (`.state/server.log` when a
    client started it), never to the sys.stderr a command is writing to at the time."""
    logger = logging.getLogger("memctl.server")
    if not logger.handlers:
        handler = logging.StreamHandler(stream or sys.stderr)
        handler.setFormatter(
            logging.Formatter("%(asctime)s pid=%(process)d %(levelname)s %(message)s")
        )
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG if os.environ.get("MEMCTL_DEBUG") else logging.INFO)
        logger.propagate = False
    return logger


class ResidentServer:
    def __init__(self, store: Store, runner: CommandRunner, idle_minutes: float | None = None):
        self.store = store
        self.root = store.root.resolve()
        self.runner = runner
        minutes = store.settings.server.idle_minutes if idle_minutes is None else idle_minutes
        self.idle_s = float(minutes or 0) * 60  # 0: never idle out
        self.code = code_identity()
        self.config = location.config_digest(location.config_bytes(self.root))
        self.socket_path = Path(location.socket_path(self.root, os.environ))
        self.log = make_logger()
        self.version = ""
        self.started = time.time()
        self.requests = 0
        self.in_flight = 0
        self.last_activity = time.monotonic()
        self.stop_reason: str | None = None
        self.exec_lock = threading.Lock()
        self._queue: list[_Waiting] = []  # run requests waiting for exec_lock, in arrival order
        self._queue_lock = threading.Lock()
        self._counts = threading.Lock()
        self._lock_fd: int | None = None
        self._listener: socket.socket | None = None
        self._socket_inode: int | None = None
        self.watch: StoreWatch | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def run(self) -> int:
        """Serve until told to stop; the process exit code."""
        if not location.private_socket_dir(self.socket_path):
            self.log.error("socket folder %s is not private to this user", self.socket_path.parent)
            return 1
        self._lock_fd = self._take_lock()
        if self._lock_fd is None:
            return 0
        try:
            self._write_info("starting")
            self.version = memctl_version()
            self.log.info("starting for %s (memctl %s)", self.root, self.version)
            self._warm_up()
            self.watch = StoreWatch(self.root, self._sync_after_changes, self.log)
            self.watch.start()
            self._bind()
            self._write_info("serving")
            self.last_activity = time.monotonic()  # Why: idle time counts from here, not start-up
            Path(location.starting_marker(self.root)).unlink(missing_ok=True)
            self._install_signals()
            self.log.info("serving on %s", self.socket_path)
            self._accept_until_stopped()
            return 0
        finally:
            self._shut_down()

    def request_stop(self, reason: str) -> None:
        if self.stop_reason is None:
            self.stop_reason = reason

    def _install_signals(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(number, lambda signum, frame: self.request_stop(f"signal {signum}"))

    def _warm_up(self) -> None:
        """Pay every import and model load now, not on the first request."""
        from memctl.integrations.query_embedder import run_on_one_thread

        run_on_one_thread()
        self.runner.prepare()
        from memctl.service.retrieval.embedding import store_embedder, store_query_embedder
        from memctl.service.retrieval.indexing import open_index
        from memctl.service.retrieval.resident import keep_reads_resident, warm_word_stems

        keep_reads_resident()  # rows, vectors and parsed files kept between requests
        embedder = store_embedder(self.store)
        vector = embedder.embed(["warm up"])[0]
        store_query_embedder(self.store).embed_query("warm up")
        index = open_index(self.store)
        with contextlib.suppress(Exception):  # an index being built elsewhere: warm it later
            if index.exists():
                index.search_vector(vector, 1, None)
                index.search_text("warm up", 1, None)
            warm_word_stems(self.store)
        # Why: the ~100k objects of the loaded modules never die; out of the collector's view,
        # a full collection no longer walks them in the middle of a request (~50-150 ms).
        gc.collect()
        gc.freeze()

    def _sync_after_changes(self) -> None:
        """Files changed by hand or git: index them now, before the next read asks."""
        from memctl.service.retrieval.indexing import sync_index

        with self.exec_lock:
            store = open_store(self.root)
            report = sync_index(store)
        if report.added or report.updated or report.removed:
            self.log.info(
                "synced after file changes: added %d, updated %d, removed %d",
                report.added,
                report.updated,
                report.removed,
            )

    def _bind(self) -> None:
        path = str(self.socket_path)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # Why: we hold the lock, so whoever made this file is gone
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)
        try:
            listener.bind(path)
        finally:
            os.umask(old_umask)
        os.chmod(path, 0o600)
        listener.listen(64)
        listener.settimeout(self._tick_s())
        self._listener = listener
        self._socket_inode = os.stat(path).st_ino

    def _tick_s(self) -> float:
        return min(1.0, self.idle_s / 10) if self.idle_s else 1.0

    def _accept_until_stopped(self) -> None:
        assert self._listener is not None
        while self.stop_reason is None:
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                self._check_surroundings()
                continue
            except OSError as exc:
                if self.stop_reason is None:
                    self.request_stop(f"socket failed: {exc}")
                break
            threading.Thread(
                target=self._handle, args=(conn,), name="memctl-request", daemon=True
            ).start()
            self._check_surroundings()

    def _check_surroundings(self) -> None:
        if not self.root.is_dir():
            self.request_stop("store folder removed")
            return
        try:
            if os.stat(self.socket_path).st_ino != self._socket_inode:
                self.request_stop("socket file replaced")
        except OSError:
            self.request_stop("socket file removed")
        idle = time.monotonic() - self.last_activity
        if self.idle_s and self.in_flight == 0 and idle > self.idle_s:
            self.request_stop(f"idle for {idle / 60:.1f} min")

    def _shut_down(self) -> None:
        self.log.info("stopping: %s", self.stop_reason or "start-up failed")
        if self._listener is not None:
            self._listener.close()
            with contextlib.suppress(OSError):
                if os.stat(self.socket_path).st_ino == self._socket_inode:
                    os.unlink(self.socket_path)
        deadline = time.monotonic() + DRAIN_S
        while self.in_flight and time.monotonic() < deadline:
            time.sleep(0.05)
        with self.exec_lock:  # Why: a watcher sync in progress finishes before we go
            if self.watch is not None:
                self.watch.stop()
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                info = read_info(self.root)
                if info.get("pid") == os.getpid():
                    os.unlink(location.info_path(self.root))
            os.close(self._lock_fd)  # releases the lock
            self._lock_fd = None
        self.log.info("stopped")

    # -- one server per store --------------------------------------------------------------

    def _take_lock(self) -> int | None:
        """The lock's file descriptor, or None when another server should stay."""
        path = location.lock_path(self.root)
        os.makedirs(location.state_dir(self.root), exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        deadline = time.monotonic() + TAKEOVER_WAIT_S
        silent_since: float | None = None
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                pass
            holder = self._read_info()
            # Why the holder's own socket: a client with another XDG_RUNTIME_DIR (a long store
            # path) may have started it under another name than ours.
            answer = control_request(
                self.root, {"op": "status"}, timeout=1.0, path=holder.get("socket")
            )
            if answer is not None:
                silent_since = None
                current = answer.get("code") == self.code and answer.get("config") == self.config
                if current and not answer.get("stopping"):
                    self.log.info("a current server already runs (pid %s)", answer.get("pid"))
                    break
                if not answer.get("stopping"):
                    self.log.info("asking the server of other code or config to stop")
                    control_request(
                        self.root,
                        {"op": "stop", "reason": "replaced by a new server"},
                        timeout=1.0,
                        path=holder.get("socket"),
                    )
            elif holder.get("state") == "starting" and (
                time.time() - float(holder.get("since") or 0) < STARTING_TRUST_S
            ):
                self.log.info("another server is starting (pid %s)", holder.get("pid"))
                break
            else:
                silent_since = silent_since or time.monotonic()
                if time.monotonic() - silent_since > HUNG_AFTER_S:
                    self._kill_hung(holder)
                    silent_since = None
            if time.monotonic() > deadline:
                self.log.warning("gave up waiting for the running server to leave")
                break
            time.sleep(0.1)
        os.close(fd)
        return None

    def _kill_hung(self, holder: dict[str, Any]) -> None:
        pid = holder.get("pid")
        if not isinstance(pid, int) or pid == os.getpid() or not self._is_our_server(pid):
            return
        self.log.warning("server pid %d does not answer; killing it", pid)
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)

    def _is_our_server(self, pid: int) -> bool:
        """Is `pid` still a `memctl serve` of this store (and not a process that reused it)?"""
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return False  # gone, or no /proc to be sure: never kill on a guess
        return b"serve" in command and os.fsencode(self.root) in command

    def _read_info(self) -> dict[str, Any]:
        return read_info(self.root)

    def _write_info(self, state: str) -> None:
        info = {
            "pid": os.getpid(),
            "state": state,
            "since": time.time(),
            "socket": str(self.socket_path),
            "code": self.code,
            "config": self.config,
        }
        atomic_write(Path(location.info_path(self.root)), json.dumps(info).encode())

    # -- requests --------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        return {
            "running": True,
            "pid": os.getpid(),
            "socket": str(self.socket_path),
            "version": self.version,
            "uptime_s": round(time.time() - self.started, 1),
            "requests": self.requests,
            "store": str(self.root),
            "code": self.code,
            "config": self.config,
            "stopping": self.stop_reason is not None,
        }

    def _decline_reason(self, header: dict[str, Any]) -> str | None:
        if self.stop_reason is not None:
            return "stopping"
        if header.get("protocol") != PROTOCOL:
            return "other protocol"
        if header.get("code") != self.code:
            return "other memctl code"
        if header.get("config") != self.config:
            return "config.yaml changed"
        return None

    def _handle(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(READ_REQUEST_TIMEOUT_S)
            header, blobs = recv_message(conn)
            op = header.get("op")
            if op == "status":
                send_message(conn, self.status())
            elif op == "stop":
                send_message(conn, {"stopping": True, "pid": os.getpid()})
                self.request_stop(str(header.get("reason") or "asked to stop"))
            elif op != "run":
                send_message(conn, {"accepted": False, "reason": f"unknown request {op!r}"})
            elif reason := self._decline_reason(header):
                send_message(conn, {"accepted": False, "reason": reason})
                if reason != "stopping":
                    self.request_stop(f"a client runs {reason}")
            else:
                self._run(conn, header, blobs[0] if blobs else b"")
        except (ConnectionError, OSError, ValueError) as exc:
            self.log.info("connection dropped: %s", exc)
        finally:
            conn.close()

    def _run(self, conn: socket.socket, header: dict[str, Any], stdin: bytes) -> None:
        with self._counts:
            self.in_flight += 1
            self.requests += 1
            self.last_activity = time.monotonic()
        try:
            send_message(conn, {"accepted": True})
            waiting = _Waiting(conn, header, stdin, self.runner.batchable(header))
            with self._queue_lock:
                self._queue.append(waiting)
            with self.exec_lock:
                if not waiting.answered:  # else a burst that ran before took it along
                    self._run_taken(self._take(waiting))
        finally:
            with self._counts:
                self.in_flight -= 1
                self.last_activity = time.monotonic()

    def _take(self, waiting: _Waiting) -> list[_Waiting]:
        """`waiting`, and when it is a write that may run in a burst, the others queued now."""
        with self._queue_lock:
            if not waiting.batchable:
                self._queue.remove(waiting)
                return [waiting]
            taken = [w for w in self._queue if w is waiting or w.batchable][:MAX_BURST]
            if waiting not in taken:
                taken[-1] = waiting
            self._queue = [w for w in self._queue if w not in taken]
            return taken

    def _run_taken(self, taken: list[_Waiting]) -> None:
        """Run these requests (one command, or a burst of adds), reply to each, then run the
        work they left for after their replies. Holds exec_lock."""
        started = time.perf_counter()
        watch = self.watch
        try:
            if len(taken) == 1:
                if watch is not None and self.runner.reads_first(taken[0].header):
                    # Why: the file watch hears the barrier while the command parses its
                    # arguments and opens the store, instead of when it asks.
                    watch.plant_barrier()
                try:
                    results = [self.runner.run(taken[0].header, taken[0].stdin)]
                finally:
                    if watch is not None:
                        watch.forget_planted()
            else:
                results = self.runner.run_burst([(w.header, w.stdin) for w in taken])
            replied = time.perf_counter()
            try:
                for waiting, (code, chunks) in zip(taken, results, strict=True):
                    self._reply(waiting, code, chunks)
            finally:
                # Why under the lock: the next command sees this one's upkeep done.
                for problem in self.runner.after_reply():
                    self.log.warning("after `%s`: %s", _first_words(taken[0].header), problem)
        finally:
            for waiting in taken:
                waiting.answered = True
        self.log.debug(
            "%s%s -> %s in %.0f ms (+%.0f ms after the reply)",
            _first_words(taken[0].header),
            f" (a burst of {len(taken)})" if len(taken) > 1 else "",
            ",".join(str(code) for code, _ in results),
            (replied - started) * 1000,
            (time.perf_counter() - replied) * 1000,
        )

    def _reply(self, waiting: _Waiting, code: int, chunks: list[tuple[int, bytes]]) -> None:
        try:
            waiting.conn.settimeout(SEND_REPLY_TIMEOUT_S)
            send_message(
                waiting.conn,
                {"exit": code, "streams": [n for n, _ in chunks]},
                tuple(d for _, d in chunks),
            )
        except (ConnectionError, OSError) as exc:
            self.log.info("reply to `%s` lost: %s", _first_words(waiting.header), exc)


class _Waiting:
    """A `run` request waiting for its turn; `answered` once a command run has replied to it."""

    def __init__(self, conn: socket.socket, header: dict[str, Any], stdin: bytes, batchable: bool):
        self.conn, self.header, self.stdin, self.batchable = conn, header, stdin, batchable
        self.answered = False


def serve(store: Store, runner: CommandRunner, idle_minutes: float | None = None) -> int:
    return ResidentServer(store, runner, idle_minutes).run()
