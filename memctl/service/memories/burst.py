"""The adds of concurrent clients, saved together: one embedding call, one index sync.

The resident server gathers the `memctl add` requests that wait while another command runs
and runs them as one burst (memctl.cli.resident): each command hands its write to a
WriteBurst (see write_queue) and waits; the burst then saves every write through save_batch,
store by store, in the order they were handed over. Each add is deduplicated against the index
and against the adds before it in the burst, merged or superseding as a single add would be,
and gets its own AddResult, or the error it alone met.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memctl.config import Store
from memctl.core.errors import ModelUnavailable
from memctl.core.files.memory import Memory
from memctl.service.memories.add import AddResult, write_new
from memctl.service.memories.batch import BatchItem, BatchStopped, save_batch
from memctl.store.files import current_write_observer, observing_writes


@dataclass
class QueuedWrite:
    store: Store
    memory: Memory
    searches: bool
    redacted: dict[str, int]
    # Why: the command's journal of intent (store.request_journal) follows its write here
    on_write: Callable[[Path, bytes], None] | None = None
    result: AddResult | None = None
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)


class WriteBurst:
    """A write_queue.WriteQueue: `submit` (from a command's thread) waits until `save` (from
    the thread that runs the burst) has saved every queued write."""

    def __init__(self, on_submit: Callable[[], None] = lambda: None):
        self.queued: list[QueuedWrite] = []
        self._on_submit = on_submit  # told when a command hands its write over

    def submit(self, store: Any, memory: Any, searches: bool, redacted: dict[str, int]) -> Any:
        write = QueuedWrite(store, memory, searches, redacted, on_write=current_write_observer())
        self.queued.append(write)
        self._on_submit()
        write.done.wait()
        if write.error is not None:
            raise write.error
        return write.result

    def save(self) -> None:
        """Save what was queued, store by store. Each waiting command goes on once `release`d."""
        by_store: dict[Any, list[QueuedWrite]] = {}
        for write in self.queued:
            by_store.setdefault(write.store.root.resolve(), []).append(write)
        try:
            for writes in by_store.values():
                _save_writes(writes)
        finally:
            for write in self.queued:
                if write.result is None and write.error is None:
                    write.error = RuntimeError("the burst of adds stopped before this one")

    def release(self, write: QueuedWrite | None = None) -> None:
        """Let the command that queued `write` (every one, when None) go on."""
        for each in self.queued if write is None else [write]:
            if each.result is None and each.error is None:
                each.error = RuntimeError("the burst of adds stopped before this one")
            each.done.set()


def _save_writes(writes: list[QueuedWrite]) -> None:
    """Save writes to one store; the batch goes on past an item that fails, as separate adds do."""
    store = writes[0].store
    while writes:
        items = [
            BatchItem(write.memory, dedup=write.searches, on_write=write.on_write)
            for write in writes
        ]
        try:
            results = save_batch(store, items, supersede=True, few=True)
        except BatchStopped as stop:
            results, failed = stop.results, writes[stop.position]
            failed.error = stop.cause
        except ModelUnavailable as exc:
            for write in writes:  # Why: as a single add, keep the text as a file; the error shows.
                with observing_writes(write.on_write):
                    write_new(store, write.memory)
                write.error = exc
            return
        except Exception as exc:  # noqa: BLE001 - every write of the batch met it
            for write in writes:
                write.error = exc
            return
        for write, result in zip(writes, results, strict=False):
            result.redacted = write.redacted
            write.result = result
        writes = writes[len(results) + 1 :] if len(results) < len(writes) else []
