from __future__ import annotations

import pytest

from memctl import service
from memctl.core.ranking import (
    normalized_scores,
    reciprocal_rank_fusion,
    score_fusion,
    sequence_neighbours,
    spread_to_neighbours,
)


def test_normalized_scores_span_zero_to_one():
    assert normalized_scores([("a", 12.0), ("b", 7.0), ("c", 2.0)]) == {"a": 1.0, "b": 0.5, "c": 0.0}
    assert normalized_scores([("only", 3.3)]) == {"only": 1.0}
    assert normalized_scores([]) == {}


def test_score_fusion_weighs_each_side_and_misses_count_zero():
    fused = score_fusion([[("a", 10.0), ("b", 0.0)], [("b", 0.9), ("c", 0.5)]], [0.6, 0.4])
    assert fused == pytest.approx({"a": 0.6, "b": 0.4, "c": 0.0})


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
    assert spread_to_neighbours({"q": 1.0, "answer": 0.2}, near, (0.4, 0.1))["answer"] == pytest.approx(0.6)


def test_recall_brings_the_answer_written_right_after_the_question(store):
    """A reply that shares no words with the query follows the turn that matched it."""
    turns = [
        "Ana: Did you ever find out where the staging certificates are renewed?",
        "Ben: Yes, it is the cron job on bastion-2 that runs every Sunday night.",
        "Ana: Great, and the weather was lovely at the lake this weekend.",
    ] + [f"Ben: unrelated note number {n} about lunch plans and the office plants" for n in range(12)]
    ids = [
        service.add_memory(store, text, type="episodic", extra={"session_id": "chat-1"}, sync=False).memory.id
        for text in turns
    ]
    service.sync_index(store)
    found = [hit.id for hit in service.recall(store, "where are the staging certificates renewed", k=2)]
    assert found[0] == ids[0]
    assert ids[1] in found


def test_neighbours_can_be_turned_off(store):
    from memctl.config import open_store

    a = service.add_memory(store, "Ana: which port does the metrics exporter use?", type="episodic",
                           extra={"session_id": "c"}, sync=False).memory.id
    b = service.add_memory(store, "Ben: nine thousand one hundred", type="episodic",
                           extra={"session_id": "c"}).memory.id

    def score_of_reply() -> float:
        hits = service.recall(open_store(store.root), "metrics exporter port", k=2)
        assert hits[0].id == a
        return {h.id: h.score for h in hits}[b]

    with_neighbours = score_of_reply()
    config = store.root / "config.yaml"
    config.write_text(config.read_text().replace("recall:\n", "recall:\n  neighbour_weights: []\n", 1))
    assert score_of_reply() < with_neighbours
