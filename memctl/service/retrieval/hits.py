"""From ranked candidates to hits: read each file, weigh its own evidence, apply the floor.

A hit's `relevance` is computed from that memory's own evidence alone (its cosine to the
query, the weighted share of the query's words it holds, a verbatim identifier), so one floor
(`recall.min_relevance`) means the same for every query; the fused `score` only orders one
answer. A memory superseded by a newer one steps aside unless asked for.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memctl.config import Store
from memctl.core.errors import InvalidMemoryFile
from memctl.core.files.chunking import split_chunks
from memctl.core.files.memory import Memory
from memctl.core.language.text import clip
from memctl.core.recall.evidence import (
    DEFAULT_SCALE,
    CosineScale,
    coverage_with_time,
    matched_terms,
    part_coverage,
    relevance,
    text_stems,
)
from memctl.core.recall.query import mostly_cjk
from memctl.core.recall.when import Window
from memctl.service.retrieval.explain import (
    BELOW_FLOOR,
    NOT_WEIGHED,
    PAST_K,
    SUPERSEDED,
    UNREADABLE,
    Trace,
)
from memctl.service.retrieval.indexing import sequence_of
from memctl.service.retrieval.timing import dated_inside
from memctl.store.files import max_file_bytes
from memctl.store.parsed_memories import read_memory_kept

# The JSON of one hit, the same in every face and mode (`recall --json`, `recall --path --json`,
# the MCP recall tool): every key is always there, None or empty where it does not apply.
# docs/recall.md describes each key.
HIT_KEYS: dict[str, Any] = {
    "id": None,
    "path": None,
    "title": None,
    "type": None,
    "tags": [],
    "store": "project",
    "via": "match",
    "date": None,
    "relevance": None,
    "score": None,
    "current": True,
    "superseded_by": None,
    "supersedes": [],
    "stale": None,
    "origin": None,
    "trust": None,
    "quarantined": None,
    "body": "",
    "snippet": None,
    "neighbours": [],
}


def hit_json(**values: Any) -> dict[str, Any]:
    """One hit in the documented JSON shape (HIT_KEYS), from the values a face has."""
    unknown = set(values) - set(HIT_KEYS)
    if unknown:
        raise ValueError(f"not a key of a hit: {sorted(unknown)}")
    return {key: values.get(key, default) for key, default in HIT_KEYS.items()}


# Candidates whose evidence is weighed, per hit asked for: the floor may drop some of them.
EVIDENCE_DEPTH = 4
NEIGHBOUR_CHARS = 300  # a neighbour shown as context is clipped to this


@dataclass
class Hit:
    id: str
    path: Path
    title: str
    type: str
    tags: list[str]
    score: float
    body: str
    memory: Memory
    sources: list[str] = field(default_factory=list)
    snippet: str | None = None  # the best-matching chunk of a long (chunked) memory
    # How sure recall is that this memory is about the query, in [0, 1], on the same scale for
    # every query (score only orders one answer's hits).
    relevance: float = 0.0
    cosine: float | None = None  # the evidence relevance is weighed from (not in the JSON)
    coverage: float = 0.0
    # Memories written just before and after this one in its session, shown as its context
    # (recall(with_neighbours=True)); they never take a hit's place in the ranking.
    neighbours: list[dict[str, Any]] = field(default_factory=list)
    superseded_by: str | None = None  # a newer memory that states another value for this subject
    supersedes: list[str] = field(default_factory=list)

    @property
    def date(self) -> str | None:
        """When what the memory says happened: `occurred_at` if the file has it, else `created`."""
        return memory_date(self.memory)

    def to_dict(self) -> dict[str, Any]:
        return hit_json(
            id=self.id,
            path=str(self.path),
            title=self.title,
            type=self.type,
            tags=self.tags,
            store=getattr(self, "store", "project"),
            score=round(self.score, 6),
            relevance=round(self.relevance, 4),
            date=self.date,
            current=self.superseded_by is None,
            superseded_by=self.superseded_by,
            supersedes=self.supersedes,
            body=self.body,
            snippet=self.snippet,
            neighbours=self.neighbours,
        )


def memory_date(memory: Memory) -> str | None:
    value = memory.extra.get("occurred_at") or memory.created
    return str(value) if value else None


@dataclass(frozen=True)
class Evidence:
    """What a hit's relevance is weighed from: the query's word weights, its vector (None in
    bm25 mode), the vector search's rows and the ids that hold a query identifier verbatim."""

    weights: dict[str, float]
    query_vector: Any
    vector_rows: list[dict] | None
    identifier_ids: set[str]
    scale: CosineScale = DEFAULT_SCALE  # how the store's embedding model's cosines read
    query_cjk: bool = False  # the query is mostly in a CJK script
    # The time the query names ("on May 2nd"): a memory of that time holds that part of it.
    window: Window | None = None


def select_hits(
    store: Store,
    indexes: list,
    ranked: list[str],
    rows: dict[str, dict],
    scores: dict[str, float],
    sources: dict[str, set[str]],
    evidence: Evidence,
    k: int,
    floor: float,
    include_superseded: bool,
    trace: Trace | None = None,
) -> list[Hit]:
    """The first `k` ranked memories that are readable, relevant enough and current; `trace`
    is told each one's relevance and why the others were cut."""
    head = ranked[: max(k * EVIDENCE_DEPTH, 20)]
    cuts: dict[str, str] = {} if trace is None else trace.cut
    cosines = _cosines(indexes, head, evidence)
    hits: list[Hit] = []
    shown: set[str] = set()  # the query words the hits kept so far hold
    for memory_id in head:
        if len(hits) >= k:
            if trace is None:
                break
            cuts[memory_id] = PAST_K
            continue
        row = rows[memory_id]
        hit = to_hit(store, row, scores[memory_id], sources.get(memory_id, set()))
        if hit is None:
            cuts[memory_id] = UNREADABLE
            continue
        stems = text_stems(row["text"])
        hit.cosine = cosines.get(memory_id)
        hit.coverage = part_coverage(evidence.weights, stems, shown)
        held: float | None = hit.coverage * sum(evidence.weights.values())
        if dated_inside(row, evidence.window):
            hit.coverage = coverage_with_time(hit.coverage)
            held = None  # Why: its date answers the query's time, which weighs no less than a word
        hit.relevance = relevance(
            hit.cosine,
            hit.coverage,
            memory_id in evidence.identifier_ids,
            evidence.scale,
            cross_script=mostly_cjk(row["text"]) != evidence.query_cjk,
            held=held,
        )
        if trace is not None:
            trace.relevance[memory_id] = round(hit.relevance, 4)
        if hit.relevance < floor:
            cuts[memory_id] = BELOW_FLOOR.format(relevance=hit.relevance, floor=floor)
            continue
        _mark_revisions(hit)
        if hit.superseded_by and not include_superseded:
            cuts[memory_id] = SUPERSEDED.format(newer=hit.superseded_by)
            continue
        hits.append(hit)
        shown.update(matched_terms(evidence.weights, stems))
    for memory_id in ranked[len(head) :] if trace is not None else ():
        cuts[memory_id] = NOT_WEIGHED
    # Why: a superseded memory may match the query better (it is the older wording), but what
    # is true now comes first.
    return sorted(hits, key=lambda hit: hit.superseded_by is not None)


def _cosines(indexes: list, ids: list[str], evidence: Evidence) -> dict[str, float]:
    """Each memory's best cosine to the query; memories the vector search did not return are
    looked up by id (their first chunk)."""
    if evidence.query_vector is None:
        return {}
    found: dict[str, float] = {}
    for row in evidence.vector_rows or ():
        found[row["id"]] = max(found.get(row["id"], -1.0), 1.0 - float(row["_distance"]))
    missing = [memory_id for memory_id in ids if memory_id not in found]
    if missing:
        import numpy as np

        query = np.asarray(evidence.query_vector, dtype=np.float32)
        for index in indexes:
            for memory_id, vector in index.vectors_for_ids(missing).items():
                found[memory_id] = float(np.asarray(vector, dtype=np.float32) @ query)
    return found


def _mark_revisions(hit: Hit) -> None:
    """Which memory replaced this one (front matter `superseded_by`), which it replaced."""
    replaced_by = hit.memory.extra.get("superseded_by")
    if isinstance(replaced_by, str) and replaced_by:
        hit.superseded_by = replaced_by
    hit.supersedes = [
        str(relation.get("target"))
        for relation in hit.memory.relations
        if isinstance(relation, dict) and relation.get("type") == "supersedes"
    ]


def to_hit(store: Store, row: dict, score: float, sources: set[str]) -> Hit | None:
    """Read the file: it is the truth, the row only a cache."""
    try:
        memory = read_memory_kept(store.root, row["path"], max_file_bytes(store))
    except (OSError, InvalidMemoryFile):
        return None
    return Hit(
        id=memory.id,
        path=store.root / row["path"],
        title=memory.display_title,
        type=memory.type,
        tags=list(memory.tags),
        score=score,
        body=memory.body,
        memory=memory,
        sources=sorted(set(sources)),
        snippet=_chunk_snippet(memory.body, int(row.get("chunk") or 0)),
    )


def _chunk_snippet(body: str, chunk: int) -> str | None:
    """The text of chunk `chunk` when the body is indexed in chunks; None for a whole body."""
    chunks = split_chunks(body.strip())
    return chunks[chunk] if len(chunks) > 1 and chunk < len(chunks) else None


def attach_neighbours(store: Store, indexes: list, hits: list[Hit]) -> None:
    """Each hit in a session gets the memories just before and after it as `neighbours`."""
    sequences = {}
    for hit in hits:
        sequence = sequence_of(hit.memory)
        if sequence:
            sequences[hit.id] = sequence
    if not sequences:
        return
    members: dict[str, list[tuple[str, str, str]]] = {}
    for index in indexes:
        for row in index.sequence_rows(sorted(set(sequences.values()))):
            members.setdefault(row["sequence"], []).append(
                (row.get("created") or "", row["id"], row.get("path") or "")
            )
    for hit in hits:
        ordered = sorted(members.get(sequences.get(hit.id, ""), ()))
        position = next((n for n, item in enumerate(ordered) if item[1] == hit.id), None)
        if position is None:
            continue
        for offset in (-1, 1):
            if 0 <= position + offset < len(ordered):
                neighbour = _read_neighbour(store, indexes, ordered[position + offset][1])
                if neighbour is not None:
                    hit.neighbours.append({"offset": offset, **neighbour})


def _read_neighbour(store: Store, indexes: list, memory_id: str) -> dict[str, Any] | None:
    for index in indexes:
        for row in index.rows_for_ids([memory_id]):
            try:
                memory = read_memory_kept(store.root, row["path"], max_file_bytes(store))
            except (OSError, InvalidMemoryFile):
                return None
            text = clip(memory.body, NEIGHBOUR_CHARS)
            return {
                "id": memory.id,
                "title": memory.display_title,
                "date": memory_date(memory),
                "body": text,
            }
    return None
