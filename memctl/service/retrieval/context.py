"""`memctl context`: what an agent should see before its next call, under a token budget.

Sections: the task in progress, the session's rolling summary and latest turns, relevant
memories from hierarchical recall (knowledge, semantic hits, recent episodes; deduplicated,
each tagged with where it came from) and confident preferences and profile facts. The same
store, state and query give the same bytes: no clock is read and every ordering has a tiebreak.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from memctl.config import Store
from memctl.core.errors import InvalidMemoryFile
from memctl.core.files.history import agent_body
from memctl.core.files.memory import Memory
from memctl.core.files.schema import plain
from memctl.core.language.text import clip, counted
from memctl.core.learning.consolidation import markdown_sections
from memctl.core.learning.episodes import ROLE_LABELS
from memctl.core.learning.task import TaskState, render_task
from memctl.core.ports import MemoryFilter, Row
from memctl.core.recall.context_fit import Part, fit
from memctl.core.recall.federation import interleave_by_rank
from memctl.core.recall.hook_blocks import memory_text
from memctl.core.trust.fence import fence, neutralise, note_label
from memctl.service.privacy import shares_private, visible
from memctl.service.provenance import Gate, gate_for, injectable
from memctl.store.files import max_file_bytes, read_memory
from memctl.store.sessions import read_meta, read_turns
from memctl.store.task_state import read_task

TITLE = "Memory context"
FACT_TYPES = ("preference", "profile")
RECALL_TYPES = ("semantic", "procedural", "episodic", "knowledge")
RECENT_EPISODES = 3
KNOWLEDGE_HITS = 3
SEMANTIC_HITS = 5  # seeds: episodes top 3, knowledge top 5
LEVEL_NAMES = ("full", "short", "left out")


@dataclass(frozen=True)
class ContextShape:
    """How much of what a context block shows, beyond its budget: `memctl context` shows the
    latest RECENT_EPISODES episodes and each memory's details; the session start (`compact`)
    fewer episodes and one short line per fact (type, id and origin; no confidence or date)."""

    recent_episodes: int = RECENT_EPISODES
    compact: bool = False


@dataclass
class ContextResult:
    markdown: str
    tokens: int
    budget: int
    tokenizer: str
    query: str | None = None
    query_from: str | None = None
    task: dict[str, Any] | None = None
    session: dict[str, Any] | None = None
    memories: list[dict[str, Any]] = field(default_factory=list)
    facts: list[dict[str, Any]] = field(default_factory=list)
    left_out: dict[str, int] = field(default_factory=dict)
    shortened: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "budget": self.budget,
            "tokens": self.tokens,
            "tokenizer": self.tokenizer,
            "query": self.query,
            "query_from": self.query_from,
            "task": self.task,
            "session": self.session,
            "memories": self.memories,
            "facts": self.facts,
            "left_out": self.left_out,
            "shortened": self.shortened,
            "markdown": self.markdown,
        }


def flatten_body(body: str) -> str:
    """A memory body on one line: section names as labels, list items joined, sources dropped."""
    pieces = []
    for name, text in markdown_sections(agent_body(body)).items():
        if not text or name == "Sources":
            continue
        lines = [line.strip().lstrip("-*").strip() for line in text.splitlines() if line.strip()]
        joined = "; ".join(lines) if name not in ("", "Summary", "Goal") else " ".join(lines)
        pieces.append(f"{name}: {joined}" if name and name not in ("Summary",) else joined)
    return " ".join(pieces)


def _day(memory: Memory) -> str:
    return str(memory.extra.get("occurred_at") or memory.created or "")[:10]


def _empty_text(held: int, query: str | None) -> str:
    """What an empty block says. Why not always "nothing yet": a store full of procedures and
    facts, asked without a topic (a session start), must not read as an empty memory."""
    if held == 0:
        return "_Nothing to recall yet._"
    if query is None:
        return (
            f"_No task or session to recall for; the store holds {counted(held, 'memory', 'memories')}, found by "
            "topic: `memctl recall QUERY`._"
        )
    return "_Nothing in memory is relevant to this._"


def choose_query(query: str | None, task: TaskState | None, turns) -> tuple[str | None, str | None]:
    if query and query.strip():
        return query.strip(), "argument"
    if task is not None:
        active = [s.text for s in task.steps if s.status == "in_progress"]
        return " ".join([task.goal, *active]), "task"
    for turn in reversed(turns):
        if turn.role == "user" and turn.content.strip():
            return clip(turn.content, 500), "session"
    return None, None


def _index_rows(store: Store, types: tuple[str, ...], include_private: bool = False) -> list[Row]:
    """The live (not archived) rows of these types; private ones only when shared."""
    from memctl.service.retrieval.indexing import open_index

    columns = ["id", "path", "type", "created", "updated", "importance"]
    scope = None if include_private else "project"
    where = MemoryFilter(types=types, archived=False, scope=scope)
    return open_index(store).rows(where, columns)


def _has_index(store: Store) -> bool:
    from memctl.service.retrieval.indexing import open_index

    return open_index(store).exists()


def _read(store: Store, relpath: str) -> Memory | None:
    try:
        return read_memory(store.root, relpath, max_bytes=max_file_bytes(store))
    except (OSError, InvalidMemoryFile):
        return None


@dataclass
class Recalled:
    memory: Memory
    path: str
    via: list[str]
    store: str | None = None  # "user" for a memory of the user store; None: the one store
    origin: str = "user"  # where its words came from (service.provenance)


def relevant_memories(
    store: Store,
    query: str | None,
    session_id: str | None,
    limit: int,
    min_relevance: float | None = None,
    include_private: bool = False,
    recent_episodes: int = RECENT_EPISODES,
) -> list[Recalled]:
    """Knowledge, semantic hits and up to `recent_episodes` recent episodes: deduplicated, each
    with where it came from.

    Hits must pass recall's relevance floor (`min_relevance`, else recall.min_relevance): a
    query nothing is about adds no memories rather than the nearest ones.
    """
    from memctl.service.retrieval.embedding import model_settings
    from memctl.service.retrieval.recall import start_query_embedding
    from memctl.service.retrieval.use_case import CONTEXT, RecallRequest, recall

    found: dict[str, Recalled] = {}
    gate = gate_for(store)
    gates = {"project": gate}

    def offer(memory: Memory | None, path: str, origin: str) -> bool:
        if memory is None or (session_id and memory.extra.get("session_id") == session_id):
            return False  # the session's own episodes are already in its summary
        if not visible(memory, include_private) or not injectable([memory], gates):
            return False  # quarantined: waits for `memctl review`, never injected
        if memory.id in found:
            if origin not in found[memory.id].via:
                found[memory.id].via.append(origin)
        else:
            found[memory.id] = Recalled(memory, path, [origin], origin=gate.origin(memory))
        return True

    if query and _has_index(store):
        # Why one vector: both recalls below search with the same query (~10 ms to embed).
        vector = start_query_embedding(query, model_settings(store)) if query.strip() else None
        for origin, k, types in (
            ("knowledge", KNOWLEDGE_HITS, ("knowledge",)),
            ("semantic", SEMANTIC_HITS, RECALL_TYPES),
        ):
            request = RecallRequest(
                store=store,
                query=query,
                k=k,
                types=types,
                include_private=include_private,
                min_relevance=min_relevance,
                stores=[("project", store)],
                purpose=CONTEXT,
                sync=False,
                query_vector=vector,
            )
            for hit in recall(request).hits:
                offer(hit.memory, str(hit.path.relative_to(store.root)), origin)
    else:
        rows = _index_rows(store, ("knowledge",), include_private)
        rows.sort(key=lambda r: (-float(r["importance"]), _newest_first(r["updated"]), r["id"]))
        for row in rows[:KNOWLEDGE_HITS]:
            offer(_read(store, row["path"]), row["path"], "knowledge")
    recent = 0
    for row in _recent_episode_rows(store, include_private):
        if recent >= recent_episodes:
            break
        memory = _read(store, row["path"])
        if memory is not None and not memory.extra.get("consolidated_into"):
            recent += offer(memory, row["path"], "recent")
    chosen = list(found.values())
    shown = {item.memory.id for item in chosen}
    # An episode whose knowledge is already shown adds nothing.
    chosen = [item for item in chosen if item.memory.extra.get("consolidated_into") not in shown]
    return chosen[:limit]


def _recent_episode_rows(store: Store, include_private: bool) -> Iterator[Row]:
    """Episode rows newest first, asked of the index a few at a time: most contexts need the
    first handful, and a store of 100k memories has ~25k episodes."""
    from memctl.service.retrieval.indexing import open_index

    index = open_index(store)
    scope = None if include_private else "project"
    where = MemoryFilter(types=("episodic",), archived=False, scope=scope)
    limit = RECENT_EPISODES * 4
    seen = 0
    while True:
        rows = index.newest_rows(where, ["id", "path", "created"], "created", limit)
        yield from rows[seen:]
        if len(rows) < limit:
            return
        seen, limit = len(rows), limit * 4


def _newest_first(text: str | None) -> tuple:
    """Sort key for 'newest first' on ISO timestamps, with stable ties."""
    return tuple(-ord(ch) for ch in (text or ""))


def confident_facts(
    store: Store, min_confidence: float, limit: int, include_private: bool = False
) -> list[Memory]:
    read = [_read(store, row["path"]) for row in _index_rows(store, FACT_TYPES, include_private)]
    sure = [
        memory
        for memory in read
        if memory is not None
        and visible(memory, include_private)
        and memory.confidence >= min_confidence
    ]
    facts = [memory for memory, _ in injectable(sure, {"project": gate_for(store)})]
    facts.sort(key=lambda m: (-m.confidence, -m.importance, m.id))
    return facts[:limit]


def minimal_task(task: TaskState) -> str:
    """The goal and the step in progress: what survives the tightest budget."""
    lines = [f"**Goal:** {neutralise(task.goal)}"]
    for number, step in enumerate(task.steps, start=1):
        if step.status == "in_progress":
            lines.append(f"**Now:** step {number}. {neutralise(clip(step.text, 200))}")
    return "\n".join(lines)


def _task_parts(task: TaskState) -> list[Part]:
    levels = [
        neutralise(render_task(task)),
        neutralise(render_task(task, result_chars=80, notes=False)),
        neutralise(render_task(task, result_chars=0, notes=False, collapse_done=True)),
        minimal_task(task),
    ]
    return [Part("task", levels, value=90, kind="task detail", key="task")]


def _session_parts(summary: str, shown) -> list[Part]:
    parts = []
    summary = neutralise(summary)
    if summary.strip():
        clipped = clip(summary, max(200, len(summary) // 2))
        parts.append(
            Part(
                "session",
                [summary.strip(), clipped, ""],
                55,
                "session summary",
                group="Summary so far",
                key="summary",
            )
        )
    for i, turn in enumerate(shown):
        label = ROLE_LABELS.get(turn.role, turn.role)
        value = 40 + 25 * (i / max(1, len(shown) - 1))
        content = neutralise(turn.content)
        levels = [f"**{label}:** {clip(content, 600)}", f"**{label}:** {clip(content, 200)}", ""]
        parts.append(Part("session", levels, value, "turn", group="Recent turns", key=f"turn:{i}"))
    return parts


def _memory_part(rank: int, item: Recalled, compact: bool = False) -> Part:
    memory, origins = item.memory, item.via
    when = _day(memory)
    mine = ", user store" if item.store == "user" else ""
    about = (
        f"({memory.type}, id {memory.id}, {note_label(item.origin, when)}, "
        f"via {', '.join(origins)}{mine})"
    )
    if compact:
        about = f"({memory.type}, {memory.id}; {note_label(item.origin, when)}{mine})"
    # Why the text first: the metadata closes the line, so no sentence resumes after it.
    body = flatten_body(agent_body(memory.body))
    levels = [
        f"- {memory_text(memory.display_title, body, 700)} {about}",
        f"- {memory_text(memory.display_title, body, 160)} {about}",
        "",
    ]
    # Why apart: a recent episode found by no query is not "relevant", only recent; and one
    # line of it says what the last session was about (`memctl show` gives the rest).
    section = "recent" if origins == ["recent"] else "memories"
    if section == "recent" and compact:
        levels = levels[1:]
    return Part(section, levels, 30 - rank * 0.5, "memory", key=f"memory:{memory.id}")


def _fact_part(
    rank: int, memory: Memory, gate: Gate, store: str | None = None, compact: bool = False
) -> Part:
    text = flatten_body(neutralise(agent_body(memory.body))) or neutralise(memory.display_title)
    mine = ", user store" if store == "user" else ""
    if compact:
        label = note_label(gate.origin(memory), "")
        line = f"- {clip(text, 200)} ({memory.type}, {memory.id}; {label}{mine})"
        return Part(
            "facts", [line, ""], 35 - rank * 0.1, "preference or fact", key=f"fact:{memory.id}"
        )
    label = note_label(gate.origin(memory), _day(memory))
    line = f"- {clip(text, 300)} ({memory.type}, confidence {memory.confidence:g}, {label}{mine})"
    return Part("facts", [line, ""], 35 - rank * 0.1, "preference or fact", key=f"fact:{memory.id}")


def build_context(
    store: Store,
    query: str | None = None,
    budget: int | None = None,
    session_id: str | None = None,
    user_store: Store | None = None,
    include_private: bool | None = None,
    shape: ContextShape = ContextShape(),
) -> ContextResult:
    """The context block and what it shows. Private memories only when shared (service.privacy);
    `user_store`: also show its relevant memories and its preferences and profile facts;
    `shape`: how many recent episodes, how compact (ContextShape)."""
    from memctl.service.retrieval.index_guard import read_repairing

    shared = shares_private(store, include_private)
    return read_repairing(
        store,
        lambda: _build_context(store, query, budget, session_id, shared, user_store, shape),
    )


def _build_context(
    store: Store,
    query: str | None,
    budget: int | None,
    session_id: str | None,
    shared: bool,
    user_store: Store | None,
    shape: ContextShape = ContextShape(),
) -> ContextResult:
    """`user_store`: also show its relevant memories and its preferences and profile facts."""
    from memctl.integrations.tokenizer import count_tokens, tokenizer_name
    from memctl.service.retrieval.index_guard import verify_index
    from memctl.service.retrieval.indexing import sync_index

    settings = store.settings.context
    budget = budget if budget is not None else settings.budget
    task = read_task(store.state_dir)
    meta = read_meta(store.state_dir, session_id) if session_id else None
    turns = read_turns(store.state_dir, session_id) if meta and session_id else []
    recent = settings.recent_turns
    shown_turns = [t for t in turns if t.role != "system"]
    shown_turns = shown_turns[max(0, len(shown_turns) - recent) :]
    used_query, query_from = choose_query(query, task, turns)

    synced = sync_index(store)
    verify_index(store)
    limits = (settings.max_memories, settings.max_facts)
    floor = settings.min_relevance  # None: each store's recall.min_relevance
    confidence = settings.min_confidence
    memories = relevant_memories(
        store, used_query, session_id, limits[0], floor, shared, shape.recent_episodes
    )
    facts = confident_facts(store, confidence, limits[1], include_private=shared)
    user_facts: set[str] = set()
    if user_store is not None:
        sync_index(user_store)
        from memctl.service.anchoring import of_this_project

        here = of_this_project(store)  # another project's memories stay out
        mine = [
            m
            for m in relevant_memories(
                user_store, used_query, None, limits[0], floor, False, shape.recent_episodes
            )
            if here(m.memory)
        ]
        theirs = [f for f in confident_facts(user_store, confidence, limits[1] * 2) if here(f)]
        memories, facts, user_facts = _with_user_store(
            memories, facts, mine, theirs[: limits[1]], limits
        )
    facts = [f for f in facts if f.id not in {item.memory.id for item in memories}]

    parts: list[Part] = []
    if task is not None:
        parts += _task_parts(task)
    if meta is not None:
        parts += _session_parts(meta.summary, shown_turns)
    parts += [_memory_part(rank, item, shape.compact) for rank, item in enumerate(memories)]
    gates = {"project": gate_for(store)}
    if user_store is not None:
        gates["user"] = gate_for(user_store)
    parts += [
        _fact_part(
            rank,
            memory,
            gates["user" if memory.id in user_facts else "project"],
            "user" if memory.id in user_facts else None,
            shape.compact,
        )
        for rank, memory in enumerate(facts)
    ]
    sections = [
        ("task", "Current task"),
        ("session", f"Session {session_id}"),
        ("memories", "Relevant memories"),
        ("recent", "Recent sessions"),
        ("facts", "Preferences and profile"),
    ]
    shares = plain(settings.split)
    # Why the fence's tokens first: the block the agent gets is fenced, and must fit the budget.
    inner = max(1, budget - count_tokens(fence("")) - 2)  # 2: the note names `budget` below
    held = synced.added + synced.updated + synced.unchanged
    fitted = fit(TITLE, sections, parts, inner, shares, count_tokens, _empty_text(held, used_query))
    fenced = fence(fitted.text.replace(f"_To fit {inner} tokens:", f"_To fit {budget} tokens:"))

    level = {part.key: part for part in parts}

    def shown(key: str) -> str:
        part = level[key]
        return "left out" if not part.text else ("full" if part.level == 0 else "short")

    result = ContextResult(
        fenced,
        count_tokens(fenced),
        budget,
        tokenizer_name(),
        used_query,
        query_from,
        left_out=fitted.left_out,
        shortened=fitted.shortened,
    )
    if task is not None:
        result.task = {**task.to_dict(), "shown": "full" if level["task"].level == 0 else "short"}
    if meta is not None:
        result.session = {
            "id": meta.id,
            "summary": meta.summary,
            "summary_shown": shown("summary") if "summary" in level else None,
            "turns": [
                {"role": t.role, "content": t.content, "ts": t.ts, "shown": shown(f"turn:{i}")}
                for i, t in enumerate(shown_turns)
            ],
        }
    result.memories = [
        {
            "id": item.memory.id,
            "title": item.memory.display_title,
            "type": item.memory.type,
            "via": item.via,
            "path": item.path,
            "shown": shown(f"memory:{item.memory.id}"),
            **({"store": item.store} if item.store else {}),
        }
        for item in memories
    ]
    result.facts = [
        {
            "id": m.id,
            "type": m.type,
            "confidence": m.confidence,
            "text": flatten_body(m.body) or m.display_title,
            "shown": shown(f"fact:{m.id}"),
            **({"store": "user" if m.id in user_facts else "project"} if user_store else {}),
        }
        for m in facts
    ]
    return result


def _with_user_store(
    memories: list[Recalled],
    facts: list[Memory],
    user_memories: list[Recalled],
    user_facts: list[Memory],
    limits: tuple[int, int],
) -> tuple[list[Recalled], list[Memory], set[str]]:
    """Project and user memories alternated by rank, facts by confidence; the project first on
    a tie, and on an id both stores hold. Returns the user facts' ids too."""
    for item in memories:
        item.store = "project"
    for item in user_memories:
        item.store = "user"
    project_ids = {item.memory.id for item in memories} | {fact.id for fact in facts}
    user_memories = [item for item in user_memories if item.memory.id not in project_ids]
    merged = [item for _, item in interleave_by_rank([memories, user_memories], limits[0])]
    user_facts = [fact for fact in user_facts if fact.id not in project_ids]
    ranked = sorted(
        [(fact, 0) for fact in facts] + [(fact, 1) for fact in user_facts],
        key=lambda pair: (-pair[0].confidence, -pair[0].importance, pair[1], pair[0].id),
    )
    return merged, [fact for fact, _ in ranked[: limits[1]]], {fact.id for fact in user_facts}


def context_block(
    store: Store,
    budget: int | None,
    session_id: str = "",
    query: str | None = None,
    user_store: Store | None = None,
    include_private: bool | None = None,
    shape: ContextShape = ContextShape(),
) -> tuple[str, tuple[str, ...]]:
    """The context Markdown for an agent and the ids it shows; "" when there is nothing to say."""
    result = build_context(
        store,
        query=query,
        budget=budget,
        session_id=session_id or None,
        user_store=user_store,
        include_private=include_private,
        shape=shape,
    )
    shown = tuple(
        item["id"] for item in [*result.memories, *result.facts] if item.get("shown") != "left out"
    )
    if not (shown or result.task or result.session):
        return "", ()  # "nothing to recall yet" is not worth a place in the agent's context
    return result.markdown, shown


def agent_context(
    store: Store,
    query: str | None = None,
    budget: int | None = None,
    session_id: str = "",
    user_store: Store | None = None,
    include_private: bool | None = None,
) -> str:
    """The `memctl context` block as hooks and MCP clients receive it."""
    return context_block(store, budget, session_id, query, user_store, include_private)[0]
