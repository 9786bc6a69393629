"""The server's resident vectors answer the vector side of recall exactly as lance's flat scan
does, and stay so as the table is written, edited, compacted, purged and rebuilt: real LanceDB
tables in tmp dirs, the same index object read both ways."""

from __future__ import annotations

from pathlib import Path
from unittest.mock import patch

import numpy as np
import pytest

from memctl.core.ports import MemoryFilter
from memctl.store import index as index_module
from memctl.store import resident_vectors
from memctl.store.index import MemoryIndex
from memctl.store.index_maintenance import MaintenancePolicy

DIM = 16
TYPES = ("semantic", "episodic", "procedural")
TOPICS = ("kafka lag", "postgres locks", "billing webhooks", "grafana alerts", "redis")


def row(i: int, version: int = 0) -> dict:
    return {
        "id": f"m{i:04d}",
        "chunk": 0,
        "path": f"semantic/note-{i}.md",
        "title": f"note {i}",
        "type": TYPES[i % 3],
        "tags": ",deploy,a_b," if i % 4 == 0 else ",misc,axb,",
        "agent": "claude" if i % 5 == 0 else "",
        "scope": "private" if i % 7 == 0 else "project",
        "archived": False,
        "created": f"2025-{1 + i % 12:02d}-01T00:00:00Z",
        "updated": "",
        "importance": 0.5,
        "pinned": False,
        "embed_hash": f"h{i}-{version}",
        "sequence": f"session_id=s{i % 6}" if i % 2 else "",
        "text": f"note {i} about {TOPICS[i % 5]} version {version}",
    }


def vectors(ids: list[int], version: int = 0) -> np.ndarray:
    return np.stack(
        [np.random.default_rng(1000 * version + i).standard_normal(DIM) for i in ids]
    ).astype(np.float32)


FILTERS = [
    None,
    MemoryFilter(scope="project"),
    MemoryFilter(types=("episodic", "procedural"), tags=("deploy",)),
    MemoryFilter(agent="claude", exclude_ids=("m0010", "m0020")),
    MemoryFilter(exclude_types=("semantic",), created_since="2025-06-01T00:00:00Z"),
    MemoryFilter(created_until="2025-03-01T00:00:00Z", archived=False),
    MemoryFilter(tags=("a_b",)),  # literally: `axb` is not a match
]


@pytest.fixture
def index(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(resident_vectors, "_REUSE_FROM_ROWS", 50)  # a compaction reuses rows
    resident_vectors.keep_resident()
    yield MemoryIndex(tmp_path / "index", DIM, policy=MaintenancePolicy(keep_versions_seconds=0))
    resident_vectors.keep_resident(False)


def both_ways(index: MemoryIndex, method: str, *args) -> tuple:
    """(resident answer, lance answer) of the index's `method(*args)` on the table as it is."""
    resident = getattr(MemoryIndex(index.index_dir, DIM), method)(*args)
    # Why patched, not switched off: switching off drops what is kept, and the point is to
    # read the table as kept since earlier writes.
    with patch.object(index_module, "resident_table", lambda uri: None):
        flat = getattr(MemoryIndex(index.index_dir, DIM), method)(*args)
    return resident, flat


def assert_same_answers(index: MemoryIndex, seed: int) -> list[str]:
    """Every filter, a few queries: the same rows, in the same order, with the same distances.
    Returns the ids the resident side found."""
    seen: list[str] = []
    for n, where in enumerate(FILTERS):
        query = np.random.default_rng(seed * 100 + n).standard_normal(DIM).astype(np.float32)
        for limit in (1, 7, 500):
            resident, flat = both_ways(index, "search_vector", query, limit, where)
            assert resident == flat, (where, limit)
            seen += [found["id"] for found in resident]
        words = TOPICS[n % len(TOPICS)] + " version 1"
        resident, flat = both_ways(index, "search_text", words, 9, where)
        assert resident == flat, (words, where)
        seen += [found["id"] for found in resident]
    ids = [f"m{i:04d}" for i in range(0, 160, 3)]
    for method, args in (("rows_for_ids", ids), ("sequence_rows", ["session_id=s1", "x"])):
        resident, flat = both_ways(index, method, args)
        assert resident == flat and resident, method
    resident, flat = both_ways(index, "vectors_for_ids", ids)
    assert resident.keys() == flat.keys()
    assert all(np.array_equal(resident[key], flat[key]) for key in flat)
    return seen


def test_resident_answers_match_the_flat_scan_through_every_kind_of_write(index):
    index.apply([], [row(i) for i in range(120)], vectors(list(range(120))))
    assert_same_answers(index, 1)

    # New memories: a new fragment, folded with the first.
    index.apply([], [row(i) for i in range(120, 150)], vectors(list(range(120, 150))))
    assert "m0140" in assert_same_answers(index, 2)

    # Edits: old rows deleted (a deletion file), new ones appended.
    edited = [3, 50, 121]
    index.apply([f"m{i:04d}" for i in edited], [row(i, 1) for i in edited], vectors(edited, 1))
    assert_same_answers(index, 3)

    # Compaction and old versions removed (what a server does in its idle time).
    index.maintain()
    assert_same_answers(index, 4)

    # Forget: the rows are purged (every fragment with deletions rewritten).
    forgotten = [f"m{i:04d}" for i in (0, 7, 121, 149)]
    index.purge(forgotten)
    assert not set(forgotten) & set(assert_same_answers(index, 5))

    # The table removed and built again from other rows: nothing of the old one is used.
    index.drop()
    assert MemoryIndex(index.index_dir, DIM).search_vector(vectors([1])[0], 5) == []
    index.apply([], [row(i, 2) for i in range(40)], vectors(list(range(40)), 2))
    found = assert_same_answers(index, 6)
    assert found and all(int(memory_id[1:]) < 40 for memory_id in found)


def test_kept_parsed_memories_follow_edits_and_are_never_shared(tmp_path):
    from memctl.store.parsed_memories import keep_parsed, read_memory_kept

    note = tmp_path / "semantic" / "note.md"
    note.parent.mkdir()
    note.write_text("---\nid: n1\ntags: [a]\n---\n\nThe kafka lag alert fires at 5k\n")
    keep_parsed()
    try:
        first = read_memory_kept(tmp_path, "semantic/note.md", 10_000)
        first.tags.append("changed by a caller")
        again = read_memory_kept(tmp_path, "semantic/note.md", 10_000)
        assert again.tags == ["a"] and again.body == first.body
        note.write_text("---\nid: n1\ntags: [a]\n---\n\nThe kafka lag alert fires at 9k\n")
        assert "9k" in read_memory_kept(tmp_path, "semantic/note.md", 10_000).body
        note.unlink()
        with pytest.raises(OSError):
            read_memory_kept(tmp_path, "semantic/note.md", 10_000)
    finally:
        keep_parsed(False)


def test_newest_rows_come_in_the_order_context_shows_recent_episodes(index):
    times = ["2025-05-01T10:00:00Z", "2025-05-01", "", "2024-12-31T23:59:59Z", "2025-05-01"]
    rows = [dict(row(i), created=times[i % len(times)]) for i in range(40)]
    index.apply([], rows, vectors(list(range(40))))
    index.apply(["m0004"], [], None)  # a deleted row is never among them
    expected = sorted(
        (r for r in rows if r["id"] != "m0004" and r["scope"] == "project"),
        key=lambda r: (tuple(-ord(ch) for ch in r["created"]), r["id"]),
    )
    where = MemoryFilter(scope="project")
    for limit in (3, 100):
        resident, flat = both_ways(index, "newest_rows", where, ["id", "created"], "created", limit)
        assert (
            resident == flat == [{"id": r["id"], "created": r["created"]} for r in expected][:limit]
        )
