"""The engine's memory budget: measure the process's resident memory, and shed what it keeps
when over.

What grows in an engine is what it keeps to answer fast: each open store's rows and vectors
(store.resident_vectors), each table's lance session caches (store.index_maintenance, kept
small here: ENGINE_INDEX_CACHE_BYTES), parsed memory files (store.parsed_memories) and the
word-stem caches (core.recall.evidence). Each is bounded on its own; the budget bounds their sum whatever the number of
stores. Over budget, the engine first closes every store but the one in use and frees what
they kept, returns freed heap to the OS (glibc's malloc_trim), and if still over, leaves
cleanly: the next command is answered in-process and starts a fresh engine.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import gc
import os

PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
MB = 1024 * 1024
# lance's caches per table in the engine (a one-shot process keeps the larger defaults): each
# write makes a new table version whose index and metadata fill them, so left at 256 + 64 MB a
# table's session grew ~1.5 MB every 100 requests of a soak that wrote now and then. At 16 + 4
# MB, 400 adds to one 1k store still grew the engine 16 MB and climbing; at 2 + 1 MB it levelled
# off 10 MB lower, and warm recall kept its median (17-18 ms through the socket, both).
ENGINE_INDEX_CACHE_BYTES = 2 * MB
ENGINE_METADATA_CACHE_BYTES = 1 * MB


def rss_bytes() -> int:
    """This process's resident memory now (0 where /proc is not there to tell)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * PAGE_BYTES
    except (OSError, ValueError, IndexError):
        return 0


def drop_caches() -> None:
    """Free what the engine keeps between requests; each cache fills again on use."""
    from memctl.core.recall import evidence
    from memctl.store import index_maintenance, parsed_memories, resident_vectors

    resident_vectors.drop_all_tables()
    index_maintenance.forget_sessions_under("")  # lance's caches, per table
    parsed_memories.keep_parsed(True)  # a fresh, empty cache
    evidence.stem_counts.cache_clear()
    evidence.stem.cache_clear()
    gc.collect()
    trim_heap()


# glibc mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8
ENGINE_MALLOC_ARENAS = 2
ENGINE_MMAP_THRESHOLD_BYTES = 128 * 1024
ENGINE_TRIM_THRESHOLD_BYTES = 256 * 1024


def tune_malloc() -> bool:
    """Set glibc malloc up for a long-lived, multi-threaded engine; True when it took.

    Why: by default every thread that allocates (request threads, ONNX, lance's runtime) may
    get its own arena of freed-but-kept heap, and the mmap threshold rises with every large
    block freed, so big buffers (arrow batches, ONNX tensors) end up in arenas that never
    shrink. Two arenas, a fixed 128 KB mmap threshold (large blocks go back to the OS when
    freed) and a low trim threshold: ~25 MB less RSS over the same 1,200-request soak (2 stores).
    Call before the first threads start. A no-op where the C library is not glibc."""
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return all(  # Why a list: every parameter is set, even after one is refused
        [
            mallopt(param, value) == 1
            for param, value in (
                (_M_ARENA_MAX, ENGINE_MALLOC_ARENAS),
                (_M_MMAP_THRESHOLD, ENGINE_MMAP_THRESHOLD_BYTES),
                (_M_TRIM_THRESHOLD, ENGINE_TRIM_THRESHOLD_BYTES),
            )
        ]
    )


def trim_heap() -> None:
    """Give the heap's free pages back to the OS, so the RSS shows what was freed."""
    name = ctypes.util.find_library("c")
    if not name:
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(name).malloc_trim(0)
