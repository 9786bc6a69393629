"""`memctl compact`: trim sessions past their limits, end idle ones, consolidate episodes."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memctl.config import LLMSettings, Store
from memctl.core.errors import MemctlError
from memctl.core.files.memory import Memory, now_iso, slugify
from memctl.core.files.sync import embed_hash
from memctl.core.learning.consolidation import (
    EpisodeGroup,
    EpisodeInfo,
    KnowledgeDraft,
    draft_knowledge,
    group_episodes,
    group_topic,
    render_knowledge_body,
)
from memctl.core.trust.provenance import least_trusted, stamp_origin
from memctl.service.lifecycle.episodes import with_embeddings
from memctl.service.lifecycle.session import FoldReport, end_idle_sessions, trim_sessions
from memctl.service.memories.add import build_memory
from memctl.service.memories.lookup import list_memories
from memctl.service.provenance import gate_for, note_written_memories
from memctl.store.files import max_file_bytes, path_for, remove_stale_temp_files, write_memory

KNOWLEDGE_SYSTEM = (
    "You consolidate an AI agent's past episodes into one piece of reusable knowledge. Use only "
    "what the records state: never invent names, numbers, causes, decisions or outcomes. Keep "
    "names, numbers and identifiers exactly as written. Reply with one JSON object, nothing else."
)
KNOWLEDGE_ASK = """The {n} records below are about "{topic}".

{records}

Return JSON with these keys:
"topic": a short name for what the records are about;
"content": the knowledge they support: recurring situations, what worked and what failed,
decisions, facts, preferences and outcomes;
"key_points": up to 8 points, one sentence each;
"confidence": 0.5 to 1.0, how consistently the records support the content."""
RECORD_CHARS = 1500


@dataclass
class Consolidation:
    group: EpisodeGroup
    title: str
    knowledge_id: str | None = None
    path: str | None = None
    writer: str = "extractive"
    usage: dict[str, Any] | None = None
    warning: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = {
            "reason": self.group.reason,
            "key": self.group.key,
            "sources": list(self.group.ids),
            "title": self.title,
            "knowledge_id": self.knowledge_id,
            "path": self.path,
            "writer": self.writer,
            "usage": self.usage,
            "warning": self.warning,
        }
        return {k: v for k, v in data.items() if v is not None}


@dataclass
class CompactReport:
    dry_run: bool
    sessions: list[FoldReport] = field(default_factory=list)
    consolidations: list[Consolidation] = field(default_factory=list)
    problems: list[dict] = field(default_factory=list)

    @property
    def written(self) -> int:
        return sum(1 for f in self.sessions if f.episode_id) + sum(
            1 for c in self.consolidations if c.knowledge_id
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "written": self.written,
            "sessions": [f.to_dict() for f in self.sessions],
            "consolidations": [c.to_dict() for c in self.consolidations],
            "problems": self.problems,
        }


def compact(
    store: Store,
    *,
    dry_run: bool = False,
    now: float | None = None,
    sync: bool = True,
    known_vectors: Mapping[str, Any] | None = None,
) -> CompactReport:
    """Sessions first (their new episodes can join a consolidation), then consolidation;
    everything written is indexed in one sync at the end (unless `sync` is False).
    `known_vectors`: see consolidation_vectors."""
    now = time.time() if now is None else now
    report = CompactReport(dry_run)
    report.sessions = end_idle_sessions(
        store, now=now, dry_run=dry_run, sync=False
    ) + trim_sessions(store, dry_run=dry_run, sync=False)
    report.consolidations, report.problems = consolidate(
        store, dry_run=dry_run, now=now, sync=False, known_vectors=known_vectors
    )
    if sync and report.written and not dry_run:
        from memctl.service.retrieval.indexing import sync_index

        sync_index(store)
    return report


def consolidation_candidates(memories: Sequence[tuple[str, Memory]]) -> list[tuple[str, Memory]]:
    """Episodes not consolidated yet: no `consolidated_into`, and no knowledge derived from them."""
    derived = {
        r.get("target")
        for _, m in memories
        if m.type == "knowledge"
        for r in m.relations
        if r.get("type") == "derived_from"
    }
    return [
        (relpath, m)
        for relpath, m in memories
        if m.type == "episodic" and not m.extra.get("consolidated_into") and m.id not in derived
    ]


def consolidate(
    store: Store,
    *,
    dry_run: bool = False,
    now: float | None = None,
    sync: bool = True,
    known_vectors: Mapping[str, Any] | None = None,
) -> tuple[list[Consolidation], list[dict]]:
    settings = store.settings.compact
    min_size = settings.min_episodes
    if not dry_run:
        remove_stale_temp_files(store.state_dir)
    listing = list_memories(store)  # Why first: its scan removes temp files a kill left
    if not dry_run:
        finish_interrupted(store, listing.memories, now)
    candidates = consolidation_candidates(listing.memories)
    if len(candidates) < min_size:
        return [], listing.problems
    infos = [
        EpisodeInfo(
            m.id,
            str(m.extra.get("target") or "") or None,
            tuple(m.tags),
            str(m.extra.get("occurred_at") or m.created or ""),
        )
        for _, m in candidates
    ]
    groups = group_episodes(
        infos,
        min_size=min_size,
        similarity=_similarity(store, [m for _, m in candidates], known_vectors),
        threshold=settings.similarity,
        ignore_tags=settings.ignore_tags,
    )
    by_id = {m.id: (relpath, m) for relpath, m in candidates}
    done = []
    for group in groups:
        members = [by_id[i][1] for i in group.ids]
        draft, usage, warning = _draft(store, group, members, allow_llm=not dry_run)
        item = Consolidation(group, draft.title, writer=draft.writer, usage=usage, warning=warning)
        if not dry_run:
            knowledge = _write_knowledge(store, draft, group, members, now)
            item.knowledge_id, item.path = knowledge.id, str(path_for(store.root, knowledge))
            for member_id in group.ids:
                mark_consolidated(store, by_id[member_id][0], member_id, knowledge.id, now)
        done.append(item)
    if sync and done and not dry_run:
        from memctl.service.retrieval.indexing import sync_index

        sync_index(store)
    return done, listing.problems


def _similarity(
    store: Store, memories: Sequence[Memory], known_vectors: Mapping[str, Any] | None = None
):
    """Cosine similarity of the episodes, from `known_vectors` (by embed hash) and the index's
    vectors where they have them."""
    import numpy as np

    vectors = _episode_vectors(store, memories, known_vectors)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    return vectors @ vectors.T


def _episode_vectors(
    store: Store, memories: Sequence[Memory], known_vectors: Mapping[str, Any] | None = None
):
    import numpy as np

    from memctl.service.retrieval.embedding import index_model, store_embedder
    from memctl.service.retrieval.indexing import index_text, open_index

    model = index_model(store)
    texts = [index_text(m) for m in memories]
    hashes = [embed_hash(model.id, t) for t in texts]
    known = {h: known_vectors[h] for h in hashes if known_vectors and h in known_vectors}
    try:
        known.update(open_index(store).vectors_for(sorted(set(hashes) - known.keys())))
    except Exception:  # noqa: BLE001 - the index is a cache; embed instead
        pass
    missing = [i for i, h in enumerate(hashes) if h not in known]
    vectors = np.zeros((len(texts), model.dim), dtype=np.float32)
    if missing:
        embedded = store_embedder(store, model).embed([texts[i] for i in missing])
        for i, vector in zip(missing, embedded, strict=False):
            vectors[i] = vector
    for i, h in enumerate(hashes):
        if h in known:
            vectors[i] = np.asarray(known[h], dtype=np.float32)
    return vectors


def consolidation_vectors(store: Store) -> dict[str, Any]:
    """The vectors (by embed hash) consolidation would weigh the store's episodes with now.

    A transcript ingest asks before its index sync, while the model is loaded: it passes them
    to the sync (no text embedded twice) and to compact(), so consolidation does not load the
    model again beside the index (an episode embedded with its predecessor's context in the
    index is weighed on its own text, which the index does not hold)."""
    from memctl.service.retrieval.embedding import index_model
    from memctl.service.retrieval.indexing import index_text

    candidates = [m for _, m in consolidation_candidates(list_memories(store).memories)]
    if len(candidates) < store.settings.compact.min_episodes:
        return {}
    model = index_model(store)
    vectors = _episode_vectors(store, candidates)
    return {
        embed_hash(model.id, index_text(m)): vector
        for m, vector in zip(candidates, vectors, strict=True)
    }


def _draft(store: Store, group: EpisodeGroup, members: list[Memory], *, allow_llm: bool):
    warning = None
    if allow_llm:
        from memctl.integrations.llm import llm_settings

        llm = llm_settings(store)
        if llm:
            try:
                return _draft_with_llm(llm, group, members)
            except MemctlError as exc:
                warning = f"LLM consolidation failed, wrote an extractive one instead: {exc}"
    return with_embeddings(store, draft_knowledge, group, members), None, warning


def _draft_with_llm(llm: LLMSettings, group: EpisodeGroup, members: list[Memory]):
    from memctl.integrations.llm import LLMBadOutput, complete_json

    topic = group_topic(group, members)
    records = []
    for number, memory in enumerate(members, start=1):
        when = str(memory.extra.get("occurred_at") or memory.created or "")[:10]
        outcome = f", outcome: {memory.extra['outcome']}" if memory.extra.get("outcome") else ""
        records.append(
            f"### Record {number} ({when}{outcome}): {memory.display_title}\n"
            + memory.body[:RECORD_CHARS]
        )
    prompt = KNOWLEDGE_ASK.format(n=len(members), topic=topic, records="\n\n".join(records))
    messages = [
        {"role": "system", "content": KNOWLEDGE_SYSTEM},
        {"role": "user", "content": prompt},
    ]
    data, reply = complete_json(llm, messages, mock_response=llm.mock_response)
    if not isinstance(data, dict) or not str(data.get("content") or "").strip():
        raise LLMBadOutput(f"The LLM '{llm.model}' returned no knowledge content.")
    raw_points = data.get("key_points")
    listed = raw_points if isinstance(raw_points, list) else []
    points = [" ".join(str(p).split()) for p in listed if str(p).strip()][:8]
    try:
        confidence = min(max(float(data.get("confidence", 0.7)), 0.5), 1.0)
    except (TypeError, ValueError):
        confidence = 0.7
    name = " ".join(str(data.get("topic") or topic).split())[:80] or topic
    draft = KnowledgeDraft(
        title=f"About {name} (from {len(members)} episodes)",
        topic=name,
        body=render_knowledge_body(str(data["content"]).strip(), points, members),
        key_points=points,
        confidence=round(confidence, 2),
        writer=f"llm:{llm.model}",
    )
    return draft, reply.usage(), None


def _write_knowledge(
    store: Store,
    draft: KnowledgeDraft,
    group: EpisodeGroup,
    members: list[Memory],
    now: float | None,
) -> Memory:
    ignored = {t.casefold() for t in store.settings.compact.ignore_tags}
    shared = set.intersection(*(set(m.tags) for m in members)) if members else set()
    tags = {t for t in shared if t.casefold() not in ignored}
    if group.reason == "tag":
        tags.add(group.key)
    if group.reason == "target":
        tags.add(slugify(group.key))
    extra: dict[str, Any] = {"topic": draft.topic, "consolidated_by": draft.writer}
    if group.reason == "target":
        extra["target"] = group.key
    memory = build_memory(
        draft.body,
        type="knowledge",
        title=draft.title,
        tags=sorted(tags),
        importance=max(m.importance for m in members),
        confidence=draft.confidence,
        source="system_generated",
        created=now_iso(now),
        extra=extra,
        relations=[{"type": "derived_from", "target": m.id} for m in members],
        # Why: knowledge drawn from one private episode holds its words; it stays private too.
        private=any(m.scope == "private" for m in members),
    )
    # Why: a summary's words come from its episodes; it is no more trusted than the least.
    gate = gate_for(store)
    stamp_origin(memory, least_trusted(["agent", *(gate.origin(m) for m in members)]))
    write_memory(path_for(store.root, memory), memory, max_file_bytes(store))
    note_written_memories(store, [(memory, None)])
    return memory


def finish_interrupted(
    store: Store, memories: Sequence[tuple[str, Memory]], now: float | None = None
) -> list[str]:
    """Roll forward a consolidation that was killed part way: its knowledge file is written
    (it is written first), some of its episodes are not marked yet. Marks them; their ids."""
    unmarked = {
        m.id: (relpath, m)
        for relpath, m in memories
        if m.type == "episodic" and not m.extra.get("consolidated_into")
    }
    finished = []
    for _, knowledge in memories:
        if knowledge.type != "knowledge" or not knowledge.extra.get("consolidated_by"):
            continue
        for relation in knowledge.relations:
            target = relation.get("target")
            if relation.get("type") == "derived_from" and target in unmarked:
                relpath, episode = unmarked.pop(target)
                mark_consolidated(store, relpath, episode.id, knowledge.id, now)
                episode.extra["consolidated_into"] = knowledge.id
                finished.append(episode.id)
    return finished


def mark_consolidated(
    store: Store, relpath: str, episode_id: str, knowledge_id: str, now: float | None = None
) -> None:
    """Record in the episode's front matter that it was consolidated (the file stays)."""
    from memctl.service.memories.add import rewrite_memory

    stamp = now_iso(now)

    def change(current: Memory) -> tuple[Memory, str]:
        current.extra["consolidated_into"] = knowledge_id
        current.updated = stamp
        return current, "consolidated"

    rewrite_memory(store, episode_id, relpath, change)
