"""Use-cases: what the CLI, hooks, MCP server and benchmarks call.

memories/ writes, reads and forgets memories; retrieval/ keeps the index and answers queries;
lifecycle/ moves memories through sessions, tasks, episodes, consolidation and decay.

The names below load their module on first use, so `memctl recall` does not import the write
path (redaction rules, merging) it never runs, nor `memctl add` the read path.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOME = {
    "AddResult": "memories.add",
    "Hit": "retrieval.recall",
    "add_memory": "memories.add",
    "get_memory": "memories.lookup",
    "init_store": "init",
    "list_memories": "memories.lookup",
    "RecallRequest": "retrieval.use_case",
    "RecallResult": "retrieval.use_case",
    "recall": "retrieval.use_case",
    "sync_index": "retrieval.indexing",
}
__all__ = [
    "AddResult",
    "Hit",
    "RecallRequest",
    "RecallResult",
    "add_memory",
    "get_memory",
    "init_store",
    "list_memories",
    "recall",
    "sync_index",
]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'memctl.service' has no attribute '{name}'")
    value = getattr(importlib.import_module(f"memctl.service.{_HOME[name]}"), name)
    globals()[name] = value
    return value
