"""Read a file of the store as untrusted input.

Anyone with commit access, or a `git pull`, can put anything under `.memory/`: a symlink to
`/etc/passwd`, a FIFO named `x.md` (an open() that never returns), a 50 MB body. A file is read
only when it is a regular file, or a symlink to a regular file inside the store, and only up
to `limits.max_file_bytes`; anything else is an InvalidMemoryFile naming the path, which the
commands report like a broken memory while every other memory keeps working.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from memctl.core.errors import InvalidMemoryFile, MemctlError

DEFAULT_MAX_FILE_BYTES = 2 * 1024 * 1024
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC
_OUTSIDE_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
DEFAULT_MAX_INPUT_BYTES = 64 * 1024 * 1024


class InputFileRefused(MemctlError):
    """A file named from outside (a hook's transcript, an import) memctl will not read."""

    kind = "input_refused"


def read_input_file(path: Path, max_bytes: int = DEFAULT_MAX_INPUT_BYTES) -> bytes:
    """The bytes of a file a person or an agent named (an import, a transcript, a file to
    extract from): only a regular file, at most `max_bytes`. A device (`/dev/zero`), a named
    pipe, a socket or a folder is refused, also behind a symlink, and never waited on.
    OSError when it is missing or unreadable."""
    # Why O_NONBLOCK: opening a FIFO for reading waits for a writer; this returns at once and
    # fstat then says what was opened, whatever it was swapped for after a check.
    fd = os.open(path, _OUTSIDE_FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputFileRefused(
                f"{path} is {_kind(info.st_mode)}, not a regular file; memctl reads only files."
            )
        if info.st_size > max_bytes:
            raise InputFileRefused(_input_too_big(path, info.st_size, max_bytes))
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(max_bytes + 1)
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise InputFileRefused(_input_too_big(path, len(data), max_bytes))
    return data


def _input_too_big(path: Path, size: int, max_bytes: int) -> str:
    return (
        f"{path} is {size:,} bytes or more, over limits.max_input_bytes ({max_bytes:,}); "
        "split it, or raise the limit in config.yaml."
    )


def read_store_file(root: Path, relpath: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> bytes:
    """The bytes of `root/relpath`. OSError when it is gone or unreadable; InvalidMemoryFile when
    it is not a regular file inside the store, or is larger than `max_bytes`."""
    path = root / relpath
    info = os.lstat(path)
    target = path
    if stat.S_ISLNK(info.st_mode):
        target = _link_target_inside(root, path)
        info = os.stat(target, follow_symlinks=False)
    if not stat.S_ISREG(info.st_mode):
        raise InvalidMemoryFile(path, 1, f"not a regular file ({_kind(info.st_mode)}); skipped")
    if info.st_size > max_bytes:
        raise InvalidMemoryFile(path, 1, _too_big(info.st_size, max_bytes))
    # Why O_NONBLOCK and fstat: the file can be swapped for a FIFO between the check and open().
    fd = os.open(target, _OPEN_FLAGS)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InvalidMemoryFile(path, 1, "not a regular file; skipped")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(max_bytes + 1)
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise InvalidMemoryFile(path, 1, _too_big(len(data), max_bytes))
    return data


def _link_target_inside(root: Path, path: Path) -> Path:
    """Where a symlink in the store leads, when that is a file inside the store."""
    try:
        target = path.resolve(strict=True)
    except FileNotFoundError:
        raise InvalidMemoryFile(
            path, 1, f"dangling symlink (to {os.readlink(path)}); skipped"
        ) from None
    except (OSError, RuntimeError) as exc:  # a loop of links
        raise InvalidMemoryFile(path, 1, f"unusable symlink ({exc}); skipped") from None
    if not target.is_relative_to(root.resolve()):
        raise InvalidMemoryFile(
            path, 1, f"symlink to {target}, outside the store; memctl does not follow it"
        )
    return target


def file_kind(mode: int) -> str | None:
    """What a file that is not a regular file is ("a named pipe", ...); None for a file."""
    return None if stat.S_ISREG(mode) else _kind(mode)


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a named pipe"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return "not a plain file"


def _too_big(size: int, max_bytes: int) -> str:
    return (
        f"{size:,} bytes, over limits.max_file_bytes ({max_bytes:,}); skipped "
        "(split it, or raise the limit in config.yaml)"
    )
