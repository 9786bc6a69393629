"""Short-term memory: the conversation buffer of each session, trimmed into episodes."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from memctl.config import Store
from memctl.core.errors import MemctlError, UsageError
from memctl.core.files.input_limits import check_input
from memctl.core.files.memory import now_iso, parse_time
from memctl.core.learning.buffer import BufferLimits, over_limits, plan_trim
from memctl.core.learning.conversation import ROLES
from memctl.core.learning.episodes import worth_an_episode
from memctl.service.lifecycle.episodes import draft_turns, write_conversation_episode, written_id
from memctl.service.memories.redaction import redact_for_store
from memctl.service.retrieval.indexing import sync_index
from memctl.store.files import max_file_bytes
from memctl.store.sessions import (
    SessionMeta,
    StoredTurn,
    check_session_id,
    read_meta,
    read_turns,
    session_ids,
    session_lock,
    write_meta,
    write_turns,
)


@dataclass
class FoldReport:
    """What trimming or ending a session wrote (or, in a dry run, would write)."""

    session_id: str
    action: str  # "trim", "end" or "end_idle"
    turns: int  # turns trimmed from the buffer, or folded when ending
    episode_id: str | None = None
    episode_path: str | None = None
    title: str | None = None
    writer: str | None = None
    usage: dict[str, Any] | None = None
    warning: str | None = None
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass
class SessionView:
    meta: SessionMeta
    turns: list[StoredTurn]
    limits: BufferLimits

    @property
    def tokens(self) -> int:
        return sum(t.tokens for t in self.turns)

    @property
    def over_limits(self) -> bool:
        return over_limits(
            [t.role for t in self.turns], [t.tokens for t in self.turns], self.limits
        )

    def to_dict(self, with_turns: bool = True) -> dict[str, Any]:
        data = self.meta.to_dict()
        data.update(turn_count=len(self.turns), tokens=self.tokens, over_limits=self.over_limits)
        if with_turns:
            data["turns"] = [t.to_dict() for t in self.turns]
        return data


@dataclass
class AddTurnResult:
    turn: StoredTurn
    view: SessionView
    reopened: bool = False
    folds: list[FoldReport] = field(default_factory=list)
    redacted: dict[str, int] = field(default_factory=dict)  # kind -> count, never the values

    def to_dict(self) -> dict[str, Any]:
        return {
            "session": self.view.meta.id,
            "role": self.turn.role,
            "tokens": self.turn.tokens,
            "redacted": dict(self.redacted),
            "session_turns": len(self.view.turns),
            "session_tokens": self.view.tokens,
            "over_limits": self.view.over_limits,
            "reopened": self.reopened,
            "folds": [f.to_dict() for f in self.folds],
        }


def buffer_limits(store: Store) -> BufferLimits:
    s = store.settings.session
    return BufferLimits(s.max_turns, s.max_tokens, s.keep_ratio)


def _count(text: str) -> int:
    from memctl.integrations.tokenizer import count_tokens

    return count_tokens(text)


def _no_session(session_id: str) -> MemctlError:
    return MemctlError(f"No session '{session_id}'. See them with `memctl session list`.")


def add_turn(
    store: Store,
    session_id: str,
    role: str,
    content: str,
    *,
    now: float | None = None,
    compact: bool | None = None,
    agent: str | None = None,
    sync: bool = True,
) -> AddTurnResult:
    """Append a turn; past the limits, the oldest turns are trimmed into an episode.

    Episodes written on the way are indexed at the end, unless `sync` is False (a caller
    writing more indexes once when it is done)."""
    check_session_id(session_id)
    if role not in ROLES:
        raise UsageError(f"Unknown role '{role}'. Choose one of: {', '.join(ROLES)}.")
    if not content.strip():
        raise UsageError("The turn is empty.")
    check_input(content, max_file_bytes(store), "The turn")  # Why: it may become an episode
    # Why: the buffer is a file on disk; secrets are replaced before it is ever written.
    redaction = redact_for_store(store, content)
    content = redaction.text
    now = time.time() if now is None else now
    folds = end_idle_sessions(store, now=now, sync=False)
    stamp = now_iso(now)
    if compact is None:
        compact = store.settings.session.compact_on_add
    with session_lock(store.state_dir, session_id):
        meta = read_meta(store.state_dir, session_id) or SessionMeta(
            session_id, stamp, stamp, agent=agent
        )
        turns = read_turns(store.state_dir, session_id)
        reopened = meta.ended is not None
        meta.ended = None
        turn = StoredTurn(role, content, stamp, _count(content))
        turns.append(turn)
        if role in ("assistant", "tool") and meta.last_role == "user":
            meta.exchanges += 1
        if role != "system":
            meta.last_role = role
        meta.last_active = stamp
        if compact:
            fold, turns = _trim(store, meta, turns)
            if fold:
                folds.append(fold)
        write_turns(store.state_dir, session_id, turns)
        write_meta(store.state_dir, meta)
    _index_episodes(store, folds, sync)
    view = SessionView(meta, turns, buffer_limits(store))
    return AddTurnResult(turn, view, reopened, folds, dict(redaction.counts))


def _index_episodes(store: Store, folds: list[FoldReport], sync: bool) -> None:
    """One sync for every episode these folds wrote."""
    if sync and any(fold.episode_id for fold in folds):
        sync_index(store)


def _trim(
    store: Store, meta: SessionMeta, turns: list[StoredTurn], *, dry_run: bool = False
) -> tuple[FoldReport | None, list[StoredTurn]]:
    """Trim the oldest turns past the limits; the ones not yet in an episode become one."""
    removed = plan_trim([t.role for t in turns], [t.tokens for t in turns], buffer_limits(store))
    if not removed:
        return None, turns
    gone = set(removed)
    pending = [turns[i] for i in removed if not turns[i].episode and turns[i].role != "system"]
    fold = _fold(store, meta, pending, "trim", dry_run=dry_run)
    fold.turns = len(removed)
    if dry_run:
        return fold, turns
    meta.trimmed += len(removed)
    return fold, [t for i, t in enumerate(turns) if i not in gone]


def _fold(
    store: Store, meta: SessionMeta, turns: list[StoredTurn], action: str, *, dry_run: bool
) -> FoldReport:
    """Write `turns` as one episode and fold its summary into the session's rolling summary."""
    fold = FoldReport(meta.id, action, len(turns))
    if not any(t.role in ("user", "assistant") for t in turns):
        fold.note = "nothing conversational to write"
        return fold
    if not worth_an_episode([t.as_turn() for t in turns]):
        fold.note = "no request of the user in these turns: no episode written"
        return fold
    drafted = draft_turns(store, [t.as_turn() for t in turns], meta.summary, allow_llm=not dry_run)
    fold.title, fold.writer, fold.usage, fold.warning = (
        drafted.draft.title,
        drafted.draft.writer,
        drafted.usage,
        drafted.warning,
    )
    if dry_run:
        return fold
    result = write_conversation_episode(
        store,
        drafted.draft,
        [t.as_turn() for t in turns],
        session_id=meta.id,
        agent=meta.agent,
        sync=False,  # Why: the public function that folded indexes once, at its end
    )
    fold.episode_id, fold.episode_path = written_id(result), str(result.path)
    for turn in turns:
        turn.episode = fold.episode_id
    meta.episodes.append(fold.episode_id)
    meta.summary = drafted.rolling_summary
    return fold


def _end(
    store: Store, meta: SessionMeta, turns: list[StoredTurn], action: str, now: float, dry_run: bool
) -> FoldReport:
    pending = [t for t in turns if not t.episode and t.role != "system"]
    needed = store.settings.session.min_exchanges
    if meta.exchanges < needed:
        fold = FoldReport(
            meta.id, action, 0, note=f"fewer than {needed} exchanges: no episode written"
        )
    elif not pending:
        fold = FoldReport(meta.id, action, 0, note="every turn is already in an episode")
    else:
        fold = _fold(store, meta, pending, action, dry_run=dry_run)
    if not dry_run:
        meta.ended = now_iso(now)
        write_turns(store.state_dir, meta.id, turns)
        write_meta(store.state_dir, meta)
    return fold


def end_session(
    store: Store,
    session_id: str,
    *,
    now: float | None = None,
    dry_run: bool = False,
    sync: bool = True,
) -> FoldReport:
    """End a session: what remains unwritten becomes an episode (given enough exchanges)."""
    check_session_id(session_id)
    now = time.time() if now is None else now
    with session_lock(store.state_dir, session_id):
        meta = read_meta(store.state_dir, session_id)
        if meta is None:
            raise _no_session(session_id)
        if meta.ended:
            return FoldReport(session_id, "end", 0, note=f"already ended at {meta.ended}")
        fold = _end(store, meta, read_turns(store.state_dir, session_id), "end", now, dry_run)
    _index_episodes(store, [fold], sync)
    return fold


def _is_idle(meta: SessionMeta, now: float, ttl_minutes: float) -> bool:
    last = parse_time(meta.last_active)
    return bool(
        ttl_minutes
        and last
        and not meta.ended
        and last.timestamp() + timedelta(minutes=ttl_minutes).total_seconds() < now
    )


def end_idle_sessions(
    store: Store, *, now: float | None = None, dry_run: bool = False, sync: bool = True
) -> list[FoldReport]:
    """End every open session idle for longer than `session.ttl_minutes`."""
    now = time.time() if now is None else now
    ttl = store.settings.session.ttl_minutes
    folds = []
    for session_id in session_ids(store.state_dir):
        meta = read_meta(store.state_dir, session_id)
        if meta is None or not _is_idle(meta, now, ttl):
            continue
        with session_lock(store.state_dir, session_id):
            meta = read_meta(store.state_dir, session_id)
            if meta is not None and _is_idle(meta, now, ttl):
                folds.append(
                    _end(
                        store,
                        meta,
                        read_turns(store.state_dir, session_id),
                        "end_idle",
                        now,
                        dry_run,
                    )
                )
    _index_episodes(store, folds, sync)
    return folds


def trim_sessions(store: Store, *, dry_run: bool = False, sync: bool = True) -> list[FoldReport]:
    """Trim every open session that is over its limits (what `memctl compact` does first)."""
    folds = []
    for session_id in session_ids(store.state_dir):
        with session_lock(store.state_dir, session_id):
            meta = read_meta(store.state_dir, session_id)
            if meta is None or meta.ended:
                continue
            turns = read_turns(store.state_dir, session_id)
            fold, kept = _trim(store, meta, turns, dry_run=dry_run)
            if fold is None:
                continue
            folds.append(fold)
            if not dry_run:
                write_turns(store.state_dir, session_id, kept)
                write_meta(store.state_dir, meta)
    _index_episodes(store, folds, sync)
    return folds


def get_session(store: Store, session_id: str) -> SessionView:
    check_session_id(session_id)
    meta = read_meta(store.state_dir, session_id)
    if meta is None:
        raise _no_session(session_id)
    return SessionView(meta, read_turns(store.state_dir, session_id), buffer_limits(store))


def list_sessions(store: Store) -> list[SessionView]:
    """Every session, open ones first, most recently active first."""
    views = [get_session(store, sid) for sid in session_ids(store.state_dir)]
    views.sort(key=lambda v: v.meta.id)
    views.sort(key=lambda v: v.meta.last_active, reverse=True)
    views.sort(key=lambda v: v.meta.ended is not None)
    return views


def latest_session(store: Store) -> SessionView | None:
    views = list_sessions(store)
    return views[0] if views else None
