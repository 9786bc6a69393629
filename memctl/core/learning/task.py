"""Working memory: the task in progress (goal, plan steps with status, notes) as plain values."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memctl.core.language.text import clip

STEP_STATUSES = ("pending", "in_progress", "done", "failed")
OUTCOMES = ("success", "partial", "failed")
STEP_MARKS = {"pending": "[ ]", "in_progress": "[>]", "done": "[x]", "failed": "[!]"}
RESULT_CHARS = 200


@dataclass
class TaskStep:
    text: str
    status: str = "pending"
    result: str | None = None
    updated: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "status": self.status,
            "result": self.result,
            "updated": self.updated,
        }


@dataclass
class TaskState:
    id: str
    goal: str
    started: str
    updated: str
    steps: list[TaskStep] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)
    target: str | None = None
    tags: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "goal": self.goal,
            "target": self.target,
            "tags": list(self.tags),
            "started": self.started,
            "updated": self.updated,
            "steps": [step.to_dict() for step in self.steps],
            "notes": dict(self.notes),
        }

    @classmethod
    def from_dict(cls, data: Any) -> TaskState:
        """Raises ValueError naming the field that is wrong."""
        if not isinstance(data, dict):
            raise ValueError("the task must be a JSON object")
        for key in ("id", "goal", "started"):
            if not isinstance(data.get(key), str) or not data[key]:
                raise ValueError(f"'{key}' must be a non-empty string")
        steps = []
        for number, raw in enumerate(data.get("steps") or [], start=1):
            if not isinstance(raw, dict) or not isinstance(raw.get("text"), str):
                raise ValueError(f"step {number} must be an object with a 'text'")
            status = raw.get("status") or "pending"
            if status not in STEP_STATUSES:
                raise ValueError(
                    f"step {number} has status '{status}'; "
                    f"expected one of {', '.join(STEP_STATUSES)}"
                )
            steps.append(TaskStep(raw["text"], status, raw.get("result"), raw.get("updated")))
        notes = data.get("notes") or {}
        if not isinstance(notes, dict):
            raise ValueError("'notes' must be an object")
        return cls(
            id=data["id"],
            goal=data["goal"],
            started=data["started"],
            updated=data.get("updated") or data["started"],
            steps=steps,
            notes={str(k): str(v) for k, v in notes.items()},
            target=data.get("target") or None,
            tags=[str(t) for t in data.get("tags") or []],
        )


def start_task(
    task_id: str,
    goal: str,
    plan: Sequence[str],
    now: str,
    target: str | None = None,
    tags: Sequence[str] = (),
) -> TaskState:
    steps = [TaskStep(text.strip(), "pending", None, now) for text in plan if text.strip()]
    return TaskState(task_id, goal.strip(), now, now, steps, {}, target, sorted(set(tags)))


def find_step(task: TaskState, ref: str) -> int | None:
    """A step by its number (1-based) or by its text (case-insensitive)."""
    ref = ref.strip()
    if ref.isdigit() and 1 <= int(ref) <= len(task.steps):
        return int(ref) - 1
    for index, step in enumerate(task.steps):
        if step.text.casefold() == ref.casefold():
            return index
    return None


def record_step(
    task: TaskState, ref: str, now: str, status: str | None = None, result: str | None = None
) -> tuple[int, bool]:
    """Update the step `ref` names, or add it (in progress unless told otherwise).

    Returns (index, created).
    """
    if status is not None and status not in STEP_STATUSES:
        raise ValueError(f"status '{status}' is not one of {', '.join(STEP_STATUSES)}")
    index = find_step(task, ref)
    created = index is None
    if index is None:
        if ref.strip().isdigit():
            raise ValueError(f"there is no step {ref.strip()} (the plan has {len(task.steps)})")
        task.steps.append(TaskStep(ref.strip(), status or "in_progress", None, now))
        index = len(task.steps) - 1
    step = task.steps[index]
    if status is not None:
        step.status = status
    if result is not None:
        step.result = result
    step.updated = now
    task.updated = now
    return index, created


def task_outcome(task: TaskState, failed: bool) -> str:
    if failed:
        return "failed"
    if any(step.status in ("failed", "pending", "in_progress") for step in task.steps):
        return "partial"
    return "success"


def task_importance(base: float, lessons: Sequence[str], steps: int) -> float:
    """`base` (the outcome's importance) raised for lessons and long tasks.

    Failures and lessons weigh more (seeds: success 0.7-0.9, failure 0.8-1.0)."""
    bonus = min(0.05 * len(lessons), 0.1) + (0.05 if steps > 3 else 0.0)
    return round(min(base + bonus, 1.0), 2)


def render_steps(
    steps: Sequence[TaskStep],
    *,
    result_chars: int | None = RESULT_CHARS,
    collapse_done: bool = False,
) -> list[str]:
    lines = []
    hidden = 0
    for number, step in enumerate(steps, start=1):
        if collapse_done and step.status == "done":
            hidden += 1
            continue
        lines.append(f"- {STEP_MARKS[step.status]} {number}. {step.text}")
        if step.result and result_chars != 0:
            shown = (
                " ".join(step.result.split())
                if result_chars is None
                else clip(step.result, result_chars)
            )
            lines.append(f"  Result: {shown}")
    if hidden:
        lines.append(f"- ({hidden} finished step{'s' if hidden != 1 else ''} not shown)")
    return lines


def render_task(
    task: TaskState,
    *,
    result_chars: int | None = RESULT_CHARS,
    notes: bool = True,
    collapse_done: bool = False,
) -> str:
    """The task as Markdown; smaller variants drop results (0), notes, finished steps."""
    done = sum(1 for step in task.steps if step.status == "done")
    lines = [f"**Goal:** {task.goal}"]
    if task.target:
        lines.append(f"**Target:** {task.target}")
    lines.append(f"**Progress:** {done}/{len(task.steps)} steps done (started {task.started})")
    if task.steps:
        lines += [
            "",
            "Plan:",
            *render_steps(task.steps, result_chars=result_chars, collapse_done=collapse_done),
        ]
    if notes and task.notes:
        lines += [
            "",
            "Notes:",
            *(f"- {key}: {clip(value, 300)}" for key, value in task.notes.items()),
        ]
    return "\n".join(lines)


def render_task_episode(task: TaskState, outcome: str, lessons: Sequence[str], ended: str) -> str:
    """The Markdown body of the episode a finished task becomes."""
    lines = ["## Goal", task.goal]
    if task.target:
        lines += ["", f"Target: {task.target}"]
    lines += ["", "## Steps"]
    lines += render_steps(task.steps, result_chars=None) or ["- (no steps recorded)"]
    lines += ["", "## Outcome", f"{outcome} ({task.started} to {ended})"]
    if lessons:
        lines += ["", "## Lessons", *(f"- {lesson}" for lesson in lessons)]
    if task.notes:
        lines += ["", "## Notes", *(f"- {key}: {value}" for key, value in task.notes.items())]
    return "\n".join(lines) + "\n"
