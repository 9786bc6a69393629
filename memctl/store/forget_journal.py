"""The forget journal: what an unfinished `memctl forget` still has to remove.

Written (atomically) before forget changes anything and removed when it is done, so a forget
killed midway is finished by the next memctl command. It holds ids only, never titles or text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memctl.store.files import atomic_write, read_state_json

JOURNAL_NAME = "forget.journal"  # not *.json: forget's scrub of the state area leaves it alone


def journal_path(state_dir: Path) -> Path:
    return state_dir / JOURNAL_NAME


def write_journal(state_dir: Path, forget: list[str], rewrite: list[str]) -> None:
    data = {"version": 1, "forget": sorted(set(forget)), "rewrite": sorted(set(rewrite))}
    atomic_write(journal_path(state_dir), (json.dumps(data, indent=1) + "\n").encode("utf-8"))


def read_journal(state_dir: Path) -> dict[str, Any] | None:
    """{"forget": [ids], "rewrite": [ids]}, or None when no forget is pending."""
    data = read_state_json(journal_path(state_dir), "forget journal")
    if not isinstance(data, dict):
        return None
    return {
        key: [str(i) for i in data.get(key) or [] if isinstance(i, str)]
        for key in ("forget", "rewrite")
    }


def clear_journal(state_dir: Path) -> None:
    journal_path(state_dir).unlink(missing_ok=True)
