"""Session buffers in the state area: `sessions/<id>.jsonl` (one turn a line) and `<id>.meta.json`.

Both files are rewritten whole and atomically under the session's lock: a session buffer is
small (it is trimmed), and a crash must never leave half a line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memctl.core.errors import InvalidMemoryFile, UsageError
from memctl.core.learning.conversation import ROLES, Turn
from memctl.store.files import atomic_write, file_lock, read_state_json

SESSIONS_DIRNAME = "sessions"
_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


@dataclass
class StoredTurn:
    role: str
    content: str
    ts: str
    tokens: int
    episode: str | None = None  # the episode memory this turn was written into, once it was

    def to_dict(self) -> dict[str, Any]:
        data = {"role": self.role, "content": self.content, "ts": self.ts, "tokens": self.tokens}
        if self.episode:
            data["episode"] = self.episode
        return data

    def as_turn(self) -> Turn:
        return Turn(self.role, self.content, self.ts)


@dataclass
class SessionMeta:
    id: str
    created: str
    last_active: str
    ended: str | None = None
    summary: str = ""
    trimmed: int = 0  # turns trimmed from the buffer so far
    exchanges: int = 0  # user messages that got a reply, over the whole session
    last_role: str | None = None
    agent: str | None = None
    episodes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "created": self.created,
            "last_active": self.last_active,
            "ended": self.ended,
            "summary": self.summary,
            "trimmed": self.trimmed,
            "exchanges": self.exchanges,
            "last_role": self.last_role,
            "agent": self.agent,
            "episodes": list(self.episodes),
        }


def check_session_id(session_id: str) -> str:
    if not _SESSION_ID.match(session_id or ""):
        raise UsageError(
            f"Session id '{session_id}' is not usable: use 1-128 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit."
        )
    return session_id


def sessions_dir(state_dir: Path) -> Path:
    return Path(state_dir) / SESSIONS_DIRNAME


def turns_path(state_dir: Path, session_id: str) -> Path:
    return sessions_dir(state_dir) / f"{check_session_id(session_id)}.jsonl"


def meta_path(state_dir: Path, session_id: str) -> Path:
    return sessions_dir(state_dir) / f"{check_session_id(session_id)}.meta.json"


@contextmanager
def session_lock(state_dir: Path, session_id: str) -> Iterator[None]:
    with file_lock(sessions_dir(state_dir) / f"{check_session_id(session_id)}.lock"):
        yield


def session_ids(state_dir: Path) -> list[str]:
    folder = sessions_dir(state_dir)
    if not folder.is_dir():
        return []
    suffix = ".meta.json"
    return sorted(p.name[: -len(suffix)] for p in folder.iterdir() if p.name.endswith(suffix))


def read_turns(state_dir: Path, session_id: str) -> list[StoredTurn]:
    path = turns_path(state_dir, session_id)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except UnicodeDecodeError as exc:
        raise InvalidMemoryFile(path, 1, f"not valid UTF-8 ({exc.reason})") from None
    turns = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError as exc:
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
            raise InvalidMemoryFile(path, number, f"not a JSON object ({reason})") from None
        if not isinstance(data, dict) or not isinstance(data.get("content"), str):
            raise InvalidMemoryFile(path, number, "a turn needs 'role' and 'content' (text)")
        if data.get("role") not in ROLES:
            raise InvalidMemoryFile(
                path, number, f"role '{data.get('role')}' is not one of {', '.join(ROLES)}"
            )
        try:
            tokens = int(data.get("tokens") or 0)
        except (TypeError, ValueError):
            raise InvalidMemoryFile(path, number, "'tokens' must be a whole number") from None
        episode = data.get("episode") or None
        turns.append(
            StoredTurn(
                data["role"],
                data["content"],
                str(data.get("ts") or ""),
                tokens,
                str(episode) if episode else None,
            )
        )
    return turns


def write_turns(state_dir: Path, session_id: str, turns: list[StoredTurn]) -> None:
    lines = [json.dumps(turn.to_dict(), ensure_ascii=False) for turn in turns]
    atomic_write(
        turns_path(state_dir, session_id),
        ("\n".join(lines) + "\n" if lines else "").encode("utf-8"),
    )


def read_meta(state_dir: Path, session_id: str) -> SessionMeta | None:
    path = meta_path(state_dir, session_id)
    data = read_state_json(path, "session metadata")
    if data is None:
        return None
    if not isinstance(data, dict) or not data.get("created"):
        raise InvalidMemoryFile(path, 1, "session metadata must be an object with 'created'")
    try:
        return SessionMeta(
            id=session_id,
            created=str(data["created"]),
            last_active=str(data.get("last_active") or data["created"]),
            ended=data.get("ended") or None,
            summary=str(data.get("summary") or ""),
            trimmed=int(data.get("trimmed") or 0),
            exchanges=int(data.get("exchanges") or 0),
            last_role=data.get("last_role") or None,
            agent=data.get("agent") or None,
            episodes=[str(e) for e in data.get("episodes") or []],
        )
    except (TypeError, ValueError) as exc:
        raise InvalidMemoryFile(path, 1, f"broken session metadata: {exc}") from None


def write_meta(state_dir: Path, meta: SessionMeta) -> None:
    data = json.dumps(meta.to_dict(), ensure_ascii=False, indent=2) + "\n"
    atomic_write(meta_path(state_dir, meta.id), data.encode("utf-8"))
