"""Forget means gone: the file, any archived copy, every trace in the index, the state area,
and the text of every memory derived from it (see service.memories.derived).

Index rows are purged (store.purge), not just deleted: a plain delete leaves the text in the
table's data and index files. What memctl cannot reach is git history; the result says when
the file was committed.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memctl.config import Store
from memctl.core.errors import InvalidMemoryFile, MemctlError, MemoryNotFound, UsageError
from memctl.core.files.ids import ID_RULE, is_safe_id
from memctl.core.files.memory import Memory
from memctl.service.lifecycle.decaying import log_paths, scan_memories
from memctl.service.memories.add import locks_dir
from memctl.service.memories.derived import (
    DerivedChange,
    derived_changes,
    memory_catalog,
    rewrite_without,
)
from memctl.service.memories.short_term_scrub import needles_of, scrub_short_term
from memctl.service.provenance import forget_provenance
from memctl.service.retrieval.indexing import manifest_name, open_index
from memctl.store.access import ACCESS_FILENAME, drop_access
from memctl.store.files import (
    atomic_write,
    file_lock,
    lock_path,
    max_file_bytes,
    paths_with_id,
    read_memory,
    scan_files,
)
from memctl.store.forget_journal import (
    JOURNAL_NAME,
    clear_journal,
    journal_path,
    read_journal,
    write_journal,
)
from memctl.store.git import run_git
from memctl.store.index import Manifest
from memctl.store.ledger import LEDGER_NAME
from memctl.store.task_state import TASK_FILENAME

GIT_TIMEOUT_S = 10


@dataclass
class ForgetResult:
    id: str
    title: str
    removed: list[str] = field(default_factory=list)  # memory files, archived copies included
    derived: list[dict] = field(default_factory=list)  # memories derived from it: rewritten/dropped
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


@dataclass
class ForgetPlan:
    """What forgetting these ids does: the memories removed, and the memories derived from
    them that are re-summarised without them or dropped (listed before anything changes)."""

    results: list[ForgetResult]
    derived: list[DerivedChange] = field(default_factory=list)

    @property
    def forget_ids(self) -> list[str]:
        return [r.id for r in self.results] + [c.id for c in self.derived if not c.remaining]

    @property
    def rewrite_ids(self) -> list[str]:
        return [c.id for c in self.derived if c.remaining]


def plan_forget(store: Store, ids: list[str]) -> ForgetPlan:
    """Every id is checked first: an unknown one raises MemoryNotFound and nothing changes."""
    ids = list(dict.fromkeys(ids))
    files = scan_files(store.root, include_archived=True)
    manifests = [
        Manifest.load(store.index_dir, manifest_name(archive)) for archive in (False, True)
    ]
    results = []
    for memory_id in ids:
        if not is_safe_id(memory_id):  # Why: `forget .state` must not match state file names
            raise UsageError(
                f"'{memory_id[:100]}' is not a memory id (an id must {ID_RULE}); "
                "`memctl list` shows them."
            )
        paths = paths_with_id(store.root, memory_id, files, max_file_bytes(store))
        indexed = any(e.id == memory_id for m in manifests for e in m.files.values())
        if not paths and not indexed and not _leftovers(store, memory_id):
            raise MemoryNotFound(memory_id)
        results.append(ForgetResult(memory_id, _title(store, paths, memory_id), removed=paths))
    changes = derived_changes(ids, memory_catalog(store))
    for change in changes:
        for result in results:
            if result.id in change.lost:
                result.derived.append(
                    {k: v for k, v in change.to_dict().items() if k != "title"}
                )  # Why no title: the old one may hold the forgotten text
    results += [
        ForgetResult(c.id, c.title, removed=list(c.relpaths)) for c in changes if not c.remaining
    ]
    return ForgetPlan(results, changes)


def forget_memories(
    store: Store, ids: list[str], plan: ForgetPlan | None = None, query: str | None = None
) -> list[ForgetResult]:
    """Forget these memories (and what derives from them). Every id is checked first.

    The journal is written before anything changes; if this is killed midway, the next memctl
    command (or `forget --resume`) finishes it (see resume_forget).
    """
    plan = plan or plan_forget(store, ids)
    for result in plan.results:
        result.git_history = committed_paths(store.root, result.removed)
    # Why first: the journal holds ids only; killed here, forgetting again redoes this.
    scrub_short_term(store, needles_of(_memories_of(store, plan.results), query))
    write_journal(store.state_dir, plan.forget_ids, plan.rewrite_ids)
    _carry_out(store, plan.results, plan.rewrite_ids)
    return plan.results


def pending_forget(store: Store) -> bool:
    return journal_path(store.state_dir).is_file()


def resume_forget(store: Store) -> list[ForgetResult] | None:
    """Finish a forget that was interrupted; None when none was."""
    journal = read_journal(store.state_dir)
    if journal is None:
        return None
    files = scan_files(store.root, include_archived=True)
    results = [
        ForgetResult(i, i, removed=paths_with_id(store.root, i, files, max_file_bytes(store)))
        for i in journal["forget"]
    ]
    _carry_out(store, results, journal["rewrite"])
    return results


def _carry_out(store: Store, results: list[ForgetResult], rewrite_ids: list[str]) -> None:
    """Each step can run again: a resumed forget redoes what it cannot tell was done."""
    mentioned = {r.id: set(_state_mentions(store, r.id)) for r in results}
    doomed = {r.id for r in results}
    retitled = _rewrite_derived(store, rewrite_ids, doomed, results)
    _remove_files(store, results)
    _refresh_anchor_table(store)
    _purge_index(store, doomed | set(retitled))
    drop_access(store.state_dir, sorted(doomed))
    forget_provenance(store, sorted(doomed))
    _scrub_archive_log(store, doomed, retitled)
    _scrub_state(store, doomed)
    _remove_locks(store, doomed)
    clear_journal(store.state_dir)
    for result in results:
        left = _state_mentions(store, result.id)
        result.removed = [str(store.root / p) for p in result.removed]
        result.scrubbed = [str(p) for p in sorted(mentioned.get(result.id, set()) - set(left))]
        result.still_mentioned = [str(p) for p in left]
    if retitled:
        _index_rewritten(store)


def _rewrite_derived(
    store: Store, rewrite_ids: list[str], doomed: set[str], results: list[ForgetResult]
) -> dict[str, str]:
    """Re-summarise the derived memories (id -> new title); one left without sources joins
    the forgotten ones. One rewritten before an interruption keeps its text but is listed too:
    its old index rows must still be purged."""
    if not rewrite_ids:
        return {}
    catalog = memory_catalog(store)
    retitled = {i: catalog[i][1].display_title for i in rewrite_ids if i in catalog}
    for change in derived_changes(sorted(doomed), catalog):
        if change.id not in rewrite_ids:
            continue
        if change.remaining:
            retitled[change.id] = rewrite_without(store, change, catalog, doomed)
        else:
            retitled.pop(change.id, None)
            doomed.add(change.id)
            results.append(ForgetResult(change.id, change.title, removed=list(change.relpaths)))
    return retitled


def _remove_files(store: Store, results: list[ForgetResult]) -> None:
    with file_lock(store.state_dir / "index.lock"):
        for result in results:
            for relpath in result.removed:
                (store.root / relpath).unlink(missing_ok=True)


def _index_rewritten(store: Store) -> None:
    """Index the rewritten memories again (their old rows were purged)."""
    from memctl.service.retrieval.indexing import sync_index

    for archive in (False, True):
        if archive and not open_index(store, archive=True).exists():
            continue
        try:
            sync_index(store, archive=archive)
        except MemctlError:  # the files are right; the next read's sync catches up
            continue


def committed_paths(root: Path, relpaths: list[str]) -> list[str]:
    """The files among these that some commit of the enclosing git repository holds."""
    if not relpaths:
        return []
    top = _git_output(root, "rev-parse", "--show-toplevel")
    if not top:
        return []
    committed = []
    for relpath in relpaths:
        candidates = [relpath]
        if relpath.startswith("archive/"):
            candidates.append(relpath[len("archive/") :])  # where it lived before decay moved it
        for candidate in candidates:
            path = str(root / candidate)
            if _git_output(Path(top), "log", "--all", "--oneline", "-1", "--", path):
                committed.append(path)
    return committed


def _git_output(cwd: Path, *args: str) -> str:
    """git's output, or "" when there is no git, it fails or it hangs: nothing to report."""
    try:
        return run_git(cwd, *args, timeout=GIT_TIMEOUT_S).decode(errors="replace").strip()
    except MemctlError:
        return ""


def _memories_of(store: Store, results: list[ForgetResult]) -> list[Memory]:
    found = []
    for result in results:
        for relpath in result.removed:
            try:
                found.append(read_memory(store.root, relpath, max_bytes=max_file_bytes(store)))
            except (OSError, InvalidMemoryFile):
                continue
    return found


def _title(store: Store, paths: list[str], memory_id: str) -> str:
    for relpath in paths:
        try:
            return read_memory(store.root, relpath, max_bytes=max_file_bytes(store)).display_title
        except (OSError, InvalidMemoryFile):
            continue
    return memory_id


def _purge_index(store: Store, ids: set[str]) -> None:
    """Rows out with no physical copy left, and the manifest entries of these ids' files."""
    with file_lock(store.state_dir / "index.lock"):
        for archive in (False, True):
            manifest = Manifest.load(store.index_dir, manifest_name(archive))
            index = open_index(store, archive)
            if index.exists():
                index.purge(sorted(ids))
            kept = {p: e for p, e in manifest.files.items() if e.id not in ids}
            if len(kept) != len(manifest.files):
                manifest.files = kept
                manifest.save(store.index_dir, manifest_name(archive))


def _remove_locks(store: Store, ids: set[str]) -> None:
    for memory_id in ids:
        if is_safe_id(memory_id):
            lock_path(locks_dir(store), memory_id).unlink(missing_ok=True)


def _refresh_anchor_table(store: Store) -> None:
    """The anchor table (a cache of ids, anchors and titles) rebuilt without the removed files."""
    from memctl.service.retrieval.anchor_table import anchor_entries

    try:
        anchor_entries(store)
    except OSError:
        pass  # a cache: the next read rebuilds it


def _leftovers(store: Store, memory_id: str) -> bool:
    """Traces of a memory whose file is gone (an earlier forget that did not finish). The
    ledger's usage lines (ids and counts, no text) are kept by design and do not count: a
    second forget of the same id is an unknown id, not a success."""
    if is_safe_id(memory_id) and lock_path(locks_dir(store), memory_id).exists():
        return True
    return any(not p.name.startswith(LEDGER_NAME) for p in _state_mentions(store, memory_id))


def _scrub_archive_log(store: Store, ids: set[str], retitled: dict[str, str]) -> None:
    """Drop the archive log's lines about these memories (their titles would remain), and give
    the rewritten ones their new title."""
    for path in log_paths(store):
        _scrub_log(store, path, ids, retitled)


def _scrub_log(store: Store, path: Path, ids: set[str], retitled: dict[str, str]) -> None:
    try:
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    except FileNotFoundError:
        return
    kept = []
    for line in lines:
        entry = _entry(line)
        memory_id = entry.get("id") if entry else None
        if memory_id in ids:
            continue
        if entry and memory_id in retitled and "title" in entry:
            entry["title"] = retitled[memory_id]
            line = json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n"
        kept.append(line)
    if kept != lines:
        with file_lock(store.state_dir / "archive.lock"):
            atomic_write(path, "".join(kept).encode("utf-8"))


def _entry(line: str) -> dict | None:
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    return entry if isinstance(entry, dict) else None


def _scrub_state(store: Store, ids: set[str]) -> None:
    """Remove the ids from JSON state files: list items equal to one, and keys named by one."""
    for path in sorted(store.state_dir.rglob("*.json")):
        # Why not the task: its keys are the user's note names, not memory ids ("goal").
        if path.name in (ACCESS_FILENAME, TASK_FILENAME) or not _mentions(path, ids):
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
        for p in [*places, *log_paths(store)]
        if p.is_file()
        and not p.name.endswith(".lock")
        and p.name not in (JOURNAL_NAME, TASK_FILENAME)
        and _mentions(p, {memory_id})
    ]


def _mentions(path: Path, ids: set[str]) -> bool:
    try:
        raw = path.read_bytes()
    except OSError:
        return False
    return any(memory_id.encode("utf-8") in raw for memory_id in ids)
