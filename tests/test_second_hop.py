"""The second hop (a best hit's rare words lead to the memories it points to) and the
set-cover order (hits holding different parts of the query come first)."""

from __future__ import annotations

from memctl import service
from memctl.config import RecallSettings, with_overrides
from memctl.core.evidence import query_terms, term_weights
from memctl.core.second_hop import (
    Bridge,
    bridges,
    cover_order,
    hop_query,
    spread_along_bridges,
)
from memctl.integrations.word_frequency import zipf
from memctl.service.retrieval.second_hop import follow_bridges


def weights_of(query: str) -> dict[str, float]:
    return term_weights(query_terms(query), zipf)


EXPORT = "The nightly export job writes every invoice to the Zephyr bucket"
ZEPHYR = "The Zephyr bucket sits in the Frankfurt region, with object lock on"
QUERY = "which region do the nightly invoice exports end up in"


def test_a_bridge_is_a_rare_word_of_the_hit_that_the_query_and_most_candidates_lack():
    pool = [EXPORT, ZEPHYR] + [f"Team note {n}: the invoice totals were checked" for n in range(8)]
    found = bridges([("export", 5.0, EXPORT)], weights_of(QUERY), pool, zipf)
    assert [bridge.memory_id for bridge in found] == ["export"]
    words = found[0].words
    assert "zephyr" in words and "bucket" in words
    assert "invoice" not in words and "nightly" not in words  # the query's own words
    assert "the" not in words and "every" not in words  # common in general language
    assert "zephyr" in hop_query(weights_of(QUERY), found).split()


def test_a_word_most_candidates_share_is_no_bridge():
    pool = [f"Zephyr note {n}: the bucket was checked" for n in range(10)]  # 10 of 10 hold it
    found = bridges([("export", 5.0, EXPORT)], weights_of(QUERY), pool, zipf)
    assert all("zephyr" not in bridge.words for bridge in found)


def test_a_memory_holding_the_hits_bridges_is_lifted_but_stays_below_the_hit():
    weights = weights_of(QUERY)
    found = bridges([("export", 5.0, EXPORT)], weights, [EXPORT, ZEPHYR], zipf)
    texts = {"export": EXPORT, "zephyr": ZEPHYR, "other": "Lunch is pizza on Fridays"}
    scores = {"export": 5.0, "zephyr": 0.5, "other": 0.6}
    spread = spread_along_bridges(scores, found, texts, weights, share=0.5)
    assert spread["other"] == 0.6  # holds no bridge: untouched
    assert spread["zephyr"] > spread["other"]
    assert spread["zephyr"] < spread["export"] == 5.0
    # A memory whose own score is higher than the cap keeps it.
    high = spread_along_bridges({**scores, "zephyr": 9.0}, found, texts, weights, share=0.5)
    assert high["zephyr"] == 9.0


def test_no_share_no_lift():
    bridge = Bridge("export", 5.0, {"zephyr": 8.0})
    texts = {"export": EXPORT, "zephyr": ZEPHYR}
    scores = {"export": 5.0, "zephyr": 0.5}
    assert spread_along_bridges(scores, [bridge], texts, weights_of(QUERY), 0.0) == scores


def test_cover_order_keeps_the_best_and_then_prefers_the_missing_part_of_the_query():
    query = "postgres backups and redis failover"
    texts = {
        "pg1": "Postgres backups run nightly with pgBackRest",
        "pg2": "Postgres backups are kept for 30 days",
        "redis": "Redis failover is handled by Sentinel",
    }
    scores = {"pg1": 3.0, "pg2": 2.0, "redis": 1.5}
    order = cover_order(["pg1", "pg2", "redis"], scores, texts, weights_of(query), 1.0, 10)
    assert order == ["pg1", "redis", "pg2"]
    # gain 0 keeps the score order; so does a query every hit covers alike
    plain = cover_order(["pg1", "pg2", "redis"], scores, texts, weights_of(query), 0.0, 10)
    assert plain == ["pg1", "pg2", "redis"]
    same = cover_order(["pg1", "pg2", "redis"], scores, texts, weights_of("backups"), 1.0, 10)
    assert same == ["pg1", "pg2", "redis"]


def test_default_cover_puts_the_other_part_of_a_two_part_question_above_the_hits_neighbours():
    # "when did I move to Lisbon, and what did I name the puppy": the best hit answers the first
    # part, its session neighbours were lifted to just below it, the second part's answer scores
    # well under them on its own. With the default gain it is shown second, not after the run.
    query = "when did I move to Lisbon and what did I name the puppy"
    texts = {
        "move": "We finally moved to Lisbon in March, the flat is near the river",
        "before": "Packing boxes took the whole weekend",
        "after": "The flat still smells of fresh paint",
        "puppy": "We named the puppy Biscuit after her colour",
    }
    scores = {"move": 3.0, "before": 2.99, "after": 2.98, "puppy": 1.4}
    ranked = ["move", "before", "after", "puppy"]
    gain = RecallSettings().cover_gain
    assert cover_order(ranked, scores, texts, weights_of(query), gain, 10)[:2] == ["move", "puppy"]
    # The session-7 gain (1.0) left it behind the neighbours.
    assert cover_order(ranked, scores, texts, weights_of(query), 1.0, 10)[-1] == "puppy"


def test_recall_follows_the_best_hits_bridge_to_the_memory_it_points_to(store, fake_embedder):
    service.add_memory(store, EXPORT, sync=False)
    target = service.add_memory(store, ZEPHYR, sync=False).memory.id
    places = ("Oslo", "Lisbon", "Dublin", "Madrid", "Vienna", "Prague", "Athens", "Riga")
    for n, place in enumerate(places):
        service.add_memory(
            store,
            f"The {place} office region hosts team {n} and its nightly standup",
            sync=False,
        )
    service.sync_index(store)

    def found(second_hop: float) -> list[str]:
        tuned = with_overrides(
            store,
            {
                "recall": {
                    "second_hop": second_hop,
                    "cover_gain": 0,
                    "min_relevance": 0,
                    # Why: "which region" asks for a place, and the answer rule alone would lift
                    # the memory naming Frankfurt; this test is about the hop.
                    "answer_bonus": 0,
                }
            },
        )
        return [hit.id for hit in service.recall(tuned, QUERY, k=2, sync=False)]

    assert target not in found(0.0)
    assert target in found(0.5)


def test_the_hop_searches_only_when_the_best_hit_lacks_a_query_word():
    searched: list[str] = []

    def search_text(text: str, limit: int) -> list[dict]:
        searched.append(text)
        return [{"id": "zephyr", "text": ZEPHYR}]

    rows = {"export": {"id": "export", "text": EXPORT}, "other": {"id": "other", "text": "Pizza"}}
    scores = {"export": 5.0, "other": 0.1}
    whole = weights_of("nightly invoice export")  # the best hit holds every word
    assert follow_bridges(scores, rows, whole, RecallSettings(), search_text, {}) == scores
    assert searched == []

    sources: dict[str, set[str]] = {}
    lifted = follow_bridges(
        dict(scores), dict(rows), weights_of(QUERY), RecallSettings(), search_text, sources
    )
    assert len(searched) == 1 and "zephyr" in searched[0].split()
    assert 0 < lifted["zephyr"] < lifted["export"] and sources["zephyr"] == {"hop"}
