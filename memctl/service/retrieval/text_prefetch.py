"""A recall's full-text search, started by the resident server as the request arrives.

Like the query's embedding (query_vectors), the server may start the full-text search of a
recall before the command has parsed its arguments or asked whether the index is fresh: lance
runs it outside the GIL, beside the command's own work. The search reads the table version
that is newest when it runs; recall takes its rows only if it would search that very version
with the same text, limit and filter (`take_prefetched`), so a change found by the command's
sync, a wrong guess of its options or a failed search only cost the thread's work.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any

from memctl.core.ports import MemoryFilter, Row
from memctl.store.index import MemoryIndex

_Key = tuple[str, str, int, MemoryFilter]
_prefetched: dict[_Key, Future] = {}


def prefetch_text_search(index: Any, query: str, limit: int, where: MemoryFilter) -> None:
    """Start `index.search_text(query, limit, where)` in a thread (a local table only)."""
    if not isinstance(index, MemoryIndex):
        return
    future: Future = Future()

    def target() -> None:
        try:
            version = index.dataset().version
            rows = index.search_text(query, limit, where)
            # Why twice: a write through this index (the command's own sync) or a search that
            # met a removed file moves it to another version meanwhile; which one the rows
            # came from is then unknown, and the command searches itself.
            if index.dataset().version != version:
                version = -1
            future.set_result((version, rows))
        except BaseException as exc:  # noqa: BLE001 - the command searches itself then
            future.set_exception(exc)

    _prefetched[(str(index.table_dir), query, limit, where)] = future
    threading.Thread(target=target, name="memctl-text-search", daemon=True).start()


def take_prefetched(index: Any, query: str, limit: int, where: MemoryFilter) -> list[Row] | None:
    """The prefetched rows of this very search on the version `index` reads now, else None."""
    if not _prefetched or not isinstance(index, MemoryIndex):
        return None
    future = _prefetched.pop((str(index.table_dir), query, limit, where), None)
    if future is None:
        return None
    try:
        version, rows = future.result()
        if not index.exists() or version != index.dataset().version:
            return None
    except Exception:  # noqa: BLE001 - no rows from a search that failed
        return None
    return rows


def drop_prefetched() -> None:
    _prefetched.clear()
