"""Sync planning: which files the index must look at again. Pure; tested with plain values."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field

from memctl.core.files.embedding import vector_key


@dataclass(frozen=True)
class IndexedFile:
    """What the index remembers about one file (the manifest entry)."""

    mtime_ns: int
    size: int
    file_hash: str
    embed_hash: str | None = None
    id: str | None = None
    problem: dict | None = None
    sequence: str = ""  # "session_id=..." when the memory was written in a sequence
    order: str = ""  # its place there: created, then id


@dataclass(frozen=True)
class SyncPlan:
    unchanged: tuple[str, ...]  # same mtime and size: not even hashed
    check: tuple[str, ...]  # new, or stat changed: hash the bytes to know
    removed: tuple[str, ...]  # in the index, gone from disk


@dataclass
class SyncReport:
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    embedded: int = 0
    rebuilt: bool = False
    problems: list[dict] = field(default_factory=list)
    repaired: str | None = None  # the damage a rebuild repaired (see store.index_health)

    def to_dict(self) -> dict:
        return {
            "added": self.added,
            "updated": self.updated,
            "removed": self.removed,
            "unchanged": self.unchanged,
            "embedded": self.embedded,
            "rebuilt": self.rebuilt,
            "problems": self.problems,
            **({"repaired": self.repaired} if self.repaired else {}),
        }

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed)


def plan_sync(stats: dict[str, tuple[int, int]], indexed: dict[str, IndexedFile]) -> SyncPlan:
    """stats maps relpath -> (mtime_ns, size) for files on disk now."""
    unchanged, check = [], []
    for relpath in sorted(stats):
        entry = indexed.get(relpath)
        if entry is not None and (entry.mtime_ns, entry.size) == stats[relpath]:
            unchanged.append(relpath)
        else:
            check.append(relpath)
    removed = sorted(set(indexed) - set(stats))
    return SyncPlan(tuple(unchanged), tuple(check), tuple(removed))


_DIGEST_MOD = 1 << 64


def entry_digest(relpath: str, mtime_ns: int, size: int) -> int:
    """One file's share of a stat fingerprint."""
    data = f"{relpath}\0{mtime_ns}\0{size}".encode()
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")


def add_digests(total: int, digests: Iterable[int], sign: int = 1) -> int:
    """`total` with these files' digests added (sign 1) or taken out (sign -1)."""
    return (total + sign * sum(digests)) % _DIGEST_MOD


def stat_fingerprint(stats: dict[str, tuple[int, int]]) -> str:
    """One digest of every path with its mtime and size: equal digests, nothing to check.

    A sum of per-file digests, so a write updates it from the files it changed alone."""
    total = add_digests(0, (entry_digest(p, m, s) for p, (m, s) in stats.items()))
    return f"{total:016x}"


def file_hash(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def embed_hash(model_id: str, text: str) -> str:
    """Changes only when the embedded text or the model (or its vectors' revision) changes, so a
    `mentions` bump never re-embeds."""
    return hashlib.sha256(f"{vector_key(model_id)}\n{text}".encode()).hexdigest()
