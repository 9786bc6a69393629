"""Per-session bookkeeping of the coding-agent hooks: `<state>/hooks/sessions/<session>.json`."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from memctl.config import Store
from memctl.core.language.text import utc_timestamp
from memctl.store.files import atomic_write

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def safe_name(session_id: str) -> str:
    """A session id as a file name: anything outside [A-Za-z0-9_.-] becomes '_'."""
    return _UNSAFE.sub("_", session_id or "unknown")


def session_state_path(store: Store, session_id: str) -> Path:
    name = safe_name(session_id)[:120]
    return store.state_dir / "hooks" / "sessions" / f"{name}.json"


def load_session_state(store: Store, session_id: str) -> dict[str, Any]:
    try:
        data = json.loads(session_state_path(store, session_id).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_session_state(store: Store, session_id: str, state: dict[str, Any]) -> None:
    state["updated"] = utc_timestamp()
    path = session_state_path(store, session_id)
    data = (json.dumps(state, indent=1, sort_keys=True) + "\n").encode("utf-8")
    atomic_write(path, data, durable=False)  # bookkeeping: a crash only repeats a memory shown


def remember_shown(store: Store, session_id: str, ids: tuple[str, ...], reset: bool) -> None:
    """Add `ids` to the session's list of memories shown (a new list with `reset`)."""
    state = load_session_state(store, session_id)
    shown = [] if reset else list(state.get("shown") or [])
    shown.extend(i for i in ids if i not in shown)
    state["shown"] = shown
    save_session_state(store, session_id, state)
