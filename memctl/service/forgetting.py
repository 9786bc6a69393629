"""Forget: the file and its index rows go."""

from __future__ import annotations

from memctl.config import Store
from memctl.service.indexing import sync_index
from memctl.service.lookup import get_memory


def forget_memory(store: Store, memory_id: str) -> dict:
    path, memory = get_memory(store, memory_id)
    path.unlink()
    sync_index(store)
    return {"id": memory.id, "path": str(path)}
