"""Who said a turn, and a question about a person favouring their own words."""

from __future__ import annotations

import pytest

from memctl import service
from memctl.config import with_overrides
from memctl.core.speakers import asked_speakers, names, speaker_of, turns_of_asked


def test_the_label_a_turn_begins_with_is_its_speaker():
    assert speaker_of("Caroline: I went to a support group yesterday") == "Caroline"
    assert speaker_of("Mary Ann: we moved CI to GitLab") == "Mary Ann"
    assert speaker_of("User: use pnpm, not npm") == "User"
    assert speaker_of("张伟：我们把CI迁到了GitLab") == "张伟"
    # Not a label: lower case, a sentence before the colon, a time, no words after it.
    assert speaker_of("note: use pnpm") is None
    assert speaker_of("The reason is simple: cost") is None
    assert speaker_of("10:30 standup moved") is None
    assert speaker_of("Caroline:") is None


def test_a_query_names_a_speaker_by_a_whole_word_in_any_case():
    assert names("what did the user decide about pnpm", "User")
    assert names("What did Mary say?", "Mary Ann")
    assert names("张伟上周说了什么", "张伟")
    assert not names("which users asked for it", "User")
    assert not names("what did Carolines friend say", "Caroline")


def test_only_a_question_that_tells_speakers_apart_asks_about_one():
    assert asked_speakers("what did Caroline research", ["Caroline", "Melanie"]) == {"Caroline"}
    assert asked_speakers("what did Caroline tell Melanie", ["Caroline", "Melanie"]) == set()
    assert asked_speakers("what did Caroline research", ["Caroline"]) == set()
    assert asked_speakers("what did we decide", ["Caroline", "Melanie"]) == set()
    turns = {"a": "Caroline", "b": "Melanie", "c": None, "d": "Caroline"}
    assert turns_of_asked("Where did Caroline go?", turns) == {"a", "d"}


def _conversation(store, turns, session="s1"):
    for n, text in enumerate(turns):
        service.add_memory(
            store, text, type="episodic", sync=False, force=True,
            created=f"2023-05-08T10:{n:02d}:00Z", extra={"session_id": session},
        )  # fmt: skip
    service.sync_index(store)


@pytest.mark.model
def test_a_question_about_a_person_ranks_their_own_turn_above_what_was_said_to_them(store):
    """The other side names the person too ("Hey Caroline!"): the speaker's label decides."""
    _conversation(store, [
        "Melanie: Hey Caroline, how was the pottery workshop? I went to one last month.",
        "Caroline: I went to a pottery workshop with my kids, we made bowls.",
        "Melanie: Nice! Pottery with kids sounds like fun, Caroline.",
        "Caroline: It was, and the kids loved painting their bowls afterwards.",
    ])  # fmt: skip
    query = "What did Caroline make at the pottery workshop?"
    hits = service.recall(store, query, k=2)
    assert hits[0].body.startswith("Caroline: I went to a pottery workshop")
    unaware = with_overrides(store, {"recall": {"speaker_bonus": 0}})
    assert service.recall(unaware, query, k=2)[0].body.startswith("Melanie:")


@pytest.mark.model
def test_labels_outside_a_conversation_are_headings_and_change_nothing(store):
    """A leading "Note:" or "Decision:" in memories not written in sequence is no speaker."""
    for text in (
        "Decision: the billing service keeps invoices in PostgreSQL 16.",
        "Note: the decision log lives in docs/adr, one file per decision.",
    ):
        service.add_memory(store, text, type="semantic", sync=False)
    service.sync_index(store)
    on = service.recall(store, "where do we keep the decision log", k=2, min_relevance=0.0)
    off = service.recall(
        with_overrides(store, {"recall": {"speaker_bonus": 0}}),
        "where do we keep the decision log", k=2, min_relevance=0.0,
    )  # fmt: skip
    assert [hit.id for hit in on] == [hit.id for hit in off]
    assert "docs/adr" in on[0].body
