from __future__ import annotations

import pytest

from memctl import service
from memctl.core.recall.evidence import coverage, text_stems
from memctl.core.recall.fusion import lexical_ties, lexical_trust
from memctl.core.recall.ranking import (
    normalized_scores,
    reciprocal_rank_fusion,
    score_fusion,
    sequence_neighbours,
    spread_to_neighbours,
)


def test_normalized_scores_span_zero_to_one():
    assert normalized_scores([("a", 12.0), ("b", 7.0), ("c", 2.0)]) == {
        "a": 1.0,
        "b": 0.5,
        "c": 0.0,
    }
    assert normalized_scores([("only", 3.3)]) == {"only": 1.0}
    assert normalized_scores([]) == {}


def test_score_fusion_weighs_each_side_and_misses_count_zero():
    lists = [[("a", 10.0), ("b", 0.0)], [("b", 0.9), ("c", 0.5)]]
    fused = score_fusion([normalized_scores(scored) for scored in lists], [0.6, 0.4])
    assert fused == pytest.approx({"a": 0.6, "b": 0.4, "c": 0.0})


def test_stdev_scaling_puts_the_weakest_candidate_at_zero_and_divides_by_the_spread():
    scaled = normalized_scores([("a", 10.0), ("b", 3.0), ("c", 1.0), ("d", 0.0)], "stdev")
    spread = (61 / 4) ** 0.5  # population standard deviation of 10, 3, 1, 0 (mean 3.5)
    assert scaled == pytest.approx({"a": 10 / spread, "b": 3 / spread, "c": 1 / spread, "d": 0.0})
    with pytest.raises(ValueError):
        normalized_scores([("x", 1.0)], "median")


def test_a_list_that_cannot_tell_its_candidates_apart_ranks_them_as_a_top_under_stdev():
    # the top of any list with a spread is at least 2 standard deviations above its weakest...
    assert normalized_scores([("a", 5.0), ("b", 1.0)], "stdev")["a"] == pytest.approx(2.0)
    assert normalized_scores([("a", 9.0), ("b", 8.0), ("c", 1.0)], "stdev")["a"] > 2.0
    # ...so BM25's only match (or equal ones) is not scored below the better of two
    assert normalized_scores([("only", 0.3)], "stdev") == {"only": 2.0}
    assert normalized_scores([("x", 0.7), ("y", 0.7)], "stdev") == {"x": 2.0, "y": 2.0}
    assert normalized_scores([("only", 0.3)], "range") == {"only": 1.0}


def test_one_outlier_squeezes_a_list_less_under_stdev_than_under_range():
    """A rare word only one memory has must not flatten the rest of that retriever's ranking."""
    scores = [("outlier", 40.0)] + [(f"m{n}", 10.0 - n) for n in range(10)] + [("weakest", 0.0)]
    by_range, by_stdev = normalized_scores(scores, "range"), normalized_scores(scores, "stdev")
    gap_range = by_range["m0"] - by_range["m9"]
    gap_stdev = by_stdev["m0"] - by_stdev["m9"]
    assert gap_stdev / by_stdev["outlier"] == pytest.approx(
        gap_range / by_range["outlier"]
    )  # same shape
    assert gap_stdev > 2 * gap_range  # but the ordinary candidates keep their distance


@pytest.mark.model
def test_recall_fusion_is_configurable_and_checked(store):
    from memctl.config import open_store
    from memctl.core.errors import UsageError

    for text in (
        "Releases are tagged by the release captain",
        "The release train leaves every Tuesday",
    ):
        service.add_memory(store, text, sync=False, dedup=False)
    config = store.root / "config.yaml"
    original = config.read_text()
    found = {}
    for fusion in ("zscore", "score", "rrf"):
        config.write_text(original.replace("recall:\n", f"recall:\n  fusion: {fusion}\n", 1))
        found[fusion] = {
            hit.id
            for hit in service.recall(
                service.RecallRequest(open_store(store.root), "release captain", k=2)
            ).hits
        }
    assert found["zscore"] == found["score"] == found["rrf"] and len(found["rrf"]) == 2
    config.write_text(original.replace("recall:\n", "recall:\n  fusion: average\n", 1))
    with pytest.raises(UsageError, match="recall.fusion"):
        service.recall(service.RecallRequest(open_store(store.root), "release captain"))


def test_rrf_sums_reciprocal_ranks():
    fused = reciprocal_rank_fusion([["a", "b"], ["b"]], [1.0, 1.0], k=60)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["a"] == pytest.approx(1 / 61)


def test_neighbours_by_position_in_sequence():
    near = sequence_neighbours({"s": ["a", "b", "c", "d"]})
    assert near["a"] == [("b", 1), ("c", 2)]
    assert sorted(near["c"]) == [("a", 2), ("b", 1), ("d", 1)]


def test_spread_is_bounded_and_additive():
    near = sequence_neighbours({"s": ["q", "answer", "far"]})
    spread = spread_to_neighbours({"q": 1.0}, near, (0.4, 0.1))
    assert spread == pytest.approx({"q": 1.0, "answer": 0.4, "far": 0.1})
    # a memory never scores more than its own match plus what its neighbours pass on
    assert spread_to_neighbours({"q": 1.0, "answer": 0.2}, near, (0.4, 0.1))[
        "answer"
    ] == pytest.approx(0.6)


@pytest.mark.model
def test_recall_brings_the_answer_written_right_after_the_question(store):
    """A reply that shares no words with the query follows the turn that matched it."""
    turns = [
        "Ana: Did you ever find out where the staging certificates are renewed?",
        "Ben: Yes, it is the cron job on bastion-2 that runs every Sunday night.",
        "Ana: Great, and the weather was lovely at the lake this weekend.",
    ] + [
        f"Ben: unrelated note number {n} about lunch plans and the office plants" for n in range(12)
    ]
    ids = [
        service.add_memory(
            store, text, type="episodic", extra={"session_id": "chat-1"}, sync=False
        ).memory.id
        for text in turns
    ]
    service.sync_index(store)
    found = [
        hit.id
        for hit in service.recall(
            service.RecallRequest(store, "where are the staging certificates renewed", k=2)
        ).hits
    ]
    assert found[0] == ids[0]
    assert ids[1] in found


@pytest.mark.model
def test_neighbours_can_be_turned_off(store):
    from memctl.config import open_store

    a = service.add_memory(
        store,
        "Ana: which port does the metrics exporter use?",
        type="episodic",
        extra={"session_id": "c"},
        sync=False,
    ).memory.id
    b = service.add_memory(
        store, "Ben: nine thousand one hundred", type="episodic", extra={"session_id": "c"}
    ).memory.id

    def score_of_reply() -> float:
        hits = service.recall(
            service.RecallRequest(open_store(store.root), "metrics exporter port", k=2)
        ).hits
        assert hits[0].id == a
        return {h.id: h.score for h in hits}[b]

    with_neighbours = score_of_reply()
    config = store.root / "config.yaml"
    config.write_text(
        config.read_text().replace("recall:\n", "recall:\n  neighbour_weights: []\n", 1)
    )
    assert score_of_reply() < with_neighbours


def test_bm25_matching_only_crumbs_of_the_query_has_no_say_at_any_store_size():
    # a best match holding no more than chance of the query: no trust; all of it: full trust
    assert lexical_trust(0.10, chance=0.15, full=0.3) == 0.0
    assert lexical_trust(0.15, chance=0.15, full=0.3) == 0.0
    assert lexical_trust(0.225, chance=0.15, full=0.3) == pytest.approx(0.5)
    assert lexical_trust(0.3, chance=0.15, full=0.3) == 1.0
    assert lexical_trust(0.9, chance=0.15, full=0.3) == 1.0


OFFICE_NOTES = [
    "To roll back a bad deploy, run deploy revert; it restores the previous build in two minutes.",
    "The quarterly planning meeting happens in the big room on the third floor.",
    "Our office coffee machine is descaled every Friday by facilities.",
    "The team lunch budget is twenty euros per person.",
    "New laptops are ordered through the IT portal, delivery takes a week.",
    "Vacation requests go to your manager at least two weeks ahead.",
    "Payments failing with ERR_PAY_4471 mean the card issuer timed out; retry once.",
    "Parking spots in the garage are assigned by seniority.",
]


@pytest.mark.model
def test_a_query_whose_words_match_only_crumbs_ranks_the_meaning_match_first(store):
    """BM25 matching one stray word ("floor") must not outrank what the query means, even
    with the fixed weights of a large store (prior_half_size 0); an identifier still wins."""
    from memctl.config import with_overrides

    ids = [
        service.add_memory(store, text, sync=False, dedup=False, force=True).memory.id
        for text in OFFICE_NOTES
    ]
    service.sync_index(store)
    large = with_overrides(store, {"recall": {"prior_half_size": 0}})
    query = "how do we go back after shipping a faulty version to the floor"
    assert (
        service.recall(service.RecallRequest(large, query, k=3, min_relevance=0)).hits[0].id
        == ids[0]
    )
    trusting = with_overrides(
        store, {"recall": {"prior_half_size": 0, "coverage_chance": 0, "coverage_full": 0}}
    )
    assert (
        service.recall(service.RecallRequest(trusting, query, k=3, min_relevance=0)).hits[0].id
        == ids[1]
    )
    assert (
        service.recall(service.RecallRequest(large, "what does ERR_PAY_4471 mean", k=1)).hits[0].id
        == ids[6]
    )


def test_a_lifted_neighbour_stays_below_the_memory_that_lifted_it():
    near = sequence_neighbours({"s": ["hit", "reply", "other"]})
    spread = spread_to_neighbours({"hit": 1.0, "reply": 0.9}, near, (0.4, 0.1))
    assert spread["reply"] < spread["hit"] == 1.0  # 0.9 + 0.4 would have passed the hit
    assert spread["reply"] > 0.9  # still lifted above its own score
    # a neighbour whose own evidence is stronger keeps it
    assert spread_to_neighbours({"hit": 0.5, "reply": 0.9}, near, (0.4, 0.1))["reply"] == 0.9


def test_candidates_holding_the_most_of_the_query_tie_on_the_lexical_side():
    weights = {"invoices": 7.6, "stored": 4.0, "where": 0.4}
    both, one = frozenset({"invoices", "stored"}), frozenset({"invoices"})
    matched = {
        "storage": both,
        "pdfs": both,
        "partial": one,
        "partial too": one,
        "none": frozenset(),
    }
    lexical = {"storage": 2.4, "pdfs": 2.8, "partial": 3.0, "partial too": 1.0, "none": 0.2}
    assert lexical_ties(lexical, matched, weights, least_share=0.3) == {
        "storage": 2.8,  # raised to the best of the top tier: no longer behind "pdfs"
        "pdfs": 2.8,
        "partial": 3.0,  # fewer of the query's words: one of a crowd, BM25's order stands
        "partial too": 1.0,
        "none": 0.2,
    }
    # the most any candidate holds is a crumb of the query: no tie at all
    crumbs = {"a": frozenset({"where"}), "b": frozenset({"where"})}
    assert lexical_ties({"a": 1.0, "b": 2.0}, crumbs, weights, 0.3) == {"a": 1.0, "b": 2.0}


TIE_NOTES = [
    "The billing service stores invoices in PostgreSQL 16, in the billing database on the "
    "shared cluster.",
    "Invoice PDFs are stored in S3 as invoices/<tenant>/<number>.pdf, one file per invoice.",
    "Customer login goes through Auth0; internal tools use Google Workspace SSO.",
    "Releases are cut every Tuesday from main after the pipeline is green.",
    "The ledger service is written in Go; Jonas Lindqvist owns it.",
    "Use ruff for formatting with a line length of 100.",
    "Staging is reset every Sunday night; test tenants there disappear.",
    "Money is stored as integer cents, never as floats.",
]


@pytest.mark.model
def test_among_memories_holding_every_query_word_the_meaning_decides(store):
    """Both notes hold "invoices" and "stored"; BM25 prefers the short one that repeats
    "invoice", the meaning is the other's. Hybrid ranks by meaning among such ties."""
    from memctl.config import with_overrides

    ids = [
        service.add_memory(store, text, sync=False, dedup=False, force=True).memory.id
        for text in TIE_NOTES
    ]
    service.sync_index(store)
    query = "where are invoices stored"
    assert (
        service.recall(service.RecallRequest(store, query, k=2, mode="bm25", min_relevance=0))
        .hits[0]
        .id
        == ids[1]
    )
    assert [
        hit.id
        for hit in service.recall(service.RecallRequest(store, query, k=2, min_relevance=0)).hits
    ] == ids[:2]
    untied = with_overrides(store, {"recall": {"lexical_ties": False}})
    assert (
        service.recall(service.RecallRequest(untied, query, k=1, min_relevance=0)).hits[0].id
        == ids[1]
    )


def test_a_long_prompt_is_held_by_the_note_holding_its_heaviest_words():
    weights = {"websocket": 10.0, "reconnect": 9.0, "deploy": 8.0, "user": 5.0, "show": 3.0}
    stems = text_stems("websocket clients reconnect with backoff")
    # of the whole prompt the note holds 19 of 35: under a short question's bar
    assert coverage(weights, stems) == pytest.approx(19 / 35)
    # of what one note can answer of it (its 3 heaviest words), most
    assert coverage(weights, stems, heaviest=3) == pytest.approx(19 / 27)
    assert coverage(weights, stems, heaviest=2) == 1.0  # capped
    assert coverage(weights, stems, heaviest=10) == coverage(weights, stems)  # a short query


PROJECT_NOTES = [
    "When the server restarts, websocket clients reconnect with reconnectWithBackoff from "
    "lib/socket.ts; never call connect in a loop.",
    "Pull requests are reviewed by the team within a day, and the CI has to be green.",
    "The server logs go to the console in development and to a file in production.",
    "Clients should show a friendly message to the user when something fails, not a stack trace.",
    "Run the tests with pnpm test before you push, and fix the lint errors it reports.",
    "Release notes are written by the person who merges the change into the main branch.",
    "The browser bundle is built with vite; keep the size under 200 kB.",
    "Docs live in the docs folder and are published when a release is tagged.",
]
TASK_PROMPT = (
    "Fix the websocket client so that it reconnects after the server restarts, and show the "
    "user a message in the browser while it is waiting for the connection to come back during "
    "a deploy"
)


def test_a_task_prompt_keeps_the_note_that_holds_its_rarest_words_in_hybrids_top(
    store, fake_embedder
):
    """A task prompt of fifteen topic words asks several things; the note holding its three
    rarest ones (websocket, reconnect, restarts) is BM25's best match, and hybrid keeps it in
    its top 3 even in a small store where the vector side leads on short questions."""
    ids = [
        service.add_memory(store, text, sync=False, dedup=False, force=True).memory.id
        for text in PROJECT_NOTES
    ]
    service.sync_index(store)

    def top(mode: str) -> list[str]:
        asked = service.RecallRequest(store, TASK_PROMPT, k=3, mode=mode, min_relevance=0)
        return [hit.id for hit in service.recall(asked).hits]

    assert top("bm25")[0] == ids[0]
    assert ids[0] not in top("vector")  # the stand-in embedder weighs every shared word alike
    assert ids[0] in top("hybrid")
