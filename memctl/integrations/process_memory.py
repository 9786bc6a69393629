"""Give memory the process has freed back to the system.

glibc's malloc keeps freed blocks for reuse; after a burst that allocated a lot (an ONNX session
let go, a LanceDB write) the process's resident size stays at its peak although most of it is
free. A one-shot worker (a transcript ingest) that goes on to other work returns it first, so
the next burst starts from what is really in use.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from functools import lru_cache


@lru_cache(maxsize=1)
def _malloc_trim():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim  # absent from musl
    except (OSError, AttributeError):
        return None


def give_back_free_memory() -> None:
    """Return freed heap memory to the system (glibc's malloc_trim); elsewhere nothing."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
