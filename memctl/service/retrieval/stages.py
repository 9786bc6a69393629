"""The ranking stages after fusion, declared in order in one place (`STAGES`).

Each stage is a small function `(Candidates, Ranking) -> None` that changes the candidates'
scores (and, for neighbours, adds the memories it found); it reads the query
only from the parsed query and its knobs only from its own `recall:` keys. Which stages run
depends on the mode (bm25 and vector stay the plain retrievers) and on the profile: stages for
conversations written turn by turn apply to session memories (`sequence`), or to every memory
with `recall.profile: conversation`, or to none with `notes`. docs/recall-pipeline.md lists them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone

from memctl.config import RecallSettings
from memctl.core.decay import DAY_SECONDS, recency_bonus
from memctl.core.memory import parse_time
from memctl.core.ports import Index
from memctl.core.query import ParsedQuery
from memctl.core.ranking import length_priors, sequence_neighbours, spread_to_neighbours
from memctl.core.speakers import speaker_of, turns_of_asked
from memctl.service.retrieval.answers import add_answer_bonus
from memctl.service.retrieval.timing import add_time_bonus

CONVERSATION, NOTES, AUTO = "conversation", "notes", "auto"
PROFILES = (AUTO, NOTES, CONVERSATION)


@dataclass
class Candidates:
    """What the stages rank: each memory's score, the row of its best chunk, how it was found."""

    scores: dict[str, float]
    rows: dict[str, dict]
    sources: dict[str, set[str]]


@dataclass(frozen=True)
class Ranking:
    """What every stage may read: the parsed query, the knobs, the mode, and the scale of the
    bonuses (the score the top candidate of the weaker retriever gets alone)."""

    query: ParsedQuery
    settings: RecallSettings
    mode: str
    scale: float
    indexes: list[Index] = field(default_factory=list)

    @property
    def profile(self) -> str:
        return self.settings.profile

    def turns(self, candidates: Candidates) -> dict[str, str]:
        """The candidates the conversation profile applies to, by id, with their text.

        `auto`: those written in sequence (a session's turns): elsewhere a leading "Note:" is a
        heading, not a speaker, and a short note written on its own is meant to hold something,
        not chatter."""
        if self.profile == NOTES:
            return {}
        every = self.profile == CONVERSATION
        return {
            memory_id: candidates.rows[memory_id]["text"]
            for memory_id in candidates.scores
            if every or candidates.rows[memory_id].get("sequence")
        }


def neighbours(candidates: Candidates, ranking: Ranking) -> None:
    """Memories written just before or after a candidate in the same session share its score
    (recall.neighbour_weights; core.ranking.spread_to_neighbours)."""
    weights = list(ranking.settings.neighbour_weights)
    rows, scores = candidates.rows, candidates.scores
    if not any(weights) or ranking.profile == NOTES:
        return
    sequences = sorted({row["sequence"] for row in rows.values() if row.get("sequence")})
    if not sequences:
        return
    members: dict[str, list[tuple[str, str]]] = {}
    for index in ranking.indexes:
        for row in index.sequence_rows(sequences):
            members.setdefault(row["sequence"], []).append((row.get("created") or "", row["id"]))
    ordered = {seq: [memory_id for _, memory_id in sorted(items)] for seq, items in members.items()}
    spread = spread_to_neighbours(scores, sequence_neighbours(ordered), weights)
    missing = [memory_id for memory_id in spread if memory_id not in rows]
    for index in ranking.indexes:
        for row in index.rows_for_ids(missing):
            if int(row.get("chunk") or 0) == 0:
                rows.setdefault(row["id"], row)
    for memory_id in missing:
        candidates.sources.setdefault(memory_id, set()).add("neighbour")
    candidates.scores = {
        memory_id: score for memory_id, score in spread.items() if memory_id in rows
    }


def recency(candidates: Candidates, ranking: Ranking) -> None:
    """Fresh memories gain at most a share of the bonus scale (recall.recency_bonus, halving
    every recall.recency_half_life_days): added, never multiplied. Off by default."""
    share, half_life = ranking.settings.recency_bonus, ranking.settings.recency_half_life_days
    if share <= 0:
        return
    now = datetime.now(timezone.utc)
    for memory_id in candidates.scores:
        row = candidates.rows[memory_id]
        created = parse_time(row.get("created") or row.get("updated"))
        if created is not None:
            age_days = (now - created).total_seconds() / DAY_SECONDS
            bonus = recency_bonus(age_days, share * ranking.scale, half_life)
            candidates.scores[memory_id] += bonus


def time_named(candidates: Candidates, ranking: Ranking) -> None:
    """A time the query names ("last week", 上周) lifts memories dated then (recall.time_bonus)."""
    window = ranking.query.window
    if window is not None:
        bonus = ranking.settings.time_bonus * ranking.scale
        add_time_bonus(candidates.scores, candidates.rows, window, bonus)


def answer_kind(candidates: Candidates, ranking: Ranking) -> None:
    """Asked when or where, the head's memories holding a time or a place gain
    recall.answer_bonus (service.retrieval.answers)."""
    bonus = ranking.settings.answer_bonus * ranking.scale
    add_answer_bonus(candidates.scores, candidates.rows, ranking.query.asked_kind, bonus)


def speaker(candidates: Candidates, ranking: Ranking) -> None:
    """Turns spoken by the person the query asks about gain recall.speaker_bonus."""
    bonus = ranking.settings.speaker_bonus * ranking.scale
    if bonus <= 0:
        return
    labels = {memory_id: speaker_of(text) for memory_id, text in ranking.turns(candidates).items()}
    for memory_id in turns_of_asked(ranking.query.text, labels):
        candidates.scores[memory_id] += bonus


def length_prior(candidates: Candidates, ranking: Ranking) -> None:
    """Turns gain recall.length_prior x ln(1 + words), capped at the candidates' median:
    chatter ("Wow, thanks!") shorter than the usual candidate gets less."""
    share = ranking.settings.length_prior * ranking.scale
    if share <= 0:
        return
    for memory_id, prior in length_priors(ranking.turns(candidates)).items():
        candidates.scores[memory_id] += share * prior


@dataclass(frozen=True)
class Stage:
    name: str
    run: Callable[[Candidates, Ranking], None]
    knobs: tuple[str, ...]  # its recall: keys
    modes: tuple[str, ...] = ("hybrid",)  # bm25 and vector modes stay the plain retrievers
    profile: str = NOTES  # NOTES: applies to every memory; CONVERSATION: to turns (see Ranking)


# The order is the order they run in, after fusion (service.retrieval.recall) and before the
# relevance floor (service.retrieval.hits).
STAGES: tuple[Stage, ...] = (
    Stage("neighbours", neighbours, ("neighbour_weights",), profile=CONVERSATION),
    Stage(
        "recency",
        recency,
        ("recency_bonus", "recency_half_life_days"),
        modes=("hybrid", "bm25", "vector"),
    ),
    Stage("time", time_named, ("time_bonus",)),
    Stage("answer_kind", answer_kind, ("answer_bonus",)),
    Stage("speaker", speaker, ("speaker_bonus",), profile=CONVERSATION),
    Stage("length_prior", length_prior, ("length_prior",), profile=CONVERSATION),
)


def run_stages(
    candidates: Candidates,
    ranking: Ranking,
    record: Callable[[str, dict[str, float]], None] | None = None,
) -> None:
    """Every stage of the mode in order; `record(stage, scores)` after each, for --explain."""
    for stage in STAGES:
        if ranking.mode not in stage.modes:
            continue
        stage.run(candidates, ranking)
        if record is not None:
            record(stage.name, candidates.scores)
