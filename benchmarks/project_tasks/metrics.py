"""Pure scoring of what an agent was shown for one task, and the means over tasks.

A task's labels grade memories 2 (essential) or 1 (useful); every other memory is irrelevant.
Essential memories come in needs: memories that say the same thing (an agent file often repeats
a rule) share a need, and a need is met when any one of them is shown. Token counts use memctl's
own estimate (core.language.tokens), the one its hooks budget with.

`score_shown` takes what several channels showed (prompt hook, session start, action time, ...)
and scores their union, so other channels (session start, action time) can be added without touching this module.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

DEPTH = 5


@dataclass(frozen=True)
class Labels:
    """One task's graded memories: id -> grade (1 or 2), and essential id -> need."""

    grades: Mapping[str, int]
    needs: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_task(cls, task: Mapping) -> Labels:
        labels = task.get("labels") or {}
        grades = {mid: int(label["grade"]) for mid, label in labels.items()}
        needs = {mid: label["need"] for mid, label in labels.items() if label.get("need")}
        return cls(grades, needs)

    @property
    def nothing_relevant(self) -> bool:
        return not self.grades


def dedupe(ids: Iterable[str]) -> list[str]:
    """The ids in order, each once."""
    return list(dict.fromkeys(ids))


def ndcg(ranked: Sequence[str], grades: Mapping[str, int], k: int = DEPTH) -> float | None:
    """Graded nDCG@k with gain 2^grade - 1; None when nothing is relevant."""
    if not grades:
        return None
    top = dedupe(ranked)[:k]
    dcg = sum((2 ** grades.get(i, 0) - 1) / math.log2(r + 2) for r, i in enumerate(top))
    best = sorted(grades.values(), reverse=True)[:k]
    ideal = sum((2**g - 1) / math.log2(r + 2) for r, g in enumerate(best))
    return dcg / ideal


def essential_recall(shown: Iterable[str], needs: Mapping[str, str]) -> float | None:
    """Share of the task's needs met by at least one shown memory; None without needs."""
    wanted = set(needs.values())
    if not wanted:
        return None
    met = {needs[i] for i in shown if i in needs}
    return len(met) / len(wanted)


def precision(shown: Sequence[str], grades: Mapping[str, int]) -> float | None:
    """Relevant shown / shown; None when nothing was shown."""
    if not shown:
        return None
    return sum(1 for i in shown if grades.get(i, 0) > 0) / len(shown)


@dataclass(frozen=True)
class Shown:
    """What one system showed for one task: ids per channel, and the tokens it cost."""

    channels: Mapping[str, Sequence[str]]
    tokens: int  # tokens injected, all channels together
    relevant_tokens: int  # of those, the tokens of relevant memories
    foreign: int = 0  # shown memories that belong to another project (shared layout)

    @property
    def ids(self) -> list[str]:
        return dedupe(i for ids in self.channels.values() for i in ids)


def memory_tokens(ids: Iterable[str], token_counts: Mapping[str, int]) -> int:
    return sum(token_counts.get(i, 0) for i in ids)


def shown_from(
    channels: Mapping[str, Sequence[str]],
    labels: Labels,
    token_counts: Mapping[str, int],
    project: str | None = None,
    project_of: Mapping[str, str] | None = None,
    tokens: int | None = None,
) -> Shown:
    """A Shown whose tokens are the shown memories' own (or `tokens`, e.g. a block's size)."""
    ids = dedupe(i for values in channels.values() for i in values)
    own = memory_tokens(ids, token_counts)
    relevant = memory_tokens((i for i in ids if labels.grades.get(i, 0) > 0), token_counts)
    foreign = 0
    if project is not None and project_of is not None:
        foreign = sum(1 for i in ids if project_of.get(i, project) != project)
    return Shown(channels, own if tokens is None else tokens, relevant, foreign)


def score_shown(shown: Shown, labels: Labels, ranked: Sequence[str] | None = None) -> dict:
    """One task's figures. `ranked` (one channel's order) gives nDCG; the union gives the rest."""
    ids = shown.ids
    row: dict = {
        "essential_recall": essential_recall(ids, labels.needs),
        # Of the task's relevant memories (grade 1 or 2), the share shown; and whether any was.
        "relevant_recall": (
            sum(1 for i in labels.grades if i in set(ids)) / len(labels.grades)
            if labels.grades
            else None
        ),
        "any_relevant": (any(labels.grades.get(i, 0) > 0 for i in ids) if labels.grades else None),
        "precision": precision(ids, labels.grades),
        "returned": len(ids),
        "tokens": shown.tokens,
        "relevant_tokens": shown.relevant_tokens,
        "nothing_relevant": labels.nothing_relevant,
        "injected": bool(ids),
        "foreign": shown.foreign,
    }
    if ranked is not None:
        row["ndcg@5"] = ndcg(ranked, labels.grades)
    return row


def _mean(values: Iterable[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def summarize(rows: Sequence[Mapping]) -> dict:
    """Means over tasks. Rates skip the tasks they do not apply to (see each key)."""
    abstain = [r for r in rows if r["nothing_relevant"]]
    returned = sum(r["returned"] for r in rows)
    tokens = sum(r["tokens"] for r in rows)
    return {
        "tasks": len(rows),
        "ndcg@5": _mean(r.get("ndcg@5") for r in rows),  # tasks with a relevant memory
        "essential_recall@5": _mean(r["essential_recall"] for r in rows),  # tasks with a need
        "relevant_recall": _mean(r.get("relevant_recall") for r in rows),  # tasks with any
        "any_relevant": _mean(  # tasks with a relevant memory: something relevant was shown
            None if r.get("any_relevant") is None else float(r["any_relevant"]) for r in rows
        ),
        "precision": _mean(r["precision"] for r in rows),  # tasks that were shown anything
        "precision_micro": (
            sum((r["precision"] or 0) * r["returned"] for r in rows) / returned
            if returned
            else None
        ),
        "false_injection": _mean(float(r["injected"]) for r in abstain),  # nothing relevant
        "abstention_tasks": len(abstain),
        "returned_per_task": returned / len(rows) if rows else None,
        "tokens_per_task": tokens / len(rows) if rows else None,
        "relevant_token_share": (
            sum(r["relevant_tokens"] for r in rows) / tokens if tokens else None
        ),
        "leakage": sum(r["foreign"] for r in rows) / returned if returned else None,
    }
