"""The ledger of what memory costs: one JSON line per injection, per use, per touched file.

`.memory/.state/ledger.jsonl`, private (0600), rotated at LEDGER_MAX_BYTES keeping one older
file. It holds ids, counts and the project-relative paths the agent touched, never memory text
or prompts, so it can be kept without redaction.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

LEDGER_NAME = "ledger.jsonl"
LEDGER_MAX_BYTES = 1024 * 1024


def ledger_path(state_dir: Path) -> Path:
    return state_dir / LEDGER_NAME


def append_entry(state_dir: Path, entry: dict[str, Any]) -> None:
    """Append one entry (a `ts` is added); never raises: the ledger must not cost a hook."""
    path = ledger_path(state_dir)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and path.stat().st_size > LEDGER_MAX_BYTES:
            path.replace(path.with_name(LEDGER_NAME + ".1"))
        line = json.dumps({"ts": round(time.time(), 3), **entry}, separators=(",", ":")) + "\n"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)
    except OSError:
        pass


def read_entries(state_dir: Path) -> Iterator[dict[str, Any]]:
    """Every entry, oldest first (the rotated file, then the current one); bad lines skipped."""
    path = ledger_path(state_dir)
    for source in (path.with_name(LEDGER_NAME + ".1"), path):
        try:
            with open(source, encoding="utf-8") as handle:
                for line in handle:
                    try:
                        entry = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(entry, dict):
                        yield entry
        except OSError:
            continue
