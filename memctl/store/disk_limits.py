"""Telling a write the disk refused (no space left, the file-size limit, the quota) from other
failures, whichever layer met it: an OSError of our own writes, LanceDB's IO error, SQLite's.

Such a failure gets one clear line naming the limit (core.errors.StorageFull), not a report of
an unexpected error; work that only keeps the index up to date after the memory file landed is
left for later instead of failing the command (see service.after_reply.index_after_write).
"""

from __future__ import annotations

import errno
import os
import re
import resource
from pathlib import Path

from memctl.core.errors import StorageFull

NO_SPACE = "no space left on the device"
QUOTA = "the disk quota is used up"
LIMITS = {
    errno.ENOSPC: NO_SPACE,
    errno.EDQUOT: QUOTA,
}
_OS_ERROR = re.compile(r"os error (\d+)")  # how LanceDB (Rust) words an OSError
_SQLITE_FULL = ("database or disk is full", "disk i/o error")
LOW_FREE_BYTES = 1024 * 1024  # less than this left: the disk counts as full


def file_size_limit() -> str:
    """The process's file-size limit (`ulimit -f`), in words."""
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    return f"the file-size limit ({soft} bytes, `ulimit -f`) was reached"


def _limit_of_errno(code: int | None) -> str | None:
    if code == errno.EFBIG:
        return file_size_limit()
    return LIMITS.get(code) if code is not None else None


def _probe(path: Path | None) -> str | None:
    """For a failure that does not say why (SQLite's "disk I/O error"): a finite file-size
    limit, or a nearly full disk, is the likely cause; None when neither holds."""
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    if soft != resource.RLIM_INFINITY:
        return file_size_limit()
    if path is not None:
        try:
            info = os.statvfs(path)
        except OSError:
            return None
        if info.f_bavail * info.f_frsize < LOW_FREE_BYTES:
            return NO_SPACE
    return None


def storage_limit(error: BaseException, where: Path | None = None) -> str | None:
    """The limit `error` (or an error it was raised from) ran into, in words; None when it is
    not a refused write."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, StorageFull):
            return current.limit
        if isinstance(current, OSError):
            found = _limit_of_errno(current.errno)
            if found:
                return found
        text = str(current).lower()
        for match in _OS_ERROR.finditer(text):
            found = _limit_of_errno(int(match.group(1)))
            if found:
                return found
        if type(current).__module__ == "sqlite3" and any(s in text for s in _SQLITE_FULL):
            return _probe(where) or (NO_SPACE if "full" in text else None)
        current = current.__cause__ or current.__context__
    return None


def as_storage_full(error: BaseException, where: Path | None = None) -> StorageFull | None:
    """The one-line error for a refused write, naming the file when the error did."""
    if isinstance(error, StorageFull):
        return error
    limit = storage_limit(error, where)
    if limit is None:
        return None
    filename = getattr(error, "filename", None)
    return StorageFull(limit, str(filename) if filename else None)


def refused_write(error: OSError, path: Path) -> StorageFull | None:
    """The StorageFull for an OSError met writing `path`, when the disk refused it."""
    limit = storage_limit(error, path.parent)
    return StorageFull(limit, str(path)) if limit else None
