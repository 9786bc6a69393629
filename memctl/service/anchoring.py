"""Anchors as use-cases: propose them for a text, check them against the code, carry renames.

The project a store belongs to (`project_of`) and its code tree come from git when there is one.
Staleness is judged at read time against the tree as it is now: a memory is never rewritten
because its code moved, except that a git rename carries its path anchors to the new name.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from memctl.config import Store
from memctl.core.codebase.anchor_proposals import Proposal, propose_anchors
from memctl.core.codebase.anchors import (
    PROJECT_KEY,
    Anchors,
    Staleness,
    anchors_from,
    renamed_anchors,
    staleness,
    with_anchors,
)
from memctl.core.codebase.project_id import project_name
from memctl.core.learning.routing import names_project
from memctl.store.code_tree import (
    CodeTree,
    git_remote,
    head_commit,
    project_root,
    recent_renames,
    renames_between,
    working_tree,
)
from memctl.store.files import atomic_write, write_memory

HEAD_STATE = "anchors_head"

_ROOTS: dict[Path, tuple[Path, str]] = {}
_ROOTS_LOCK = threading.Lock()


def project_of(store: Store) -> tuple[Path, str]:
    """(the project's root folder, its name) for a project store: git remote, else the path."""
    return project_at(store.root.parent)


def project_at(folder: Path) -> tuple[Path, str]:
    """(root, name) of the project holding `folder` (remembered per folder in this process)."""
    with _ROOTS_LOCK:
        known = _ROOTS.get(folder)
    if known is not None:
        return known
    root = project_root(folder)
    found = (root, project_name(git_remote(root), str(root)))
    with _ROOTS_LOCK:
        _ROOTS[folder] = found
    return found


def code_tree(store: Store, persist: bool = True) -> CodeTree:
    """The project's code now; `persist=False` keeps its symbol index out of `.state/`."""
    from memctl.service.memories.redaction import redact_for_store

    return working_tree(
        project_of(store)[0],
        store.state_dir if persist else None,
        lambda text: redact_for_store(store, text).text,
    )


def propose_for(store: Store, text: str) -> Proposal:
    """The anchors `text` names that exist in the store's project."""
    tree = code_tree(store)
    return propose_anchors(text, tree.file_list(), tree.symbol_present)


@dataclass(frozen=True)
class AddAnchors:
    extra: dict[str, Any]
    proposed: Proposal | None  # None: proposals were turned off


def anchors_for_add(
    project_folder: Path,
    state_dir: Path | None,
    text: str,
    memory_type: str,
    *,
    to_user_store: bool,
    user_types: tuple[str, ...],
    propose: bool = True,
    paths: list[str] | None = None,
    symbols: list[str] | None = None,
    commands: list[str] | None = None,
    apply: str | None = None,
) -> AddAnchors:
    """Front matter extras for a new memory written from `project_folder`: the anchors its
    text names (unless `propose` is off) with the given ones in their place, and `project:`
    when it goes to the user store and is not a preference or profile fact."""
    proposal = None
    base = Anchors()
    if propose:
        tree = working_tree(project_root(project_folder), state_dir)
        proposal = propose_anchors(text, tree.file_list(), tree.symbol_present)
        base = proposal.anchors
    extra = anchored_extra({}, base, paths=paths, symbols=symbols, commands=commands, apply=apply)
    if to_user_store and not stays_shared(memory_type, text, user_types):
        extra[PROJECT_KEY] = project_at(project_folder)[1]
    return AddAnchors(extra, proposal)


def anchored_extra(
    extra: dict[str, Any] | None,
    proposal: Anchors,
    *,
    paths: list[str] | None = None,
    symbols: list[str] | None = None,
    commands: list[str] | None = None,
    apply: str | None = None,
) -> dict[str, Any]:
    """Front matter extras holding the proposal, with what the user gave replacing its kind."""
    anchors = Anchors(
        paths=tuple(paths) if paths else proposal.paths,
        symbols=tuple(symbols) if symbols else proposal.symbols,
        commands=tuple(commands) if commands else proposal.commands,
        apply=apply or proposal.apply,
    )
    return with_anchors(dict(extra or {}), anchors)


def of_this_project(store: Store):
    """A test for memories of the user store: True unless another project wrote it."""
    name: list[str] = []

    def here(memory) -> bool:
        bound = memory.extra.get(PROJECT_KEY)
        if not bound:
            return True
        if not name:
            name.append(project_of(store)[1])
        return bound == name[0]

    return here


def stays_shared(memory_type: str, text: str, user_types: tuple[str, ...]) -> bool:
    """A memory every project may see: a preference or profile fact (routing.user_types) that
    names nothing of a project (no code, file, tool or team)."""
    return memory_type in user_types and not names_project(text)


def bound_to_project(
    store: Store, memory_type: str, text: str, extra: dict[str, Any]
) -> dict[str, Any]:
    """`extra` with `project:` set, for a memory the user store receives from this project,
    unless it `stays_shared`."""
    if extra.get(PROJECT_KEY) or stays_shared(memory_type, text, store.settings.routing.user_types):
        return extra
    return {**extra, PROJECT_KEY: project_of(store)[1]}


@dataclass(frozen=True)
class StaleMemory:
    id: str
    title: str
    path: str
    store: str
    why: Staleness

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "path": self.path,
            "store": self.store,
            "missing_paths": list(self.why.missing_paths),
            "missing_symbols": list(self.why.missing_symbols),
            "reason": self.why.reason(),
        }


class GitRenames:
    """Where git says anchored files went (committed or staged renames), asked once and only
    when an anchored path is missing: renames reach anchors before `memctl index` writes them."""

    def __init__(self, store: Store):
        self._root = project_of(store)[0]
        self._found: dict[str, str] | None = None

    def carry(self, anchors: Anchors) -> Anchors:
        if not anchors.paths:
            return anchors
        if self._found is None:
            self._found = recent_renames(self._root)
        return renamed_anchors(anchors, self._found)

    def staleness(self, anchors: Anchors, tree: CodeTree) -> Staleness | None:
        """Why the anchors no longer hold, once paths git renamed are followed; None if they do."""
        files = tree.file_list()
        why = staleness(anchors, files, tree.symbol_present)
        if why and why.missing_paths:
            carried = self.carry(anchors)
            if carried != anchors:
                return staleness(carried, files, tree.symbol_present)
        return why


# Anchors (paths and symbols) checked per store and run: past it, a warning names what was not.
MAX_ANCHORS_PER_STORE = 5000


@dataclass(frozen=True)
class StaleReport:
    stale: list[StaleMemory]
    warnings: list[str]  # anchors left unchecked by the cost limits, each naming its file


def stale_memories(stores: list[tuple[str, Store]], persist: bool = True) -> list[StaleMemory]:
    """Every anchored memory (of this project) whose paths or symbols the code no longer has."""
    return stale_report(stores, persist).stale


def stale_report(stores: list[tuple[str, Store]], persist: bool = True) -> StaleReport:
    """`stale_memories`, and what the cost limits kept out of the check."""
    from memctl.service.retrieval.anchor_table import anchor_entries

    project = stores[0][1]
    tree = code_tree(project, persist)
    renames = GitRenames(project)
    name = project_of(project)[1]
    found = []
    warnings: list[str] = []
    for label, store in stores:
        checked, unchecked = 0, []
        for entry in anchor_entries(store, persist):
            warnings += [f"{store.root / entry.relpath}: {note}" for note in entry.limits]
            if entry.project not in (None, name) or not (
                entry.anchors.paths or entry.anchors.symbols
            ):
                continue
            checked += len(entry.anchors.paths) + len(entry.anchors.symbols)
            if checked > MAX_ANCHORS_PER_STORE:
                unchecked.append(str(store.root / entry.relpath))
                continue
            why = renames.staleness(entry.anchors, tree)
            if why:
                found.append(StaleMemory(entry.id, entry.title, entry.relpath, label, why))
        if unchecked:
            warnings.append(
                f"{unchecked[0]}"
                + (f" and {len(unchecked) - 1} more memories" if len(unchecked) > 1 else "")
                + f": anchors not checked; the {label} store has over {MAX_ANCHORS_PER_STORE:,} "
                "paths and symbols"
            )
    return StaleReport(found, warnings)


def carry_renames(store: Store, old: str | None = None, new: str | None = None) -> list[str]:
    """Carry path anchors along the files git renamed between `old` and `new` (default: the
    commit seen last time, and HEAD); returns the ids of the memories rewritten."""
    from memctl.service.retrieval.anchor_table import anchor_entries
    from memctl.store.files import max_file_bytes, read_memory

    root = project_of(store)[0]
    state = store.state_dir / HEAD_STATE
    new = new or head_commit(root)
    if new is None:
        return []
    if old is None:
        try:
            old = state.read_text(encoding="utf-8").strip() or None
        except OSError:
            old = None
    changed: list[str] = []
    if old and old != new:
        renames = renames_between(root, old, new)
        for entry in anchor_entries(store) if renames else ():
            moved = renamed_anchors(entry.anchors, renames)
            if moved == entry.anchors:
                continue
            memory = read_memory(store.root, entry.relpath, max_bytes=max_file_bytes(store))
            current = anchors_from(memory.extra)
            memory = replace(
                memory, extra=with_anchors(memory.extra, renamed_anchors(current, renames))
            )
            write_memory(store.root / entry.relpath, memory)
            changed.append(memory.id)
    try:
        atomic_write(state, (new + "\n").encode(), durable=False)
    except OSError:
        pass
    return changed
