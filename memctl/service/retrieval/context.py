"""`memctl context`: what an agent should see before its next call, under a token budget.

Sections: the task in progress, the session's rolling summary and latest turns, relevant
memories from hierarchical recall (knowledge, semantic hits, recent episodes; deduplicated,
each tagged with where it came from) and confident preferences and profile facts. The same
store, state and query give the same bytes: no clock is read and every ordering has a tiebreak.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memctl.config import Store
from memctl.core.consolidation import markdown_sections
from memctl.core.context_fit import Part, fit
from memctl.core.episodes import ROLE_LABELS
from memctl.core.errors import InvalidMemoryFile
from memctl.core.memory import Memory
from memctl.core.task import TaskState, render_task
from memctl.store.files import read_memory
from memctl.store.sessions import read_meta, read_turns
from memctl.store.task_state import read_task

TITLE = "Memory context"
FACT_TYPES = ("preference", "profile")
RECALL_TYPES = ("semantic", "procedural", "episodic", "knowledge")
RECENT_EPISODES = 3
KNOWLEDGE_HITS = 3
SEMANTIC_HITS = 5  # seeds: episodes top 3, knowledge top 5
LEVEL_NAMES = ("full", "short", "left out")


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


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def flatten_body(body: str) -> str:
    """A memory body on one line: section names as labels, list items joined, sources dropped."""
    pieces = []
    for name, text in markdown_sections(body).items():
        if not text or name == "Sources":
            continue
        lines = [line.strip().lstrip("-*").strip() for line in text.splitlines() if line.strip()]
        joined = "; ".join(lines) if name not in ("", "Summary", "Goal") else " ".join(lines)
        pieces.append(f"{name}: {joined}" if name and name not in ("Summary",) else joined)
    return " ".join(pieces)


def _day(memory: Memory) -> str:
    return str(memory.extra.get("occurred_at") or memory.created or "")[:10]


def choose_query(query: str | None, task: TaskState | None, turns) -> tuple[str | None, str | None]:
    if query and query.strip():
        return query.strip(), "argument"
    if task is not None:
        active = [s.text for s in task.steps if s.status == "in_progress"]
        return " ".join([task.goal, *active]), "task"
    for turn in reversed(turns):
        if turn.role == "user" and turn.content.strip():
            return _clip(turn.content, 500), "session"
    return None, None


def _index_rows(store: Store, where: str) -> list[dict]:
    from memctl.service.retrieval.indexing import open_index

    index = open_index(store)
    if not index.exists():
        return []
    columns = ["id", "path", "type", "created", "updated", "importance"]
    return index.dataset().to_table(columns=columns, filter=where).to_pylist()


def _has_index(store: Store) -> bool:
    from memctl.service.retrieval.indexing import open_index

    return open_index(store).exists()


def _read(store: Store, relpath: str) -> Memory | None:
    try:
        return read_memory(store.root, relpath)
    except (OSError, InvalidMemoryFile):
        return None


@dataclass
class Recalled:
    memory: Memory
    path: str
    via: list[str]


def relevant_memories(
    store: Store,
    query: str | None,
    session_id: str | None,
    limit: int,
    min_relevance: float | None = None,
) -> list[Recalled]:
    """Knowledge, semantic hits and recent episodes: deduplicated, each with where it came from.

    Hits must pass recall's relevance floor (`min_relevance`, else recall.min_relevance): a
    query nothing is about adds no memories rather than the nearest ones.
    """
    from memctl.service.retrieval.recall import recall

    found: dict[str, Recalled] = {}

    def offer(memory: Memory | None, path: str, origin: str) -> bool:
        if memory is None or (session_id and memory.extra.get("session_id") == session_id):
            return False  # the session's own episodes are already in its summary
        if memory.id in found:
            if origin not in found[memory.id].via:
                found[memory.id].via.append(origin)
        else:
            found[memory.id] = Recalled(memory, path, [origin])
        return True

    if query and _has_index(store):
        for hit in recall(
            store,
            query,
            k=KNOWLEDGE_HITS,
            types=["knowledge"],
            sync=False,
            min_relevance=min_relevance,
        ):
            offer(hit.memory, str(hit.path.relative_to(store.root)), "knowledge")
        for hit in recall(
            store,
            query,
            k=SEMANTIC_HITS,
            types=list(RECALL_TYPES),
            sync=False,
            min_relevance=min_relevance,
        ):
            offer(hit.memory, str(hit.path.relative_to(store.root)), "semantic")
    else:
        rows = _index_rows(store, "archived = false AND type = 'knowledge'")
        rows.sort(key=lambda r: (-float(r["importance"]), _newest_first(r["updated"]), r["id"]))
        for row in rows[:KNOWLEDGE_HITS]:
            offer(_read(store, row["path"]), row["path"], "knowledge")
    rows = _index_rows(store, "archived = false AND type = 'episodic'")
    rows.sort(key=lambda r: (_newest_first(r["created"]), r["id"]))
    recent = 0
    for row in rows:
        if recent >= RECENT_EPISODES:
            break
        memory = _read(store, row["path"])
        if memory is not None and not memory.extra.get("consolidated_into"):
            recent += offer(memory, row["path"], "recent")
    chosen = list(found.values())
    shown = {item.memory.id for item in chosen}
    # An episode whose knowledge is already shown adds nothing.
    chosen = [item for item in chosen if item.memory.extra.get("consolidated_into") not in shown]
    return chosen[:limit]


def _newest_first(text: str | None) -> tuple:
    """Sort key for 'newest first' on ISO timestamps, with stable ties."""
    return tuple(-ord(ch) for ch in (text or ""))


def confident_facts(store: Store, min_confidence: float, limit: int) -> list[Memory]:
    quoted = ",".join(f"'{t}'" for t in FACT_TYPES)
    facts = []
    for row in _index_rows(store, f"archived = false AND type IN ({quoted})"):
        memory = _read(store, row["path"])
        if memory is not None and memory.confidence >= min_confidence:
            facts.append(memory)
    facts.sort(key=lambda m: (-m.confidence, -m.importance, m.id))
    return facts[:limit]


def minimal_task(task: TaskState) -> str:
    """The goal and the step in progress: what survives the tightest budget."""
    lines = [f"**Goal:** {task.goal}"]
    for number, step in enumerate(task.steps, start=1):
        if step.status == "in_progress":
            lines.append(f"**Now:** step {number}. {_clip(step.text, 200)}")
    return "\n".join(lines)


def _task_parts(task: TaskState) -> list[Part]:
    levels = [
        render_task(task),
        render_task(task, result_chars=80, notes=False),
        render_task(task, result_chars=0, notes=False, collapse_done=True),
        minimal_task(task),
    ]
    return [Part("task", levels, value=90, kind="task detail", key="task")]


def _session_parts(summary: str, shown) -> list[Part]:
    parts = []
    if summary.strip():
        clipped = _clip(summary, max(200, len(summary) // 2))
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
        levels = [
            f"**{label}:** {_clip(turn.content, 600)}",
            f"**{label}:** {_clip(turn.content, 200)}",
            "",
        ]
        parts.append(Part("session", levels, value, "turn", group="Recent turns", key=f"turn:{i}"))
    return parts


def _memory_part(rank: int, item: Recalled) -> Part:
    memory, origins = item.memory, item.via
    when = _day(memory)
    about = (
        f"({memory.type}{', ' + when if when else ''}, id {memory.id}, via {', '.join(origins)})"
    )
    title = memory.display_title
    body = flatten_body(memory.body)
    if body.startswith(title.rstrip("…").rstrip()):
        # A memory without its own title: its text is the headline.
        levels = [f"- {_clip(body, 700)} {about}", f"- {_clip(body, 160)} {about}", ""]
    else:
        head = f"- **{title}** {about}"
        levels = (
            [f"{head}\n  {_clip(body, 700)}", f"{head}\n  {_clip(body, 160)}", ""]
            if body
            else [head, ""]
        )
    return Part("memories", levels, 30 - rank * 0.5, "memory", key=f"memory:{memory.id}")


def _fact_part(rank: int, memory: Memory) -> Part:
    text = flatten_body(memory.body) or memory.display_title
    line = f"- {_clip(text, 300)} ({memory.type}, confidence {memory.confidence:g})"
    return Part("facts", [line, ""], 35 - rank * 0.1, "preference or fact", key=f"fact:{memory.id}")


def build_context(
    store: Store, query: str | None = None, budget: int | None = None, session_id: str | None = None
) -> ContextResult:
    from memctl.integrations.tokenizer import count_tokens, tokenizer_name
    from memctl.service.retrieval.indexing import sync_index

    settings = store.section("context")
    budget = int(budget if budget is not None else settings.get("budget", 2000))
    task = read_task(store.state_dir)
    meta = read_meta(store.state_dir, session_id) if session_id else None
    turns = read_turns(store.state_dir, session_id) if meta else []
    recent = max(0, int(settings.get("recent_turns", 6)))
    shown_turns = [t for t in turns if t.role != "system"]
    shown_turns = shown_turns[max(0, len(shown_turns) - recent) :]
    used_query, query_from = choose_query(query, task, turns)

    sync_index(store)
    memories = relevant_memories(
        store,
        used_query,
        session_id,
        int(settings.get("max_memories", 10)),
        None if settings.get("min_relevance") is None else float(settings["min_relevance"]),
    )
    facts = confident_facts(
        store, float(settings.get("min_confidence", 0.6)), int(settings.get("max_facts", 20))
    )
    facts = [f for f in facts if f.id not in {item.memory.id for item in memories}]

    parts: list[Part] = []
    if task is not None:
        parts += _task_parts(task)
    if meta is not None:
        parts += _session_parts(meta.summary, shown_turns)
    parts += [_memory_part(rank, item) for rank, item in enumerate(memories)]
    parts += [_fact_part(rank, memory) for rank, memory in enumerate(facts)]
    sections = [
        ("task", "Current task"),
        ("session", f"Session {session_id}"),
        ("memories", "Relevant memories"),
        ("facts", "Preferences and profile"),
    ]
    shares = {name: float(share) for name, share in (settings.get("split") or {}).items()}
    fitted = fit(
        TITLE, sections, parts, budget, shares, count_tokens, empty_text="_Nothing to recall yet._"
    )

    level = {part.key: part for part in parts}

    def shown(key: str) -> str:
        part = level[key]
        return "left out" if not part.text else ("full" if part.level == 0 else "short")

    result = ContextResult(
        fitted.text,
        fitted.tokens,
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
        }
        for m in facts
    ]
    return result


def context_block(
    store: Store, budget: int, session_id: str = "", query: str | None = None
) -> tuple[str, tuple[str, ...]]:
    """The context Markdown for an agent and the ids it shows; "" when there is nothing to say."""
    result = build_context(store, query=query, budget=budget, session_id=session_id or None)
    shown = tuple(
        item["id"] for item in [*result.memories, *result.facts] if item.get("shown") != "left out"
    )
    if not (shown or result.task or result.session):
        return "", ()  # "nothing to recall yet" is not worth a place in the agent's context
    return result.markdown, shown


def agent_context(
    store: Store, query: str | None = None, budget: int = 2000, session_id: str = ""
) -> str:
    """The `memctl context` block as hooks and MCP clients receive it."""
    return context_block(store, budget, session_id, query)[0]
