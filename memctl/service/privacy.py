"""Private means this machine, this person: private memories stay out of what agents read.

`context`, every hook, the MCP tools and resources and every export leave out memories of scope
`private` (the ones under `.memory/private/`) unless the caller opts in for one call
(`--include-private`, an MCP argument) or the user shares them in config.yaml
(`privacy.share_private_with_agents: true`).
"""

from __future__ import annotations

from memctl.config import Store
from memctl.core.files.memory import Memory


def shares_private(store: Store, include_private: bool | None = None) -> bool:
    """The caller's choice for this call when it made one, else the store's setting."""
    if include_private is not None:
        return bool(include_private)
    return store.settings.privacy.share_private_with_agents


def visible(memory: Memory, include_private: bool) -> bool:
    return include_private or memory.scope != "private"
