"""Keep the server's index current from file events, and know when it already is.

A watchdog observer (the `memctl watch` code) counts changes to memory files and syncs the index
after each quiet moment. It also answers `sync_index`'s question "did any file change since the
last sync?" without the stat of every file a no-op sync costs (~60 ms at 10k memories):

- every relevant event bumps a change counter;
- a sync records the counter as it starts;
- a read trusts the index when the counter has not moved since the last sync that finished.

Events reach the observer a moment after the change, so before it answers, the watch plants a
*barrier*: it creates a file named by a fresh number in `.state/barrier/` and waits until the
observer reports it. The OS reports events in order, so by then every change made before the
question has been counted: a hand edit or a `git checkout` shows up in the very next recall.
When the observer is dead, lags past a second, or the kernel dropped events, the watch vouches
for nothing and every read stats the files as it does in-process.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

from memctl.service.retrieval.indexing import set_freshness_guard

BARRIER_DIRNAME = "barrier"
BARRIER_TIMEOUT_S = 1.0


class StoreWatch:
    """A freshness guard for one store (see memctl.service.retrieval.indexing.FreshnessGuard)."""

    def __init__(self, root: Path, sync: Callable[[], None], log: logging.Logger):
        self.root = root.resolve()
        self.barrier_dir = self.root / ".state" / BARRIER_DIRNAME
        self._sync = sync
        self._log = log
        self._stop = threading.Event()
        self._changes = 0  # relevant file events seen so far
        self._synced: dict[bool, int] = {}  # index (archive?) -> change count its last sync saw
        self._barrier_lock = threading.Lock()
        self._barrier_seen = 0
        self._barrier_next = 0
        self._heard = threading.Condition()
        self._alive = False
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        self.barrier_dir.mkdir(parents=True, exist_ok=True)
        for leftover in self.barrier_dir.iterdir():
            leftover.unlink(missing_ok=True)
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._watch, args=(ready,), name="memctl-watch", daemon=True
        )
        self._thread.start()
        ready.wait(timeout=30)
        _OverflowAlarm.install(self)
        set_freshness_guard(self)

    def stop(self) -> None:
        set_freshness_guard(None)
        self._alive = False
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    @property
    def alive(self) -> bool:
        return self._alive

    def _watch(self, ready: threading.Event) -> None:
        from memctl.integrations.watcher import watch_store

        def on_ready() -> None:
            self._alive = True
            ready.set()

        try:
            watch_store(
                self.root,
                lambda events: self._sync(),
                self._stop,
                on_error=lambda exc: self._log.warning("sync after file changes failed: %s", exc),
                on_ready=on_ready,
                on_event=self._on_event,
            )
        except Exception as exc:  # noqa: BLE001 - no watch: every read checks the files itself
            self._log.warning("file watch unavailable (%s); reads check the files each time", exc)
        finally:
            self._alive = False
            ready.set()

    # -- events ----------------------------------------------------------------------------

    def _on_event(self, path: str, relevant: bool) -> None:
        if relevant:
            self._changes += 1  # Why no lock: only the observer's one dispatch thread writes it
            return
        folder, _, name = path.rpartition(os.sep)
        if name.isdigit() and folder == str(self.barrier_dir):
            with self._heard:
                self._barrier_seen = max(self._barrier_seen, int(name))
                self._heard.notify_all()

    def lost_events(self) -> None:
        """The kernel dropped events: no vouching until a sync has looked at every file."""
        self._changes += 1

    def barrier(self) -> bool:
        """True once every file event that happened before this call has been counted."""
        if not self._alive:
            return False
        with self._barrier_lock:
            self._barrier_next += 1
            number = self._barrier_next
            marker = self.barrier_dir / str(number)
            try:
                os.close(os.open(marker, os.O_CREAT | os.O_WRONLY, 0o600))
                os.unlink(marker)
            except OSError:
                return False
            with self._heard:
                heard = self._heard.wait_for(
                    lambda: self._barrier_seen >= number or not self._alive,
                    timeout=BARRIER_TIMEOUT_S,
                )
            if not heard or not self._alive:
                self._log.warning("file watch lags; this read checks the files itself")
                return False
            return True

    # -- FreshnessGuard --------------------------------------------------------------------

    def vouches(self, root: Path, archive: bool) -> bool:
        if archive not in self._synced or root.resolve() != self.root:
            return False
        return self.barrier() and self._synced.get(archive) == self._changes

    def sync_started(self, root: Path, archive: bool) -> object:
        if root.resolve() != self.root or not self.barrier():
            return None
        return (archive, self._changes)

    def sync_finished(self, token: object, complete: bool) -> None:
        if token is None:
            return
        assert isinstance(token, tuple)
        archive: bool = token[0]
        changes: int = token[1]
        if complete:
            self._synced[archive] = changes
        else:
            self._synced.pop(archive, None)


class _OverflowAlarm(logging.Handler):
    """watchdog only logs an inotify queue overflow; hear it, since changes went unseen."""

    watch: StoreWatch | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if "overflow" in record.getMessage().lower() and self.watch is not None:
            self.watch.lost_events()

    @classmethod
    def install(cls, watch: StoreWatch) -> None:
        alarm = cls(level=logging.WARNING)
        alarm.watch = watch
        for name in ("watchdog.observers.inotify_c", "watchdog.observers.inotify"):
            logging.getLogger(name).addHandler(alarm)
