"""The MemoryBank benchmark's loader, gold, scoring and one tiny store, so CI catches a broken
loader or a gold entry that no longer names an exchange. The fake embedder: no model."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from benchmarks.memorybank import conversation, evaluate, hybrid_below_parts
from benchmarks.memorybank_data import (
    Exchange,
    Question,
    User,
    load_users,
    read_dialogs,
    score_question,
)


@pytest.fixture(scope="module")
def english() -> list[User]:
    return load_users("en")


@pytest.fixture(scope="module")
def chinese() -> list[User]:
    return load_users("cn")


def test_both_languages_load_every_user_with_gold_for_every_question(english, chinese):
    assert [len(users) for users in (english, chinese)] == [15, 15]
    # 100 probing questions a language; in English nothing answers "What dish did I make on
    # May 5th?" (that day is empty there), in Chinese 番茄炒蛋 does.
    assert sum(len(u.questions) for u in english) == 99
    assert [q for u in english for q in u.unanswerable] == ['"What dish did I make on May 5th?"']
    assert sum(len(u.questions) for u in chinese) == 100
    assert sum(len(u.exchanges) for u in english) > 500


def test_user_keys_lose_their_stray_spaces_and_the_users_pair_up_across_languages(english, chinese):
    names = [user.name for user in english]
    assert "Jason" in names and "Roland" in names and " Jason " not in names
    for en_user, cn_user in zip(english, chinese, strict=True):
        en_kinds = {q.index: q.kind for q in en_user.questions}
        cn_kinds = {q.index: q.kind for q in cn_user.questions}
        assert en_kinds == {index: cn_kinds[index] for index in en_kinds}


def test_gold_names_the_exchange_that_answers(english, chinese):
    frank = english[1]
    exchanges = {e.exchange_id: e for e in frank.exchanges}
    first = frank.questions[0]
    assert first.text == "On April 27th, how long did I run in the park?"
    (group,) = first.groups
    assert "for an hour" in exchanges[next(iter(group))].query
    linda_day = chinese[5].questions[2]  # 在4月27号我们聊了什么话题？
    assert linda_day.whole_day == "2023-04-27"
    assert len(linda_day.groups[0]) == 5  # any exchange of that day answers


def test_a_whole_day_counts_any_exchange_of_it_for_all_metrics():
    question = Question(
        0, "What did we talk about on May 2nd?", "dated", (frozenset({"d#0", "d#1"}),)
    )
    scores = score_question(["x", "d#1"], question)
    assert scores["recall_any@1"] == 0.0
    assert scores["recall_any@5"] == scores["recall_all@5"] == 1.0


def test_recall_all_needs_every_group_and_any_member_of_a_group_will_do():
    question = Question(
        0, "q", "recommendation", (frozenset({"a", "a2"}), frozenset({"b"})), frozenset({"c"})
    )
    assert score_question(["a2", "b"], question)["recall_all@5"] == 1.0
    assert score_question(["a", "c"], question)["recall_all@5"] == 0.0
    only_also = score_question(["c"] + ["x"] * 9, question)
    assert only_also["recall_any@1"] == 1.0 and only_also["recall_all@10"] == 0.0


def test_an_exchange_becomes_one_dated_memory_in_day_order(english):
    emily = english[0]
    turns = conversation(emily).turns
    assert turns[0].memory_text() == emily.exchanges[0].memory_text()
    assert turns[0].memory_text().startswith("User: Hello, my name is Emily.")
    assert "\nAssistant: Hello, Emily." in turns[0].memory_text()
    assert [t.occurred_at for t in turns[:2]] == ["2023-04-27T12:00:00Z", "2023-04-27T12:01:00Z"]
    assert emily.as_of == "2023-05-07"


def test_dialog_days_keep_their_order_and_empty_days_hold_nothing(tmp_path):
    path = tmp_path / "bank.json"
    path.write_text(
        '{" Ann ": {"history": {"2023-05-02": [{"query": "b", "response": "B"}], '
        '"2023-05-01": [{"query": "a", "response": "A"}], "2023-05-03": []}}}',
        encoding="utf-8",
    )
    assert read_dialogs(path) == {
        "Ann": [
            Exchange("2023-05-01#0", "2023-05-01", "a", "A"),
            Exchange("2023-05-02#0", "2023-05-02", "b", "B"),
        ]
    }


def test_hybrid_below_a_part_is_listed_per_cell():
    def modes(hybrid, bm25, vector):
        names = ["recall_any@1", "recall_any@5", "recall_any@10", "recall_all@5", "recall_all@10"]
        return {
            mode: dict.fromkeys(names, value)
            for mode, value in (("hybrid", hybrid), ("bm25", bm25), ("vector", vector))
        }

    cells = hybrid_below_parts(
        {"en": {"overall": modes(0.8, 0.7, 0.6), "by_kind": {"dated": modes(0.5, 0.6, 0.4)}}}
    )
    assert {(c["section"], c["metric"]) for c in cells} == {
        ("dated", name)
        for name in (
            "recall_any@1",
            "recall_any@5",
            "recall_any@10",
            "recall_all@5",
            "recall_all@10",
        )
    }


def test_a_tiny_store_is_written_recalled_and_scored(english, tmp_path, fake_embedder):
    from benchmarks.locomo import prepare_store

    frank = english[1]
    kept = [e for e in frank.exchanges if e.day <= "2023-04-28"]
    ids = {e.exchange_id for e in kept}
    slice_ = dataclasses.replace(
        frank,
        exchanges=kept,
        questions=[q for q in frank.questions if q.relevant_any <= ids],
        unanswerable=[],
    )
    assert [q.index for q in slice_.questions] == [0, 1, 6]
    overrides = {"recall": {"min_relevance": 0}}
    store, timing = prepare_store(conversation(slice_), tmp_path / slice_.sample_id, overrides)
    assert not timing["reused_store"]
    args = argparse.Namespace(modes=("hybrid", "bm25"), ask_now=False)
    details: list = []
    errors: list = []
    rows, latencies = evaluate(store, slice_, args, details, errors)
    assert errors == []
    assert len(rows) == 6 and set(latencies) == {"hybrid", "bm25"}
    ranked = {(d["index"], mode): d[mode] for d in details for mode in args.modes}
    # "how long did I run in the park" on April 27th: the memory that says "for an hour"
    assert ranked[(0, "bm25")][0] == "2023-04-27#2"
    assert all(len(found) == len(set(found)) for found in ranked.values())
    scores = {(kind, mode): s for kind, mode, s in rows}
    assert scores[("dated", "bm25")]["recall_any@1"] == 1.0
