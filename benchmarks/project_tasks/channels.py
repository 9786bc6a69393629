"""Score what several channels injected per task, together and one by one.

A coding agent gets memories from more than the prompt hook: the session-start context, and
an action-time hook fed the files a task touches (each task's `touched`). Whoever
computes those injections hands them here as task id -> {channel: [memory ids, in order]}:

    from benchmarks.project_tasks.channels import score_injections
    figures = score_injections({"ghmcp-t04": {"session": [...], "prompt": [...],
                                              "action": [...]}, ...}, split="test")

and gets, per split, the union's figures (essential recall across channels, precision of what
was injected, false injection, tokens per task, relevant share, cross-project leakage) and each
channel's alone. Tokens are the injected memories' own (memctl's estimate) unless `tokens`
gives a task's real count (for example the rendered blocks' size). A memory shown by two
channels counts once in the union.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from benchmarks.project_tasks.data_files import Dataset, load
from benchmarks.project_tasks.metrics import Labels, score_shown, shown_from, summarize

Injections = Mapping[str, Mapping[str, Sequence[str]]]


def score_injections(
    injections: Injections,
    split: str = "all",
    tokens: Mapping[str, int] | None = None,
    data: Dataset | None = None,
) -> dict:
    """{split: {"union": figures, "channels": {channel: figures}}} over the split's tasks; a
    task missing from `injections` counts as one where nothing was injected."""
    from memctl.core.language.tokens import estimate_tokens

    data = data or load()
    token_counts = {m["id"]: estimate_tokens(m["text"]) for m in data.memories}
    project_of = {m["id"]: m["project"] for m in data.memories}
    unknown = {i for per in injections.values() for ids in per.values() for i in ids} - set(
        token_counts
    )
    if unknown:
        raise ValueError(f"unknown memory ids: {', '.join(sorted(unknown)[:5])}")
    names = sorted({name for per in injections.values() for name in per})
    union: dict[str, list] = {}
    alone: dict[str, dict[str, list]] = {name: {} for name in names}
    for task in data.tasks_of(split):
        labels = Labels.from_task(task)
        channels = injections.get(task["id"]) or {}
        shown = shown_from(
            channels,
            labels,
            token_counts,
            task["project"],
            project_of,
            None if tokens is None else tokens.get(task["id"]),
        )
        union.setdefault(task["split"], []).append(score_shown(shown, labels))
        for name in names:
            one = shown_from(
                {name: channels.get(name, [])}, labels, token_counts, task["project"], project_of
            )
            alone[name].setdefault(task["split"], []).append(score_shown(one, labels))
    result: dict = {}
    for part in sorted(union):
        result[part] = {
            "union": summarize(union[part]),
            "channels": {name: summarize(alone[name][part]) for name in names},
        }
    return result
