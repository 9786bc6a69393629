"""A question asking when or where: the memory that says when (or where) ranks higher than one
that only names the same thing."""

from __future__ import annotations

import pytest

from memctl import service
from memctl.config import with_overrides
from memctl.core.recall.answer_kinds import PLACE, TIME, asked_kind, states_place
from memctl.core.recall.when import asks_when, states_schedule
from memctl.service.retrieval.answers import add_answer_bonus


def test_a_question_asks_when_by_its_words_in_english_and_chinese():
    for query in (
        "When did we move CI to GitLab?",
        "when is the standup",
        "What year did Caroline move?",
        "Which month was the outage in",
        "How long ago did we rotate the keys?",
        "我们什么时候迁移的数据库？",
        "张伟哪一年搬到北京",
        "黑客马拉松在哪一天举行？",
    ):
        assert asks_when(query), query
    # "when" as a conjunction asks for a procedure, not a date.
    for query in (
        "What do we do when the build fails?",
        "where are invoices stored",
        "how do we ship to production",
        "数据库放在哪里",
    ):
        assert not asks_when(query), query


def test_a_schedule_or_a_time_of_day_is_a_time():
    for text in (
        "Sprint planning happens every other Monday at 10am.",
        "Backups run nightly and are kept for 30 days.",
        "The standup is at 09:30 in the small room.",
        "技术分享会定在每周四下午四点。",
    ):
        assert states_schedule(text), text
    for text in (
        "The API returns 404 when the id is unknown.",
        "Build 1.2:30 failed on the arm runner.",
        "The billing service stores invoices in PostgreSQL 16.",
    ):
        assert not states_schedule(text), text


def test_a_question_asks_where_and_a_text_names_a_place_a_path_or_an_address():
    assert asked_kind("Where did Caroline move from?") == PLACE
    assert asked_kind("where are invoices stored") == PLACE
    assert asked_kind("Which city did Jon visit in May?") == PLACE
    assert asked_kind("我们的数据库在哪里") == PLACE
    assert asked_kind("When did we move the backups?") == TIME
    assert asked_kind("the doc where we listed the owners") is None
    assert asked_kind("How many services do we run?") is None
    for text in (
        "Caroline: I moved from Sweden four years ago.",
        "The billing service stores invoices in PostgreSQL 16.",
        "Decisions live in docs/adr/, one file per decision.",
        "The dashboard is at https://grafana.internal/d/payments.",
        "我上个月去北京市出差。",
    ):
        assert states_place(text), text
    for text in ("We moved the backups, it took a day.", "I went to the park with the kids."):
        assert not states_place(text), text


def _rows(texts: dict[str, str]) -> dict[str, dict]:
    return {key: {"text": text, "created": "2024-03-14T09:00:00Z"} for key, text in texts.items()}


def test_only_the_memories_holding_the_answer_kind_gain_and_only_when_they_tell_candidates_apart():
    rows = _rows({
        "told": "We finished the move last Tuesday.",
        "schedule": "Deploys go out every Thursday at 4pm.",
        "plain": "The builds run on the new runners.",
    })  # fmt: skip
    scores = {key: 1.0 for key in rows}
    add_answer_bonus(scores, rows, TIME, 0.5)
    assert scores == {"told": 1.5, "schedule": 1.5, "plain": 1.0}
    scores = {key: 1.0 for key in rows}
    add_answer_bonus(scores, rows, None, 0.5)
    assert scores == {"told": 1.0, "schedule": 1.0, "plain": 1.0}
    # Every candidate tells a time: nothing to tell apart, nothing moves.
    both = _rows({"a": "Moved last Tuesday.", "b": "Deploys go out every Thursday."})
    scores = {key: 1.0 for key in both}
    add_answer_bonus(scores, both, TIME, 0.5)
    assert scores == {"a": 1.0, "b": 1.0}
    places = _rows(
        {"s3": "The backups moved to S3 last year.", "day": "Moving the backups took a day."}
    )
    scores = {key: 1.0 for key in places}
    add_answer_bonus(scores, places, PLACE, 0.5)
    assert scores == {"s3": 1.5, "day": 1.0}


def _note(store, name: str, text: str, created: str) -> None:
    path = store.root / "semantic" / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nid: {name}\ntype: semantic\ncreated: '{created}'\n---\n\n{text}\n")


@pytest.fixture
def move_notes(store):
    _note(store, "how", "We moved the builds over to the new runners, which are much faster.",
          "2024-03-20T09:00:00Z")  # fmt: skip
    _note(store, "when", "The builds went over to the new runners last Tuesday.",
          "2024-03-14T09:00:00Z")  # fmt: skip
    _note(
        store, "pg", "The billing service stores invoices in PostgreSQL 16.", "2024-02-01T09:00:00Z"
    )
    _note(store, "tags", "Releases are cut from main and tagged with the version.",
          "2024-01-10T09:00:00Z")  # fmt: skip
    service.sync_index(store)
    return store


@pytest.mark.model
def test_asked_when_the_memory_that_says_when_gains_over_one_that_does_not(move_notes):
    query = "When did we move the builds to the new runners?"
    on = {
        hit.id: hit.score
        for hit in service.recall(service.RecallRequest(move_notes, query, k=2)).hits
    }
    off_store = with_overrides(move_notes, {"recall": {"answer_bonus": 0}})
    off = {
        hit.id: hit.score
        for hit in service.recall(service.RecallRequest(off_store, query, k=2)).hits
    }
    assert on["how"] == pytest.approx(off["how"])
    assert on["when"] > off["when"]
    strong = with_overrides(move_notes, {"recall": {"answer_bonus": 2.0}})
    assert service.recall(service.RecallRequest(strong, query, k=2)).hits[0].id == "when"
    assert service.recall(service.RecallRequest(off_store, query, k=2)).hits[0].id == "how"


@pytest.mark.model
def test_a_question_that_asks_neither_when_nor_where_is_ranked_as_before(move_notes):
    query = "Why did we move the builds to the new runners?"
    strong = with_overrides(move_notes, {"recall": {"answer_bonus": 2.0}})
    off = with_overrides(move_notes, {"recall": {"answer_bonus": 0}})
    assert [
        (h.id, h.score)
        for h in service.recall(service.RecallRequest(strong, query, k=4, min_relevance=0.0)).hits
    ] == [
        (h.id, h.score)
        for h in service.recall(service.RecallRequest(off, query, k=4, min_relevance=0.0)).hits
    ]


@pytest.mark.model
def test_asked_where_the_memory_that_names_a_place_gains_over_one_that_does_not(store):
    _note(store, "took", "We moved the backups over the weekend; moving them took a whole day.",
          "2024-03-20T09:00:00Z")  # fmt: skip
    _note(
        store, "s3", "The backups went over to S3 in the Frankfurt region.", "2024-03-14T09:00:00Z"
    )
    _note(
        store, "pg", "The billing service stores invoices in PostgreSQL 16.", "2024-02-01T09:00:00Z"
    )
    service.sync_index(store)
    query = "Where did we move the backups?"
    off = with_overrides(store, {"recall": {"answer_bonus": 0}})
    on = {
        hit.id: hit.score for hit in service.recall(service.RecallRequest(store, query, k=2)).hits
    }
    assert (
        on["s3"]
        > {
            hit.id: hit.score for hit in service.recall(service.RecallRequest(off, query, k=2)).hits
        }["s3"]
    )
    strong = with_overrides(store, {"recall": {"answer_bonus": 2.0}})
    assert service.recall(service.RecallRequest(strong, query, k=2)).hits[0].id == "s3"
    assert service.recall(service.RecallRequest(off, query, k=2)).hits[0].id == "took"
