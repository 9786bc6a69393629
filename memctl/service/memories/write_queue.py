"""Where `add_memory` hands its write when a burst of adds is being saved together.

The resident server runs the adds of concurrent clients as one burst (memctl.cli.resident): each
client's `memctl add` runs as it would alone (parsing, redaction, the low-value filter, the
output), but the write itself is handed to the burst's queue, which saves every add of the burst
in one batch (memctl.service.memories.burst) and gives each its own result. Outside a burst no
queue is active and `add_memory` writes at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol


class WriteQueue(Protocol):
    def submit(self, store: Any, memory: Any, searches: bool, redacted: dict[str, int]) -> Any:
        """Save `memory` with the burst (dedup against the index when `searches`); its AddResult,
        returned once the burst is saved, or the error this write met, raised."""
        ...


_active: WriteQueue | None = None


def active() -> WriteQueue | None:
    return _active


@contextmanager
def queued_writes(queue: WriteQueue) -> Iterator[None]:
    """Adds made while the block runs go to `queue` (process-wide: the server's command threads
    run one at a time)."""
    global _active
    outer, _active = _active, queue
    try:
        yield
    finally:
        _active = outer
