"""Keep the server's index current from file events, and know when it already is.

A watchdog observer (the `memctl watch` code) counts changes to memory files and syncs the index
after each quiet moment. It also answers `sync_index`'s question "did any file change since the
last sync?" without the stat of every file a no-op sync costs (~60 ms at 10k memories):

- every relevant event bumps a change counter and notes which files it touched;
- a sync records the counter as it starts, and stats only the files touched since the last one
  (a folder created, moved or deleted, or lost events, make it stat them all);
- a read trusts the index when the counter has not moved since the last sync that finished.

Events reach the observer a moment after the change, so before it answers, the watch plants a
*barrier*: it creates a file named by a fresh number in `.state/barrier/` and waits until the
observer reports it. The OS reports events in order, so by then every change made before the
question has been counted: a hand edit or a `git checkout` shows up in the very next recall.
A read (recall, context) has its barrier planted as it starts, and the observer reports it
while the command parses its arguments; its first question waits for that one.
When the observer is dead, lags past a second, or the kernel dropped events, the watch vouches
for nothing and every read stats the files as it does in-process.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

from memctl.service.retrieval.indexing import SyncTicket, set_freshness_guard

BARRIER_DIRNAME = "barrier"
BARRIER_TIMEOUT_S = 1.0
MAX_TOUCHED = 10_000


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
        # (change count, relative paths touched or None for "can't tell") of recent changes
        self._touched: list[tuple[int, frozenset[str] | None]] = []
        self._touched_lock = threading.Lock()
        self._barrier_lock = threading.Lock()
        self._barrier_seen = 0
        self._barrier_next = 0
        self._planted: int | None = None  # see plant_barrier
        self._heard = threading.Condition()
        self._alive = False
        self._thread: threading.Thread | None = None
        self._installed = False

    # -- lifecycle -------------------------------------------------------------------------

    def start(self, install_guard: bool = True) -> None:
        """Watch the store; with `install_guard`, be the process's freshness guard (the engine
        installs one guard over every store's watch instead). Raises OSError when the store's
        folder is gone: nothing of it is created again."""
        (self.root / ".state").mkdir(exist_ok=True)  # Why no parents: never recreate the store
        self.barrier_dir.mkdir(exist_ok=True)
        for leftover in self.barrier_dir.iterdir():
            leftover.unlink(missing_ok=True)
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._watch, args=(ready,), name="memctl-watch", daemon=True
        )
        self._thread.start()
        ready.wait(timeout=30)
        _OverflowAlarm.install(self)
        self._installed = install_guard
        if install_guard:
            set_freshness_guard(self)

    def stop(self) -> None:
        if self._installed:
            set_freshness_guard(None)
        _OverflowAlarm.remove(self)
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

    def _on_event(self, event, relevant: bool) -> None:
        if relevant:
            self._note_change(self._touched_paths(event))
            return
        folder, _, name = str(event.src_path).rpartition(os.sep)
        if name.isdigit() and folder == str(self.barrier_dir):
            with self._heard:
                self._barrier_seen = max(self._barrier_seen, int(name))
                self._heard.notify_all()

    def _touched_paths(self, event) -> frozenset[str] | None:
        if event.is_directory:
            # Why: a folder's own "modified" comes with events for the files in it; a folder
            # created, moved or deleted may carry files that get no event of their own.
            return frozenset() if event.event_type == "modified" else None
        touched = set()
        for path in (event.src_path, getattr(event, "dest_path", "") or ""):
            if path:
                try:
                    touched.add(Path(str(path)).relative_to(self.root).as_posix())
                except ValueError:
                    continue  # moved in from or out to another folder
        return frozenset(touched)

    def _note_change(self, touched: frozenset[str] | None) -> None:
        with self._touched_lock:
            self._changes += 1
            self._touched.append((self._changes, touched))
            if len(self._touched) > MAX_TOUCHED:  # Why: bounded; the next sync scans instead
                self._touched = [(self._changes, None)]

    def lost_events(self) -> None:
        """The kernel dropped events: no vouching until a sync has looked at every file."""
        self._note_change(None)

    def _changed_since(self, synced: int | None) -> frozenset[str] | None:
        if synced is None:
            return None
        changed: set[str] = set()
        with self._touched_lock:
            for number, touched in self._touched:
                if number <= synced:
                    continue
                if touched is None:
                    return None
                changed |= touched
        return frozenset(changed)

    def plant_barrier(self) -> None:
        """Plant the barrier the next `barrier()` call waits for now, so the observer reports it
        while the caller does other work (see the server's `reads_first` commands).

        Only for a command that changes no memory file before its first freshness question:
        the answer covers the changes made before this call, not those after it."""
        with self._barrier_lock:
            self._planted = self._plant() if self._alive else None

    def forget_planted(self) -> None:
        """A planted barrier no `barrier()` call took is not for the next command."""
        with self._barrier_lock:
            self._planted = None

    def _plant(self) -> int | None:
        self._barrier_next += 1
        marker = self.barrier_dir / str(self._barrier_next)
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_WRONLY, 0o600))
            os.unlink(marker)
        except OSError:
            return None
        return self._barrier_next

    def barrier(self) -> bool:
        """True once every file event that happened before this call (or before the barrier
        planted for it, see plant_barrier) has been counted."""
        if not self._alive:
            return False
        with self._barrier_lock:
            number, self._planted = self._planted, None
            number = number or self._plant()
            if number is None:
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

    def sync_started(self, root: Path, archive: bool) -> SyncTicket | None:
        if root.resolve() != self.root or not self.barrier():
            return None
        changes = self._changes
        changed = self._changed_since(self._synced.get(archive))
        return SyncTicket(token=(archive, changes), changed=changed)

    def sync_finished(self, ticket: SyncTicket | None, complete: bool) -> None:
        if ticket is None:
            return
        assert isinstance(ticket.token, tuple)
        archive: bool = ticket.token[0]
        changes: int = ticket.token[1]
        if not complete:
            self._synced.pop(archive, None)
            return
        self._synced[archive] = changes
        with self._touched_lock:  # what every index has seen need not be kept
            oldest = min(self._synced.values())
            self._touched = [entry for entry in self._touched if entry[0] > oldest]


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
        for name in WATCHDOG_LOGGERS:
            logging.getLogger(name).addHandler(alarm)

    @classmethod
    def remove(cls, watch: StoreWatch) -> None:
        """Drop the alarms of a watch that stopped (an engine closes stores all day long)."""
        for name in WATCHDOG_LOGGERS:
            logger = logging.getLogger(name)
            for handler in list(logger.handlers):
                if isinstance(handler, cls) and handler.watch is watch:
                    logger.removeHandler(handler)


WATCHDOG_LOGGERS = ("watchdog.observers.inotify_c", "watchdog.observers.inotify")
