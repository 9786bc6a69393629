"""The shared helpers in the core: one clip, one UTC timestamp, one relevance rule."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from memctl.core.ranking import is_related
from memctl.core.text import clip, parse_utc_timestamp, utc_timestamp


def test_clip_flattens_and_marks_a_cut():
    assert clip("short  text\nhere", 50) == "short text here"
    clipped = clip("one two three four five six", 12)
    assert clipped == "one two thr…" and len(clipped) == 12


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


def test_a_word_match_needs_half_the_similarity_a_meaning_match_needs():
    assert is_related(0.3, ["vector"], 0.3) and not is_related(0.29, ["vector"], 0.3)
    assert is_related(0.15, ["bm25", "vector"], 0.3) and not is_related(0.14, ["bm25"], 0.3)
    assert is_related(0.16, ["identifier"], 0.3)
    assert is_related(None, ["bm25"], 0.3) and not is_related(None, ["vector"], 0.3)
    assert is_related(-1.0, ["vector"], 0.0)  # 0 turns the filter off
