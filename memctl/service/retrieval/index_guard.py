"""Reads that survive a damaged index: checked before the first read, rebuilt on a lance error.

The index is a cache of the files. A truncated data file or garbage in a version manifest must
cost a rebuild and a one-line notice, never a traceback on every recall.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from memctl.config import Store
from memctl.service.retrieval.indexing import (
    index_damage,
    local_index,
    manifest_name,
    notify_repair,
    open_index,
    sync_index,
)
from memctl.store.index import Manifest
from memctl.store.index_health import describe, looks_damaged, table_problem

T = TypeVar("T")
_verified: set[tuple[str, bool]] = set()


def verify_index(store: Store, archive: bool = False) -> None:
    """Check the table once per process before reading it: its latest version opens, its data
    files have their recorded sizes, it holds as many memories as the last sync wrote. A damaged
    one is rebuilt from the files."""
    key = (str(store.index_dir), archive)
    if key in _verified:
        return
    _verified.add(key)
    index = local_index(store, archive)
    if not index.exists():
        return
    stamp = Manifest.load_stamp(store.index_dir, manifest_name(archive))
    expected = stamp.get("unchanged") if isinstance(stamp.get("unchanged"), int) else None
    if table_problem(index, expected) is None:
        return
    problem = index_damage(store, archive)  # Why: again under the lock; a sync may be under way
    if problem:
        repair_index(store, problem, archive)


def repair_index(store: Store, problem: str, archive: bool = False) -> None:
    sync_index(store, rebuild=True, archive=archive)
    notify_repair(problem)


def read_repairing(store: Store, read: Callable[[], T], archive: bool = False) -> T:
    """`read()`, and once more after a rebuild when the index turns out to be damaged."""
    try:
        return read()
    except Exception as exc:
        if not looks_damaged(exc):
            raise
        repair_index(store, describe(exc))
        if archive and open_index(store, archive=True).exists():
            sync_index(store, rebuild=True, archive=True)
        return read()
