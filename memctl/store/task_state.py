"""The task in progress, as `task.json` in the state area (rewritten atomically under a lock)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memctl.core.errors import InvalidMemoryFile
from memctl.core.learning.task import TaskState
from memctl.store.files import atomic_write, file_lock, read_state_json

TASK_FILENAME = "task.json"


def task_path(state_dir: Path) -> Path:
    return Path(state_dir) / TASK_FILENAME


@contextmanager
def task_lock(state_dir: Path) -> Iterator[None]:
    with file_lock(Path(state_dir) / "task.lock"):
        yield


def read_task(state_dir: Path) -> TaskState | None:
    path = task_path(state_dir)
    data = read_state_json(path, "task state")
    if data is None:
        return None
    try:
        return TaskState.from_dict(data)
    except ValueError as exc:
        raise InvalidMemoryFile(path, 1, f"broken task state: {exc}") from None


def write_task(state_dir: Path, task: TaskState) -> None:
    data = json.dumps(task.to_dict(), ensure_ascii=False, indent=2) + "\n"
    atomic_write(task_path(state_dir), data.encode("utf-8"))


def clear_task(state_dir: Path) -> None:
    task_path(state_dir).unlink(missing_ok=True)
