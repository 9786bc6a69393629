"""`memctl serve`: the user's engine, one resident process answering the thin client for
every store the user opens, over one Unix socket.

Life of the engine:
1. It takes `engine.lock` in its folder (location.engine_dir: $MEMCTL_RUNTIME_DIR, else
   $XDG_RUNTIME_DIR/memctl, else ~/.cache/memctl; 0700, owned by the user, else it refuses):
   one engine per user. A second one finds it taken and asks the holder who it is: a holder
   running the same code is left alone (the newcomer exits); an older one is asked to stop; one
   that never answers is killed once it has been silent for HUNG_AFTER_S.
2. It warms up (command code, the one ONNX session of the model), binds the socket (mode
   0600, a stale file is replaced) and serves.
3. Each connection names its store. The client's code must match the engine's, else the engine
   declines and leaves (the client runs in-process and starts the new engine). A store is
   opened on its first request (memctl.server.stores), opened again when its config.yaml
   changed, and closed after its `server.idle_minutes` without a request or when its folder
   is removed (never created again). Commands run one at a time (they redirect the process's
   standard streams), each pinned to its store; the reply goes out after the command returned,
   so an acknowledged write is on disk. Adds to one store that wait while another command
   runs are taken together as one burst (memctl.cli.resident.ResidentCommands.run_burst).
4. After each command and every tick it measures its RSS against the memory budget
   (MEMCTL_ENGINE_MEMORY_MB, memctl.server.budget): over it, it closes the other stores and
   drops its caches; still over, it leaves cleanly.
5. It leaves once no store is open (the last one idled out or was removed), after
   `--idle-minutes` when no store was ever opened, when its socket disappears, on
   SIGTERM/SIGINT, or on `memctl server stop`.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any, Protocol

from memctl.config import EngineSettings, engine_settings, open_store
from memctl.server import budget, location
from memctl.server.client import CommandLine
from memctl.server.control import read_info
from memctl.server.identity import code_identity, memctl_version
from memctl.server.lock import take_lock, write_info
from memctl.server.protocol import PROTOCOL, recv_message, send_message
from memctl.server.stores import OpenStores, StoreGone, StoreSession, store_refusal

DRAIN_S = 300.0  # commands in flight may finish this long after a stop
READ_REQUEST_TIMEOUT_S = 10.0
MAX_BURST = 32  # adds waiting together run as one burst of at most this many
SEND_REPLY_TIMEOUT_S = 30.0  # a client that stops reading does not hold the next command up
DEFAULT_IDLE_MINUTES = 30.0  # an engine no store ever used leaves after this
RESTART_ABOVE_FLOOR = 1.25  # over budget after shedding and this much above its smallest shed size
SHED_EVERY_S = 60.0  # still over budget with one store open: shed again after this long
SHED_AGAIN_ABOVE = 1.1  # or once it grew this much since it last shed
TRIM_AFTER_QUIET_S = 10.0  # no request for this long: give the freed heap back
SHED_UNUSED_S = 60.0  # shedding closes the stores without a request for this long
# A request's deadline to start: one that waited this long behind another command (one store's
# slow `index`, say) is handed back and the client runs it in-process; while a command has run
# this long, new requests are declined at the door. One store cannot stall the others.
REQUEST_WAIT_S = 10.0


def _first_words(header: dict[str, Any]) -> str:
    return " ".join(str(arg) for arg in (header.get("argv") or [])[:3])


class CommandRunner(Protocol):
    """Runs one served command for one store as the client would have in-process (see
    memctl.cli.resident)."""

    def prepare(self) -> None: ...

    def run(
        self, request: dict[str, Any], stdin: bytes, session: StoreSession | None
    ) -> tuple[int, list[tuple[int, bytes]]]:
        """(exit code, [(1 or 2, bytes written to stdout/stderr)] in the order written)."""
        ...

    def batchable(self, request: dict[str, Any]) -> bool:
        """May this request run in a burst with others of its kind (concurrent adds)?"""
        ...

    def reads_first(self, request: dict[str, Any], session: StoreSession | None) -> bool:
        """Does this command change no memory file before it first asks whether the index is
        fresh (a read: recall, context)? Its freshness barrier is then planted as it starts."""
        ...

    def run_burst(
        self, requests: list[tuple[dict[str, Any], bytes]], session: StoreSession | None
    ) -> list[tuple[int, list[tuple[int, bytes]]]]:
        """What `run` gives for each request, their writes saved together."""
        ...

    def after_reply(self) -> list[str]:
        """Run what the last commands left for after their replies; the problems met."""
        ...


def make_logger(stream=None) -> logging.Logger:
    """Log lines to the standard error the engine started with (engine.log when a client
    started it), never to the sys.stderr a command is writing to at the time."""
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


class Engine:
    def __init__(
        self,
        runner: CommandRunner,
        idle_minutes: float | None = None,
        settings: EngineSettings | None = None,
    ):
        self.env = dict(os.environ)
        self.runner = runner
        self.idle_override = idle_minutes  # every store's, when given (0: never)
        minutes = DEFAULT_IDLE_MINUTES if idle_minutes is None else idle_minutes
        self.idle_s = float(minutes) * 60  # with no store ever opened; 0: never idle out
        self.settings = settings or engine_settings(self.env)
        self.budget_bytes = int(self.settings.memory_mb * budget.MB)
        self.code = code_identity()
        self.folder = location.engine_dir(self.env)
        self.socket_path = Path(location.socket_path(self.env))
        self.log = make_logger()
        self.version = ""
        self.started = time.time()
        self.requests = 0
        self.in_flight = 0
        self.last_activity = time.monotonic()
        self.stop_reason: str | None = None
        self.exec_lock = threading.Lock()
        self.stores = OpenStores(self.log, self._sync_after_changes, self._warm_store)
        self._shed: tuple[float, int] | None = None  # when it last shed, and the RSS left
        self._floor: int | None = None  # the smallest RSS shedding ever left
        self._warned = False
        self._trimmed_after = 0  # the request count at the last trim of the heap
        self._queue: list[_Waiting] = []  # run requests waiting for exec_lock, in arrival order
        self._queue_lock = threading.Lock()
        self._counts = threading.Lock()
        self._lock_fd: int | None = None
        self._listener: socket.socket | None = None
        self._socket_inode: int | None = None
        self._running: tuple[float, str] | None = None  # since when, and what, runs now

    # -- lifecycle -------------------------------------------------------------------------

    def run(self) -> int:
        """Serve until told to stop; the process exit code."""
        budget.tune_malloc()  # before the first threads: see tune_malloc
        for folder in (self.folder, self.socket_path.parent):
            if not location.private_dir(folder):
                self.log.error("folder %s is not private to this user; not serving", folder)
                return 1
        self._lock_fd = take_lock(self.env, self.code, self.log)
        if self._lock_fd is None:
            return 0
        try:
            write_info(self.env, "starting", str(self.socket_path), self.code)
            self.version = memctl_version()
            self.log.info("starting (memctl %s)", self.version)
            self._warm_up()
            self._bind()
            write_info(self.env, "serving", str(self.socket_path), self.code)
            self.last_activity = time.monotonic()  # Why: idle time counts from here, not start-up
            Path(location.starting_marker(self.env)).unlink(missing_ok=True)
            self._install_signals()
            self.log.info(
                "serving on %s (memory budget %.0f MB)", self.socket_path, self.settings.memory_mb
            )
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
        """Pay every import and the model's load now, not on the first request."""
        from memctl.config import EmbeddingSettings
        from memctl.integrations.query_embedder import get_query_embedder, run_on_one_thread

        run_on_one_thread()  # one ONNX session per model, for queries and documents alike
        self.runner.prepare()
        from memctl.service.retrieval.resident import keep_reads_resident

        keep_reads_resident()  # rows, vectors and parsed files kept between requests
        from memctl.store.parsed_memories import set_kept_limit

        set_kept_limit(self.settings.parsed_files)
        from memctl.store.index_maintenance import limit_session_caches

        limit_session_caches(budget.ENGINE_INDEX_CACHE_BYTES, budget.ENGINE_METADATA_CACHE_BYTES)
        get_query_embedder(EmbeddingSettings()).embed_query("warm up")
        # Why: the ~100k objects of the loaded modules never die; out of the collector's view,
        # a full collection no longer walks them in the middle of a request (~50-150 ms).
        gc.collect()
        gc.freeze()
        budget.trim_heap()  # Why: loading leaves ~65 MB of freed heap the OS can have back

    def _warm_store(self, session: StoreSession) -> None:
        """A store's first request: its model loaded (once per model), its table read."""
        from memctl.integrations.query_embedder import get_query_embedder
        from memctl.service.retrieval.indexing import open_index
        from memctl.service.retrieval.resident import warm_word_stems

        store = session.store
        vector = get_query_embedder(session.embedding).embed_query("warm up")
        index = open_index(store)
        if index.exists():
            index.search_vector(vector, 1, None)
            index.search_text("warm up", 1, None)
        warm_word_stems(store)

    def _sync_after_changes(self, root: Path) -> None:
        """Files changed by hand or git: index them now, before the next read asks."""
        from memctl.service.retrieval.indexing import sync_index

        with self.exec_lock:
            if not root.is_dir():
                return
            report = sync_index(open_store(root, warn=None))
        if report.added or report.updated or report.removed:
            self.log.info(
                "%s synced after file changes: added %d, updated %d, removed %d",
                root,
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
        shortest = min(
            [m * 60 for m in self._idle_minutes() if m] + ([self.idle_s] if self.idle_s else [])
            or [10.0]
        )
        return max(0.05, min(1.0, shortest / 10))

    def _idle_minutes(self) -> list[float]:
        return [s.idle_minutes(self.idle_override) for s in self.stores.sessions()]

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
        try:
            if os.stat(self.socket_path).st_ino != self._socket_inode:
                self.request_stop("socket file replaced")
        except OSError:
            self.request_stop("socket file removed")
        if self.exec_lock.acquire(blocking=False):  # Why: never close a store a command uses
            try:
                self.stores.close_idle(self.idle_override, keep_recent=None)
                if len(self.stores) > self.settings.max_stores:
                    self.stores.close_idle(
                        self.idle_override, self.settings.max_stores, "too many stores open"
                    )
                self._keep_to_budget()
                quiet = time.monotonic() - self.last_activity > TRIM_AFTER_QUIET_S
                if self._trimmed_after != self.requests and not self.in_flight and quiet:
                    # Why: a quiet moment gives the heap freed by the last requests back to
                    # the OS (glibc keeps it otherwise), so an idle engine shows its true size.
                    # Not between busy requests: the next would fault the pages back in.
                    self._trimmed_after = self.requests
                    budget.trim_heap()
                self._listener.settimeout(self._tick_s()) if self._listener else None
            finally:
                self.exec_lock.release()
        idle = time.monotonic() - self.last_activity
        if self.in_flight or self.stop_reason is not None:
            return
        if self.stores.ever_opened and not len(self.stores):
            self.request_stop(f"idle for {idle / 60:.1f} min: no store open")
        elif not self.stores.ever_opened and self.idle_s and idle > self.idle_s:
            self.request_stop(f"idle for {idle / 60:.1f} min")

    def _keep_to_budget(self) -> None:
        """Over the memory budget: close the stores not used for a minute (never the last one
        used), drop the caches; still
        over and well above the smallest size shedding ever reached (so a fresh engine would
        do better), leave. Holds exec_lock."""
        rss = budget.rss_bytes()
        if rss <= self.budget_bytes or not len(self.stores):
            return  # Why no store: what an engine with none holds is its floor (code, model)
        now = time.monotonic()
        if (
            self._shed is not None
            and rss < self._shed[1] * SHED_AGAIN_ABOVE
            and now - self._shed[0] < SHED_EVERY_S
        ):
            return  # Why: shedding again so soon would free little; not on every request
        # Why only stores idle a while: closing one in use would reopen it at the next request
        # (warming it again) and free nothing for long.
        self.stores.close_idle(self.idle_override, keep_recent=1, unused_for_s=SHED_UNUSED_S)
        budget.drop_caches()
        after = budget.rss_bytes()
        self._shed = (now, after)
        self._floor = min(self._floor or after, after)
        self.log.info(
            "over the memory budget (%.0f MB > %.0f MB): shed to %.0f MB",
            rss / budget.MB,
            self.settings.memory_mb,
            after / budget.MB,
        )
        if after > self.budget_bytes and after > self._floor * RESTART_ABOVE_FLOOR:
            self.request_stop(f"memory over budget ({after / budget.MB:.0f} MB), restarting")
        elif after > self.budget_bytes and not self._warned:
            self._warned = True
            self.log.warning("the engine needs more than its memory budget; raise it")

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
            self.stores.close_all(self.stop_reason or "stopping")
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                info = read_info()
                if info.get("pid") == os.getpid():
                    os.unlink(location.info_path(self.env))
            os.close(self._lock_fd)  # releases the lock
            self._lock_fd = None
        self.log.info("stopped")

    # -- requests --------------------------------------------------------------------------

    def status(self, store: str | None = None) -> dict[str, Any]:
        return {
            "running": True,
            "pid": os.getpid(),
            "socket": str(self.socket_path),
            "version": self.version,
            "uptime_s": round(time.time() - self.started, 1),
            "requests": self.requests,
            # Why: which requests ran as typed use-cases and which replayed a command line
            "answered_by": dict(getattr(self.runner, "counts", {})),
            "store": store,
            "rss_mb": round(budget.rss_bytes() / budget.MB, 1),
            "memory_budget_mb": self.settings.memory_mb,
            "stores": [session.summary() for session in self.stores.sessions()],
            "code": self.code,
            "stopping": self.stop_reason is not None,
        }

    def _decline_reason(self, header: dict[str, Any]) -> str | None:
        if self.stop_reason is not None:
            return "stopping"
        if header.get("protocol") != PROTOCOL:
            return "other protocol"
        if header.get("code") != self.code:
            return "other memctl code"
        return None

    def _handle(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(READ_REQUEST_TIMEOUT_S)
            header, blobs = recv_message(conn)
            op = header.get("op")
            if op == "status":
                store = header.get("store")
                send_message(conn, self.status(store if isinstance(store, str) else None))
            elif op == "stop":
                send_message(conn, {"stopping": True, "pid": os.getpid()})
                self.request_stop(str(header.get("reason") or "asked to stop"))
            elif op != "run":
                send_message(conn, {"accepted": False, "reason": f"unknown request {op!r}"})
            elif reason := self._decline_reason(header):
                send_message(conn, {"accepted": False, "reason": reason})
                if reason != "stopping":
                    self.request_stop(f"a client runs {reason}")
            elif refusal := store_refusal(header):
                # Why: a store removed, never named, or not one: the client reports it
                # in-process; the engine neither serves nor creates it.
                send_message(conn, {"accepted": False, "reason": refusal, "restart": False})
            elif busy := self._busy_reason():
                send_message(conn, {"accepted": False, "reason": busy, "restart": False})
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
            root = Path(header["store"]).resolve()
            waiting = _Waiting(conn, _pinned(header, root), stdin, root)
            waiting.batchable = self.runner.batchable(header)
            with self._queue_lock:
                self._queue.append(waiting)
            if not self.exec_lock.acquire(timeout=REQUEST_WAIT_S):
                if self._hand_back(waiting):
                    return
                self.exec_lock.acquire()  # a burst took it along: its answer is coming
            try:
                if not waiting.answered:  # else a burst that ran before took it along
                    self._run_taken(self._take(waiting))
            finally:
                self.exec_lock.release()
        finally:
            with self._counts:
                self.in_flight -= 1
                self.last_activity = time.monotonic()

    def _busy_reason(self) -> str | None:
        """Why a new request should not wait: a command has run past REQUEST_WAIT_S."""
        running = self._running
        if running is None or time.monotonic() - running[0] < REQUEST_WAIT_S:
            return None
        return f"busy: {running[1]} has run {time.monotonic() - running[0]:.0f} s"

    def _hand_back(self, waiting: _Waiting) -> bool:
        """Take a request that waited past its deadline out of the queue, unanswered (the
        connection closes; the client runs it in-process). False when a burst already took it."""
        with self._queue_lock:
            if waiting.answered or waiting not in self._queue:
                return False
            self._queue.remove(waiting)
        running = self._running
        self.log.warning(
            "handed `%s` for %s back after %.0f s in the queue%s",
            _first_words(waiting.header),
            waiting.root,
            REQUEST_WAIT_S,
            f" behind {running[1]}" if running else "",
        )
        return True

    def _take(self, waiting: _Waiting) -> list[_Waiting]:
        """`waiting`, and when it is a write that may run in a burst, the others of its store
        queued now."""
        with self._queue_lock:
            if not waiting.batchable:
                self._queue.remove(waiting)
                return [waiting]
            taken = [
                w for w in self._queue if w is waiting or (w.batchable and w.root == waiting.root)
            ][:MAX_BURST]
            if waiting not in taken:
                taken[-1] = waiting
            self._queue = [w for w in self._queue if w not in taken]
            return taken

    def _run_taken(self, taken: list[_Waiting]) -> None:
        """Run these requests of one store (one command, or a burst of adds), reply to each,
        then run the work they left for after their replies. Holds exec_lock."""
        started = time.perf_counter()
        first = taken[0]
        self._running = (time.monotonic(), f"`{_first_words(first.header)}` on {first.root}")
        try:
            self._run_taken_now(taken, started)
        finally:
            self._running = None

    def _run_taken_now(self, taken: list[_Waiting], started: float) -> None:
        first = taken[0]
        try:
            session = self.stores.session(first.root, str(first.header.get("config") or ""))
        except StoreGone as gone:
            for waiting in taken:
                self._reply(waiting, 1, [(2, f"Error: {gone}\n".encode())])
                waiting.answered = True
            return
        except Exception as exc:  # noqa: BLE001 - e.g. a broken config.yaml
            self.log.warning("could not open store %s: %s", first.root, exc)
            self.stores.close(first.root, "failed to open")
            session = None  # Why: run as in-process would, so the answer is that same error
        session_requests = len(taken)
        results: list[tuple[int, list[tuple[int, bytes]]]] = []
        try:
            if len(taken) == 1:
                watch = session.watch if session is not None else None
                if watch is not None and self.runner.reads_first(first.header, session):
                    # Why: the file watch hears the barrier while the command parses its
                    # arguments and opens the store, instead of when it asks.
                    watch.plant_barrier()
                try:
                    results = [self.runner.run(first.header, first.stdin, session)]
                finally:
                    if watch is not None:
                        watch.forget_planted()
            else:
                results = self.runner.run_burst([(w.header, w.stdin) for w in taken], session)
            if session is not None:
                session.requests += session_requests
                session.last_used = time.monotonic()
            replied = time.perf_counter()
            try:
                for waiting, (code, chunks) in zip(taken, results, strict=True):
                    self._reply(waiting, code, chunks)
            finally:
                # Why under the lock: the next command sees this one's upkeep done.
                for problem in self.runner.after_reply():
                    self.log.warning("after `%s`: %s", _first_words(first.header), problem)
                self._keep_to_budget()
        finally:
            for waiting in taken:
                waiting.answered = True
        self.log.debug(
            "%s: %s%s -> %s in %.0f ms (+%.0f ms after the reply)",
            first.root,
            _first_words(first.header),
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


def _pinned(header: dict[str, Any], root: Path) -> dict[str, Any]:
    """The request with its store made explicit: a command line naming no `--store` runs with
    MEMCTL_STORE set to the store the client found (the same one, found the same way), so the
    command cannot wander into another store."""
    if CommandLine(list(header.get("argv") or [])).store is not None:
        return header
    env = dict(header.get("env") or {})
    env["MEMCTL_STORE"] = str(root)
    return {**header, "env": env}


class _Waiting:
    """A `run` request waiting for its turn; `answered` once a command run has replied to it."""

    def __init__(self, conn: socket.socket, header: dict[str, Any], stdin: bytes, root: Path):
        self.conn, self.header, self.stdin, self.root = conn, header, stdin, root
        self.batchable = False
        self.answered = False


def serve(runner: CommandRunner, idle_minutes: float | None = None) -> int:
    return Engine(runner, idle_minutes).run()
