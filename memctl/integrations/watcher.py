"""Keep the index in step with the files while people and git edit them.

A watchdog observer notes which memory files changed; a debounce waits for a quiet moment
(0.5 s by default) so a branch checkout touching 500 files gives one sync, not 500. Changes
under `.index/`, `.state/`, hidden folders and editors' temp files are ignored, so the sync's
own writes never wake the watcher up again. The whole tree is watched through one observer
watch, hidden folders included: its events arrive in the order they happened, and the server's
freshness barrier (a file made under `.state/`) relies on that order. Watches of separate folders
would each have their own queue.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

from memctl.core.files.memory import is_memory_filename

if TYPE_CHECKING:
    from watchdog.observers import ObserverType

TEMP_SUFFIXES = (".tmp", ".swp", ".swx", ".swo", "~", ".part", ".crdownload")


def is_relevant_path(root: Path, path: str | PurePath, is_directory: bool) -> bool:
    """Would a change at `path` (inside `root`) change what the index should hold?"""
    try:
        parts = PurePath(path).relative_to(root).parts
    except ValueError:
        return False
    if not parts or any(part.startswith(".") for part in parts):
        return False  # .index/, .state/, .git/, dotfiles and our own `.name.tmp` writes
    name = parts[-1]
    if name.endswith(TEMP_SUFFIXES) or name.startswith("#"):
        return False
    return is_directory or is_memory_filename(name)


@dataclass
class Debounce:
    """Fire once things have been quiet for `quiet_s`, or after `max_wait_s` of constant churn."""

    quiet_s: float = 0.5
    max_wait_s: float = 5.0
    first: float | None = None
    last: float | None = None
    events: int = 0

    def note(self, now: float) -> None:
        if self.first is None:
            self.first = now
        self.last = now
        self.events += 1

    def due(self, now: float) -> bool:
        if self.last is None or self.first is None:
            return False
        return now - self.last >= self.quiet_s or now - self.first >= self.max_wait_s

    def wait_s(self, now: float) -> float | None:
        """Seconds until `due` could turn true; None when nothing is pending."""
        if self.last is None or self.first is None:
            return None
        return max(0.0, min(self.last + self.quiet_s, self.first + self.max_wait_s) - now)

    def take(self) -> int:
        """Reset and return how many events the batch held."""
        count, self.first, self.last, self.events = self.events, None, None, 0
        return count


@dataclass
class WatchStats:
    syncs: int = 0
    events: int = 0
    errors: list[str] = field(default_factory=list)


def watch_store(
    root: Path,
    sync: Callable[[int], None],
    stop: threading.Event,
    *,
    quiet_s: float = 0.5,
    max_wait_s: float = 5.0,
    poll: bool = False,
    on_error: Callable[[Exception], None] | None = None,
    on_ready: Callable[[], None] | None = None,
    on_event: Callable[[Any, bool], None] | None = None,
) -> WatchStats:
    """Call `sync(events_in_batch)` after each quiet period until `stop` is set.

    `sync` errors go to `on_error` (the watch goes on); without it they are raised.
    `on_event(event, relevant)` hears every watchdog event at once, in the order the OS reported
    them (`relevant`: it concerns a memory file or folder).
    """
    from watchdog.events import FileSystemEventHandler
    from watchdog.observers import Observer
    from watchdog.observers.polling import PollingObserver

    make_observer: ObserverType = PollingObserver if poll else Observer

    root = Path(root).resolve()
    debounce = Debounce(quiet_s, max_wait_s)
    wake = threading.Condition()
    stats = WatchStats()

    class Noticer(FileSystemEventHandler):
        def on_any_event(self, event) -> None:
            if event.event_type in ("opened", "closed_no_write"):
                return
            paths = [event.src_path, getattr(event, "dest_path", "") or ""]
            relevant = any(p and is_relevant_path(root, p, event.is_directory) for p in paths)
            if on_event is not None:
                on_event(event, relevant)
            if relevant:
                with wake:
                    debounce.note(time.monotonic())
                    wake.notify()

    # Why: lance re-creates index folders the recursive watch already follows; watchdog warns on
    # stderr that it replaces its callback, which is what should happen.
    warnings.filterwarnings("ignore", r"Callback with id .* already exists", RuntimeWarning)
    observer = make_observer()
    observer.schedule(Noticer(), str(root), recursive=True)
    observer.start()
    if on_ready is not None:
        on_ready()  # Why: only now is a Ctrl-C sure to land in the loop below, not in an import
    try:
        while not stop.is_set():
            with wake:
                pending = debounce.wait_s(time.monotonic())
                wake.wait(timeout=0.2 if pending is None else min(max(pending, 0.01), 0.2))
                if not debounce.due(time.monotonic()):
                    continue
                count = debounce.take()
            stats.events += count
            try:
                sync(count)
                stats.syncs += 1
            except Exception as exc:  # reported; the next change retries
                stats.errors.append(str(exc))
                if on_error is None:
                    raise
                on_error(exc)
    finally:
        observer.stop()
        observer.join(timeout=5)
    return stats
