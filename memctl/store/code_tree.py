"""The project's code as anchors need it: its file list and which identifiers occur in it.

Cheap by construction: git already knows every tracked file's content hash (`git ls-files -s`),
so the file list costs one git call, and which anchored identifiers a file holds is remembered
per content hash in `.memory/.state/code_symbols.json`: only files whose content changed are read
again, and only for the identifiers memories anchor to (no full index of the code). Outside git,
the tree is walked and a file's (size, mtime) stands in for its hash. A tree at a past commit
(`CodeTree.at_commit`) reads blobs through `git cat-file`, for the stale-anchor benchmark.
"""

from __future__ import annotations

import json
import os
import re
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from memctl.core.errors import MemctlError
from memctl.store.files import atomic_write
from memctl.store.git import run_git

GIT_TIMEOUT_S = 60

CACHE_NAME = "code_symbols.json"
_STORE_PREFIX = ".memory/"
MAX_FILE_BYTES = 1024 * 1024  # larger files are data, not code: not read for symbols
WALK_LIMIT = 20_000  # files listed outside git
_SKIP_DIRS = frozenset(
    {".git", ".memory", "node_modules", ".venv", "venv", "__pycache__", "dist", "build", "target"}
)
_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
_SYMBOL_SHAPE = re.compile(r"^_*[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+|[a-z0-9][A-Z])[A-Za-z0-9_]*$")
CACHE_VERSION = 2  # 2: symbols redacted like memories
_WORD_TEXT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Lines worth the redactor's time: a long token with a digit, or a word secrets come with.
_LONG_TOKEN = re.compile(r"[A-Za-z0-9/+_=-]{16,}")
_SECRET_WORD = re.compile(r"(?i:secret|token|passw|pwd|key|credential|auth|bearer|private)")


def _risky(line: str) -> bool:
    if _SECRET_WORD.search(line):
        return True
    return any(any(c.isdigit() for c in m.group(0)) for m in _LONG_TOKEN.finditer(line))


MEMO_SECONDS = 2.0  # a resident process re-lists the tree at most this often


@dataclass
class CodeTree:
    """Files (path relative to `root` -> content key) and how to read one."""

    root: Path
    files: dict[str, str]
    read: Callable[[str], bytes | None]
    cache_path: Path | None = None
    redact: Callable[[str], str] | None = None  # what a memory's text goes through
    _present: dict[str, bool] = field(default_factory=dict)
    _symbols: frozenset[str] | None = None

    def file_list(self) -> frozenset[str]:
        return frozenset(self.files)

    def symbol_present(self, symbol: str) -> bool:
        """Whether `symbol` occurs as a whole word in some file of the tree."""
        if is_indexed_symbol(symbol):
            return symbol in self.symbols()
        if symbol not in self._present:
            self._present[symbol] = any(
                symbol.encode() in _words(self.read(path)) for path in self.files
            )
        return self._present[symbol]

    def symbols(self) -> frozenset[str]:
        """Every identifier in the tree shaped like a symbol worth anchoring (see
        `is_indexed_symbol`); each file is read once per content hash, then cached."""
        if self._symbols is not None:
            return self._symbols
        cache = _load_cache(self.cache_path)
        blobs: dict[str, list[str]] = cache.get("blobs") or {}
        if cache.get("version") != CACHE_VERSION:
            blobs = {}
        changed = False
        for path, key in self.files.items():
            if key not in blobs:
                blobs[key] = sorted(
                    word for word in self._kept_words(self.read(path)) if is_indexed_symbol(word)
                )
                changed = True
        live = set(self.files.values())
        if changed or len(blobs) > len(live):
            blobs = {key: words for key, words in blobs.items() if key in live}
            _save_cache(self.cache_path, {"version": CACHE_VERSION, "blobs": blobs})
        self._symbols = frozenset(word for words in blobs.values() for word in words)
        return self._symbols

    def _kept_words(self, data: bytes | None) -> set[str]:
        """The words of a file, less those the redactor takes out of its risky lines: the
        symbol index is derived state and holds no secret a memory could not."""
        words = {w.decode() for w in _words(data)}
        if not words or self.redact is None or data is None:
            return words
        text = data.decode("utf-8", "replace")
        risky = "\n".join(line for line in text.splitlines() if _risky(line))
        if not risky:
            return words
        redacted = self.redact(risky)
        if redacted == risky:
            return words
        removed = set(_WORD_TEXT.findall(risky)) - set(_WORD_TEXT.findall(redacted))
        return words - removed

    @classmethod
    def at_commit(cls, repo: Path, commit: str, cache_path: Path | None = None) -> CodeTree:
        out = run_git(repo, "ls-tree", "-r", "-z", commit, timeout=GIT_TIMEOUT_S)
        files = {}
        for entry in out.split(b"\0"):
            if b"\t" not in entry:
                continue
            meta, path = entry.split(b"\t", 1)
            parts = meta.split()
            if len(parts) == 3 and parts[1] == b"blob":
                files[path.decode("utf-8", "replace")] = parts[2].decode()
        return cls(repo, files, _blob_reader(repo, files), cache_path)


def project_root(start: Path) -> Path:
    """The git work tree holding `start`, else `start` itself."""
    try:
        out = run_git(start, "rev-parse", "--show-toplevel", timeout=10)
        return Path(out.decode().strip())
    except MemctlError:
        return start


_MEMO: dict[tuple[Path, Path | None], tuple[float, tuple[int, int], CodeTree]] = {}
_MEMO_LOCK = threading.Lock()


def working_tree(
    root: Path, state_dir: Path | None, redact: Callable[[str], str] | None = None
) -> CodeTree:
    """The files under `root` now (git's view when it is a repository), memoised briefly.
    `redact`: what the symbol index's words pass through (the store's redaction; by default
    every kind memctl redacts)."""
    stamp = _index_stamp(root)
    now = time.monotonic()
    cache = state_dir / CACHE_NAME if state_dir is not None else None
    with _MEMO_LOCK:
        memo = _MEMO.get((root, cache))
        if memo and memo[1] == stamp and now - memo[0] < MEMO_SECONDS:
            return memo[2]
    files = _git_files(root)
    if files is None:
        files = _walked_files(root)
    # Why: the memories themselves name the symbols; they must not keep them alive.
    files = {path: key for path, key in files.items() if not path.startswith(_STORE_PREFIX)}
    tree = CodeTree(root, files, lambda path: _read_file(root, path), cache, redact or _redacted)
    with _MEMO_LOCK:
        _MEMO[(root, cache)] = (now, stamp, tree)
    return tree


def _redacted(text: str) -> str:
    """Every kind of secret and personal data out of `text` (the defaults of `redaction`)."""
    from memctl.core.redaction.redact import redact

    return redact(text).text


def _index_stamp(root: Path) -> tuple[int, int]:
    try:
        info = (root / ".git" / "index").stat()
        return info.st_mtime_ns, info.st_size
    except OSError:
        return 0, 0


def _git_files(root: Path) -> dict[str, str] | None:
    try:
        staged = run_git(root, "ls-files", "-s", "-z", timeout=GIT_TIMEOUT_S)
        others = run_git(
            root,
            "ls-files",
            "-t",
            "-z",
            "-d",
            "-m",
            "-o",
            "--exclude-standard",
            timeout=GIT_TIMEOUT_S,
        )
    except MemctlError:
        return None
    files: dict[str, str] = {}
    for entry in staged.split(b"\0"):
        if b"\t" in entry:
            meta, raw_path = entry.split(b"\t", 1)
            files[raw_path.decode("utf-8", "replace")] = meta.split()[1].decode()
    removed = set()
    for entry in others.split(b"\0"):
        tag, _, path_bytes = entry.partition(b" ")
        path = path_bytes.decode("utf-8", "replace")
        if tag == b"R":  # deleted from the work tree, not yet from the index
            removed.add(path)
        elif tag in (b"?", b"C") and path:  # untracked, or changed since it was staged
            files[path] = _stat_key(root / path)
    for path in removed:
        files.pop(path, None)
    return files


def _walked_files(root: Path) -> dict[str, str]:
    files: dict[str, str] = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS and not d.startswith(".")]
        for name in names:
            path = Path(folder) / name
            files[path.relative_to(root).as_posix()] = _stat_key(path)
            if len(files) >= WALK_LIMIT:
                return files
    return files


def _stat_key(path: Path) -> str:
    try:
        info = path.stat()
    except OSError:
        return "missing"
    return f"stat:{info.st_size}:{info.st_mtime_ns}"


_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC


def _read_file(root: Path, relpath: str) -> bytes | None:
    """A file of the tree, when it is a regular file of at most MAX_FILE_BYTES inside `root`.

    Why so careful: the tree is what a pull brings. A committed symlink may lead to
    `~/.aws/credentials` (outside the project: not read) or `/dev/zero` (not a file: not read),
    and a FIFO would block open() (O_NONBLOCK returns at once; fstat says what it is)."""
    try:
        path = (root / relpath).resolve(strict=True)  # every link on the way, not just the last
        if not path.is_relative_to(root.resolve()):
            return None
        fd = os.open(path, _READ_FLAGS)
    except (OSError, RuntimeError):
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
        return data if len(data) <= MAX_FILE_BYTES else None
    except OSError:
        return None
    finally:
        os.close(fd)


def _blob_reader(repo: Path, files: dict[str, str]) -> Callable[[str], bytes | None]:
    def read(path: str) -> bytes | None:
        key = files.get(path)
        if key is None:
            return None
        try:
            data = run_git(repo, "cat-file", "blob", key, timeout=GIT_TIMEOUT_S)
        except MemctlError:
            return None
        return data if len(data) <= MAX_FILE_BYTES else None

    return read


def _words(data: bytes | None) -> set[bytes]:
    if not data or b"\0" in data[:8000]:
        return set()
    return set(_WORD.findall(data))


def is_indexed_symbol(word: str) -> bool:
    """An identifier distinctive enough to index and anchor to: 4+ characters with an inner
    capital (getUserById, HttpClient) or an underscore (user_id, MAX_SIZE)."""
    return len(word) >= 4 and bool(_SYMBOL_SHAPE.match(word))


def _load_cache(path: Path | None) -> dict:
    if path is None:
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save_cache(path: Path | None, data: dict) -> None:
    if path is None:
        return
    try:
        atomic_write(path, json.dumps(data, separators=(",", ":")).encode(), durable=False)
    except OSError:
        pass  # a cache: the next call reads the files again


def renames_between(repo: Path, old: str, new: str) -> dict[str, str]:
    """old path -> new path for the files git sees as renamed from `old` to `new` (`-M`)."""
    try:
        out = run_git(repo, "diff", "-M", "--name-status", "-z", old, new, timeout=GIT_TIMEOUT_S)
    except MemctlError:
        return {}
    parts = out.split(b"\0")
    renames: dict[str, str] = {}
    i = 0
    while i < len(parts):
        status = parts[i].decode()
        if status.startswith("R") and i + 2 < len(parts):
            renames[parts[i + 1].decode("utf-8", "replace")] = parts[i + 2].decode(
                "utf-8", "replace"
            )
            i += 3
        elif status.startswith("C") and i + 2 < len(parts):
            i += 3
        else:
            i += 2
    return renames


_RENAME_STATUS = re.compile(rb"^R[0-9]*$")
_TWO_PATH_STATUS = re.compile(rb"^C[0-9]*$")
_ONE_PATH_STATUS = re.compile(rb"^[AMDTUX][0-9]*$")


def _rename_pairs(out: bytes) -> list[tuple[str, str]]:
    """(old, new) for each `R` entry of `--name-status -z` output, in output order."""
    tokens = [token.strip(b"\n") for token in out.split(b"\0")]
    pairs, i = [], 0
    while i < len(tokens):
        token = tokens[i]
        if _RENAME_STATUS.match(token) and i + 2 < len(tokens):
            pairs.append(
                (tokens[i + 1].decode("utf-8", "replace"), tokens[i + 2].decode("utf-8", "replace"))
            )
            i += 3
        elif _TWO_PATH_STATUS.match(token):
            i += 3
        elif _ONE_PATH_STATUS.match(token):
            i += 2
        else:
            i += 1
    return pairs


RENAME_DEPTH = 200  # commits back that recent_renames looks


def recent_renames(repo: Path, depth: int = RENAME_DEPTH) -> dict[str, str]:
    """old path -> path now, for the files git sees renamed in the last `depth` commits or
    staged now (`git mv`), chains followed (a -> b -> c gives a -> c). Empty outside git."""
    try:
        committed = run_git(
            repo, "log", "-M", "--diff-filter=R", "--name-status", "--format=", "-z",
            f"-n{depth}", "HEAD", "--", timeout=GIT_TIMEOUT_S,
        )  # fmt: skip
    except MemctlError:
        committed = b""
    try:
        staged = run_git(
            repo, "diff", "--cached", "-M", "--name-status", "-z", timeout=GIT_TIMEOUT_S
        )
    except MemctlError:
        staged = b""
    now: dict[str, str] = {}
    for old, new in [*reversed(_rename_pairs(committed)), *_rename_pairs(staged)]:
        for earlier, later in now.items():
            if later == old:
                now[earlier] = new
        now[old] = new
    return now


def head_commit(repo: Path) -> str | None:
    try:
        return run_git(repo, "rev-parse", "HEAD", timeout=GIT_TIMEOUT_S).decode().strip() or None
    except MemctlError:
        return None


def git_remote(repo: Path) -> str | None:
    """The URL of the repository's `origin` remote (else its first remote); None without one."""
    try:
        names = run_git(repo, "remote", timeout=GIT_TIMEOUT_S).decode().split()
        if not names:
            return None
        name = "origin" if "origin" in names else names[0]
        return (
            run_git(repo, "remote", "get-url", name, timeout=GIT_TIMEOUT_S).decode().strip() or None
        )
    except MemctlError:
        return None
