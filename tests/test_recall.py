from __future__ import annotations

import pytest

from memctl import service


def seed(store):
    texts = {
        "deploy": ("We ship releases with blue-green deployments on Kubernetes", "procedural"),
        "tabs": ("Maria prefers tabs over spaces in Go code", "preference"),
        "pizza": ("The team lunch on Fridays is usually pizza", "episodic"),
        "error": (
            "reconcile_manifest() throws TW-E4012 when a container id is missing",
            "semantic",
        ),
        "db": ("Postgres was chosen over MongoDB for transactional integrity", "semantic"),
    }
    return {
        key: service.add_memory(store, text, type=kind, tags=[key], sync=False).memory.id
        for key, (text, kind) in texts.items()
    }


@pytest.fixture(scope="module")
def seeded_once(tmp_path_factory):
    store = service.init_store(tmp_path_factory.mktemp("seeded"))
    return store, seed(store)


@pytest.fixture
def seeded(seeded_once, copy_store):
    """The seed memories, embedded once; each test gets its own copy of the store."""
    store, ids = seeded_once
    return copy_store(store), ids


@pytest.mark.model
def test_semantic_query_with_no_shared_words_finds_the_memory(seeded):
    store, ids = seeded
    hits = service.recall(
        service.RecallRequest(
            store, "how do we push new versions to production", k=1, mode="vector"
        )
    ).hits
    assert hits[0].id == ids["deploy"]
    hits = service.recall(
        service.RecallRequest(store, "what food do colleagues eat at the end of the week", k=1)
    ).hits
    assert hits[0].id == ids["pizza"]


@pytest.mark.model
def test_exact_identifier_finds_its_memory(seeded):
    store, ids = seeded
    for query in ("TW-E4012", "what does reconcile_manifest do", "error TW-E4012 again?"):
        assert (
            service.recall(service.RecallRequest(store, query, k=1)).hits[0].id == ids["error"]
        ), query


@pytest.mark.model
def test_identifier_wins_even_among_many_similar_memories(store):
    for n in range(30):
        service.add_memory(
            store, f"Error code TW-E40{n:02d} means a shipment was rejected", sync=False
        )
    target = service.add_memory(
        store, "Unrelated note: the warehouse code WH_ALPHA_77 is for Rotterdam"
    ).memory.id
    assert (
        service.recall(service.RecallRequest(store, "error WH_ALPHA_77", k=1)).hits[0].id == target
    )


@pytest.mark.model
def test_hand_edit_shows_in_next_recall(seeded):
    store, ids = seeded
    path = service.get_memory(store, ids["pizza"])[0]
    path.write_text(path.read_text().replace("pizza", "sushi from the harbour kiosk"))
    hits = service.recall(service.RecallRequest(store, "sushi", k=1, mode="bm25")).hits
    assert hits[0].id == ids["pizza"]
    assert "sushi" in hits[0].body


@pytest.mark.model
def test_hand_written_file_is_recalled(seeded):
    store, _ = seeded
    (store.root / "procedural").mkdir(exist_ok=True)
    (store.root / "procedural" / "hotfix.md").write_text(
        "# Hotfix\n\nCut hotfix branches from the release tag, never from main.\n"
    )
    hits = service.recall(service.RecallRequest(store, "where do hotfix branches start", k=1)).hits
    assert hits[0].id == "hotfix"
    assert hits[0].type == "procedural"


@pytest.mark.model
def test_filters_by_type_and_tag(seeded):
    store, ids = seeded
    hits = service.recall(service.RecallRequest(store, "code", k=5, types=("preference",))).hits
    assert [h.id for h in hits] == [ids["tabs"]]
    # Why: one bare word is weak evidence (relevance ~0.14); this test is about the tag filter.
    hits = service.recall(
        service.RecallRequest(store, "database", k=5, tags=("db",), min_relevance=0.0)
    ).hits
    assert [h.id for h in hits] == [ids["db"]]


@pytest.mark.model
def test_modes_return_their_own_side(seeded):
    store, ids = seeded
    assert (
        service.recall(service.RecallRequest(store, "MongoDB", k=1, mode="bm25")).hits[0].id
        == ids["db"]
    )
    assert (
        service.recall(
            service.RecallRequest(store, "document database versus relational", k=1, mode="vector")
        )
        .hits[0]
        .id
        == ids["db"]
    )


def test_identifier_patterns():
    from memctl.core.recall.ranking import query_identifiers

    assert query_identifiers("why TW-E4012 and OPS-1182?") == ["tw-e4012", "ops-1182"]
    assert query_identifiers("call reconcile_manifest() or getUserById") == [
        "reconcile_manifest",
        "getuserbyid",
    ]
    assert query_identifiers("how do we deploy to the well-known x-ray 5 cluster") == []


@pytest.mark.model
def test_a_tag_filter_matches_only_that_tag_never_a_pattern(store):
    tagged = {
        tag: service.add_memory(
            store,
            f"Build note {n}: the cache warms up before the deploy",
            tags=[tag],
            sync=False,
            dedup=False,
        ).memory.id
        for n, tag in enumerate(["a_b", "axb", "aab", "50%", "500", "50% off", "it's"])
    }
    for tag in ("a_b", "50%", "it's"):
        for mode in ("hybrid", "bm25", "vector"):
            hits = service.recall(
                service.RecallRequest(store, "cache deploy", k=10, tags=(tag,), mode=mode)
            ).hits
            assert [hit.id for hit in hits] == [tagged[tag]], (tag, mode)
    assert (
        service.recall(service.RecallRequest(store, "cache deploy", k=10, tags=("a%",))).hits == []
    )


@pytest.mark.model
@pytest.mark.parametrize("query", ['"What is TW-E4012?"', '"tabs"', 'why "blue-green"'])
def test_a_query_in_double_quotes_is_searched_not_parsed(seeded, query, capsys):
    """Quotes are how people cite; the full-text side must not read them as phrase syntax
    (an index without positions refused it, and the refusal looked like a damaged index)."""
    store, ids = seeded
    hits = service.recall(service.RecallRequest(store, query, k=3, mode="bm25")).hits
    assert hits, query
    assert "damaged" not in capsys.readouterr().err
