"""The declared ranking stages: profiles decide which memories the conversation stages touch."""

from __future__ import annotations

from copy import deepcopy
from dataclasses import replace
from pathlib import Path

import pytest

from memctl.config import RecallSettings
from memctl.core.recall.query import parse_query, query_paths
from memctl.service.retrieval.stages import (
    CONVERSATION,
    PIPELINE,
    STAGES,
    Candidates,
    Ranking,
    Sessions,
    pipeline_table,
    run_stages,
    with_pipeline_table,
)

ZIPF = lambda word: 4.0  # noqa: E731 - every word equally common: the weights do not matter here


def candidates(sequence: str | None) -> Candidates:
    """Two memories, one by each speaker; `sequence` makes them a session's turns."""
    rows = {
        "a": {"id": "a", "text": "Caroline: I went hiking in the Alps", "sequence": sequence},
        "b": {"id": "b", "text": "Melanie: I stayed home and painted", "sequence": sequence},
    }
    return Candidates({"a": 1.0, "b": 1.0}, rows, {"a": {"bm25"}, "b": {"bm25"}})


def rank(found: Candidates, profile: str) -> dict[str, dict[str, float]]:
    settings = replace(RecallSettings(), profile=profile, neighbour_weights=())
    ranking = Ranking(parse_query("What did Caroline do?", ZIPF), settings, "hybrid", 1.0)
    trace: dict[str, dict[str, float]] = {}
    run_stages(found, ranking, lambda stage, scores: trace.setdefault(stage, dict(scores)))
    return trace


def test_the_speaker_stage_lifts_the_asked_speakers_turns_in_a_session():
    trace = rank(candidates("session-1"), "auto")
    assert trace["speaker"]["a"] > trace["speaker"]["b"]


@pytest.mark.parametrize(("sequence", "profile"), [(None, "auto"), ("session-1", "notes")])
def test_notes_are_not_read_as_conversation_turns(sequence, profile):
    trace = rank(candidates(sequence), profile)
    assert trace["speaker"] == trace["answer_kind"]
    assert trace["length_prior"] == trace["speaker"]


def test_the_conversation_profile_applies_to_every_memory():
    trace = rank(candidates(None), CONVERSATION)
    assert trace["speaker"]["a"] > trace["speaker"]["b"]


def test_stages_are_declared_once_in_order_with_their_own_knobs():
    names = [stage.name for stage in STAGES]
    assert names.index("neighbours") < names.index("time") < names.index("speaker")
    knobs = [knob for stage in STAGES for knob in stage.knobs]
    assert len(knobs) == len(set(knobs))
    assert all(hasattr(RecallSettings(), knob) for knob in knobs)


def test_the_query_is_parsed_once_into_what_the_stages_read():
    parsed = parse_query("When did we move `deploy_prod` out of src/ci/deploy.py?", ZIPF)
    assert parsed.asked_kind == "time"
    assert "deploy_prod" in parsed.identifiers
    assert parsed.paths == ("src/ci/deploy.py",)
    assert "move" in parsed.terms and "when" not in parsed.terms
    assert not parsed.cjk and parse_query("上周我们讨论了什么", ZIPF).cjk
    assert query_paths("see config.yaml and 3.14") == ("config.yaml",)


def test_every_step_of_recall_is_declared_with_the_function_that_runs_it():
    names = [stage.name for stage in PIPELINE]
    for step in ("sync", "fusion", "identifier", "floor", "date_cut", "quarantine", "merge"):
        assert step in names, step
    assert names.index("fusion") < names.index("identifier") < names.index("neighbours")
    assert names.index("length_prior") < names.index("floor") < names.index("date_cut")
    for stage in PIPELINE:
        assert callable(stage.function), stage.name


def test_each_recall_setting_is_owned_by_exactly_one_stage():
    owned = [knob for stage in PIPELINE for knob in stage.knobs if "." not in knob]
    assert len(owned) == len(set(owned))
    # `profile` decides which memories the conversation stages touch (Ranking.turns)
    assert set(owned) | {"profile"} == set(RecallSettings.__dataclass_fields__)


def test_stages_leave_their_input_as_it_was():
    turns = candidates("session-1")
    before = deepcopy(turns)
    settings = replace(RecallSettings(), recency_bonus=0.3, profile=CONVERSATION)
    query = parse_query("When did Caroline go hiking last week?", ZIPF)
    sessions = Sessions(
        near={"a": [("b", 1), ("c", 2)], "b": [("a", 1)], "c": [("a", 2)]},
        rows={"c": {"id": "c", "text": "Caroline: it rained", "sequence": "session-1"}},
    )
    ranking = Ranking(query, settings, "hybrid", 1.0, sessions)
    after = run_stages(turns, ranking)
    assert turns == before
    assert after.scores["c"] > 0 and "neighbour" in after.sources["c"]  # from what was fetched
    assert "c" not in turns.rows and "neighbour" not in turns.sources.get("c", set())


def test_the_pipeline_table_in_the_docs_is_generated_from_the_declaration():
    page = Path(__file__).resolve().parent.parent / "docs" / "recall-pipeline.md"
    text = page.read_text(encoding="utf-8")
    assert pipeline_table() in text, (
        "docs/recall-pipeline.md is out of date: python -m memctl.service.retrieval.stages "
        "docs/recall-pipeline.md"
    )
    assert with_pipeline_table(text) == text
