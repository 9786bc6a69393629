"""Is the index whole? Cheap checks of a LanceDB table, and what counts as a damaged one.

The index is a cache of the files, so damage (a truncated data file, garbage in a version
manifest, a half-copied folder) is never fatal: the caller rebuilds it from the files. These
checks find damage before a search trips over it, and `looks_damaged` recognises the errors
lance raises when a search trips over it anyway.
"""

from __future__ import annotations

import os
from pathlib import Path

from memctl.store.index import MemoryIndex

_LANCE_MODULES = ("lance", "lancedb", "pyarrow")
_LANCE_WORDS = ("lance", "arrow", "manifest", "fragment", "not found: ", "io error")
# lance's words for a request it refuses: rebuilding the table would not change the answer
_REFUSALS = ("invalid user input",)
# ...unless they describe the bytes it read: lance reports some damaged pages as "user input"
_CORRUPTION = ("corrupt", "metadata region", "encoding envelope", "failed to decode", "page")


def looks_damaged(error: BaseException) -> bool:
    """True for the errors a damaged table gives on open or read (not for a bad query)."""
    text = str(error).casefold()
    if any(word in text for word in _REFUSALS) and not any(w in text for w in _CORRUPTION):
        return False
    module = type(error).__module__ or ""
    if module.split(".")[0] in _LANCE_MODULES:
        return True
    if isinstance(error, (OSError, ValueError, RuntimeError)):
        return any(word in text for word in _LANCE_WORDS)
    return False


def table_problem(
    index: MemoryIndex, expected_rows: int | None = None, read_all: bool = False
) -> str | None:
    """What is wrong with the table, or None: its latest version opens, every data file it
    lists is there at its recorded size, and it holds `expected_rows` memories (first chunks).
    `read_all` (`memctl index`) also decodes every row, which finds bytes damaged in place."""
    if not index.exists():
        return None
    try:
        dataset = index.dataset()
        table_dir = Path(index.table_dir)
        data_dir = table_dir / "data"
        committed = _committed_at(table_dir, dataset.version)
        for fragment in dataset.get_fragments():
            for data_file in fragment.data_files():
                problem = _data_file_problem(data_dir, data_file, committed)
                if problem:
                    return problem
        problem = _index_files_problem(table_dir, dataset, committed)
        if problem:
            return problem
        if expected_rows is not None:
            rows = dataset.count_rows(filter="chunk = 0")
            if rows != expected_rows:
                return f"it holds {rows} memories where its manifest lists {expected_rows}"
        if read_all:
            for _ in dataset.to_batches(batch_size=4096):
                pass
    except Exception as exc:  # noqa: BLE001 - whatever lance raises here means "damaged"
        return describe(exc)
    return None


def _data_file_problem(data_dir: Path, data_file, committed: int | None) -> str | None:
    path = data_dir / data_file.path
    try:
        info = os.stat(path)
    except OSError:
        return f"data file {data_file.path} is missing"
    expected = getattr(data_file, "file_size_bytes", None)
    if expected and info.st_size != expected:
        return f"data file {data_file.path} has {info.st_size} bytes, {expected} expected"
    if committed is not None and info.st_mtime_ns > committed:
        return f"data file {data_file.path} changed after the index was written"
    return None


# Why mtimes: lance never rewrites a file of a committed version (it writes data and index
# files, then the version's manifest). So a file the opened version uses that is newer than
# that manifest was written to by someone else: bytes changed in place, which sizes miss and
# decoding often misses too (a float is a float), while searches quietly answer differently.


def _committed_at(table_dir: Path, version: int) -> int | None:
    """When the manifest of `version` was written (ns); None when it cannot be found."""
    for name in (f"{(1 << 64) - 1 - version}.manifest", f"{version}.manifest"):
        try:
            return os.stat(table_dir / "_versions" / name).st_mtime_ns
        except OSError:
            continue
    return None


def _index_files_problem(table_dir: Path, dataset, committed: int | None) -> str | None:
    """A file of the version's search indexes changed after it was committed."""
    if committed is None:
        return None
    uuids = [
        getattr(segment, "uuid", None)
        for described in dataset.describe_indices()
        for segment in getattr(described, "segments", ())
    ]
    for uuid in uuids:
        folder = table_dir / "_indices" / str(uuid)
        if not uuid or not folder.is_dir():
            continue
        for path in folder.iterdir():
            if path.stat().st_mtime_ns > committed:
                return f"search index file {path.name} changed after the index was written"
    return None


def describe(error: BaseException) -> str:
    """The first line of a lance error, short enough for a one-line notice."""
    text = str(error).strip().splitlines()
    return (text[0] if text else type(error).__name__)[:200]
