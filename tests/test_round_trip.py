"""`memctl export` then `memctl import` into an empty store gives back every field."""

from __future__ import annotations

import json

import pytest

from memctl import service
from memctl.service.memories.exchange import export_memories, import_file

pytestmark = pytest.mark.usefixtures("fake_embedder")

EVERY_FIELD = """---
id: db-port
title: Database port
type: semantic
tags: [db, dev]
importance: 0.9
confidence: 0.65
source: corrected_memory
scope: project
agent: claude-code
created: '2026-01-02T03:04:05Z'
updated: '2026-02-03T04:05:06Z'
expires: '2031-01-01'
pinned: true
relations:
- type: supports
  target: deploy-steps
version: 3
mentions: 3
subject: fact:database-port
occurred_at: '2026-01-01T00:00:00Z'
---

Postgres listens on **5433** in docker compose.

## History

- 2026-02-03T04:05:06Z replaced (confidence 0.80, source explicit_user_input): Postgres listens on 5432.
"""


def test_export_then_import_keeps_every_field(store, write_file, tmp_path):
    write_file("semantic/database-port.md", EVERY_FIELD)
    service.add_memory(store, "We deploy with make release", type="procedural", tags=["deploy"])
    service.add_memory(store, "My notes live in the team vault", private=True)
    first = export_memories(store, "jsonl", project_root=tmp_path, include_private=True).text
    dump = tmp_path / "memories.jsonl"
    dump.write_text(first, encoding="utf-8")

    # A restore of one's own export keeps every field, origin included (--keep-origin); a plain
    # import records that the text came from a file (tests/test_provenance.py covers that).
    empty = service.init_store(tmp_path / "other")
    assert len(import_file(empty, dump, keep_origin=True).added) == 3
    again = export_memories(empty, "jsonl", project_root=tmp_path, include_private=True).text
    records = {r["id"]: r for r in map(json.loads, first.splitlines())}
    assert records["db-port"]["version"] == 3
    assert {r["id"]: r for r in map(json.loads, again.splitlines())} == records
