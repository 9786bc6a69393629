"""The engine's malloc tuning: its many threads share two glibc arenas instead of one each."""

from __future__ import annotations

import ctypes.util
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
    reason="glibc's malloc only",
)

# Eight threads each allocate through the C library, then the process counts its arenas from
# glibc's own report (malloc_info writes one <heap nr=...> per arena).
ARENAS_AFTER_THREADS = """
import ctypes, ctypes.util, sys, tempfile, threading
from memctl.server import budget

if sys.argv[1] == "tuned":
    assert budget.tune_malloc()
libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
libc.fopen.restype = ctypes.c_void_p
libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]
started, hold = threading.Barrier(9), threading.Event()

def allocate():
    block = libc.malloc(4096)
    started.wait()
    hold.wait()
    libc.free(block)

threads = [threading.Thread(target=allocate) for _ in range(8)]
for thread in threads:
    thread.start()
started.wait()
with tempfile.NamedTemporaryFile(suffix=".xml") as report:
    stream = libc.fopen(report.name.encode(), b"w")
    libc.malloc_info(0, stream)
    libc.fclose(stream)
    print(open(report.name).read().count("<heap nr="))
hold.set()
for thread in threads:
    thread.join()
"""


def arenas(mode: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", ARENAS_AFTER_THREADS, mode],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return int(done.stdout.strip())


@pytest.mark.skipif(not ctypes.util.find_library("c"), reason="no C library to load")
def test_engine_threads_share_two_malloc_arenas():
    from memctl.server.budget import ENGINE_MALLOC_ARENAS

    # Untuned, glibc gives each allocating thread its own arena (up to 8 per core).
    assert arenas("default") > ENGINE_MALLOC_ARENAS
    assert arenas("tuned") <= ENGINE_MALLOC_ARENAS
