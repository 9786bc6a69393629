"""Provenance at the moment of injection: a memory's effective origin, and the quarantine.

A memory is quarantined when its effective origin is untrusted (core.provenance), its words
read as an instruction to the agent (core.directives) and no person approved this text
(`memctl approve`). Quarantined memories are still written and found by an explicit
`memctl recall`, marked; hooks, `memctl context` and MCP `context` never inject them.
The effective origin is the file's own `origin`, unless this clone noted that a teammate's
commit brought the file (`git:<author>`, see agents.git_hooks): a file cannot vouch for itself.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memctl.config import Store
from memctl.core.directives import directive_reason
from memctl.core.errors import MemctlError
from memctl.core.memory import Memory
from memctl.core.provenance import UNTRUSTED, make_origin, origin_of, trust_of
from memctl.store.files import max_file_bytes, read_memory
from memctl.store.provenance_ledger import Ledger, load_ledger, save_ledger


def text_digest(memory: Memory) -> str:
    """What an approval is of: the memory's title and body (a later edit needs a new one)."""
    return hashlib.sha256(f"{memory.title}\n{memory.body}".encode()).hexdigest()[:32]


@dataclass
class Gate:
    """One store's ledger, read once, answering for each memory shown."""

    ledger: Ledger

    def origin(self, memory: Memory) -> str:
        arrival = self.ledger.arrivals.get(memory.id)
        if arrival and arrival.get("origin"):
            return str(arrival["origin"])
        return origin_of(memory)

    def trust(self, memory: Memory) -> str:
        return trust_of(self.origin(memory))

    def approved(self, memory: Memory) -> bool:
        return self.ledger.approved.get(memory.id) == text_digest(memory)

    def quarantine_reason(self, memory: Memory) -> str | None:
        """Why the memory waits for review; None when it may be injected."""
        if self.trust(memory) != UNTRUSTED or self.approved(memory):
            return None
        return directive_reason(f"{memory.title}\n{memory.body}")

    def quarantined(self, memory: Memory) -> bool:
        return self.quarantine_reason(memory) is not None


def gate_for(store: Store) -> Gate:
    """The gate of this store, after catching up with git (see catch_up_with_git)."""
    try:
        catch_up_with_git(store)
    except (OSError, MemctlError):
        pass  # git unreadable: the files' own origins still hold, and the hooks' notes
    return Gate(load_ledger(store.state_dir))


def gates_for(stores: dict[str, Store | None]) -> dict[str, Gate]:
    return {label: gate_for(store) for label, store in stores.items() if store is not None}


def injectable(hits: Iterable[Any], gates: dict[str, Gate]) -> list[tuple[Any, str]]:
    """(hit, origin) for each recall hit (or Memory) that may be injected: quarantined ones left
    out. Every face that hands memories to an agent (the hooks, `context`, MCP, `recall
    --format context`) filters through this, the one place quarantine is applied."""
    kept = []
    for hit in hits:
        gate = gates[getattr(hit, "store", "project")]
        memory = getattr(hit, "memory", hit)
        if not gate.quarantined(memory):
            kept.append((hit, gate.origin(memory)))
    return kept


@dataclass
class Pending:
    id: str
    path: Path
    title: str
    origin: str
    reason: str
    body: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": str(self.path),
            "title": self.title,
            "origin": self.origin,
            "reason": self.reason,
            "body": self.body,
        }


def pending_review(store: Store) -> list[Pending]:
    """Quarantined memories, oldest first."""
    from memctl.service.memories.lookup import list_memories

    gate = gate_for(store)
    pending = []
    for path, memory in list_memories(store, include_archived=False).memories:
        reason = gate.quarantine_reason(memory)
        if reason:
            pending.append(
                Pending(
                    memory.id,
                    store.root / path,
                    memory.display_title,
                    gate.origin(memory),
                    reason,
                    memory.body,
                )
            )
    return pending  # list_memories gives them oldest first


@dataclass
class Approval:
    id: str
    path: Path
    origin: str
    was_quarantined: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": str(self.path),
            "origin": self.origin,
            "was_quarantined": self.was_quarantined,
        }


def approve(store: Store, memory_id: str) -> Approval:
    """Record that a person reviewed this memory's current text: it may be injected."""
    from memctl.service.memories.lookup import get_memory

    path, memory = get_memory(store, memory_id)
    gate = gate_for(store)
    was = gate.quarantined(memory)
    gate.ledger.approved[memory.id] = text_digest(memory)
    save_ledger(store.state_dir, gate.ledger)
    return Approval(memory.id, path, gate.origin(memory), was)


def note_git_arrivals(store: Store, repo: Path, old: str, new: str) -> int:
    """Record the memories that teammates' commits between `old` and `new` brought (origin
    `git:<author>`); a new arrival of an approved memory needs a new approval. Returns how many."""
    from memctl.store.git import arrived_files

    try:
        under = store.root.resolve().relative_to(repo.resolve()).as_posix()
    except ValueError:
        return 0  # the store is not in this repository
    limit = max_file_bytes(store)
    arrivals: dict[str, tuple[str, str]] = {}
    for path, author, commit in arrived_files(repo, old, new, under):
        relpath = (repo / path).resolve().relative_to(store.root.resolve()).as_posix()
        try:
            memory = read_memory(store.root, relpath, max_bytes=limit)
        except (OSError, MemctlError):
            continue  # not a memory (README, config) or unreadable: sync reports it
        arrivals[memory.id] = (make_origin("git", author), commit)
    ledger = load_ledger(store.state_dir)
    for memory_id, (origin, commit) in arrivals.items():
        ledger.arrivals[memory_id] = {"origin": origin, "commit": commit}
        ledger.approved.pop(memory_id, None)
    ledger.seen_head = new if len(new) == 40 else ledger.seen_head
    save_ledger(store.state_dir, ledger)
    return len(arrivals)


def catch_up_with_git(store: Store) -> None:
    """If HEAD moved since memctl last looked (a pull without memctl's hooks, a rebase, a reset),
    note what teammates' commits brought. Costs two small file reads when it has not moved."""
    from memctl.store.git import head_commit

    found = head_commit(store.root)
    if found is None:
        return
    repo, head = found
    ledger = load_ledger(store.state_dir)
    if ledger.seen_head == head:
        return
    if ledger.seen_head:
        try:
            note_git_arrivals(store, repo, ledger.seen_head, head)
            return
        except MemctlError:
            pass  # the old commit is gone (a rewritten history): start again from here
    # Why no arrivals the first time: nothing says which of today's files anyone reviewed.
    ledger = load_ledger(store.state_dir)
    ledger.seen_head = head
    save_ledger(store.state_dir, ledger)


def forget_provenance(store: Store, ids: list[str]) -> None:
    """Drop forgotten memories from the ledger (forget means gone)."""
    ledger = load_ledger(store.state_dir)
    changed = False
    for memory_id in ids:
        changed |= ledger.arrivals.pop(memory_id, None) is not None
        changed |= ledger.approved.pop(memory_id, None) is not None
    if changed:
        save_ledger(store.state_dir, ledger)
