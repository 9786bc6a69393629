"""The memory files on disk: scanning, reading, atomic writes and locks."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import stat
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from memctl.config import ARCHIVE_DIRNAME, CONFIG_FILENAME, PRIVATE_DIRNAME, STORE_DIRNAME, Store
from memctl.core.errors import InvalidMemoryFile, OutsideStore, UsageError
from memctl.core.files.frontmatter import parse_memory, render_memory
from memctl.core.files.ids import ID_RULE, id_from_name, is_safe_id
from memctl.core.files.input_limits import check_file_size
from memctl.core.files.memory import MEMORY_TYPES, Memory, is_memory_filename, memory_filename
from memctl.core.trust.terminal import printable_name
from memctl.store.safe_read import DEFAULT_MAX_FILE_BYTES, read_store_file

_ID_SUFFIX = re.compile(r"-([0-9a-z]{12})$")
_ROOT_FILES = {"README.md", "CHANGELOG.md"}


class FileStat(
    NamedTuple
):  # Why a tuple: a sync builds one per file, 100k of them at 100k memories
    relpath: str
    mtime_ns: int
    size: int


# path -> problem: folders memctl could not read and names it cannot use, found by scan_files
# since the last drain_scan_problems(); the CLI reports them once per command.
_scan_problems: dict[str, dict] = {}


def _scan_problem(path: str, problem: str) -> None:
    _scan_problems.setdefault(path, {"path": path, "line": 0, "problem": problem})


def note_problem(path: str, problem: str) -> None:
    """Queue a warning about `path` for the command to print once (see drain_scan_problems)."""
    _scan_problem(path, problem)


def note_lenient_values(path: Path | str, memory: Memory) -> None:
    """Queue a memory's lenient-value warnings (core.files.lenient) for the command to print once."""
    for line, problem in memory.warnings:
        _scan_problems.setdefault(
            f"{path}:{line}:{problem}", {"path": str(path), "line": line, "problem": problem}
        )


def drain_scan_problems() -> list[dict]:
    """The folders and names the scans left out since the last call (each once)."""
    problems = list(_scan_problems.values())
    _scan_problems.clear()
    return problems


def _usable_name(name: str) -> bool:
    """A name that is valid UTF-8 (os.scandir hands back other bytes as surrogates)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def scan_files(root: Path, include_archived: bool = True) -> dict[str, FileStat]:
    """Every memory file under the store (relative POSIX paths), with mtime and size.

    A folder that cannot be read, or a name that is not valid UTF-8, is left out and noted
    (see drain_scan_problems): one bad entry never hides the rest of the store."""
    found: dict[str, FileStat] = {}
    stack = [(root, "")]
    while stack:
        folder, prefix = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            if prefix:  # Why: the store's own root unreadable is an error for the command
                _scan_problem(printable_name(str(folder)), f"folder left out: {exc.strerror}")
                continue
            raise
        for entry in entries:
            name = entry.name
            if not _usable_name(name):
                if entry.is_dir(follow_symlinks=False) or is_memory_filename(name):
                    _scan_problem(
                        printable_name(entry.path), "left out: the name is not valid UTF-8"
                    )
                continue
            if entry.is_dir(follow_symlinks=False):
                if name.startswith(".") or (
                    not include_archived and not prefix and name == ARCHIVE_DIRNAME
                ):
                    continue
                stack.append((Path(entry.path), f"{prefix}{name}/"))
            elif name.startswith(".") and is_temp_name(name):
                remove_stale_temp_file(Path(entry.path))  # Why: left by a killed write
            elif is_memory_filename(name) and not (not prefix and name in _ROOT_FILES):
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError as exc:
                    _scan_problem(printable_name(entry.path), f"left out: {exc.strerror}")
                    continue
                relpath = prefix + name
                found[relpath] = FileStat(relpath, st.st_mtime_ns, st.st_size)
    return found


def is_scanned_path(relpath: str) -> bool:
    """Would scan_files(include_archived=True) list this relative path, were it a file?"""
    parts = relpath.split("/")
    if not _usable_name(relpath) or any(part.startswith(".") for part in parts[:-1]):
        return False
    return is_memory_filename(parts[-1]) and not (len(parts) == 1 and parts[0] in _ROOT_FILES)


def default_id(relpath: str) -> str:
    """Id for a hand-written file without one: the id suffix of its name, else its name (made
    safe to use in a path, see core.files.ids)."""
    stem = Path(relpath).stem
    match = _ID_SUFFIX.search(stem)
    return match.group(1) if match else id_from_name(stem)


def max_file_bytes(store: Store) -> int:
    """`limits.max_file_bytes`: memory files larger than this are reported and skipped."""
    return store.settings.limits.max_file_bytes


def check_id(memory_id: str) -> str:
    """The id, when it is safe to put in a file name; a UsageError otherwise."""
    if not is_safe_id(memory_id):
        raise UsageError(f"Id '{memory_id[:100]}' cannot name a file; an id must {ID_RULE}.")
    return memory_id


def lock_path(locks_dir: Path, memory_id: str) -> Path:
    """The lock file of one memory (never outside `locks_dir`, whatever the id says)."""
    return locks_dir / f"{check_id(memory_id)}.lock"


def default_type(relpath: str) -> str:
    for part in Path(relpath).parts[:-1]:
        if part in MEMORY_TYPES:
            return part
    return "semantic"


def is_archived(relpath: str) -> bool:
    return relpath.startswith(ARCHIVE_DIRNAME + "/")


def read_memory(
    root: Path, relpath: str, raw: bytes | None = None, max_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> Memory:
    """Parse one file. Raises InvalidMemoryFile with the path and line on bad content, or when
    it is not a regular file in the store under `max_bytes` (see store.safe_read)."""
    path = root / relpath
    if raw is None:
        raw = read_store_file(root, relpath, max_bytes)
    memory = parse_memory(path, raw, default_id(relpath), default_type(relpath))
    if is_private_path(root, relpath):
        memory.scope = "private"  # Why: the folder decides, whatever the front matter says
    return memory


def is_private_path(root: Path, relpath: str | Path) -> bool:
    """Under private/ (or archive/private/) of the store: this person's, never shared."""
    path = Path(relpath)
    if path.is_absolute():
        try:
            path = path.relative_to(root)
        except ValueError:
            return False
    parts = list(path.parts)
    if parts and parts[0] == ARCHIVE_DIRNAME:
        parts = parts[1:]
    return len(parts) > 1 and parts[0] == PRIVATE_DIRNAME


def read_memory_bytes(root: Path, relpath: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> bytes:
    """The raw bytes of a memory file, under the same rules as read_memory."""
    return read_store_file(root, relpath, max_bytes)


def path_for(root: Path, memory: Memory) -> Path:
    check_id(memory.id)
    folder = (
        root / PRIVATE_DIRNAME / memory.type if memory.scope == "private" else root / memory.type
    )
    return folder / memory_filename(memory)


_deferring = threading.local()  # .folders: the folders a deferring block will sync, if any
_observing = threading.local()  # .callback: told of each memory file about to be replaced


@contextlib.contextmanager
def observing_writes(callback) -> Iterator[None]:
    """Within the block (this thread), `callback(path, data)` runs before each memory file
    write is renamed into place: a journal of intent that a crash cannot get ahead of."""
    outer = getattr(_observing, "callback", None)
    _observing.callback = callback
    try:
        yield
    finally:
        _observing.callback = outer


def current_write_observer():
    """This thread's `observing_writes` callback, if any (a burst carries it to its saver)."""
    return getattr(_observing, "callback", None)


def _about_to_replace(path: Path, data: bytes) -> None:
    callback = getattr(_observing, "callback", None)
    if callback is not None:
        callback(path, data)


@contextlib.contextmanager
def folder_syncs_deferred() -> Iterator[None]:
    """Within the block, a durable write syncs its file at once but its folder (which makes
    the rename durable) once per folder as the block ends: a batch of 1,000 files pays ~1,000
    fsyncs, not 2,000. Why safe: a crash before the end loses whole files, never half of one,
    and the batch has answered nothing yet."""
    outer = getattr(_deferring, "folders", None)
    folders: set[Path] = set()
    _deferring.folders = folders if outer is None else outer
    try:
        yield
    finally:
        _deferring.folders = outer
        for folder in sorted(folders):
            _sync_folder(folder)


def _sync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError):
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def store_root_of(path: Path) -> Path | None:
    """The store a path lies in, judged by its written form (not where links lead): the
    nearest `.memory` folder above it, else the nearest folder with a config.yaml that is
    not itself a symlink (a user store). None for files outside any store (AGENTS.md)."""
    lexical = Path(os.path.abspath(path))
    for folder in lexical.parents:
        if folder.name == STORE_DIRNAME:
            return folder
    for folder in lexical.parents:
        if (folder / CONFIG_FILENAME).is_file() and not folder.is_symlink():
            return folder
    return None


def check_inside_store(path: Path, root: Path | None = None) -> None:
    """Raise OutsideStore when writing `path` would follow a symlinked folder out of its
    store (a type folder, archive/, .state/ or .index/ made a link to elsewhere)."""
    root = root if root is not None else store_root_of(path)
    if root is None:
        return
    real_root = os.path.realpath(root)
    folder = Path(os.path.abspath(path)).parent
    while not os.path.lexists(folder) and folder != folder.parent:
        folder = folder.parent  # Why: mkdir(parents=True) creates the rest inside this one
    real_folder = os.path.realpath(folder)
    if real_folder != real_root and not real_folder.startswith(real_root.rstrip(os.sep) + os.sep):
        raise OutsideStore(path, real_folder)


# `.NAME.PID.RANDOM.tmp`: the temp file of an atomic write by process PID. One whose process is
# gone was left by a kill; the next scan removes it (see remove_stale_temp_file).
_TEMP_NAME = re.compile(r"^\..+\.(\d+)\.[A-Za-z0-9_]+\.tmp$")
_OLD_TEMP_NAME = re.compile(r"^\..+\.[A-Za-z0-9_]{8}\.tmp$")  # before the pid was in the name
OLD_TEMP_AFTER_S = 3600.0


def _temp_prefix(path: Path) -> str:
    return f".{path.name}.{os.getpid()}."


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's process: alive, not ours to judge
    return True


def is_temp_name(name: str) -> bool:
    """Is this the name of an atomic write's temp file?"""
    return bool(_TEMP_NAME.match(name) or _OLD_TEMP_NAME.match(name))


def remove_stale_temp_file(path: Path) -> bool:
    """Remove the temp file of an atomic write whose process is gone (killed mid-write; the
    file it was replacing is whole, old or new). True if removed."""
    match = _TEMP_NAME.match(path.name)
    try:
        if match:
            if _process_alive(int(match.group(1))):
                return False
        elif not (_OLD_TEMP_NAME.match(path.name)) or (
            time.time() - path.lstat().st_mtime < OLD_TEMP_AFTER_S
        ):
            return False
        path.unlink()
    except OSError:
        return False
    return True


def remove_stale_temp_files(folder: Path) -> int:
    """remove_stale_temp_file for each temp file directly in `folder`; how many went."""
    removed = 0
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            if is_temp_name(entry.name) and entry.is_file(follow_symlinks=False):
                removed += remove_stale_temp_file(Path(entry.path))
    return removed


@contextlib.contextmanager
def _disk_refusals(path: Path) -> Iterator[None]:
    """A write the disk refuses (full, the file-size limit, the quota) raises StorageFull
    naming `path` and the limit; any other error passes unchanged."""
    try:
        yield
    except OSError as exc:
        from memctl.store.disk_limits import refused_write

        refused = refused_write(exc, path)
        if refused is None:
            raise
        raise refused from exc


def atomic_write(path: Path, data: bytes, durable: bool = True) -> None:
    """Temp file in the same folder, fsync, rename: a crash never leaves half a file.

    The file gets the mode it had, or for a new file what the umask gives (0644 under 022), as
    a plain open() would: the temp file itself is created 0600. `durable=False` skips the two
    fsyncs (~5-10 ms on a busy disk) for caches and statistics that memctl rebuilds or can do
    without: the rename still never shows a reader half a file.
    """
    check_inside_store(path)
    with _disk_refusals(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = file_mode(path)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=_temp_prefix(path), suffix=".tmp")
        try:
            os.fchmod(fd, mode)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                if durable:
                    handle.flush()
                    os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
    if not durable:
        return
    deferred = getattr(_deferring, "folders", None)
    if deferred is not None:
        deferred.add(path.parent)
        return
    _sync_folder(path.parent)


def replace_if_unchanged(path: Path, data: bytes, expected: bytes) -> bool:
    """Write `data` over `path` only if it still holds `expected` (compare-and-swap): a hand
    edit saved while memctl was merging is never overwritten. False, with nothing written,
    when the file changed; the caller reads it again and redoes its change.

    The temp file is written and synced first; on Linux the rename is an exchange, so a hand
    edit saved in the microseconds between the last comparison and the rename is seen and put
    back, and the merge redone on it (elsewhere that window stays open)."""
    check_inside_store(path)
    with _disk_refusals(path):
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=_temp_prefix(path), suffix=".tmp")
    try:
        os.fchmod(fd, file_mode(path))
        with _disk_refusals(path), os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            current = path.read_bytes()
        except FileNotFoundError:
            current = None
        if current != expected:
            os.unlink(tmp)
            return False
        _about_to_replace(path, data)
        if not _exchange(tmp, path):
            os.replace(tmp, path)
        elif not _kept(Path(tmp), path, data, expected):
            return False
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _sync_folder(path.parent)
    return True


def _kept(swapped: Path, path: Path, data: bytes, expected: bytes) -> bool:
    """After an exchange: True when what it swapped out was `expected`; else a hand edit landed
    between the comparison and the exchange, and it is swapped back into place (False)."""
    if swapped.read_bytes() == expected:
        swapped.unlink()
        return True
    if path.read_bytes() == data:  # still ours on disk: give the hand edit its place back
        _exchange(swapped, path)
    swapped.unlink()
    return False


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_renameat2: list = []  # [function or None], looked up once


def _exchange(first: str | Path, second: Path) -> bool:
    """Swap two paths atomically (Linux renameat2 RENAME_EXCHANGE), so a compare-and-swap can
    see what it replaced. False where the system or file system cannot."""
    if not _renameat2:
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            _renameat2.append(getattr(libc, "renameat2", None))
        except (OSError, AttributeError):
            _renameat2.append(None)
    call = _renameat2[0]
    if call is None:
        return False
    import ctypes

    done = call(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE)
    if done == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.ENOENT):
        return False  # no such call, a file system without it, or the file is gone
    raise OSError(code, os.strerror(code), str(second))


def file_mode(path: Path) -> int:
    """The permission bits for writing `path`: its own, else 0666 less the umask."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        return 0o666 & ~current_umask()


def current_umask() -> int:
    """The process umask, read without changing it (os.umask would, racing other threads)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # no /proc (macOS): set and restore at once
    os.umask(mask)
    return mask


def write_memory(path: Path, memory: Memory, max_bytes: int | None = None) -> bytes:
    """Write one memory file atomically; with `max_bytes`, refuse (InputRefused) a file the
    reader would skip, before anything is written."""
    data = render_memory(memory)
    if max_bytes is not None:
        check_file_size(data, max_bytes)
    _about_to_replace(path, data)
    atomic_write(path, data)
    return data


def read_state_json(path: Path, what: str):
    """A JSON file of the state area, or None when absent; a broken one names its line."""
    import json

    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except ValueError as exc:
        raise InvalidMemoryFile(path, getattr(exc, "lineno", 1), f"broken {what}: {exc}") from None


@contextlib.contextmanager
def file_lock(lock_path: Path) -> Iterator[None]:
    """An exclusive advisory lock shared by every memctl process on this store."""
    check_inside_store(lock_path)
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def find_by_id(
    root: Path,
    memory_id: str,
    include_archived: bool = True,
    max_bytes: int = DEFAULT_MAX_FILE_BYTES,
) -> str | None:
    """Relative path of the memory with this id, by file name first, then by content."""
    files = scan_files(root, include_archived=include_archived)
    for relpath in sorted(files):
        if default_id(relpath) == memory_id:
            return relpath
    for relpath in sorted(files):
        try:
            if read_memory(root, relpath, max_bytes=max_bytes).id == memory_id:
                return relpath
        except (OSError, InvalidMemoryFile):  # a broken file is simply not the one we look for
            continue
    return None


def paths_with_id(
    root: Path,
    memory_id: str,
    files: dict[str, FileStat] | None = None,
    max_bytes: int = DEFAULT_MAX_FILE_BYTES,
) -> list[str]:
    """Every file holding the memory with this id (a copy in archive/ included), sorted.

    A file that cannot be parsed, or read at all, counts when its name carries the id.
    """
    files = scan_files(root, include_archived=True) if files is None else files
    found = []
    for relpath in sorted(files):
        named = default_id(relpath) == memory_id
        try:
            raw = read_store_file(root, relpath, max_bytes)
        except (OSError, InvalidMemoryFile):
            if named:
                found.append(relpath)
            continue
        if not named and memory_id.encode("utf-8") not in raw:
            continue  # Why: a cheap test first; parsing every file would be slow on a big store.
        try:
            holds = read_memory(root, relpath, raw).id == memory_id
        except InvalidMemoryFile:  # a broken file is judged by its name alone
            holds = named
        if holds:
            found.append(relpath)
    return found
