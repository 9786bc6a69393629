"""Forget reaches short-term memory too: session buffers and the task in progress.

A memory's words often came from a conversation turn still held in a session buffer
(`.state/sessions/<id>.jsonl`, its summary in `<id>.meta.json`) or were noted in the task
state. Forgetting the memory removes the turns, summary lines, task steps and notes that hold
its text (or the `--query` text), so nothing in the store keeps it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from memctl.config import Store
from memctl.core.errors import InvalidMemoryFile
from memctl.core.files.memory import Memory
from memctl.store.sessions import (
    read_meta,
    read_turns,
    session_ids,
    session_lock,
    write_meta,
    write_turns,
)
from memctl.store.task_state import read_task, task_lock, write_task

MIN_NEEDLE_CHARS = 12  # shorter lines ("## Summary", "- yes") would match unrelated turns
FORGOTTEN = "(forgotten)"


def needles_of(memories: Iterable[Memory], query: str | None = None) -> list[str]:
    """The texts whose presence marks a turn or note as holding a forgotten memory: the query,
    each memory's title and each line of its body long enough to be distinctive (folded)."""
    found: set[str] = set()
    if query and query.strip():
        found.add(" ".join(query.split()).casefold())
    for memory in memories:
        for line in [memory.title, *memory.body.splitlines()]:
            line = " ".join(line.lstrip("-*#> ").split())
            if len(line) >= MIN_NEEDLE_CHARS:
                found.add(line.casefold())
    return sorted(found)


def _holds(text: str | None, needles: list[str]) -> bool:
    if not text:
        return False
    folded = " ".join(text.split()).casefold()
    return any(needle in folded for needle in needles)


def scrub_short_term(store: Store, needles: list[str]) -> list[str]:
    """Remove what holds one of `needles` from session buffers and the task; the files
    changed (as strings)."""
    if not needles or not store.state_dir.is_dir():
        return []
    changed: list[str] = []
    for session_id in session_ids(store.state_dir):
        try:
            with session_lock(store.state_dir, session_id):
                changed += _scrub_session(store, session_id, needles)
        except InvalidMemoryFile:
            continue  # Why: a broken buffer is reported by the commands that read it
    try:
        with task_lock(store.state_dir):
            task = read_task(store.state_dir)
            if task is not None:
                cleaned = _scrub_task(task, needles)
                if cleaned != task:
                    write_task(store.state_dir, cleaned)
                    changed.append(str(store.state_dir / "task.json"))
    except InvalidMemoryFile:
        pass
    return changed


def _scrub_session(store: Store, session_id: str, needles: list[str]) -> list[str]:
    changed = []
    turns = read_turns(store.state_dir, session_id)
    kept = [turn for turn in turns if not _holds(turn.content, needles)]
    if len(kept) != len(turns):
        write_turns(store.state_dir, session_id, kept)
        changed.append(f"{session_id}.jsonl")
    meta = read_meta(store.state_dir, session_id)
    if meta is not None and _holds(meta.summary, needles):
        lines = [line for line in meta.summary.splitlines() if not _holds(line, needles)]
        write_meta(store.state_dir, dataclasses.replace(meta, summary="\n".join(lines)))
        changed.append(f"{session_id}.meta.json")
    return changed


def _scrub_task(task, needles: list[str]):
    steps = [
        dataclasses.replace(step, result=None) if _holds(step.result, needles) else step
        for step in task.steps
        if not _holds(step.text, needles)
    ]
    notes = {k: v for k, v in task.notes.items() if not _holds(f"{k} {v}", needles)}
    goal = FORGOTTEN if _holds(task.goal, needles) else task.goal
    target = None if _holds(task.target, needles) else task.target
    return dataclasses.replace(task, goal=goal, target=target, steps=steps, notes=notes)
