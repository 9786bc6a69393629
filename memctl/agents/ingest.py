"""A coding agent's transcript into memory: extraction, the session buffer, compaction.

Called by the PreCompact and SessionEnd hooks (usually in a detached process). A transcript
only grows, so each call takes the turns after the ones an earlier call for the same session
already took; running it twice adds nothing twice. SessionEnd also ends the buffered session
(its episode) and runs `memctl compact` (hooks.compact_on_end).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from memctl.config import Store
from memctl.core.errors import MemctlError
from memctl.core.files.memory import parse_time
from memctl.core.learning.conversation import ToolCall, Turn, home_as_tilde
from memctl.core.learning.episodes import refuted_turns
from memctl.store.files import file_lock
from memctl.store.hook_state import load_session_state, save_session_state
from memctl.store.safe_read import DEFAULT_MAX_INPUT_BYTES, read_input_file

AGENT = "claude-code"


@dataclass
class IngestReport:
    session_id: str
    turns_in_transcript: int
    new_turns: int
    episodes: list[str] = field(default_factory=list)  # ids of episodes written
    extracted: list[str] = field(default_factory=list)  # ids of memories extracted
    knowledge: list[str] = field(default_factory=list)  # ids written by consolidation
    ended: bool = False
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def ingest_transcript(
    store: Store,
    session_id: str,
    transcript_path: Path,
    *,
    final: bool,
    user_store: Store | None = None,
) -> IngestReport:
    """Feed the transcript's new turns to the session buffer and extraction; end the session
    (writing its episode) when `final`. Extraction routes what is about the person to
    `user_store`, when given; the session, its episodes and compaction stay in `store`."""
    from memctl.service.lifecycle.episodes import word_vector_summaries

    with word_vector_summaries():
        return _ingest(store, session_id, transcript_path, final=final, user_store=user_store)


def _ingest(
    store: Store,
    session_id: str,
    transcript_path: Path,
    *,
    final: bool,
    user_store: Store | None,
) -> IngestReport:
    limit = store.settings.limits.max_input_bytes
    # Why `~`: what is learned lands in files git may stage; the home folder names the user.
    turns = [
        replace(t, content=home_as_tilde(t.content))
        for t in read_transcript(Path(transcript_path), limit)
        if t.content.strip()
    ]
    outputs_at, tool_calls = read_transcript_tools(Path(transcript_path), limit)
    tool_calls = [
        replace(c, command=home_as_tilde(c.command), path=home_as_tilde(c.path)) for c in tool_calls
    ]
    tool_outputs = [(origin, body) for _, origin, body in outputs_at]
    session = session_id or Path(transcript_path).stem
    with file_lock(store.state_dir / "hooks" / "ingest.lock"):
        state = load_session_state(store, session_id)
        done = int(state.get("turns_ingested") or 0)
        if done > len(turns) or state.get("transcript") not in (None, str(transcript_path)):
            done = 0  # another transcript under the same session id: start over
        report = IngestReport(session, len(turns), len(turns) - done)
        state["transcript"] = str(transcript_path)
        new_turns = turns[done:]
        # Why no sync on the way: everything this ingest writes is indexed once, below.
        if new_turns:  # first: a retry after a failure below re-extracts, and dedup says NOOP
            # Why only calls after the turns already taken: an earlier ingest learned from those.
            since = turns[done - 1].last_line + 1 if done else 0
            calls = [call for call in tool_calls if call.line >= since]
            report.extracted.extend(
                _extract(
                    store,
                    new_turns,
                    str(transcript_path),
                    user_store,
                    outputs_at,
                    calls,
                    session,
                )
            )
        # Why the whole transcript: a claim the user refutes a few turns later may sit in an
        # earlier stretch of the buffer, folded into its own episode before the refutation.
        # Only claims said to be false: "why did you ...?" objects to an action, and the work
        # reported before it, folded already, stays.
        refuted = refuted_turns(turns, claims_only=True)
        for index in range(done, len(turns)):
            if index not in refuted:
                report.episodes.extend(_buffer_turn(store, session, turns[index]))
            state["turns_ingested"] = index + 1
            save_session_state(store, session_id, state)
        if final:
            report.episodes.extend(_end(store, session, report))
            report.ended = True
        _mark_borrowed(store, report.episodes, tool_outputs)  # before compaction reads them
        from memctl.service.retrieval.indexing import sync_index

        if report.extracted or report.episodes:
            # Why before compaction: it reads the episodes' vectors from the index instead of
            # embedding them a second time.
            sync_index(store)
        if final and store.settings.hooks.compact_on_end:
            report.knowledge.extend(_compact(store))
            if report.knowledge:
                sync_index(store)
        state.setdefault("ingests", []).append(
            {
                "turns": len(new_turns),
                "final": final,
                "episodes": report.episodes,
                "extracted": report.extracted,
                "knowledge": report.knowledge,
                "notes": report.notes,
            }
        )
        save_session_state(store, session_id, state)
    return report


def hook_transcript(store: Store, path: str | Path) -> Path:
    """A hook payload's `transcript_path`, when it is a transcript in one of the store's
    `hooks.transcript_folders` (agents.transcripts.checked_transcript_path); else refused."""
    from memctl.agents.transcripts import checked_transcript_path

    folders = [Path(folder).expanduser() for folder in store.settings.hooks.transcript_folders]
    return checked_transcript_path(path, folders)


def read_transcript(path: Path, max_bytes: int = DEFAULT_MAX_INPUT_BYTES) -> list[Turn]:
    """The transcript's turns. Claude Code appends to it while the session runs, so a last
    line without its newline is a write in progress: it is left for the next call. Only a
    regular JSONL file of at most `max_bytes` is read."""
    from memctl.agents.transcripts import read_jsonl_transcript

    raw = read_input_file(path, max_bytes)
    if raw.lstrip().startswith(b"{") and not raw.endswith(b"\n"):
        raw = raw[: raw.rfind(b"\n") + 1]
    return read_jsonl_transcript(raw, str(path))


def read_transcript_tools(
    path: Path, max_bytes: int = DEFAULT_MAX_INPUT_BYTES
) -> tuple[list[tuple[int, str, str]], list[ToolCall]]:
    """What the transcript's tools returned, where (agents.transcripts.read_tool_outputs_at),
    and the agent's tool calls with how each turned out (agents.transcripts.read_tool_calls)."""
    from memctl.agents.transcripts import read_tool_calls, read_tool_outputs_at

    try:
        text = read_input_file(path, max_bytes).decode("utf-8-sig", "replace")
    except (OSError, MemctlError):
        return [], []
    return read_tool_outputs_at(text), read_tool_calls(text)


def _mark_borrowed(store: Store, episode_ids: list[str], tool_outputs) -> None:
    """An episode that copies a tool's words (the agent quoting a README it read) takes that
    tool's origin, like an extracted memory does (core.trust.provenance.borrowed_origin).

    When title and body read as an instruction, the title is judged too, as its own passage: the
    gate reads both, and the title is the user's first request. A user's "from now on you must
    ..." there, next to a README the agent quoted, is the user's instruction, not the README's."""
    from memctl.core.errors import MemctlError
    from memctl.core.trust.directives import directive_reason
    from memctl.core.trust.provenance import borrowed_origin, least_trusted, origin_of, stamp_origin
    from memctl.service.memories.add import rewrite_memory
    from memctl.service.memories.lookup import get_memory

    for memory_id in episode_ids if tool_outputs else []:
        try:
            path, memory = get_memory(store, memory_id)
        except MemctlError:
            continue  # forgotten meanwhile
        whole = f"{memory.title}\n\n{memory.body}"
        judged = whole if directive_reason(whole, own_labels=True) else memory.body
        borrowed = borrowed_origin(judged, tool_outputs)
        if borrowed is None:
            continue

        def stamped(current, borrowed=borrowed):
            origin = least_trusted([origin_of(current), borrowed])
            return stamp_origin(current, origin), "origin"

        rewrite_memory(store, memory_id, path.relative_to(store.root).as_posix(), stamped)


def _buffer_turn(store: Store, session: str, turn: Turn) -> list[str]:
    from memctl.service.lifecycle.session import add_turn

    when = parse_time(turn.timestamp)
    result = add_turn(
        store,
        session,
        turn.role,
        turn.content,
        agent=AGENT,
        now=when.timestamp() if when else None,
        sync=False,
    )
    return [fold.episode_id for fold in result.folds if fold.episode_id]


def _end(store: Store, session: str, report: IngestReport) -> list[str]:
    from memctl.service.lifecycle.session import end_session

    try:
        fold = end_session(store, session, sync=False)
    except Exception as exc:  # noqa: BLE001 - e.g. a session with no turns: say so, go on
        report.notes.append(f"session not ended: {exc}")
        return []
    if fold.note:
        report.notes.append(fold.note)
    return [fold.episode_id] if fold.episode_id else []


def _extract(
    store: Store,
    turns: list[Turn],
    source: str,
    user_store: Store | None = None,
    outputs_at: list[tuple[int, str, str]] | None = None,
    tool_calls: list[ToolCall] | None = None,
    session: str = "",
) -> list[str]:
    """Durable facts, preferences and procedures the new turns state (`memctl extract`), and
    the commands the agent's tool calls show."""
    from memctl.service.extraction import extract

    result = extract(
        store,
        turns,
        source=source,
        user_store=user_store,
        sync=False,
        tool_outputs=[(origin, body) for _, origin, body in outputs_at or ()],
        tool_output_lines=[at for at, _, _ in outputs_at or ()],
        tool_calls=tool_calls or (),
        session=session,
        fallback_to_rules=True,
    )
    return [done["id"] for done in result.applied if done.get("id") and done["action"] != "none"]


def _compact(store: Store) -> list[str]:
    """Consolidate episodes into knowledge (`memctl compact`), now that one more has ended."""
    from memctl.service.lifecycle.compaction import compact

    return [c.knowledge_id for c in compact(store, sync=False).consolidations if c.knowledge_id]
