"""`recall --explain`: each candidate's score after each stage, its relevance, why it was cut."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Why a candidate is not a hit (select_hits and recall say which).
BELOW_FLOOR = "relevance {relevance:.2f} < floor {floor:.2f}"
SUPERSEDED = "superseded by {newer}"
UNREADABLE = "its file could not be read"
OUTSIDE_DATES = "dated outside --since/--until"
PAST_K = "below the k asked for"
NOT_WEIGHED = "below the head whose evidence is weighed"
OTHER_STORE = "left out when the stores were merged"


@dataclass
class Trace:
    """Filled in by recall as it ranks: the stages in the order they ran, each candidate's score
    after each, its final rank, its relevance and why it was cut."""

    store: str = "project"
    query: dict[str, Any] = field(default_factory=dict)
    stages: list[str] = field(default_factory=list)
    scores: dict[str, dict[str, float]] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)  # the final ranking of every candidate
    relevance: dict[str, float] = field(default_factory=dict)
    cut: dict[str, str] = field(default_factory=dict)

    def record(self, stage: str, scores: dict[str, float]) -> None:
        self.stages.append(stage)
        for memory_id, score in scores.items():
            self.scores.setdefault(memory_id, {})[stage] = round(score, 6)

    def to_dict(self, shown: int | None = None) -> dict[str, Any]:
        """The trace as JSON; `shown` keeps the first candidates of the final ranking."""
        order = self.order[:shown] if shown is not None else self.order
        return {
            "store": self.store,
            "query": self.query,
            "stages": self.stages,
            "candidates": [
                {
                    "id": memory_id,
                    "rank": rank,
                    "scores": self.scores.get(memory_id, {}),
                    "relevance": self.relevance.get(memory_id),
                    "cut": self.cut.get(memory_id),
                }
                for rank, memory_id in enumerate(order, start=1)
            ],
        }
