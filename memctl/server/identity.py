"""Which memctl code a process runs, cheaply enough to check on every connection.

The identity covers the Python installation and every `.py` file of the memctl package (path, mtime,
size): an upgrade, a reinstall, another virtualenv or an edited source file all change it, so a
client never talks to a server running other code than its own. ~1 ms for ~200 files.
"""

from __future__ import annotations

import os
import sys
import zlib

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def code_identity() -> str:
    # Why sys.prefix, not sys.executable: `python -m memctl` and the `memctl` script (python
    # vs python3.11) are the same install and should share one server.
    digest = zlib.crc32(os.fsencode(f"{sys.prefix}\0{sys.version}\0{PACKAGE_DIR}"))
    count = 0
    stack = [PACKAGE_DIR]
    while stack:
        folder = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
        except OSError:
            continue
        for entry in entries:
            if entry.name.endswith(".py"):
                info = entry.stat()
                line = f"{entry.path}\0{info.st_mtime_ns}\0{info.st_size}\n"
                digest = zlib.crc32(os.fsencode(line), digest)
                count += 1
            elif entry.name != "__pycache__" and entry.is_dir():
                stack.append(entry.path)
    return f"{digest:08x}-{count}"


def memctl_version() -> str:
    """The installed distribution's version (the server reports it; costs ~10 ms to import)."""
    try:
        from importlib.metadata import version

        return version("memctl")
    except Exception:  # noqa: BLE001 - running from a source tree that was never installed
        return "unknown"
