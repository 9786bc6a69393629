"""The stores one engine has open: each opened on its first request, closed when idle.

A store's session holds what the engine keeps for it between requests: its checked settings
(config.yaml read once, read again only when its bytes change), the model settings its index
uses, and its file watch (memctl.server.freshness). Stores stay apart: every request names its
store, and the command run for it is pinned to that store (see daemon.Engine._pinned).

`OpenStores` is also the process's freshness guard (service.retrieval.indexing): it hands each
question to the watch of the store asked about, so one watch never vouches for another store.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from memctl.config import EmbeddingSettings, Store, open_store, read_config
from memctl.server.budget import trim_heap
from memctl.server.client import CommandLine
from memctl.server.freshness import StoreWatch
from memctl.service.retrieval.indexing import SyncTicket, set_freshness_guard

# What `memctl init` leaves in every store; `.memory`: a project folder named by `--store`
STORE_MARKERS = ("config.yaml", ".state", ".memory")


def store_refusal(header: dict) -> str | None:
    """Why the engine will not run a request for the store it names (None: it will). A store is
    an existing folder of this user's that `memctl init` made (or named `.memory`), and a
    command line naming `--store` must name that same folder: a crafted message cannot point
    the engine at a folder no client would have chosen (and so make it write an index there)."""
    store, cwd = header.get("store"), header.get("cwd")
    if not isinstance(store, str) or not os.path.isabs(store) or not os.path.isdir(store):
        return "no such store"
    root = os.path.realpath(store)
    try:
        if os.stat(root).st_uid != os.getuid():
            return "the store belongs to another user"
    except OSError:
        return "no such store"
    named = os.path.basename(root) == ".memory"
    if not named and not any(os.path.lexists(os.path.join(root, m)) for m in STORE_MARKERS):
        return "not a memctl store"
    argv = header.get("argv")
    if not isinstance(argv, list) or not all(isinstance(arg, str) for arg in argv):
        return "malformed command line"
    chosen = CommandLine(argv).store
    if chosen is not None:
        if not isinstance(cwd, str) or not os.path.isabs(cwd):
            return "malformed working directory"
        given = os.path.realpath(os.path.join(cwd, os.path.expanduser(chosen)))
        # Why the inner folder too: `--store PROJECT` names the store PROJECT/.memory
        if root not in (given, os.path.realpath(os.path.join(given, ".memory"))):
            return "the command line names another store"
    return None


class StoreGone(Exception):
    """The store named by a request is no longer there (its folder was removed)."""


@dataclass
class StoreSession:
    """One open store: what the engine keeps for it between requests."""

    root: Path
    store: Store
    config: str  # location.config_digest of the config.yaml it was opened with
    embedding: EmbeddingSettings | None = None
    watch: StoreWatch | None = None
    last_used: float = field(default_factory=time.monotonic)
    requests: int = 0
    # Why: a config with warnings makes in-process commands print them; typed requests, which
    # reuse this store, would not, so they are replayed as command lines instead.
    config_warnings: bool = False

    def idle_minutes(self, override: float | None) -> float:
        """How long it stays open without a request: `memctl serve --idle-minutes`, else its
        own `server.idle_minutes`; 0 never closes it."""
        if override is not None:
            return override
        return float(self.store.settings.server.idle_minutes or 0)

    def summary(self) -> dict:
        return {
            "store": str(self.root),
            "requests": self.requests,
            "idle_s": round(time.monotonic() - self.last_used, 1),
            "watched": bool(self.watch is not None and self.watch.alive),
        }


class OpenStores:
    """The engine's open stores by root, and the freshness guard over their watches."""

    def __init__(
        self,
        log: logging.Logger,
        sync: Callable[[Path], None],
        warm: Callable[[StoreSession], None],
        watch: bool = True,
    ):
        self._log = log
        self._sync = sync  # index one store after its files changed (takes the engine's lock)
        self._warm = warm
        self._watch = watch
        self._sessions: dict[Path, StoreSession] = {}
        self._lock = threading.Lock()
        self.ever_opened = False

    def __len__(self) -> int:
        return len(self._sessions)

    def sessions(self) -> list[StoreSession]:
        with self._lock:
            return list(self._sessions.values())

    def session(self, root: Path, config: str) -> StoreSession:
        """The open session of `root`, opened now if needed, or again if its config.yaml
        changed since. Raises StoreGone when its folder is gone (nothing is created)."""
        root = root.resolve()
        with self._lock:
            current = self._sessions.get(root)
        if current is not None and current.config == config and root.is_dir():
            current.last_used = time.monotonic()
            return current
        if current is not None:
            self.close(root, "config.yaml changed" if root.is_dir() else "store folder removed")
        if not root.is_dir():
            raise StoreGone(f"Store '{root}' does not exist.")
        return self._open(root, config)

    def _open(self, root: Path, config: str) -> StoreSession:
        from memctl.service.retrieval.embedding import model_settings

        store = open_store(root, warn=None)
        session = StoreSession(root=root, store=store, config=config)
        session.config_warnings = bool(read_config(root).warnings)
        session.embedding = model_settings(store)
        if self._watch:
            watch = StoreWatch(root, lambda: self._sync(root), self._log)
            with contextlib.suppress(OSError):  # a store gone meanwhile: no watch, reads stat
                watch.start(install_guard=False)
                session.watch = watch
        with contextlib.suppress(Exception):  # warming is a head start, never a failure
            self._warm(session)
        with self._lock:
            self._sessions[root] = session
            self.ever_opened = True
            set_freshness_guard(self)
        self._log.info("opened store %s (%d open)", root, len(self._sessions))
        return session

    def close(self, root: Path, reason: str) -> None:
        from memctl.store.index_maintenance import forget_sessions_under
        from memctl.store.resident_vectors import forget_tables_under

        with self._lock:
            session = self._sessions.pop(root, None)
        if session is None:
            return
        if session.watch is not None:
            session.watch.stop()
        forget_tables_under(str(session.store.index_dir))
        forget_sessions_under(str(session.store.index_dir))
        trim_heap()
        self._log.info("closed store %s: %s (%d open)", root, reason, len(self._sessions))

    def close_all(self, reason: str) -> None:
        for session in self.sessions():
            self.close(session.root, reason)
        set_freshness_guard(None)

    def close_idle(
        self,
        override: float | None,
        keep_recent: int | None = None,
        reason: str = "memory over budget",
        unused_for_s: float = 0.0,
    ) -> None:
        """Close the stores idle past their time, or the gone ones; with `keep_recent`, every
        store but that many most recently used that had no request for `unused_for_s`."""
        now = time.monotonic()
        by_use = sorted(self.sessions(), key=lambda s: s.last_used, reverse=True)
        for rank, session in enumerate(by_use):
            minutes = session.idle_minutes(override)
            if not session.root.is_dir():
                self.close(session.root, "store folder removed")
            elif minutes and now - session.last_used > minutes * 60:
                self.close(session.root, f"idle for {(now - session.last_used) / 60:.1f} min")
            elif (
                keep_recent is not None
                and rank >= keep_recent
                and now - session.last_used >= unused_for_s
            ):
                self.close(session.root, reason)

    # -- FreshnessGuard, per store ---------------------------------------------------------

    def _watch_of(self, root: Path) -> StoreWatch | None:
        session = self._sessions.get(root.resolve())
        return session.watch if session is not None else None

    def vouches(self, root: Path, archive: bool) -> bool:
        watch = self._watch_of(root)
        return watch is not None and watch.vouches(root, archive)

    def sync_started(self, root: Path, archive: bool) -> SyncTicket | None:
        watch = self._watch_of(root)
        ticket = watch.sync_started(root, archive) if watch is not None else None
        if ticket is None or watch is None:
            return None
        return SyncTicket(token=(watch, ticket), changed=ticket.changed)

    def sync_finished(self, ticket: SyncTicket | None, complete: bool) -> None:
        if ticket is None:
            return
        token = ticket.token
        assert isinstance(token, tuple)
        watch: StoreWatch = token[0]
        watch.sync_finished(token[1], complete)
