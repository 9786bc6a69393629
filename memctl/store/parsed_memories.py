"""Parsed memory files kept by a process that lives on (the server), by file identity.

A warm recall reads its hits' files (the truth, the index only a cache): ~0.7 ms each to read
and parse, ~0.08 ms to stat and copy a kept one. A file is known by its inode, size, and
modification and change times, so an edit by hand or by git is read again; a symlink or
anything but a regular file is read afresh each time, under store.safe_read's rules.
Off unless `keep_parsed()` was called.
"""

from __future__ import annotations

import copy
import os
import stat
import threading
from collections import OrderedDict
from pathlib import Path

from memctl.core.files.memory import Memory
from memctl.store.files import read_memory

MAX_KEPT = 4096  # the default; an engine sets its own (set_kept_limit)

_kept: OrderedDict[tuple, Memory] | None = None
_lock = threading.Lock()


_limit = MAX_KEPT


def keep_parsed(enabled: bool = True) -> None:
    global _kept
    with _lock:
        _kept = OrderedDict() if enabled else None


def set_kept_limit(limit: int) -> None:
    """Keep at most this many parsed files (the engine's budget decides; ~3 KB each)."""
    global _limit
    _limit = max(1, limit)


def _identity(path: Path) -> tuple | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def read_memory_kept(root: Path, relpath: str, max_bytes: int, shared: bool = False) -> Memory:
    """read_memory(), from the kept copy when the file is the one parsed then (a copy: the
    caller may change it; with `shared`, the kept object itself, for a caller that only
    reads it: stats and list over thousands of files skip ~0.08 ms a copy)."""
    if _kept is None:
        return read_memory(root, relpath, max_bytes=max_bytes)
    path = root / relpath
    before = _identity(path)
    key = (str(path), max_bytes, before)
    if before is not None:
        with _lock:
            kept = _kept.get(key) if _kept is not None else None
            if kept is not None:
                _kept.move_to_end(key)
        if kept is not None:
            return kept if shared else copy.deepcopy(kept)
    memory = read_memory(root, relpath, max_bytes=max_bytes)
    # Why stat again: a file written while it was read is not kept under either identity.
    if before is not None and _identity(path) == before:
        with _lock:
            if _kept is not None:
                _kept[key] = copy.deepcopy(memory)
                while len(_kept) > _limit:
                    _kept.popitem(last=False)
    return memory
