"""Every step of recall, declared in order in one place (`PIPELINE`), each with its knobs.

The scoring stages are pure functions: the chunk stages (fusion, identifier) map the
retrievers' rows to one score per chunk, and the memory stages `(Candidates, Ranking) ->
Candidates` return new candidates without changing theirs. They read the query only from the
parsed query, their knobs only from their own `recall:` keys, and nothing from the index: what
a stage needs from it (the session neighbours) is fetched before and handed in (`Ranking`).
Which stages run depends on the mode (bm25 and vector stay the plain retrievers) and on the
profile: stages for conversations written turn by turn apply to session memories
(`sequence`), or to every memory with `recall.profile: conversation`, or to none with `notes`.

The steps around them (sync, retrieval, the floor, the date cut, quarantine, the merge of
stores) run where their I/O is; `PIPELINE` names the function of each, and the knob table of
docs/recall-pipeline.md is generated from it: `python -m memctl.service.retrieval.stages
docs/recall-pipeline.md` (tests/test_recall_stages.py fails while it is out of date).
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from memctl.config import RecallSettings, Settings
from memctl.core.files.memory import parse_time
from memctl.core.learning.decay import DAY_SECONDS, recency_bonus
from memctl.core.recall.evidence import coverage, matched_terms, text_stems
from memctl.core.recall.evidence import weighted_match as prior_match
from memctl.core.recall.fusion import (
    FusionWeights,
    adaptive_weights,
    blended_lexical,
    lexical_ties,
    lexical_trust,
    prior_share,
)
from memctl.core.recall.query import ParsedQuery
from memctl.core.recall.ranking import (
    length_priors,
    normalized_scores,
    reciprocal_rank_fusion,
    score_fusion,
    spread_to_neighbours,
)
from memctl.core.recall.recall_fields import MODES
from memctl.core.recall.speakers import speaker_of, turns_of_asked
from memctl.service.retrieval.answers import add_answer_bonus
from memctl.service.retrieval.timing import add_time_bonus, in_window

CONVERSATION, NOTES, AUTO = "conversation", "notes", "auto"
PROFILES = (AUTO, NOTES, CONVERSATION)
# recall.fusion -> how each retriever's scores are scaled before the weighted sum ("rrf" uses ranks).
FUSION_SCALES = {"adaptive": "stdev", "zscore": "stdev", "score": "range"}
# Why: an exact identifier hit must outrank anything fusion and neighbours can produce. A list
# scaled by its standard deviation tops out near sqrt(candidates), neighbours add at most as much.
IDENTIFIER_BONUS = 1000.0

ChunkKey = tuple[str, int]


@dataclass(frozen=True)
class Retrieved:
    """What the retrievers found: each side's rows (None: that side did not run), the rows
    holding a query identifier verbatim, every chunk's row by (id, chunk), the query's word
    weights and the store's size."""

    vector_rows: list[dict] | None
    text_rows: list[dict] | None
    identifier_rows: list[dict]
    chunk_rows: dict[ChunkKey, dict]
    weights: dict[str, float]
    store_size: int
    cjk: bool = False  # the query is mostly in a CJK script

    @classmethod
    def of(
        cls,
        vector_rows: list[dict] | None,
        text_rows: list[dict] | None,
        identifier_rows: list[dict],
        weights: dict[str, float],
        store_size: int,
        cjk: bool = False,
    ) -> Retrieved:
        chunk_rows: dict[ChunkKey, dict] = {}
        for row in [*(vector_rows or ()), *(text_rows or ()), *identifier_rows]:
            chunk_rows.setdefault(chunk_key(row), row)  # Why first wins: the vector side's row
        return cls(vector_rows, text_rows, identifier_rows, chunk_rows, weights, store_size, cjk)

    def sources(self) -> dict[str, set[str]]:
        """Each memory's retrievers: vector, bm25, identifier."""
        found: dict[str, set[str]] = {}
        for name, rows in (
            ("vector", self.vector_rows),
            ("bm25", self.text_rows),
            ("identifier", self.identifier_rows),
        ):
            for row in rows or ():
                found.setdefault(row["id"], set()).add(name)
        return found


def chunk_key(row: dict) -> ChunkKey:
    return (row["id"], int(row.get("chunk") or 0))


@dataclass(frozen=True)
class Candidates:
    """What the memory stages rank: each memory's score, the row of its best chunk, how it
    was found. A stage returns new candidates; it never changes these."""

    scores: dict[str, float]
    rows: dict[str, dict]
    sources: dict[str, set[str]]

    @classmethod
    def best_chunks(cls, chunk_scores: dict[ChunkKey, float], retrieved: Retrieved) -> Candidates:
        """A memory scores as its best chunk, and is represented by that chunk's row."""
        best: dict[str, tuple[float, int]] = {}  # id -> (score, -chunk): ties go to the earlier
        for (memory_id, chunk), score in chunk_scores.items():
            best[memory_id] = max(best.get(memory_id, (score, -chunk)), (score, -chunk))
        rows = {
            memory_id: retrieved.chunk_rows[(memory_id, -negative_chunk)]
            for memory_id, (_, negative_chunk) in best.items()
        }
        scores = {memory_id: score for memory_id, (score, _) in best.items()}
        return cls(scores, rows, retrieved.sources())

    def with_scores(self, scores: dict[str, float]) -> Candidates:
        return dataclasses.replace(self, scores=scores)


@dataclass(frozen=True)
class Sessions:
    """The session neighbours of the candidates, read from the index before the stages run:
    each memory's neighbours in its session with their distance, and the rows of those that
    are not candidates (service.retrieval.recall.session_neighbours)."""

    near: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    rows: dict[str, dict] = field(default_factory=dict)


@dataclass(frozen=True)
class Ranking:
    """What every stage may read: the parsed query, the knobs, the mode, the scale of the
    bonuses (the score the top candidate of the weaker retriever gets alone) and the session
    neighbours fetched for the candidates."""

    query: ParsedQuery
    settings: RecallSettings
    mode: str
    scale: float
    sessions: Sessions = field(default_factory=Sessions)

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


def fuse(retrieved: Retrieved, settings: RecallSettings) -> tuple[dict[ChunkKey, float], float]:
    """One score per chunk from the retrievers that ran, and the score the top candidate of
    the weaker retriever gets alone: the scale of the bonuses."""
    chunk_rows, weights = retrieved.chunk_rows, retrieved.weights
    lists: list[list[tuple[ChunkKey, float]]] = []
    names: list[str] = []
    base = FusionWeights(bm25=settings.bm25_weight, vector=settings.vector_weight)
    if retrieved.vector_rows is not None:
        lists.append([(chunk_key(row), 1.0 - row["_distance"]) for row in retrieved.vector_rows])
        names.append("vector")
    text_rows = retrieved.text_rows
    if text_rows is not None:
        lists.append([(chunk_key(row), row["_score"]) for row in text_rows])
        names.append("bm25")
    fusion = settings.fusion
    if fusion == "rrf":
        rank_k = settings.rrf_k
        fixed = [getattr(base, name) for name in names]
        fused = reciprocal_rank_fusion(
            [[key for key, _ in scored] for scored in lists], fixed, rank_k
        )
        return fused, min(fixed) / (rank_k + 1)
    normalized = [normalized_scores(scored, FUSION_SCALES[fusion]) for scored in lists]
    if text_rows is not None:
        share = prior_share(retrieved.store_size, settings.prior_half_size)
        if share > 0:
            normalized[-1] = _with_prior(normalized[-1], text_rows, chunk_rows, weights, share)
    chosen = base
    if fusion == "adaptive" and len(lists) == 2 and settings.lexical_ties:
        matched = {
            key: frozenset(matched_terms(weights, text_stems(chunk_rows[key]["text"])))
            for key, _ in lists[1]
        }
        normalized[-1] = lexical_ties(normalized[-1], matched, weights, settings.coverage_full)
    if fusion == "adaptive" and len(lists) == 2:
        # Why not in CJK: a Chinese sentence is cut into many overlapping character pairs, so
        # its heaviest few are crumbs of several words, not the few things a long prompt asks.
        span = None if retrieved.cjk else settings.coverage_words
        best_coverage = max(
            (
                coverage(weights, text_stems(chunk_rows[key]["text"]), span)
                for key, _ in lists[1][:5]
            ),
            default=0.0,
        )
        evidence = adaptive_weights(
            base,
            best_coverage,
            [score for _, score in lists[0]],
            settings.peak_gain,
            settings.coverage_chance,
        )
        # Why blended by store size: per-query evidence wins where BM25's statistics are noise
        # (small stores, across scripts) and lost on LoCoMo's stores of 400-700 turns, where the
        # fixed weights were better. The half size is the word-frequency prior's; the share
        # falls off with the square of the size, so a store of thousands is all fixed weights.
        share = prior_share(retrieved.store_size**2, settings.prior_half_size**2)
        trust = lexical_trust(best_coverage, settings.coverage_chance, settings.coverage_full)
        chosen = FusionWeights(
            bm25=min(base.bm25 + share * (evidence.bm25 - base.bm25), base.bm25 * trust),
            vector=base.vector + share * (evidence.vector - base.vector),
        )
    fixed = [getattr(chosen, name) for name in names]
    # Why only retrievers that found something and count: a side with no candidates or no
    # weight (no query word matched) would make every bonus vanish, the date's included.
    tops = [
        weight * max(scores.values())
        for scores, weight in zip(normalized, fixed, strict=False)
        if scores and weight > 0
    ]
    return score_fusion(normalized, fixed), max(min(tops, default=0.0), 1e-9)


def _with_prior(bm25, text_rows, chunk_rows, weights, share) -> dict:
    """BM25 blended with a match score that weighs words by the frequency-list prior."""
    keys = [chunk_key(row) for row in text_rows]
    lengths = [len(chunk_rows[key]["text"].split()) for key in keys]
    average = sum(lengths) / len(lengths) if lengths else 1.0
    matched = [(key, prior_match(weights, chunk_rows[key]["text"], average)) for key in keys]
    return blended_lexical(bm25, normalized_scores(matched, "stdev"), share)


def identifier(chunk_scores: dict[ChunkKey, float], retrieved: Retrieved) -> dict[ChunkKey, float]:
    """A chunk holding an identifier of the query verbatim gains IDENTIFIER_BONUS (each)."""
    scores = dict(chunk_scores)
    for row in retrieved.identifier_rows:
        key = chunk_key(row)
        scores[key] = scores.get(key, 0.0) + IDENTIFIER_BONUS
    return scores


def date_cut(hits: list, bounds: tuple[datetime | None, datetime | None]) -> tuple[list, list]:
    """The hits dated inside [since, until), and those outside (--since/--until)."""
    inside = [hit for hit in hits if in_window(hit.date, *bounds)]
    return inside, [hit for hit in hits if hit not in inside]


def neighbours(candidates: Candidates, ranking: Ranking) -> Candidates:
    """Memories written just before or after a candidate in the same session share its score
    (recall.neighbour_weights; core.recall.ranking.spread_to_neighbours)."""
    weights = list(ranking.settings.neighbour_weights)
    if not any(weights) or ranking.profile == NOTES or not ranking.sessions.near:
        return candidates
    spread = spread_to_neighbours(candidates.scores, ranking.sessions.near, weights)
    rows = dict(candidates.rows)
    for memory_id, row in ranking.sessions.rows.items():
        rows.setdefault(memory_id, row)
    sources = {memory_id: set(found) for memory_id, found in candidates.sources.items()}
    for memory_id in spread:
        if memory_id not in candidates.rows:
            sources.setdefault(memory_id, set()).add("neighbour")
    scores = {memory_id: score for memory_id, score in spread.items() if memory_id in rows}
    return Candidates(scores, rows, sources)


def recency(candidates: Candidates, ranking: Ranking) -> Candidates:
    """Fresh memories gain at most a share of the bonus scale (recall.recency_bonus, halving
    every recall.recency_half_life_days): added, never multiplied. Off by default."""
    share, half_life = ranking.settings.recency_bonus, ranking.settings.recency_half_life_days
    if share <= 0:
        return candidates
    now = datetime.now(timezone.utc)
    scores = dict(candidates.scores)
    for memory_id in scores:
        row = candidates.rows[memory_id]
        created = parse_time(row.get("created") or row.get("updated"))
        if created is not None:
            age_days = (now - created).total_seconds() / DAY_SECONDS
            scores[memory_id] += recency_bonus(age_days, share * ranking.scale, half_life)
    return candidates.with_scores(scores)


def time_named(candidates: Candidates, ranking: Ranking) -> Candidates:
    """A time the query names ("last week", 上周) lifts memories dated then (recall.time_bonus)."""
    window = ranking.query.window
    if window is None:
        return candidates
    scores = dict(candidates.scores)
    add_time_bonus(scores, candidates.rows, window, ranking.settings.time_bonus * ranking.scale)
    return candidates.with_scores(scores)


def answer_kind(candidates: Candidates, ranking: Ranking) -> Candidates:
    """Asked when or where, the head's memories holding a time or a place gain
    recall.answer_bonus (service.retrieval.answers)."""
    bonus = ranking.settings.answer_bonus * ranking.scale
    scores = dict(candidates.scores)
    add_answer_bonus(scores, candidates.rows, ranking.query.asked_kind, bonus)
    return candidates.with_scores(scores)


def speaker(candidates: Candidates, ranking: Ranking) -> Candidates:
    """Turns spoken by the person the query asks about gain recall.speaker_bonus."""
    bonus = ranking.settings.speaker_bonus * ranking.scale
    if bonus <= 0:
        return candidates
    labels = {memory_id: speaker_of(text) for memory_id, text in ranking.turns(candidates).items()}
    scores = dict(candidates.scores)
    for memory_id in turns_of_asked(ranking.query.text, labels):
        scores[memory_id] += bonus
    return candidates.with_scores(scores)


def length_prior(candidates: Candidates, ranking: Ranking) -> Candidates:
    """Turns gain recall.length_prior x ln(1 + words), capped at the candidates' median:
    chatter ("Wow, thanks!") shorter than the usual candidate gets less."""
    share = ranking.settings.length_prior * ranking.scale
    if share <= 0:
        return candidates
    scores = dict(candidates.scores)
    for memory_id, prior in length_priors(ranking.turns(candidates)).items():
        scores[memory_id] += share * prior
    return candidates.with_scores(scores)


ALL_MODES = MODES
CHUNKS, MEMORIES, HITS = "chunks", "memories", "hits"


@dataclass(frozen=True)
class Stage:
    """One step of recall: its name, what it works on (`level`: the retrievers' chunks, the
    ranked memories, or the hits read from their files), the `recall:` keys and other
    settings it owns (`knobs`), its constants, the modes and profile it runs in, and the
    function that runs it (`runs`: a memory stage's is run by run_stages)."""

    name: str
    runs: str  # "module:function", the module relative to memctl.service
    level: str
    what: str
    knobs: tuple[str, ...] = ()
    constants: tuple[str, ...] = ()
    modes: tuple[str, ...] = ("hybrid",)  # bm25 and vector modes stay the plain retrievers
    profile: str = NOTES  # NOTES: applies to every memory; CONVERSATION: to turns (see Ranking)
    run: Callable[[Candidates, Ranking], Candidates] | None = field(default=None, compare=False)

    @property
    def function(self) -> Callable:
        module, name = self.runs.split(":")
        return getattr(importlib.import_module(f"memctl.service.{module}"), name)


def _memory_stage(name: str, run: Callable, knobs: tuple[str, ...], what: str, **more) -> Stage:
    return Stage(name, f"retrieval.stages:{run.__name__}", MEMORIES, what, knobs, run=run, **more)


# The memory stages, in the order they run, after fusion and before the floor.
STAGES: tuple[Stage, ...] = (
    _memory_stage(
        "neighbours",
        neighbours,
        ("neighbour_weights",),
        "memories written 1 and 2 steps before/after a candidate in its session share its "
        "score, ending just below it (read from the index before the stages)",
        constants=("NEIGHBOUR_CEILING",),
        profile=CONVERSATION,
    ),
    _memory_stage(
        "recency",
        recency,
        ("recency_bonus", "recency_half_life_days"),
        "fresh memories gain a bounded share (off by default)",
        modes=ALL_MODES,
    ),
    _memory_stage(
        "time",
        time_named,
        ("time_bonus",),
        "memories dated in the time the query names gain a share of one retriever's top score",
        constants=("TOLD_REACH",),
    ),
    _memory_stage(
        "answer_kind",
        answer_kind,
        ("answer_bonus",),
        "asked when / where, the head's memories holding a time / a place gain a share",
        constants=("HEAD",),
    ),
    _memory_stage(
        "speaker",
        speaker,
        ("speaker_bonus",),
        "turns spoken by the person the query names gain a share",
        profile=CONVERSATION,
    ),
    _memory_stage(
        "length_prior",
        length_prior,
        ("length_prior",),
        "turns shorter than the usual candidate (chatter) gain less",
        profile=CONVERSATION,
    ),
)

# Every step of one recall, in order: the knob table of docs/recall-pipeline.md.
PIPELINE: tuple[Stage, ...] = (
    Stage(
        "sync",
        "retrieval.indexing:sync_index",
        "store",
        "precondition: the index catches up with the files (by content hash) before any search; "
        "faces that synced already pass `sync=False`",
        modes=ALL_MODES,
    ),
    Stage(
        "retrieve",
        "retrieval.recall:recall_one_store",
        CHUNKS,
        "BM25 over the full-text index, cosine over the vectors, and a verbatim search for "
        "each identifier; `candidates` rows from each side (at least 3k, k asked or `k`)",
        ("candidates", "k"),
        modes=ALL_MODES,
    ),
    Stage(
        "fusion",
        "retrieval.stages:fuse",
        CHUNKS,
        "each side's scores over their standard deviation, weighted; `adaptive` scales each "
        "weight by its evidence for this query (BM25 by the share of the query its best match "
        "holds above `coverage_chance`, cut below `coverage_full`, of the weight of the "
        "query's `coverage_words` heaviest words unless it is CJK; vector by how far its top "
        "cosine stands out, `peak_gain`), fully in a small store and less as it grows; a "
        "word-frequency prior blends into BM25 in a small store (`prior_half_size`); the "
        "memories holding the most of the query's words tie on the lexical side "
        "(`lexical_ties`); one side alone (bm25 or vector mode): its scores so scaled",
        (
            "fusion",
            "bm25_weight",
            "vector_weight",
            "coverage_chance",
            "coverage_full",
            "coverage_words",
            "peak_gain",
            "prior_half_size",
            "lexical_ties",
            "rrf_k",
        ),
        constants=("FUSION_SCALES", "DOC_TOKENS", "ZIPF_UNKNOWN", "ZIPF_UNKNOWN_CJK_PAIR"),
        modes=ALL_MODES,
    ),
    Stage(
        "identifier",
        "retrieval.stages:identifier",
        CHUNKS,
        "a chunk holding an identifier of the query verbatim gains `IDENTIFIER_BONUS` (above "
        "anything else); a memory scores as its best chunk from here on",
        constants=("IDENTIFIER_BONUS",),
        modes=("hybrid", "bm25"),
    ),
    *STAGES,
    Stage(
        "floor",
        "retrieval.hits:select_hits",
        HITS,
        "each memory of the head (`EVIDENCE_DEPTH` per hit asked, at least 20) is read from "
        "its file; its relevance is weighed from its own evidence; below the floor of the "
        "request's purpose, superseded or unreadable, it is cut; the first k stay",
        ("min_relevance", "hooks.prompt_min_relevance", "context.min_relevance"),
        constants=(
            "EVIDENCE_DEPTH",
            "COSINE_SCALES",
            "STRETCH",
            "LEXICAL_NONE",
            "LEXICAL_FULL",
            "HELD_WORDS",
        ),
        modes=ALL_MODES,
    ),
    Stage(
        "date_cut",
        "retrieval.stages:date_cut",
        HITS,
        "with `--since`/`--until`, hits dated outside [since, until) are cut",
        modes=ALL_MODES,
    ),
    Stage(
        "merge",
        "retrieval.federated:federated_recall",
        HITS,
        "the project's hits and the user store's merged into one list of k, the user store's "
        "only from `OTHER_STORE_FLOOR` on",
        constants=("OTHER_STORE_FLOOR",),
        modes=ALL_MODES,
    ),
    Stage(
        "quarantine",
        "provenance:injectable",
        HITS,
        "for an agent (the hooks, `context`, MCP), a memory from an untrusted origin that reads "
        "as an instruction is left out until `memctl review` approves it",
        modes=ALL_MODES,
    ),
)


def run_stages(
    candidates: Candidates,
    ranking: Ranking,
    record: Callable[[str, dict[str, float]], None] | None = None,
) -> Candidates:
    """Every memory stage of the mode in order; `record(stage, scores)` after each, for
    --explain. The candidates given are left as they were."""
    for stage in STAGES:
        if ranking.mode not in stage.modes or stage.run is None:
            continue
        candidates = stage.run(candidates, ranking)
        if record is not None:
            record(stage.name, candidates.scores)
    return candidates


def knob_count() -> dict[str, int]:
    """How many knobs the pipeline declares: settings keys and constants."""
    keys = {knob for stage in PIPELINE for knob in stage.knobs}
    constants = {constant for stage in PIPELINE for constant in stage.constants}
    return {"settings": len(keys), "constants": len(constants), "total": len(keys | constants)}


BEGIN, END = "<!-- pipeline table: generated -->", "<!-- end of pipeline table -->"


def pipeline_table() -> str:
    """The markdown table of PIPELINE, as docs/recall-pipeline.md shows it."""

    def modes(stage: Stage) -> str:
        return "all" if set(stage.modes) == set(ALL_MODES) else ", ".join(stage.modes)

    defaults = Settings()

    def knobs(stage: Stage) -> str:
        named = []
        for knob in stage.knobs:
            section, key = knob.split(".") if "." in knob else ("recall", knob)
            default = getattr(getattr(defaults, section), key)
            shown = "null" if default is None else str(default).lower().replace("(", "[")
            named.append(f"`{knob}` ({shown.replace(')', ']')})")
        named += [f"`{constant}`" for constant in stage.constants]
        return ", ".join(named) or "-"

    lines = [
        "| # | stage | works on | modes | profile | what it does | knobs | runs in |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for number, stage in enumerate(PIPELINE, 1):
        profile = "conversation" if stage.profile == CONVERSATION else "-"
        module, function = stage.runs.split(":")
        lines.append(
            f"| {number} | {stage.name} | {stage.level} | {modes(stage)} | {profile} | "
            f"{stage.what} | {knobs(stage)} | `{module}.{function}` |"
        )
    count = knob_count()
    lines += [
        "",
        f"{count['settings']} settings keys and {count['constants']} constants: "
        f"{count['total']} knobs (defaults in brackets), and `recall.profile` (auto), which "
        "decides which memories the conversation stages touch.",
    ]
    return "\n".join([BEGIN, *lines, END])


def with_pipeline_table(page: str) -> str:
    """The page with its generated table replaced by the current one."""
    start, end = page.index(BEGIN), page.index(END) + len(END)
    return page[:start] + pipeline_table() + page[end:]


if __name__ == "__main__":  # python -m memctl.service.retrieval.stages docs/recall-pipeline.md
    target = Path(sys.argv[1])
    target.write_text(with_pipeline_table(target.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"Wrote {target}")
