"""Access statistics (count, last access) in the state area: reading never edits a memory file.

One small JSON file, `<state>/access.json`, rewritten atomically under an exclusive lock on
`<state>/access.lock`, so concurrent processes recording accesses never lose a count.
"""

from __future__ import annotations

import fcntl
import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from memctl.core.errors import InvalidMemoryFile
from memctl.core.language.text import parse_utc_timestamp, utc_timestamp
from memctl.store.files import atomic_write, check_inside_store

ACCESS_FILENAME = "access.json"
LOCK_FILENAME = "access.lock"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class AccessStat:
    count: int
    last_access: datetime | None


def load_access(state_dir: Path) -> dict[str, AccessStat]:
    """Every memory's access statistics; memories never accessed are absent."""
    state_dir = Path(state_dir)
    try:
        return {
            memory_id: AccessStat(entry["count"], _parse(entry.get("last_access")))
            for memory_id, entry in _read(state_dir).items()
        }
    except (TypeError, ValueError) as exc:
        raise InvalidMemoryFile(
            state_dir / ACCESS_FILENAME,
            1,
            f"broken access statistics ({exc}); delete the file to reset them",
        ) from None


def record_access(state_dir: Path, ids: Iterable[str], now: datetime) -> None:
    """Count one access for each distinct id and set its last access time to `now`."""
    distinct = sorted(set(ids))
    if not distinct:
        return
    stamp = utc_timestamp(now)
    with _locked(Path(state_dir)) as path:
        items = _read(path.parent)
        for memory_id in distinct:
            entry = items.get(memory_id, {"count": 0})
            items[memory_id] = {"count": entry["count"] + 1, "last_access": stamp}
        _write_atomic(path, items)


def drop_access(state_dir: Path, ids: Iterable[str]) -> None:
    """Forget the statistics of these memories (after forget or when the memory is gone)."""
    doomed = set(ids)
    state_dir = Path(state_dir)
    if not doomed or not (state_dir / ACCESS_FILENAME).exists():
        return
    with _locked(state_dir) as path:
        items = _read(state_dir)
        if doomed.isdisjoint(items):
            return
        _write_atomic(path, {k: v for k, v in items.items() if k not in doomed})


@contextmanager
def _locked(state_dir: Path) -> Iterator[Path]:
    state_dir.mkdir(parents=True, exist_ok=True)
    check_inside_store(state_dir / LOCK_FILENAME)
    with open(state_dir / LOCK_FILENAME, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield state_dir / ACCESS_FILENAME
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _read(state_dir: Path) -> dict[str, dict]:
    path = state_dir / ACCESS_FILENAME
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidMemoryFile(
            path, exc.lineno, f"broken access statistics ({exc.msg}); delete the file to reset them"
        ) from None
    items = data.get("items") if isinstance(data, dict) else None
    if not isinstance(items, dict) or not all(
        isinstance(e, dict) and isinstance(e.get("count"), int) for e in items.values()
    ):
        raise InvalidMemoryFile(
            path, 1, "access statistics are not in memctl's format; delete the file to reset them"
        )
    return items


def _write_atomic(path: Path, items: dict[str, dict]) -> None:
    payload = json.dumps(
        {"version": FORMAT_VERSION, "items": items}, sort_keys=True, separators=(",", ":")
    )
    # Why not durable: statistics; the rename alone keeps a reader from seeing half a file.
    atomic_write(path, payload.encode("utf-8"), durable=False)


def _parse(text: str | None) -> datetime | None:
    return parse_utc_timestamp(text) if text else None
