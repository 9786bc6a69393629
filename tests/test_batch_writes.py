"""A batch big enough to compare in memory (batch.IN_MEMORY_FROM) decides each item as a small
batch asking the index does: a stored duplicate is merged into, an earlier item of the batch too."""

from __future__ import annotations

import pytest

from memctl import service
from memctl.service.memories import batch
from memctl.service.memories.add import build_memory
from memctl.service.memories.batch import BatchItem, save_batch

STORED = [
    "The staging cluster is reset every Sunday night at 02:00 UTC",
    "Database migrations run with alembic upgrade head before each deploy",
    "Use pnpm, never npm, for the frontend packages",
]


def texts() -> list[str]:
    fresh = [f"Runbook {n}: the worker restarts after export number {n * 7}" for n in range(36)]
    fresh[5] = STORED[1]  # a stored memory's text
    fresh[20] = fresh[3]  # an earlier item's text
    fresh[33] = STORED[2]
    return fresh


@pytest.mark.parametrize("in_memory_from", [batch.IN_MEMORY_FROM, 10_000])
def test_a_large_batch_merges_stored_and_earlier_duplicates(
    tmp_path, fake_embedder, monkeypatch, in_memory_from
):
    monkeypatch.setattr(batch, "IN_MEMORY_FROM", in_memory_from)
    store = service.init_store(tmp_path / "p")
    stored = {text: service.add_memory(store, text).memory.id for text in STORED}
    items = [BatchItem(build_memory(text)) for text in texts()]
    results = save_batch(store, items)
    actions = [r.action for r in results]
    assert actions.count("merged") == 3, actions
    assert results[5].merged_into == stored[STORED[1]]
    assert results[33].merged_into == stored[STORED[2]]
    assert results[20].merged_into == results[3].memory.id
    assert len(service.list_memories(store).memories) == len(STORED) + 33
