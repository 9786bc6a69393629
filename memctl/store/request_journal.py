"""Adds that already landed, by request id, so that running one again writes nothing twice.

The thin client gives each hot command a request id (MEMCTL_REQUEST_ID). When the engine dies
after it accepted an add, the client runs the add again in-process with the same id; that run
finds here whether the first one's write reached the disk, and if it did, answers with it.

Before a memory file of the request is renamed into place, the journal
(`.state/requests/<id>.json`) lists it with the SHA-256 of its new bytes; once the add has its
result, the journal holds that too. A write landed when its file holds those bytes. Records
older than a day are dropped as new ones are written.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memctl.store.files import atomic_write, observing_writes

JOURNAL_DIRNAME = "requests"
KEEP_S = 24 * 3600.0
_REQUEST_ID = re.compile(r"^[0-9a-f]{16,64}$")


def valid_request_id(value: str | None) -> str | None:
    """The id when it is one the client makes (hex); None otherwise (no journal)."""
    return value if value and _REQUEST_ID.match(value) else None


def _record_path(state_dir: Path, request_id: str) -> Path:
    return state_dir / JOURNAL_DIRNAME / f"{request_id}.json"


def _read(path: Path) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as handle:
            data = json.loads(handle.read(1024 * 1024))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write(path: Path, record: dict[str, Any]) -> None:
    # Why not durable: a killed process loses nothing it wrote; only a power cut could, and
    # then the memory file's own rename may be lost with it.
    atomic_write(path, json.dumps(record, ensure_ascii=False).encode(), durable=False)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fingerprint(request: dict[str, Any]) -> str:
    """What identifies one add's request (its text and options), for `landed`."""
    text = json.dumps(request, sort_keys=True, ensure_ascii=False, default=str)
    return _digest(text.encode("utf-8", "surrogatepass"))


def landed(root: Path, state_dir: Path, request_id: str, fingerprint: str) -> dict[str, Any] | None:
    """The record of `request_id` when it was made for the same request (`fingerprint`: a
    stray id reused for other text never replays) and every file it wrote still holds what it
    wrote (the first run's write reached the disk); None otherwise."""
    record = _read(_record_path(state_dir, request_id))
    if not record or record.get("fingerprint") != fingerprint:
        return None
    if not isinstance(record.get("writes"), list) or not record["writes"]:
        return None
    for write in record["writes"]:
        try:
            relpath, digest = write["path"], write["sha256"]
            data = (root / relpath).read_bytes()
        except (OSError, KeyError, TypeError):
            return None
        if _digest(data) != digest:
            return None
    return record


class Journal:
    """The record of one request while its add runs (see `journaling`)."""

    def __init__(self, root: Path, state_dir: Path, request_id: str, fingerprint: str):
        self.root, self.path = root, _record_path(state_dir, request_id)
        self.record: dict[str, Any] = {
            "request": request_id,
            "fingerprint": fingerprint,
            "writes": [],
        }

    def before_write(self, path: Path, data: bytes) -> None:
        relpath = os.path.relpath(path, self.root).replace(os.sep, "/")
        self.record["writes"] = [w for w in self.record["writes"] if w["path"] != relpath]
        self.record["writes"].append(
            {"path": relpath, "sha256": _digest(data), "new": not path.exists()}
        )
        self.record["at"] = time.time()
        _write(self.path, self.record)

    def finish(self, result: dict[str, Any]) -> None:
        if self.record["writes"]:
            self.record["result"] = result
            _write(self.path, self.record)


@contextlib.contextmanager
def journaling(
    root: Path, state_dir: Path, request_id: str | None, fingerprint: str
) -> Iterator[Journal | None]:
    """Within the block, this thread's memory file writes are journaled under `request_id`
    (nothing is, without one)."""
    if request_id is None:
        yield None
        return
    _prune(state_dir)
    journal = Journal(root, state_dir, request_id, fingerprint)
    with observing_writes(journal.before_write):
        yield journal


def _prune(state_dir: Path) -> None:
    folder = state_dir / JOURNAL_DIRNAME
    now = time.time()
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            with contextlib.suppress(OSError):
                if now - entry.stat(follow_symlinks=False).st_mtime > KEEP_S:
                    os.unlink(entry.path)
