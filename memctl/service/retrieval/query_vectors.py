"""The query's vector, embedded in a thread while the caller does other work.

The resident server may start a request's query embedding before the command has even parsed
its arguments (`prefetch_query_embedding`): the command's own `start_query_embedding` of the
same text with the same settings then takes that one instead of starting another. A guess that
was wrong only costs the thread's work (`drop_prefetched` forgets it after the command).
"""

from __future__ import annotations

import threading
from concurrent.futures import Future

from memctl.config import EmbeddingSettings

_prefetched: dict[tuple[str, EmbeddingSettings | None], Future] = {}


def start_query_embedding(query: str, settings: EmbeddingSettings | None = None) -> Future:
    """Embed the query in a thread, so loading the model overlaps other start-up work."""
    prefetched = _prefetched.pop((query, settings), None)
    if prefetched is not None:
        return prefetched

    def run():
        from memctl.integrations.query_embedder import get_query_embedder

        return get_query_embedder(settings).embed_query(query)

    # Why: numpy imported by two threads at once (this one via onnxruntime, the caller via lance)
    # can fail with "cannot load module more than once"; importing it here first rules that out.
    import numpy  # noqa: F401

    future: Future = Future()

    def target():
        try:
            future.set_result(run())
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller by .result()
            future.set_exception(exc)

    threading.Thread(target=target, daemon=True).start()
    return future


def prefetch_query_embedding(query: str, settings: EmbeddingSettings) -> None:
    """Start embedding `query` now for a command about to ask for it (see the module doc)."""
    _prefetched[(query, settings)] = start_query_embedding(query, settings)


def drop_prefetched() -> None:
    _prefetched.clear()
