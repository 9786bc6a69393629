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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memctl.config import Store
from memctl.core.directives import directive_reason
from memctl.core.memory import Memory
from memctl.core.provenance import UNTRUSTED, origin_of, trust_of
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
    return Gate(load_ledger(store.state_dir))


def gates_for(stores: dict[str, Store | None]) -> dict[str, Gate]:
    return {label: gate_for(store) for label, store in stores.items() if store is not None}


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


def note_arrivals(store: Store, arrivals: dict[str, tuple[str, str]]) -> int:
    """Record memories (id -> (origin, commit)) a teammate's commit brought; a new arrival of an
    approved memory needs a new approval (its text changed, or it came again)."""
    if not arrivals:
        return 0
    ledger = load_ledger(store.state_dir)
    for memory_id, (origin, commit) in arrivals.items():
        ledger.arrivals[memory_id] = {"origin": origin, "commit": commit}
        ledger.approved.pop(memory_id, None)
    save_ledger(store.state_dir, ledger)
    return len(arrivals)


def forget_provenance(store: Store, ids: list[str]) -> None:
    """Drop forgotten memories from the ledger (forget means gone)."""
    ledger = load_ledger(store.state_dir)
    changed = False
    for memory_id in ids:
        changed |= ledger.arrivals.pop(memory_id, None) is not None
        changed |= ledger.approved.pop(memory_id, None) is not None
    if changed:
        save_ledger(store.state_dir, ledger)
