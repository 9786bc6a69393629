"""The LoCoMo benchmark's own arithmetic: evidence cleaning, recall/NDCG, per-category means. No model."""

from __future__ import annotations

import math

import pytest

from benchmarks.locomo_data import parse_session_time, read_conversation, two_part
from benchmarks.scoring import (
    aggregate,
    clean_evidence,
    clean_question_evidence,
    ndcg,
    recall_all,
    recall_any,
    score_ranking,
)

EXISTING = {"D4:4", "D4:6", "D8:6", "D9:1", "D9:17", "D11:26", "D30:5"}


def tiny_sample() -> dict:
    """Two sessions, five turns (one shares a photo), and questions whose evidence needs every kind of cleaning."""
    return {
        "sample_id": "tiny",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a cat named Miso."},
                {
                    "speaker": "Ben",
                    "dia_id": "D1:2",
                    "text": "Look at my garden!",
                    "blip_caption": "a photo of tomatoes on a vine",
                    "img_url": ["http://x"],
                },
            ],
            "session_2_date_time": "10:37 am on 27 June, 2023",
            "session_2": [
                {"speaker": "Ana", "dia_id": "D2:1", "text": "Miso learned to open doors."},
                {"speaker": "Ben", "dia_id": "D2:2", "text": "My tomatoes won a prize."},
                {"speaker": "Ana", "dia_id": "D2:3", "text": "I start a pottery class next week."},
            ],
            "session_3_date_time": "9:00 am on 1 July, 2023",  # a date with no session, as in the data
        },
        "qa": [
            {"question": "What pet does Ana have?", "evidence": ["D1:1"], "category": 4},
            {"question": "What can Miso do?", "evidence": ["D1:1; D2:1"], "category": 1},
            {"question": "When did Ben's tomatoes win?", "evidence": ["D:2:2", "D"], "category": 2},
            {"question": "What did Ben grow?", "evidence": ["D1:02", "D7:7"], "category": 4},
            {"question": "Would Ana like clay?", "evidence": [], "category": 3},
            {"question": "What is Ben's dog called?", "evidence": ["D9:9"], "category": 5},
        ],
    }


# --- evidence cleaning -------------------------------------------------------------------------


def test_entry_with_semicolon_is_split_into_both_ids():
    cleaned = clean_evidence(["D8:6; D9:17"], EXISTING)
    assert cleaned.ids == ["D8:6", "D9:17"]
    assert cleaned.counts["entries_split"] == 1


def test_entry_with_spaces_is_split_into_every_id():
    cleaned = clean_evidence(["D9:1 D4:4 D4:6"], EXISTING)
    assert cleaned.ids == ["D9:1", "D4:4", "D4:6"]
    assert cleaned.counts["entries_split"] == 1


def test_extra_colon_after_d_is_repaired():
    cleaned = clean_evidence(["D:11:26"], EXISTING)
    assert cleaned.ids == ["D11:26"]
    assert cleaned.counts["ids_repaired"] == 1


def test_zero_padded_turn_is_repaired_when_the_turn_exists():
    cleaned = clean_evidence(["D30:05"], EXISTING)
    assert cleaned.ids == ["D30:5"]
    assert cleaned.counts["ids_repaired"] == 1


def test_zero_padded_id_of_a_missing_turn_is_dropped_not_repaired():
    cleaned = clean_evidence(["D30:07"], EXISTING)
    assert cleaned.ids == []
    assert cleaned.counts["ids_repaired"] == 0
    assert cleaned.counts["ids_missing_turn_dropped"] == 1


def test_bare_d_is_dropped_and_counted():
    cleaned = clean_evidence(["D4:4", "D", "D4:6"], EXISTING)
    assert cleaned.ids == ["D4:4", "D4:6"]
    assert cleaned.counts["ids_unparseable_dropped"] == 1


def test_well_formed_id_of_a_nonexistent_turn_is_dropped():
    cleaned = clean_evidence(["D8:6", "D10:19"], EXISTING)
    assert cleaned.ids == ["D8:6"]
    assert cleaned.counts["ids_missing_turn_dropped"] == 1


def test_duplicate_ids_are_kept_once():
    cleaned = clean_evidence(["D4:4", "D4:4", "D4:6"], EXISTING)
    assert cleaned.ids == ["D4:4", "D4:6"]
    assert cleaned.counts["ids_duplicate_dropped"] == 1


def test_clean_ids_pass_untouched():
    cleaned = clean_evidence(["D9:1", "D8:6"], EXISTING)
    assert cleaned.ids == ["D9:1", "D8:6"]
    assert sum(cleaned.counts.values()) == 0


def test_empty_evidence_marks_the_question_skipped():
    cleaned = clean_question_evidence([], EXISTING)
    assert cleaned.ids == []
    assert cleaned.counts["questions_no_evidence_skipped"] == 1


def test_question_whose_ids_all_drop_is_marked_skipped():
    cleaned = clean_question_evidence(["D", "D99:1"], EXISTING)
    assert cleaned.ids == []
    assert cleaned.counts["questions_all_evidence_dropped_skipped"] == 1


# --- metrics -----------------------------------------------------------------------------------


def test_recall_any_counts_a_hit_only_inside_k():
    ranked = ["x1", "x2", "x3", "x4", "x5", "a"]
    assert recall_any(ranked, {"a"}, 5) == 0.0
    assert recall_any(ranked, {"a"}, 10) == 1.0


def test_recall_all_needs_every_relevant_id_inside_k():
    ranked = ["a", "x1", "x2", "x3", "x4", "b"]
    assert recall_all(ranked, {"a", "b"}, 5) == 0.0
    assert recall_all(ranked, {"a", "b"}, 10) == 1.0


def test_ndcg_single_relevant_at_rank_three():
    # DCG = 1/log2(3+1) = 1/2; ideal = 1/log2(2) = 1
    assert ndcg(["x", "y", "a", "z"], {"a"}, 5) == pytest.approx(0.5)


def test_ndcg_two_relevant_at_ranks_one_and_three():
    # DCG = 1 + 1/2 = 1.5; ideal = 1 + 1/log2(3) = 1.630929753...
    assert ndcg(["a", "x", "b"], {"a", "b"}, 5) == pytest.approx(1.5 / 1.6309297535714575)


def test_ndcg_ideal_is_capped_at_k():
    # Seven relevant ids, k = 5, all top five relevant: perfect score even though two are missing.
    relevant = {f"r{i}" for i in range(7)}
    assert ndcg([f"r{i}" for i in range(5)], relevant, 5) == pytest.approx(1.0)


def test_ndcg_is_zero_without_hits_and_one_when_perfect():
    assert ndcg(["x", "y"], {"a"}, 10) == 0.0
    assert ndcg(["a", "b", "x"], {"a", "b"}, 10) == pytest.approx(1.0)


def test_repeated_id_in_ranking_is_not_credited_twice():
    # The second "a" is ignored: DCG = 1, ideal for two relevant = 1 + 1/log2(3).
    assert ndcg(["a", "a", "x"], {"a", "b"}, 5) == pytest.approx(1 / (1 + 1 / math.log2(3)))


def test_unmapped_hits_count_as_misses():
    assert score_ranking([None, None, "a"], {"a"})["ndcg@5"] == pytest.approx(0.5)


# --- a whole tiny conversation -------------------------------------------------------------------


def test_tiny_conversation_turns_keep_speaker_photo_and_session_time():
    conv = read_conversation(tiny_sample())
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D2:1", "D2:2", "D2:3"]
    assert (
        conv.turns[1].memory_text()
        == "Ben: Look at my garden! [shares a photo: a photo of tomatoes on a vine]"
    )
    assert conv.turns[0].memory_text() == "Ana: I adopted a cat named Miso."
    assert conv.turns[0].occurred_at == "2023-05-08T13:56:00Z"
    assert conv.turns[2].occurred_at == "2023-06-27T10:37:00Z"


def test_tiny_conversation_cleaning_and_skips_are_counted():
    conv = read_conversation(tiny_sample())
    assert [q.evidence for q in conv.questions] == [
        ("D1:1",),
        ("D1:1", "D2:1"),
        ("D2:2",),
        ("D1:2",),
    ]
    assert [q.category for q in conv.questions] == [
        "single-hop",
        "multi-hop",
        "temporal",
        "single-hop",
    ]
    assert conv.questions_total == 6
    assert len(conv.questions) == 4
    assert conv.cleaning == {
        "entries_split": 1,
        "ids_repaired": 2,
        "ids_unparseable_dropped": 1,
        "ids_missing_turn_dropped": 2,
        "questions_no_evidence_skipped": 1,
        "questions_all_evidence_dropped_skipped": 1,
    }


def test_two_part_pairs_one_fact_questions_from_different_sessions():
    conv = read_conversation(tiny_sample())
    paired = two_part(conv)
    # One-fact questions in order: pet (D1:1), tomatoes (D2:2), grow (D1:2, left without a partner).
    assert [(q.text, q.category, q.evidence) for q in paired.questions] == [
        ("What pet does Ana have? When did Ben's tomatoes win?", "two-part", ("D1:1", "D2:2"))
    ]
    assert paired.turns == conv.turns and paired.sample_id == conv.sample_id


def test_two_part_skips_a_pair_within_one_session():
    sample = tiny_sample()
    sample["qa"][2]["evidence"] = ["D1:2"]  # the tomato question now points into session 1 too
    assert two_part(read_conversation(sample)).questions == []


def test_tiny_conversation_scores_known_rankings():
    conv = read_conversation(tiny_sample())
    # What a retriever returned for each kept question, best first.
    rankings = {
        "What pet does Ana have?": ["D1:1", "D2:1", "D2:3"],  # hit at 1
        "What can Miso do?": [
            "D2:1",
            "D2:3",
            "D2:2",
            "D1:2",
            "D2:9",
            "D1:1",
        ],  # one at 1, other at 6
        "When did Ben's tomatoes win?": ["D1:2", "D2:2"],  # hit at 2
        "What did Ben grow?": ["D2:2", "D2:3", "D1:1", "D2:1", "D1:9", "D1:8"],  # D1:2 absent
    }
    rows = []
    for q in conv.questions:
        rows.append((q.category, "hybrid", score_ranking(rankings[q.text], set(q.evidence))))
    result = aggregate(rows)

    single_hop = result["by_category"]["single-hop"]["hybrid"]  # questions 1 and 4
    assert single_hop["recall_any@5"] == 0.5
    assert single_hop["ndcg@10"] == 0.5

    multi_hop = result["by_category"]["multi-hop"]["hybrid"]
    assert multi_hop["recall_any@5"] == 1.0
    assert multi_hop["recall_all@5"] == 0.0
    assert multi_hop["recall_all@10"] == 1.0
    # DCG@10 = 1 + 1/log2(7); ideal = 1 + 1/log2(3)
    assert multi_hop["ndcg@10"] == pytest.approx((1 + 1 / math.log2(7)) / (1 + 1 / math.log2(3)))
    assert multi_hop["ndcg@5"] == pytest.approx(1 / (1 + 1 / math.log2(3)))

    temporal = result["by_category"]["temporal"]["hybrid"]
    assert temporal["ndcg@5"] == pytest.approx(1 / math.log2(3))

    overall = result["overall"]["hybrid"]
    assert overall["recall_any@10"] == 0.75
    assert overall["recall_all@10"] == 0.75
    assert overall["recall_all@5"] == 0.5
    assert result["counts"] == {"single-hop": 2, "multi-hop": 1, "temporal": 1}
    assert list(result["by_category"]) == ["multi-hop", "temporal", "single-hop"]


@pytest.mark.parametrize(
    "text, iso",
    [
        ("1:56 pm on 8 May, 2023", "2023-05-08T13:56:00Z"),
        ("12:09 am on 13 September, 2023", "2023-09-13T00:09:00Z"),
        ("10:37 am on 27 June, 2023", "2023-06-27T10:37:00Z"),
    ],
)
def test_session_times_become_iso(text, iso):
    assert parse_session_time(text) == iso


def test_unreadable_session_time_gives_none():
    assert parse_session_time("sometime in spring") is None


def test_config_overrides_for_ablations():
    from benchmarks.locomo import parse_overrides

    assert parse_overrides(
        ["recall.fusion=rrf", "recall.neighbour_weights=[]", "recall.bm25_weight=1"]
    ) == {"recall": {"fusion": "rrf", "neighbour_weights": [], "bm25_weight": 1}}
    with pytest.raises(ValueError):
        parse_overrides(["recall.fusion"])


def test_one_speaker_keeps_that_speakers_turns_and_the_questions_on_what_they_said():
    from benchmarks.locomo import one_speaker

    conv = one_speaker(read_conversation(tiny_sample()))
    assert [turn.dia_id for turn in conv.turns] == ["D1:1", "D2:1", "D2:3"]
    # Ana's cat (D1:1) and Miso's trick (D1:1 + D2:1) stay; Ben's tomatoes go
    assert [q.text for q in conv.questions] == ["What pet does Ana have?", "What can Miso do?"]
    assert conv.sample_id == "tiny-a"
