"""Provenance at the moment of injection: a memory's effective origin, and the quarantine.

Trust follows who wrote the bytes on this machine. memctl signs a record of every memory
text it writes (store.provenance_ledger); that record's origin is the memory's effective
origin. A memory whose current text memctl did not write here (it came through a pull, a
merge, a rebase or a clone, or another program changed it) is untrusted whatever its own
`origin` or its commit's author says, until a person approves it (`memctl approve`). Lost or
broken records fail closed.

A memory is quarantined when its effective origin is untrusted (core.trust.provenance), its words
read as an instruction to the agent (core.trust.directives), alone or joined with the next memory of
the same origin, and no person approved this text. Quarantined memories are still written and
found by an explicit `memctl recall`, marked; hooks, `memctl context`, MCP `context` and
exports to agent files never carry them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memctl.config import Store
from memctl.core.errors import MemctlError
from memctl.core.files.memory import Memory
from memctl.core.trust.directives import directive_reason, joined_reason
from memctl.core.trust.provenance import (
    UNTRUSTED,
    least_trusted,
    make_origin,
    origin_of,
    trust_of,
)
from memctl.store.files import max_file_bytes, read_memory
from memctl.store.provenance_ledger import (
    Ledger,
    Written,
    compact_writes,
    load_ledger,
    load_writes,
    note_written,
    save_ledger,
    sign,
    signed_by_me,
)

UNREVIEWED = make_origin("file", "unreviewed")  # not written by memctl here, not approved
REVIEWED = make_origin("file", "reviewed")  # ... approved by a person


def text_digest(memory: Memory) -> str:
    """What an approval is of: the memory's title and body (a later edit needs a new one)."""
    text = f"{(memory.title or '').strip()}\n{memory.body.strip()}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def approval_mark(memory_id: str, digest: str) -> str:
    return f"{digest}:{sign('approved', memory_id, digest)}"


@dataclass
class Gate:
    """One store's ledger and write record, read once, answering for each memory shown."""

    ledger: Ledger
    writes: dict[str, Written] = field(default_factory=dict)

    def vouched_origin(self, memory: Memory) -> str | None:
        """The origin memctl gave this exact text when it wrote it here; None if it did not."""
        written = self.writes.get(memory.id)
        if written and written.digest == text_digest(memory) and written.genuine(memory.id):
            return written.origin
        return None

    def origin(self, memory: Memory) -> str:
        vouched = self.vouched_origin(memory)
        if vouched is not None:
            return vouched
        claimed = origin_of(memory)
        if trust_of(claimed) == UNTRUSTED:
            return claimed  # a file may always claim less trust than it has
        arrival = self.ledger.arrivals.get(memory.id)
        if arrival and arrival.get("origin"):
            return str(arrival["origin"])
        return REVIEWED if self.approved(memory) else UNREVIEWED

    def trust(self, memory: Memory) -> str:
        return trust_of(self.origin(memory))

    def approved(self, memory: Memory) -> bool:
        digest, _, signature = self.ledger.approved.get(memory.id, "").partition(":")
        return digest == text_digest(memory) and signed_by_me(
            signature, "approved", memory.id, digest
        )

    def quarantine_reason(self, memory: Memory) -> str | None:
        """Why the memory waits for review; None when it may be injected."""
        if self.trust(memory) != UNTRUSTED or self.approved(memory):
            return None
        # Why own_labels: an episode memctl wrote here quotes turns as "User:" / "Assistant:".
        own = memory.type == "episodic" and self.vouched_origin(memory) is not None
        reason = directive_reason(f"{memory.title}\n{memory.body}", own_labels=own)
        if reason is None and self.ledger.joined.get(memory.id, "").startswith(text_digest(memory)):
            reason = self.ledger.joined[memory.id].partition(" ")[2] or "split instruction"
        return reason

    def quarantined(self, memory: Memory) -> bool:
        return self.quarantine_reason(memory) is not None


def gate_for(store: Store) -> Gate:
    """The gate of this store, after catching up with git (see catch_up_with_git)."""
    try:
        catch_up_with_git(store)
    except (OSError, MemctlError):
        pass  # git unreadable: unvouched memories stay untrusted all the same
    return Gate(load_ledger(store.state_dir), load_writes(store.state_dir))


def note_written_memories(store: Store, written: Iterable[tuple[Memory, Memory | None]]) -> None:
    """Record texts memctl just wrote here, each as (new memory, the text it replaced or None).

    A rewrite keeps the least trusted of its own origin and the replaced text's: merging into
    a memory that came through git does not launder it."""
    entries = []
    gate: Gate | None = None
    for memory, before in written:
        origin = origin_of(memory)
        if before is not None:
            gate = gate or Gate(load_ledger(store.state_dir), load_writes(store.state_dir))
            if not gate.approved(before):
                origin = least_trusted([origin, gate.origin(before)]) or origin
        entries.append((memory.id, text_digest(memory), origin))
    try:
        note_written(store.state_dir, entries)
    except OSError:
        pass  # unrecorded: the memory reads as unreviewed (fail closed), it is not lost


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

    note_split_instructions(store)
    gate = gate_for(store)
    pending = []
    for path, memory in list_memories(store, include_archived=False).memories:
        reason = gate.quarantine_reason(memory)
        if reason:
            pending.append(_pending(store, path, memory, gate, reason))
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
    gate.ledger.approved[memory.id] = approval_mark(memory.id, text_digest(memory))
    save_ledger(store.state_dir, gate.ledger)
    return Approval(memory.id, path, gate.origin(memory), was)


def approve_all(store: Store) -> list[Approval]:
    """Approve every memory whose text memctl did not write here (after a clone, say): the
    person has read them (`memctl review --all`)."""
    from memctl.service.memories.lookup import list_memories

    gate = gate_for(store)
    done = []
    for path, memory in list_memories(store, include_archived=False).memories:
        if gate.vouched_origin(memory) is not None or gate.approved(memory):
            continue
        was = gate.quarantined(memory)
        gate.ledger.approved[memory.id] = approval_mark(memory.id, text_digest(memory))
        done.append(Approval(memory.id, store.root / path, gate.origin(memory), was))
    if done:
        save_ledger(store.state_dir, gate.ledger)
    return done


def unreviewed(store: Store) -> list[Pending]:
    """Memories whose text memctl did not write here and no person approved (quarantined or
    not): what arrived through git or another program."""
    from memctl.service.memories.lookup import list_memories

    gate = gate_for(store)
    found = []
    for path, memory in list_memories(store, include_archived=False).memories:
        if gate.vouched_origin(memory) is None and not gate.approved(memory):
            reason = gate.quarantine_reason(memory) or ""
            found.append(_pending(store, path, memory, gate, reason))
    return found


def note_split_instructions(store: Store) -> int:
    """Look across memories of one untrusted origin, in the order they were written: an
    instruction split over two of them holds both. Recorded in the ledger; returns how many."""
    from memctl.service.memories.lookup import list_memories

    gate = Gate(load_ledger(store.state_dir), load_writes(store.state_dir))
    by_origin: dict[str, list[Memory]] = {}
    for _, memory in list_memories(store, include_archived=False).memories:
        if gate.trust(memory) == UNTRUSTED and not gate.approved(memory):
            by_origin.setdefault(gate.origin(memory), []).append(memory)
    joined: dict[str, str] = {}
    for memories in by_origin.values():
        memories.sort(key=lambda m: (str(m.created), m.id))
        texts = [f"{m.title}\n{m.body}" for m in memories]
        for index, reason in joined_reason(texts):
            for memory in memories[index : index + 2]:
                joined[memory.id] = f"{text_digest(memory)} {reason} (with the next memory)"
    if joined != gate.ledger.joined:
        ledger = load_ledger(store.state_dir)
        ledger.joined = joined
        save_ledger(store.state_dir, ledger)
    return len(joined)


def note_git_arrivals(store: Store, repo: Path, old: str, new: str) -> int:
    """Record the memories that commits between `old` and `new` brought (origin
    `git:<author>`, a name only: trust comes from memctl's own write record, never from what a
    commit says about its author); a new arrival needs a new approval. Returns how many whose
    text memctl did not write here."""
    from memctl.store.git import arrived_files

    try:
        under = store.root.resolve().relative_to(repo.resolve()).as_posix()
    except ValueError:
        return 0  # the store is not in this repository
    limit = max_file_bytes(store)
    arrivals: dict[str, tuple[str, str]] = {}
    foreign: dict[str, Memory] = {}
    for path, author, commit in arrived_files(repo, old, new, under):
        relpath = (repo / path).resolve().relative_to(store.root.resolve()).as_posix()
        try:
            memory = read_memory(store.root, relpath, max_bytes=limit)
        except (OSError, MemctlError):
            continue  # not a memory (README, config) or unreadable: sync reports it
        arrivals[memory.id] = (make_origin("git", author), commit)
        foreign[memory.id] = memory
    ledger = load_ledger(store.state_dir)
    for memory_id, (origin, commit) in arrivals.items():
        ledger.arrivals[memory_id] = {"origin": origin, "commit": commit}
    ledger.seen_head = new if len(new) == 40 else ledger.seen_head
    save_ledger(store.state_dir, ledger)
    if arrivals:
        note_split_instructions(store)
    gate = Gate(load_ledger(store.state_dir), load_writes(store.state_dir))
    return sum(1 for memory in foreign.values() if gate.vouched_origin(memory) is None)


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
    # The first time (a fresh clone): no arrivals to name, but nothing here was written by
    # memctl on this machine, so every memory reads as unreviewed until approved.
    ledger = load_ledger(store.state_dir)
    ledger.seen_head = head
    save_ledger(store.state_dir, ledger)
    note_split_instructions(store)


def forget_provenance(store: Store, ids: list[str]) -> None:
    """Drop forgotten memories from the ledger (forget means gone)."""
    ledger = load_ledger(store.state_dir)
    changed = False
    for memory_id in ids:
        changed |= ledger.arrivals.pop(memory_id, None) is not None
        changed |= ledger.approved.pop(memory_id, None) is not None
        changed |= ledger.joined.pop(memory_id, None) is not None
    if changed:
        save_ledger(store.state_dir, ledger)
    try:
        compact_writes(store.state_dir, forget=set(ids))
    except OSError:
        pass


def _pending(store: Store, path: str, memory: Memory, gate: Gate, reason: str) -> Pending:
    return Pending(
        memory.id, store.root / path, memory.display_title, gate.origin(memory), reason, memory.body
    )
