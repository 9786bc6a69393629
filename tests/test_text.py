"""The shared helpers in the core: one clip, one UTC timestamp, one relevance rule."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from memctl.core.language.text import clip, parse_utc_timestamp, utc_timestamp
from memctl.core.recall.evidence import cosine_scale, coverage, part_coverage, relevance, text_stems


def test_clip_flattens_and_marks_a_cut():
    assert clip("short  text\nhere", 50) == "short text here"
    clipped = clip("one two three four five six", 12)
    assert clipped == "one two…"  # between words, never "one two thr…"
    assert clip("onetwothreefourfive", 12) == "onetwothree…"  # one long word: cut it


def test_clip_keeping_lines_cuts_at_a_line_end_with_its_marker():
    text = "\n".join(f"line {n}" for n in range(20))
    clipped = clip(text, 40, marker="\n[cut]", keep_lines=True)
    assert len(clipped) <= 40 and clipped.endswith("\n[cut]")
    assert all(line.startswith("line ") for line in clipped.splitlines()[:-1])


def test_one_utc_timestamp_form_from_datetimes_and_epoch_seconds():
    moment = datetime(2026, 3, 14, 10, 12, tzinfo=timezone(timedelta(hours=1)))
    assert utc_timestamp(moment) == "2026-03-14T09:12:00Z"
    assert utc_timestamp(moment.timestamp()) == "2026-03-14T09:12:00Z"
    assert utc_timestamp(datetime(2026, 3, 14, 9, 12)) == "2026-03-14T09:12:00Z"  # naive: UTC
    assert parse_utc_timestamp("2026-03-14T09:12:00Z") == moment


def test_relevance_reads_a_cosine_on_its_models_own_scale():
    minilm, use, e5 = (cosine_scale(m) for m in ("all-MiniLM-L6-v2-int8", "use-multilingual-v3",
                                                  "multilingual-e5-small-q4"))  # fmt: skip
    # e5 (centred) puts unrelated texts higher: a cosine that is evidence for MiniLM is none there
    assert relevance(0.35, 0.0, scale=minilm) > 0.0 and relevance(0.35, 0.0, scale=e5) == 0.0
    assert relevance(0.3, 0.0, scale=use) > relevance(0.3, 0.0, scale=minilm) > 0.0
    assert relevance(None, 1.0) == 1.0 and relevance(None, 0.25) == 0.0  # words alone
    assert relevance(0.0, 0.0, identifier=True) == 1.0
    assert cosine_scale("some-future-model") == minilm
    # across scripts USE's unrelated pairs sit lower: the same cosine is more evidence there
    assert relevance(0.25, 0.0, scale=use, cross_script=True) > relevance(0.25, 0.0, scale=use)


def test_a_hit_answering_the_other_part_of_a_question_counts_the_shown_parts_words():
    weights = {"lisbon": 3.0, "move": 3.0, "puppy": 3.0, "name": 1.0}
    puppy = text_stems("We named the puppy Biscuit")
    stray = text_stems("The name of the wifi network")
    alone = coverage(weights, puppy)
    assert alone == 0.4 and relevance(None, alone) < 0.25  # its part alone: under the floor
    # Shown first: the hit on the move to Lisbon. The puppy memory adds the other half.
    with_part = part_coverage(weights, puppy, {"lisbon", "move"})
    assert with_part == 1.0 and relevance(None, with_part) == 1.0
    # A crumb of the query (one common word) gains nothing, nor does anything before a hit.
    assert part_coverage(weights, stray, {"lisbon", "move"}) == coverage(weights, stray)
    assert part_coverage(weights, puppy, set()) == alone
