"""Working memory: start a task, record steps and notes, and finish it into an episode."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, overload

from memctl.config import Store
from memctl.core.errors import MemctlError, UsageError
from memctl.core.files.memory import new_id, now_iso, slugify
from memctl.core.learning.task import (
    TaskState,
    record_step,
    render_task_episode,
    start_task,
    task_importance,
    task_outcome,
)
from memctl.service.lifecycle.episodes import written_id
from memctl.service.memories.add import add_memory
from memctl.service.memories.redaction import redact_for_store
from memctl.store.task_state import clear_task, read_task, task_lock, write_task


@dataclass
class TaskDone:
    task: TaskState
    outcome: str
    importance: float
    episode_id: str
    episode_path: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task.to_dict(),
            "outcome": self.outcome,
            "importance": self.importance,
            "episode_id": self.episode_id,
            "episode_path": self.episode_path,
        }


def _no_task() -> MemctlError:
    return MemctlError("No task in progress. Start one with `memctl task start GOAL`.")


def current_task(store: Store) -> TaskState | None:
    return read_task(store.state_dir)


@overload
def _redacted(store: Store, text: str) -> str: ...
@overload
def _redacted(store: Store, text: None) -> None: ...
@overload
def _redacted(store: Store, text: str | None) -> str | None: ...


def _redacted(store: Store, text: str | None) -> str | None:
    """The task file lives on disk: what the user typed is redacted before it gets there."""
    return None if text is None else redact_for_store(store, text).text


def begin_task(
    store: Store,
    goal: str,
    plan: Sequence[str] = (),
    *,
    target: str | None = None,
    tags: Sequence[str] = (),
    now: float | None = None,
) -> TaskState:
    if not goal.strip():
        raise UsageError("The goal is empty.")
    with task_lock(store.state_dir):
        existing = read_task(store.state_dir)
        if existing is not None:
            raise MemctlError(
                f"A task is already in progress: '{existing.goal}'. Finish it first with "
                "`memctl task done` (or `memctl task done --failed`)."
            )
        task = start_task(
            new_id(now),
            _redacted(store, goal),
            [_redacted(store, step) for step in plan],
            now_iso(now),
            _redacted(store, target),
            [_redacted(store, tag) for tag in tags],
        )
        write_task(store.state_dir, task)
    return task


def step_task(
    store: Store,
    text: str,
    *,
    status: str | None = None,
    result: str | None = None,
    now: float | None = None,
) -> tuple[TaskState, int, bool]:
    """Update the step TEXT names (its number or its text), or add it."""
    if not text.strip():
        raise UsageError("The step is empty.")
    with task_lock(store.state_dir):
        task = read_task(store.state_dir)
        if task is None:
            raise _no_task()
        try:
            index, created = record_step(
                task, _redacted(store, text), now_iso(now), status, _redacted(store, result)
            )
        except ValueError as exc:
            raise UsageError(f"{str(exc)[0].upper()}{str(exc)[1:]}.") from None
        write_task(store.state_dir, task)
    return task, index, created


def note_task(store: Store, key: str, value: str, *, now: float | None = None) -> TaskState:
    if not key.strip():
        raise UsageError("The note needs a key.")
    with task_lock(store.state_dir):
        task = read_task(store.state_dir)
        if task is None:
            raise _no_task()
        task.notes[_redacted(store, key.strip())] = _redacted(store, value)
        task.updated = now_iso(now)
        write_task(store.state_dir, task)
    return task


def finish_task(
    store: Store, *, failed: bool = False, lessons: Sequence[str] = (), now: float | None = None
) -> TaskDone:
    """Turn the task into an episode memory and clear the working memory."""
    from memctl.core.learning.summarize import key_topics

    now = time.time() if now is None else now
    # Redacted before key_topics sees them: a topic cut from a secret would no longer look like one.
    lessons = [_redacted(store, " ".join(lesson.split())) for lesson in lessons if lesson.strip()]
    with task_lock(store.state_dir):
        task = read_task(store.state_dir)
        if task is None:
            raise _no_task()
        outcome = task_outcome(task, failed)
        base = store.settings.task.importance(outcome)
        importance = task_importance(base, lessons, len(task.steps))
        ended = now_iso(now)
        body = render_task_episode(task, outcome, lessons, ended)
        text = "\n".join(
            [
                task.goal,
                *(s.text for s in task.steps),
                *(s.result or "" for s in task.steps),
                *lessons,
            ]
        )
        tags = set(task.tags)
        if task.target:
            tags.add(slugify(task.target))
        extra = {
            "occurred_at": task.started,
            "ended_at": ended,
            "task_id": task.id,
            "outcome": outcome,
            "steps": [step.to_dict() for step in task.steps],
            "lessons": lessons,
            "key_topics": key_topics(_redacted(store, text), 5),
        }
        if task.target:
            extra["target"] = task.target
        result = add_memory(
            store,
            body,
            type="episodic",
            title=f"Task: {task.goal}",
            tags=sorted(tags),
            importance=importance,
            source="system_generated",
            extra=extra,
            force=True,
        )
        clear_task(store.state_dir)
    return TaskDone(task, outcome, importance, written_id(result), str(result.path))
