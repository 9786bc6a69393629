"""Memories derived from others (the `knowledge` that `compact` writes from episodes), and what
forgetting one of their sources does to them: a derived memory is re-summarised from the sources
that remain (offline, extractively), or dropped when none remain.

A memory's sources are the targets of its `derived_from` relations and the memories whose
`consolidated_into` names it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from memctl.config import Store
from memctl.core.files.memory import Memory, now_iso
from memctl.core.learning.consolidation import EpisodeGroup, draft_knowledge
from memctl.service.lifecycle.decaying import scan_memories

DERIVED_FROM = "derived_from"
REWRITTEN_BY = "extractive"  # forget re-summarises without an LLM: nothing leaves the machine


@dataclass
class DerivedChange:
    """One derived memory that loses sources: `remaining` empty means it is dropped."""

    id: str
    title: str
    relpaths: list[str]
    lost: list[str]  # its sources being forgotten
    remaining: list[str] = field(default_factory=list)

    @property
    def action(self) -> str:
        return "rewrite" if self.remaining else "drop"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "action": self.action,
            "lost": list(self.lost),
            "remaining": list(self.remaining),
        }


# id -> (relative paths of its files, the memory); live and archived memories alike.
Catalog = dict[str, tuple[list[str], Memory]]


def memory_catalog(store: Store) -> Catalog:
    catalog: Catalog = {}
    for archive in (False, True):
        for entry in scan_memories(store, archive)[0]:
            paths, _ = catalog.setdefault(entry.memory.id, ([], entry.memory))
            paths.append(entry.relpath)
    return catalog


def sources_of(memory: Memory, catalog: Catalog) -> set[str]:
    named = {
        str(r["target"])
        for r in memory.relations
        if r.get("type") == DERIVED_FROM and r.get("target")
    }
    pointing = {
        other.id
        for _, other in catalog.values()
        if other.extra.get("consolidated_into") == memory.id
    }
    return named | pointing


def derived_changes(gone: Iterable[str], catalog: Catalog) -> list[DerivedChange]:
    """Every memory derived from one in `gone`, and, when it is dropped for lack of sources,
    every memory derived from it in turn (sorted by id)."""
    gone_all = set(gone)
    while True:
        changes = _changes(gone_all, catalog, set(gone))
        drops = {c.id for c in changes if not c.remaining}
        if drops <= gone_all:
            return changes
        gone_all |= drops


def _changes(gone_all: set[str], catalog: Catalog, asked: set[str]) -> list[DerivedChange]:
    changes = []
    for memory_id, (relpaths, memory) in sorted(catalog.items()):
        if memory_id in asked:
            continue
        sources = sources_of(memory, catalog)
        lost = sorted(sources & gone_all)
        if not lost:
            continue
        remaining = sorted(s for s in sources - gone_all if s in catalog)
        changes.append(DerivedChange(memory_id, memory.display_title, relpaths, lost, remaining))
    return changes


def rewrite_without(store: Store, change: DerivedChange, catalog: Catalog, gone: set[str]) -> str:
    """Re-summarise a derived memory from its remaining sources; its new title.

    Idempotent: run again (a resumed forget), it writes the same text.
    """
    from memctl.service.lifecycle.episodes import with_embeddings
    from memctl.service.memories.add import rewrite_memory

    members = sorted(
        (catalog[i][1] for i in change.remaining),
        key=lambda m: (str(m.extra.get("occurred_at") or m.created or ""), m.id),
    )
    _, current = catalog[change.id]
    target = str(current.extra.get("target") or "")
    shared_target = target and all(str(m.extra.get("target") or "") == target for m in members)
    group = EpisodeGroup(
        "target" if shared_target else "rewrite",
        target if shared_target else "",
        [m.id for m in members],
    )
    draft = with_embeddings(store, draft_knowledge, group, members)
    stamp = now_iso()

    def change_memory(memory: Memory) -> tuple[Memory, str]:
        memory.title = draft.title
        memory.body = draft.body
        memory.relations = [
            r
            for r in memory.relations
            if not (r.get("type") == DERIVED_FROM and r.get("target") in gone)
        ]
        memory.importance = max(m.importance for m in members)
        memory.confidence = draft.confidence
        memory.extra["topic"] = draft.topic
        if "consolidated_by" in memory.extra:
            memory.extra["consolidated_by"] = REWRITTEN_BY
        memory.updated = stamp
        return memory, "rewritten"

    for relpath in change.relpaths:
        rewrite_memory(store, change.id, relpath, change_memory)
    return draft.title
