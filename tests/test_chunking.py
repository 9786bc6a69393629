from __future__ import annotations

import dataclasses
import itertools
import json
import random
import shutil

import pytest

from memctl import service
from memctl.config import open_store
from memctl.core.files.chunking import CHUNK_TOKENS, OVERLAP_TOKENS, split_chunks
from memctl.core.language.tokens import estimate_tokens
from memctl.service.retrieval.indexing import open_index

pytestmark = pytest.mark.model

LATE_PARAGRAPH = (
    "The lighthouse keeper on Skellig Rock writes every foghorn signal into a leather ledger, "
    "and the ledger is shipped to the harbour office each spring."
)

_TEAMS = [
    "The billing service",
    "Our staging cluster",
    "The nightly backup job",
    "The mobile team",
    "Release engineering",
    "The search service",
    "The payments gateway",
    "Customer support",
]
_LINKS = [
    "depends on",
    "was migrated to",
    "reports metrics to",
    "is owned by",
    "is paged through",
    "publishes events to",
    "reads configuration from",
]
_THINGS = [
    "a Postgres replica",
    "the orders topic in Kafka",
    "Grafana dashboards",
    "the platform group",
    "an object store bucket",
    "the feature flag service",
    "a Redis cluster",
    "the audit log",
]


def varied_body(target_tokens: int = 5000, seed: int = 3) -> str:
    """Paragraphs of plausible operations notes, then LATE_PARAGRAPH last."""
    rng = random.Random(seed)
    paragraphs: list[str] = []
    while estimate_tokens("\n\n".join(paragraphs)) < target_tokens:
        number = len(paragraphs) + 1
        sentences = [
            f"{rng.choice(_TEAMS)} {rng.choice(_LINKS)} {rng.choice(_THINGS)} since sprint {number * 7 + i}."
            for i in range(rng.randint(3, 7))
        ]
        paragraphs.append(f"Note {number}: " + " ".join(sentences))
    paragraphs.append(LATE_PARAGRAPH)
    return "\n\n".join(paragraphs)


def longest_overlap(first: str, second: str) -> str:
    """The longest start of `second` that `first` ends with."""
    for size in range(min(len(first), len(second)), 0, -1):
        if first.endswith(second[:size]):
            return second[:size]
    return ""


def index_rows(store, memory_id: str) -> list[dict]:
    rows = open_index(store).rows_for_ids([memory_id])
    return sorted(rows, key=lambda row: row["chunk"])


# -- the pure splitter ------------------------------------------------------------------------


def test_short_body_is_one_chunk():
    body = "We deploy with make release.\n\nRollbacks use make rollback."
    assert split_chunks(body) == [body]


def test_long_body_gives_overlapping_chunks_that_keep_every_paragraph():
    body = varied_body()
    chunks = split_chunks(body)
    assert len(chunks) >= 3
    assert all(estimate_tokens(chunk) <= CHUNK_TOKENS for chunk in chunks)
    for first, second in itertools.pairwise(chunks):
        shared = longest_overlap(first, second)
        assert OVERLAP_TOKENS // 2 <= estimate_tokens(shared) <= OVERLAP_TOKENS
        assert first.rstrip().endswith((".", "!", "?"))  # cut at a sentence end
    for paragraph in body.split("\n\n"):
        assert any(paragraph in chunk for chunk in chunks)


def test_text_without_spaces_or_sentence_ends_is_still_cut():
    rng = random.Random(5)
    body = "".join(
        rng.choice("数据库索引写入查询缓存备份迁移部署") for _ in range(15000)
    )  # no punctuation
    chunks = split_chunks(body)
    assert len(chunks) > 1
    assert all(estimate_tokens(chunk) <= CHUNK_TOKENS for chunk in chunks)
    assert (
        "".join(
            chunk[len(longest_overlap(prev, chunk)) :]
            for prev, chunk in zip([""] + chunks, chunks, strict=False)
        )
        == body
    )


# -- index and recall ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def indexed_once(tmp_path_factory):
    """A store with one long and one short memory, embedded once for the whole module."""
    store = service.init_store(tmp_path_factory.mktemp("chunks"))
    long = service.add_memory(store, varied_body(), title="Operations notebook", sync=False)
    short = service.add_memory(
        store, "The coffee machine on floor three is descaled on Fridays", sync=False
    )
    service.sync_index(store)
    return store, long, short


@pytest.fixture
def long_store(indexed_once, tmp_path):
    """A private copy (files, index, manifest with their times) that a test may edit."""
    store, long, short = indexed_once
    root = tmp_path / ".memory"
    shutil.copytree(store.root, root)
    copy = open_store(root)
    moved = [
        dataclasses.replace(r, path=root / r.path.relative_to(store.root)) for r in (long, short)
    ]
    return copy, *moved


def test_long_memory_is_indexed_as_chunks_under_one_id(long_store):
    store, long, _ = long_store
    rows = index_rows(store, long.memory.id)
    expected = len(split_chunks(long.memory.body))
    assert expected >= 3
    assert [row["chunk"] for row in rows] == list(range(expected))
    assert {row["path"] for row in rows} == {str(long.path.relative_to(store.root))}
    assert all(row["text"].startswith("Operations notebook") for row in rows)


def test_query_matching_a_late_paragraph_returns_the_memory_once_with_that_snippet(long_store):
    store, long, _short = long_store
    hits = service.recall(
        service.RecallRequest(store, "lighthouse keeper foghorn ledger", k=5)
    ).hits
    ids = [hit.id for hit in hits]
    assert ids[0] == long.memory.id
    assert ids.count(long.memory.id) == 1
    top = hits[0]
    assert LATE_PARAGRAPH in top.snippet
    assert len(top.snippet) < len(top.body)  # a chunk, not the whole body
    assert top.body.strip() == long.memory.body.strip()  # the memory itself comes back whole
    assert top.to_dict()["snippet"] == top.snippet


def test_short_memory_has_no_snippet(long_store):
    store, _, short = long_store
    hit = next(
        h
        for h in service.recall(service.RecallRequest(store, "coffee machine descaled", k=2)).hits
        if h.id == short.memory.id
    )
    assert hit.snippet is None


def test_editing_another_memory_does_not_re_embed_the_chunks(long_store):
    store, _, short = long_store
    short.path.write_text(short.path.read_text().replace("Fridays", "Mondays"))
    report = service.sync_index(store)
    assert (report.updated, report.embedded) == (1, 1)


def test_metadata_edit_of_a_long_memory_re_embeds_nothing(long_store):
    store, long, _short = long_store
    long.path.write_text(long.path.read_text().replace("importance: 0.5", "importance: 0.9"))
    report = service.sync_index(store)
    assert (report.updated, report.embedded) == (1, 0)


def test_editing_the_end_of_a_long_memory_re_embeds_only_the_chunks_that_changed(long_store):
    store, long, _ = long_store
    before = index_rows(store, long.memory.id)
    long.path.write_text(long.path.read_text().replace("harbour office", "port authority"))
    report = service.sync_index(store)
    after = index_rows(store, long.memory.id)
    changed = [
        a["chunk"]
        for a, b in zip(after, before, strict=False)
        if a["embed_hash"] != b["embed_hash"]
    ]
    assert changed == [len(after) - 1]
    assert report.embedded == 1


def test_cli_shows_the_best_chunk_for_a_long_memory(long_store, monkeypatch):
    from typer.testing import CliRunner

    from memctl.cli.app import app

    store, long, _ = long_store
    monkeypatch.setenv("MEMCTL_STORE", str(store.root))
    runner = CliRunner()
    query = "lighthouse keeper foghorn ledger"
    table = runner.invoke(app, ["recall", query, "-k", "1"])
    assert "lighthouse keeper" in " ".join(table.stdout.split())
    context = runner.invoke(app, ["recall", query, "-k", "1", "--format", "context"]).stdout
    assert LATE_PARAGRAPH in " ".join(context.split())
    assert "Note 1:" not in context  # the excerpt, not the whole body
    hit = json.loads(runner.invoke(app, ["recall", query, "-k", "1", "--json"]).stdout)[0]
    assert hit["id"] == long.memory.id and LATE_PARAGRAPH in hit["snippet"]
