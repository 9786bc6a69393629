"""The index stays small and current as it is written to: real LanceDB tables in tmp dirs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memctl import service
from memctl.config import open_store
from memctl.core.files.index_policy import (
    FragmentInfo,
    segments_to_merge,
    size_class,
    stale_segments_to_merge,
    tail_to_fold,
    versions_to_remove,
    wasteful_fragments,
)
from memctl.service.memories.exchange import import_file
from memctl.service.retrieval.indexing import open_index
from memctl.service.retrieval.maintenance import maintain_index
from memctl.store.index import MemoryIndex
from memctl.store.index_maintenance import MaintenancePolicy, has_vector_index

DIM = 384
TOPICS = (
    "postgres",
    "kubernetes",
    "billing",
    "webhooks",
    "grafana",
    "invoices",
    "terraform",
    "sentry",
    "redis",
    "kafka",
)


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def row(i: int, text: str | None = None) -> dict:
    return {
        "id": f"m{i:05d}",
        "chunk": 0,
        "path": f"semantic/note-{i}.md",
        "title": f"note {i}",
        "type": "semantic",
        "tags": "",
        "agent": "",
        "scope": "project",
        "archived": False,
        "created": "",
        "updated": "",
        "importance": 0.5,
        "pinned": False,
        "embed_hash": f"h{i}",
        "sequence": "",
        "text": text
        or f"Note {i} about the {TOPICS[i % 10]} service and {TOPICS[(i * 7) % 10]} alerts "
        f"with ticket T{i:05d}",
    }


def vectors(count: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    matrix = rng.normal(size=(count, DIM)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def config(store, text: str):
    (store.root / "config.yaml").write_text(text, encoding="utf-8")
    return open_store(store.root)


# --- the policy -------------------------------------------------------------------------------


def test_size_classes_grow_by_the_fanout():
    assert [size_class(n, 8) for n in (0, 1, 7, 8, 63, 64, 511, 512)] == [0, 0, 0, 1, 1, 2, 2, 3]


def test_segments_merge_only_when_a_size_class_fills_up():
    assert segments_to_merge([1000], 8, fanout=8) == 0
    assert segments_to_merge([1000] + [8] * 6, 8, fanout=8) == 0  # 7 of class 1: not yet
    assert segments_to_merge([1000] + [8] * 7, 8, fanout=8) == 7  # the 8th fills it
    # ... and the merged 64 rows fill class 2, which merges too
    assert segments_to_merge([1000] + [64] * 7 + [8] * 7, 8, fanout=8) == 14


def test_a_segment_counting_mostly_deleted_rows_is_merged_with_the_newer_ones():
    assert stale_segments_to_merge([1000, 64, 8], [1000, 64, 8]) == 0
    assert stale_segments_to_merge([600, 64, 8], [1000, 64, 8]) == 0  # 60% live: kept
    assert stale_segments_to_merge([1000, 0, 8], [1000, 64, 8]) == 2  # from the stale one on
    assert stale_segments_to_merge([0, 1000], [1000, 1000]) == 2  # a re-sync wrote all anew
    assert stale_segments_to_merge([10, 8], [10]) == 0  # lists that do not pair: leave it
    assert stale_segments_to_merge([1000, 0, 1], [1000, 4, 1]) == 0  # a few rows: the tiers'


def test_the_tail_is_folded_once_it_is_long_enough():
    indexed = [FragmentInfo(0, 500, 0, True)]
    tail = [FragmentInfo(i, 1, 0, False) for i in range(1, 8)]
    assert tail_to_fold(indexed + tail, fanout=8) == []
    assert tail_to_fold(indexed + tail, fanout=8, force=True) == list(range(1, 8))
    assert tail_to_fold(indexed + tail + [FragmentInfo(9, 1, 0, False)], fanout=8)[-1] == 9
    assert wasteful_fragments([FragmentInfo(0, 10, 6, True), FragmentInfo(1, 10, 1, True)]) == [0]


def test_old_versions_go_only_once_replaced_long_enough_ago():
    history = [(1, 100.0), (2, 150.0), (3, 195.0), (4, 199.0)]
    # version 1 was replaced at 150, version 2 at 195, version 3 at 199; 4 is the newest
    assert versions_to_remove(history, now=200.0, keep_seconds=10) == [1]
    assert versions_to_remove(history, now=200.0, keep_seconds=0) == [1, 2, 3]
    assert versions_to_remove([(1, 0.0)], now=1e9, keep_seconds=0) == []


# --- the table ----------------------------------------------------------------------------------


def test_many_single_writes_keep_versions_and_bytes_bounded(tmp_path):
    """Disk follows the rows, not the number of writes: 200 adds and then 300 edits of the same
    rows leave a bounded number of versions and fragments, and a size near a fresh build's
    (the rest is a fixed allowance: versions kept until the next cleanup, small segments)."""
    count = 200
    data = vectors(count)
    policy = MaintenancePolicy(keep_versions_seconds=0)
    index = MemoryIndex(tmp_path / "written", DIM, policy=policy)
    for i in range(count):
        index.apply([f"m{i:05d}"], [row(i)], data[i : i + 1])
    for _ in range(3):
        for i in range(0, count, 2):
            index.apply([f"m{i:05d}"], [row(i, f"edited note {i} about redis")], data[i : i + 1])
    fresh = MemoryIndex(tmp_path / "fresh", DIM)
    rows = [row(i, f"edited note {i} about redis" if i % 2 == 0 else None) for i in range(count)]
    fresh.apply([], rows, data)

    dataset = index.dataset()
    assert dataset.count_rows() == count
    assert len(dataset.versions()) <= 10
    assert len(dataset.get_fragments()) <= 40
    assert folder_bytes(index.table_dir) <= 1.5 * folder_bytes(fresh.table_dir)


def test_new_rows_are_found_by_full_text_search_at_once(tmp_path):
    index = MemoryIndex(tmp_path, DIM, policy=MaintenancePolicy(keep_versions_seconds=0))
    data = vectors(30)
    for i in range(30):  # past the fanout: segments are merged on the way
        index.apply([], [row(i)], data[i : i + 1])
        found = [r["id"] for r in index.search_text(f"T{i:05d}", 5, None)]
        assert found[:1] == [f"m{i:05d}"], i
    stats = index.dataset().stats.index_stats("text_idx")
    assert stats["num_unindexed_rows"] == 0
    assert len(stats["num_indexed_rows_per_delta"]) < 30


def test_a_new_row_scores_like_its_indexed_twin(tmp_path):
    """A memory written now must not rank below an older one with the same text."""
    index = MemoryIndex(tmp_path, DIM, policy=MaintenancePolicy(keep_versions_seconds=0))
    data = vectors(12)
    twin = "The billing service listens on port 8443 behind the internal balancer"
    index.apply([], [row(i) for i in range(10)] + [row(10, twin)], data[:11])
    index.apply([], [row(11, twin)], data[11:12])
    scores = {r["id"]: r["_score"] for r in index.search_text("billing service port", 5, None)}
    assert scores["m00010"] == pytest.approx(scores["m00011"])


def test_rows_rewritten_all_at_once_score_as_a_fresh_build(tmp_path):
    """An upgrade's re-sync (a new INDEX_RECIPE) deletes and writes back every row: the full-text
    index must not keep counting the deleted ones (it moved BM25's order for 13 of 197 LoCoMo
    questions of one conversation until its segments were merged)."""
    policy = MaintenancePolicy(keep_versions_seconds=0)
    rows, data = [row(i) for i in range(40)], vectors(40)
    rewritten = MemoryIndex(tmp_path / "rewritten", DIM, policy=policy)
    rewritten.apply([], rows, data)
    rewritten.apply([r["id"] for r in rows], rows, data)
    fresh = MemoryIndex(tmp_path / "fresh", DIM, policy=policy)
    fresh.apply([], rows, data)
    for query in ("billing alerts", "T00007 search", "queue service alerts"):
        assert [
            (r["id"], round(r["_score"], 4)) for r in rewritten.search_text(query, 10, None)
        ] == [(r["id"], round(r["_score"], 4)) for r in fresh.search_text(query, 10, None)], query


def test_deleted_rows_are_gone_from_every_search(tmp_path):
    index = MemoryIndex(tmp_path, DIM, policy=MaintenancePolicy(keep_versions_seconds=0))
    data = vectors(20)
    for i in range(20):
        index.apply([], [row(i)], data[i : i + 1])
    index.apply(["m00003", "m00015"], [], None)  # one folded into the index, one not yet
    for gone in ("m00003", "m00015"):
        assert index.rows_for_ids([gone]) == []
        ticket = "T" + gone[1:]
        assert gone not in [r["id"] for r in index.search_text(ticket, 5, None)]
        number = int(gone[1:])
        nearest = index.search_vector(data[number], 3, None)
        assert gone not in [r["id"] for r in nearest]
    assert index.count() == 18


def test_maintenance_builds_the_ann_index_past_the_threshold_and_drops_it_below(tmp_path):
    policy = MaintenancePolicy(keep_versions_seconds=0, ann_min_rows=300)
    index = MemoryIndex(tmp_path, DIM, policy=policy)
    data = vectors(400, seed=3)
    index.apply([], [row(i) for i in range(250)], data[:250])
    assert index.maintain().vector_index == "none"
    index.apply([], [row(i) for i in range(250, 400)], data[250:])
    assert index.maintain().vector_index == "built"
    assert has_vector_index(index.dataset())
    found = [r["id"] for r in index.search_vector(data[123], 1, None)]
    assert found == ["m00123"]
    index.apply([f"m{i:05d}" for i in range(200)], [], None)
    assert index.maintain().vector_index == "dropped"
    assert not has_vector_index(index.dataset())


# --- the store ----------------------------------------------------------------------------------


@pytest.mark.model
def test_a_store_written_one_memory_at_a_time_stays_near_a_fresh_build(store, tmp_path):
    store = config(store, "index:\n  keep_versions_seconds: 0\n  cleanup_every_versions: 10\n")
    for i in range(40):
        service.add_memory(
            store,
            f"The {TOPICS[i % 10]} runbook step {i}: restart worker {i} after the "
            f"{TOPICS[(i * 3) % 10]} alert and page on-call ticket OPS-{1000 + i}",
            dedup=False,
        )
    index = open_index(store)
    assert index.count() == 40
    assert len(index.dataset().versions()) <= 12
    written = folder_bytes(index.table_dir)
    service.sync_index(store, rebuild=True)
    # Why 2x here and 1.5x above: at 40 rows the fixed cost of each data file (~3 KB) shows.
    assert written <= 2 * folder_bytes(index.table_dir)


@pytest.mark.model
def test_a_memory_is_found_by_bm25_right_after_it_is_added(store):
    for i in range(12):
        added = service.add_memory(
            store, f"Deploy checklist item {i}: the canary for region R{i}X must stay green"
        )
        hits = service.recall(service.RecallRequest(store, f"R{i}X", k=3, mode="bm25")).hits
        assert hits and hits[0].id == added.memory.id


@pytest.mark.model
def test_maintain_index_folds_everything_and_reports_per_table(store):
    for i in range(3):
        service.add_memory(store, f"Queue consumer {i} acks after the write commits", dedup=False)
    dataset = open_index(store).dataset()
    assert dataset.stats.index_stats("text_idx")["num_unindexed_rows"] == 0  # each write indexed
    reports = maintain_index(store)
    assert set(reports) >= {"memories"}
    dataset = open_index(store).dataset()
    assert dataset.stats.index_stats("text_idx")["num_unindexed_rows"] == 0


@pytest.mark.model
def test_import_deduplicates_within_the_batch_and_against_the_index(store, tmp_path):
    stored = service.add_memory(store, "We deploy with make release, then promote the rollout.")
    lines = [
        {"body": "The billing worker retries failed invoices three times before paging."},
        {"body": "The billing worker retries failed invoices three times before paging!"},
        {"body": "We deploy with make release, then promote the rollout!"},
        {"body": "Grafana dashboards for the gateway live in the observability folder."},
    ]
    source = tmp_path / "notes.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    result = import_file(store, source)

    assert [r.action for r in result.added] == ["created", "created"]
    first_billing = result.added[0].memory.id
    merged_into = sorted(r.merged_into for r in result.merged)
    assert merged_into == sorted([first_billing, stored.memory.id])
    files = [p for p in store.root.rglob("*.md") if p.parent.name == "semantic"]
    assert len(files) == 3
    # one sync after the batch: every memory is in the index, each once
    rows = open_index(store).scan(["id"])
    assert sorted(rows.column("id").to_pylist()) == sorted(
        [stored.memory.id, first_billing, result.added[1].memory.id]
    )


@pytest.mark.model
def test_a_cold_add_does_not_import_lancedb(store):
    # Why atexit: `add` ends its process without the interpreter's teardown (cli.app's quick
    # exit), after running the atexit handlers.
    code = (
        "import atexit, sys\n"
        "from memctl.cli.app import main\n"
        "atexit.register(lambda: print([m for m in ('lancedb', 'fastembed') if m in sys.modules]))\n"
        f"sys.argv = ['memctl', '--store', {str(store.root)!r}, 'add',\n"
        "            'The cache warmer job runs every ten minutes in staging']\n"
        "main()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"
    hits = service.recall(service.RecallRequest(store, "cache warmer", k=1)).hits
    assert hits and "cache warmer" in hits[0].title


@pytest.mark.model
@pytest.mark.parametrize("count", [1, 9])
def test_few_texts_embed_as_fastembed_does(count):
    from memctl.integrations.embedder import get_embedder
    from memctl.integrations.query_embedder import get_query_embedder

    texts = [f"Note {i}: the {TOPICS[i % 10]} worker restarts at midnight" for i in range(count)]
    light = get_query_embedder().embed(texts)
    fast = get_embedder().embed(texts)
    assert light.shape == fast.shape
    assert np.all(np.sum(light * fast, axis=1) > 0.9999)
