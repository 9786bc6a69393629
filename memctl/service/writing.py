"""Create stores and memories."""

from __future__ import annotations

import re
import shutil
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from memctl.config import STORE_DIRNAME, Store, open_store
from memctl.core.memory import (
    DEFAULT_CONFIDENCE,
    DEFAULT_IMPORTANCE,
    MEMORY_TYPES,
    Memory,
    first_line,
    new_id,
    now_iso,
)
from memctl.errors import LowValueContent, MemctlError, UsageError
from memctl.store.files import path_for, write_memory

_RESTORABLE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")


@dataclass
class AddResult:
    memory: Memory
    path: Path
    created: bool = True
    merged_into: str | None = None
    redacted: dict[str, int] = field(default_factory=dict)
    # created | merged (near duplicate) | updated (new value, old one in history) | not_adopted
    action: str = "created"
    similarity: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.memory.id,
            "path": str(self.path),
            "created": self.created,
            "merged_into": self.merged_into,
            "action": self.action,
            "similarity": self.similarity,
            "redacted": self.redacted,
        }


def templates_dir() -> Path:
    """The `templates/` folder: beside the package in a checkout, under share/ when installed."""
    candidates = [
        Path(__file__).resolve().parents[2] / "templates",
        Path(sys.prefix) / "share" / "memctl" / "templates",
    ]
    for candidate in candidates:
        if (candidate / "config.yaml").is_file():
            return candidate
    return Path(str(resources.files("memctl") / "templates"))


def init_store(directory: Path) -> Store:
    """Create `<directory>/.memory` (or `directory` itself if it is named .memory) from templates."""
    directory = Path(directory).resolve()
    root = directory if directory.name == STORE_DIRNAME else directory / STORE_DIRNAME
    if (root / "config.yaml").exists():
        raise MemctlError(f"A store already exists at {root}.")
    source = templates_dir()
    root.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source / "config.yaml", root / "config.yaml")
    shutil.copyfile(source / "store-README.md", root / "README.md")
    shutil.copyfile(source / "gitignore", root / ".gitignore")
    return open_store(root)


def build_memory(
    text: str,
    *,
    type: str = "semantic",
    title: str | None = None,
    tags: tuple[str, ...] | list[str] = (),
    importance: float | None = None,
    confidence: float | None = None,
    source: str = "explicit_user_input",
    pinned: bool = False,
    private: bool = False,
    agent: str | None = None,
    created: str | None = None,
    extra: dict[str, Any] | None = None,
    memory_id: str | None = None,  # restore (import) only: keep the id, times and relations
    updated: str | None = None,
    expires: str | None = None,
    relations: list[dict[str, str]] | None = None,
) -> Memory:
    if memory_id is not None and not _RESTORABLE_ID.fullmatch(memory_id):
        raise UsageError(f"Id '{memory_id}' cannot name a file; use letters, digits, '.', '_' or '-'.")
    if type not in MEMORY_TYPES:
        raise UsageError(f"Unknown type '{type}'. Choose one of: {', '.join(MEMORY_TYPES)}.")
    for name, value in (("importance", importance), ("confidence", confidence)):
        if value is not None and not 0.0 <= value <= 1.0:
            raise UsageError(f"--{name} must be between 0 and 1 (got {value}).")
    body = text.strip()
    if not body:
        raise UsageError("Nothing to remember: the text is empty.")
    stamp = created or now_iso()
    return Memory(
        id=memory_id or new_id(),
        title=(title or first_line(body)).strip(),
        type=type,
        tags=sorted({t.strip() for t in tags if t.strip()}),
        importance=DEFAULT_IMPORTANCE if importance is None else importance,
        confidence=DEFAULT_CONFIDENCE if confidence is None else confidence,
        source=source,
        scope="private" if private else "project",
        agent=agent,
        created=stamp,
        updated=updated or stamp,
        expires=expires,
        pinned=pinned,
        relations=[dict(r) for r in relations or ()],
        body=body,
        extra=dict(extra or {}),
    )


def add_memory(store: Store, text: str, *, sync: bool = True, redact: bool = True,
               force: bool = False, dedup: bool = True, update_of: str | None = None,
               duplicate_of: str | None = None, **fields: Any) -> AddResult:
    """Write one memory file (atomically) and, unless told otherwise, index it.

    Secrets and personal data are redacted first (`redact=False` opts out for this call);
    low-value text raises LowValueContent unless `force`. With `dedup` a near duplicate is
    merged into the existing memory and a new value on the same subject updates it
    (service/merging.py); `update_of` / `duplicate_of` name that memory directly.
    """
    # Why: imported here, the regex tables stay out of `memctl --help`.
    from memctl.core.quality import low_value_reason
    from memctl.service.redaction import redact_memory_fields

    redacted: dict[str, int] = {}
    if redact:
        text, fields, redacted = redact_memory_fields(store, text, fields)
    memory = build_memory(text, **fields)  # bad options are usage errors before anything else
    if not force:
        reason = low_value_reason(memory.body, int(store.section("write").get("min_chars", 12)))
        if reason:
            raise LowValueContent(reason)
    # Why: an episode is an event (two alike are still two), a restored record keeps its id.
    if update_of or duplicate_of or (dedup and memory.type != "episodic" and not fields.get("memory_id")):
        from memctl.service.merging import save_memory

        result = save_memory(store, memory, sync=sync, update_of=update_of, duplicate_of=duplicate_of)
        result.redacted = redacted
        return result
    path = path_for(store.root, memory)
    write_memory(path, memory)
    if sync:
        from memctl.service.indexing import sync_index

        sync_index(store)
    return AddResult(memory=memory, path=path, redacted=redacted)
