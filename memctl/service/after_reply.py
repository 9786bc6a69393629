"""Work a command may finish after its answer is out: upkeep nobody waits for.

A use-case hands such work to `later()`: indexing a file just written (the file is the truth and
is on disk before the answer), counting which memories a recall returned. In a normal process
`later()` runs the work at once, exactly where it was asked for. The resident server runs each
request inside `collected()` and runs what it gathered after it sent the reply, before it takes
the next request, so the next command still sees everything done.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

Work = Callable[[], object]  # what it returns is not used

_pending: list[Work] | None = None


def later(work: Work) -> None:
    """Run `work` now, or after the reply when the server is collecting."""
    if _pending is None:
        work()
    else:
        _pending.append(work)


@contextmanager
def collected() -> Iterator[list[Work]]:
    """Gather what `later()` is given while the block runs (one request at a time)."""
    global _pending
    outer, _pending = _pending, []
    try:
        yield _pending
    finally:
        _pending = outer


def index_after_write(index_dir: Path, work: Work) -> Work:
    """`work` (indexing memory files already on disk), except that a write the disk refuses
    (full, the file-size limit, the quota) leaves the index behind with a warning instead of
    failing a command whose memory landed: it reports success exactly when the file is saved."""

    def run() -> None:
        from memctl.store.disk_limits import storage_limit
        from memctl.store.files import note_problem

        try:
            work()
        except Exception as exc:
            limit = storage_limit(exc, index_dir)
            if limit is None:
                raise
            note_problem(
                str(index_dir),
                f"not indexed: {limit}; the memory file is saved, and `memctl index` "
                "catches up once there is room",
            )

    return run
