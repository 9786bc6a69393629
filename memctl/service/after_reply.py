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
