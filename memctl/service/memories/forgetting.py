"""Forget means gone: the file, any archived copy, every trace in the index, the state area.

Index rows are purged (store.purge), not just deleted: a plain delete leaves the text in the
table's data and index files. What memctl cannot reach is git history; the result says when
the file was committed.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memctl.config import Store
from memctl.core.errors import InvalidMemoryFile, MemoryNotFound
from memctl.core.memory import Memory
from memctl.service.lifecycle.decaying import log_path, scan_memories
from memctl.service.retrieval.indexing import manifest_name, open_index
from memctl.store.access import ACCESS_FILENAME, drop_access
from memctl.store.files import (
    atomic_write,
    file_lock,
    max_file_bytes,
    paths_with_id,
    read_memory,
    scan_files,
)
from memctl.store.index import Manifest

GIT_TIMEOUT_S = 10


@dataclass
class ForgetResult:
    id: str
    title: str
    removed: list[str] = field(default_factory=list)  # memory files, archived copies included
    git_history: list[str] = field(default_factory=list)  # removed files that git still holds
    scrubbed: list[str] = field(default_factory=list)  # state files the id was removed from
    still_mentioned: list[str] = field(default_factory=list)  # state files left as they are

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def find_matches(store: Store, query: str) -> list[tuple[str, Memory]]:
    """Every memory, archived ones too, whose title, tags or body contain `query` (any case)."""
    needle = query.casefold().strip()
    if not needle:
        return []
    matches = []
    for archive in (False, True):
        for entry in scan_memories(store, archive)[0]:
            memory = entry.memory
            haystack = "\n".join([memory.title, " ".join(memory.tags), memory.body]).casefold()
            if needle in haystack:
                matches.append((entry.relpath, memory))
    return matches


def forget_memory(store: Store, memory_id: str) -> dict[str, Any]:
    """Forget one memory; the result as a dict (for the CLI's JSON and the MCP tool)."""
    return forget_memories(store, [memory_id])[0].to_dict()


def forget_memories(store: Store, ids: list[str]) -> list[ForgetResult]:
    """Forget these memories. Every id is checked first: an unknown one removes nothing."""
    ids = list(dict.fromkeys(ids))
    files = scan_files(store.root, include_archived=True)
    manifests = {
        archive: Manifest.load(store.index_dir, manifest_name(archive)) for archive in (False, True)
    }
    results = []
    for memory_id in ids:
        paths = paths_with_id(store.root, memory_id, files, max_file_bytes(store))
        indexed = any(e.id == memory_id for m in manifests.values() for e in m.files.values())
        if not paths and not indexed:
            raise MemoryNotFound(memory_id)
        results.append(ForgetResult(memory_id, _title(store, paths, memory_id), removed=paths))

    mentioned = {r.id: set(_state_mentions(store, r.id)) for r in results}
    for result in results:
        result.git_history = committed_paths(store.root, result.removed)
    with file_lock(store.state_dir / "index.lock"):
        for result in results:
            for relpath in result.removed:
                (store.root / relpath).unlink(missing_ok=True)
        doomed = set(ids)
        for archive, manifest in manifests.items():
            _purge_index(store, archive, manifest, doomed)
    drop_access(store.state_dir, ids)
    _scrub_archive_log(store, doomed)
    _scrub_state(store, doomed)
    for result in results:
        left = _state_mentions(store, result.id)
        result.removed = [str(store.root / p) for p in result.removed]
        result.scrubbed = [str(p) for p in sorted(mentioned[result.id] - set(left))]
        result.still_mentioned = [str(p) for p in left]
    return results


def committed_paths(root: Path, relpaths: list[str]) -> list[str]:
    """The files among these that some commit of the enclosing git repository holds."""
    if not relpaths:
        return []
    top = _git(root, "rev-parse", "--show-toplevel")
    if not top:
        return []
    committed = []
    for relpath in relpaths:
        candidates = [relpath]
        if relpath.startswith("archive/"):
            candidates.append(relpath[len("archive/") :])  # where it lived before decay moved it
        for candidate in candidates:
            path = str(root / candidate)
            if _git(Path(top), "log", "--all", "--oneline", "-1", "--", path):
                committed.append(path)
    return committed


def _git(cwd: Path, *args: str) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(cwd), *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ""  # no git, or it hangs: nothing to report
    return done.stdout.strip() if done.returncode == 0 else ""


def _title(store: Store, paths: list[str], memory_id: str) -> str:
    for relpath in paths:
        try:
            return read_memory(store.root, relpath, max_bytes=max_file_bytes(store)).display_title
        except (OSError, InvalidMemoryFile):
            continue
    return memory_id


def _purge_index(store: Store, archive: bool, manifest: Manifest, ids: set[str]) -> None:
    """Rows out with no physical copy left, and the manifest entries of the forgotten files."""
    index = open_index(store, archive)
    if index.exists():
        index.purge(sorted(ids))
    kept = {p: e for p, e in manifest.files.items() if e.id not in ids}
    if len(kept) != len(manifest.files):
        manifest.files = kept
        manifest.save(store.index_dir, manifest_name(archive))


def _scrub_archive_log(store: Store, ids: set[str]) -> None:
    """Drop the archive log's lines about these memories (their titles would remain)."""
    path = log_path(store)
    try:
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    except FileNotFoundError:
        return
    kept = [line for line in lines if _line_id(line) not in ids]
    if len(kept) != len(lines):
        atomic_write(path, "".join(kept).encode("utf-8"))


def _line_id(line: str) -> str | None:
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    return entry.get("id") if isinstance(entry, dict) else None


def _scrub_state(store: Store, ids: set[str]) -> None:
    """Remove the ids from JSON state files: list items equal to one, and keys named by one."""
    for path in sorted(store.state_dir.rglob("*.json")):
        if path.name == ACCESS_FILENAME or not _mentions(path, ids):
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        cleaned = _without(data, ids)
        if cleaned != data:
            atomic_write(
                path, (json.dumps(cleaned, indent=1, sort_keys=True) + "\n").encode("utf-8")
            )


def _without(value: Any, ids: set[str]) -> Any:
    if isinstance(value, dict):
        return {k: _without(v, ids) for k, v in value.items() if k not in ids}
    if isinstance(value, list):
        return [_without(v, ids) for v in value if not (isinstance(v, str) and v in ids)]
    return value


def _state_mentions(store: Store, memory_id: str) -> list[Path]:
    """State files and the archive log where the id appears (after forget: what was left alone)."""
    places = sorted(store.state_dir.rglob("*")) if store.state_dir.is_dir() else []
    return [
        p
        for p in [*places, log_path(store)]
        if p.is_file() and not p.name.endswith(".lock") and _mentions(p, {memory_id})
    ]


def _mentions(path: Path, ids: set[str]) -> bool:
    try:
        raw = path.read_bytes()
    except OSError:
        return False
    return any(memory_id.encode("utf-8") in raw for memory_id in ids)
