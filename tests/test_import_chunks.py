"""`memctl import` writes a large file in chunks (embedded, written and indexed one after the
other, so memory stays bounded): the store ends exactly as one pass would leave it."""

from __future__ import annotations

import json

import pytest

from memctl import service
from memctl.service.memories import exchange
from memctl.store.index import Manifest

pytestmark = pytest.mark.usefixtures("fake_embedder")

TOPICS = ["billing", "search", "mailer", "ingest", "backup", "audit", "payroll"]


def test_chunks_write_every_item_once_and_index_each_chunk(store, tmp_path, monkeypatch):
    monkeypatch.setattr(exchange, "IMPORT_CHUNK", 3)
    lines = [
        {"text": f"The {topic} worker restarts after the nightly export number {n}"}
        for n, topic in enumerate(TOPICS)
    ]
    lines.append(dict(lines[1]))  # the same text twice in one file: the second is skipped
    dump = tmp_path / "notes.jsonl"
    dump.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    saved: list[int] = []
    real_save = exchange.save_batch

    def counting(store_, batch, **kw):
        saved.append(len(batch))
        return real_save(store_, batch, **kw)

    monkeypatch.setattr(exchange, "save_batch", counting)
    result = exchange.import_file(store, dump)
    assert saved == [3, 3, 1] and len(result.added) == len(TOPICS)
    assert [s["line"] for s in result.skipped] == [len(lines)]
    assert len(Manifest.load(store.index_dir).files) == len(TOPICS)  # every chunk indexed
    again = exchange.import_file(store, dump)
    assert again.added == [] and len(again.skipped) == len(lines)
    hit = service.recall(
        service.RecallRequest(store, "payroll worker restarts", k=1, sync=False)
    ).hits[0]
    assert "payroll" in hit.body
