"""Use-cases: what the CLI, hooks, MCP server and benchmarks call.

The names below load their module on first use, so `memctl recall` does not import the write
path (redaction rules, merging) it never runs.
"""

from __future__ import annotations

import importlib

# Why eager: the function `recall` shares its name with its module; importing it here keeps the
# package attribute the function whatever imports memctl.service.recall later.
from memctl.service.indexing import sync_index
from memctl.service.recall import Hit, recall

_HOME = {
    "AddResult": "writing",
    "add_memory": "writing",
    "get_memory": "lookup",
    "init_store": "writing",
    "list_memories": "lookup",
}
__all__ = sorted([*_HOME, "Hit", "recall", "sync_index"])


def __getattr__(name: str):
    if name not in _HOME:
        raise AttributeError(f"module 'memctl.service' has no attribute '{name}'")
    value = getattr(importlib.import_module(f"memctl.service.{_HOME[name]}"), name)
    globals()[name] = value
    return value
