"""This clone's own record of provenance: `<state>/provenance.json` (never committed).

`arrivals`: memories a teammate's commit brought (id -> origin `git:<author>`, commit), noted by
the post-merge / post-checkout hooks or when memctl next sees HEAD moved (`seen_head`). `approved`: memories a person released from
quarantine (id -> digest of the text approved). Both are local on purpose: a file cannot
vouch for itself, and a teammate's approval is not this user's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memctl.store.files import atomic_write

LEDGER_NAME = "provenance.json"


@dataclass
class Ledger:
    arrivals: dict[str, dict[str, str]] = field(default_factory=dict)
    approved: dict[str, str] = field(default_factory=dict)
    seen_head: str = ""  # the git commit whose memory files were last checked for arrivals

    def to_dict(self) -> dict[str, Any]:
        return {"arrivals": self.arrivals, "approved": self.approved, "seen_head": self.seen_head}


def ledger_path(state_dir: Path) -> Path:
    return state_dir / LEDGER_NAME


def load_ledger(state_dir: Path) -> Ledger:
    """The ledger; empty when there is none. An unreadable one is empty too: the worst case is
    a memory shown in quarantine again, never one let out."""
    try:
        data = json.loads(ledger_path(state_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return Ledger()
    if not isinstance(data, dict):
        return Ledger()
    arrivals, approved = data.get("arrivals"), data.get("approved")
    arrivals = arrivals if isinstance(arrivals, dict) else {}
    approved = approved if isinstance(approved, dict) else {}
    return Ledger(
        {str(k): dict(v) for k, v in arrivals.items() if isinstance(v, dict)},
        {str(k): str(v) for k, v in approved.items()},
        str(data.get("seen_head") or ""),
    )


def save_ledger(state_dir: Path, ledger: Ledger) -> None:
    text = json.dumps(ledger.to_dict(), indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    atomic_write(ledger_path(state_dir), text.encode("utf-8"))
