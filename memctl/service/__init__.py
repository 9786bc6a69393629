"""Use-cases: what the CLI, hooks, MCP server and benchmarks call."""

from memctl.service.indexing import sync_index
from memctl.service.lookup import get_memory, list_memories
from memctl.service.recall import Hit, recall
from memctl.service.writing import AddResult, add_memory, init_store

__all__ = [
    "AddResult",
    "Hit",
    "add_memory",
    "get_memory",
    "init_store",
    "list_memories",
    "recall",
    "sync_index",
]
