"""Turns of a conversation: who said one (a question about a person favours their own words),
and how much it says (a turn of chatter seldom answers)."""

from __future__ import annotations

import pytest

from memctl import service
from memctl.config import with_overrides
from memctl.core.recall.ranking import length_priors, text_words
from memctl.core.recall.speakers import asked_speakers, names, speaker_of, turns_of_asked


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
    hits = service.recall(service.RecallRequest(store, query, k=2)).hits
    assert hits[0].body.startswith("Caroline: I went to a pottery workshop")
    unaware = with_overrides(store, {"recall": {"speaker_bonus": 0}})
    assert (
        service.recall(service.RecallRequest(unaware, query, k=2))
        .hits[0]
        .body.startswith("Melanie:")
    )


@pytest.mark.model
def test_labels_outside_a_conversation_are_headings_and_change_nothing(store):
    """A leading "Note:" or "Decision:" in memories not written in sequence is no speaker."""
    for text in (
        "Decision: the billing service keeps invoices in PostgreSQL 16.",
        "Note: the decision log lives in docs/adr, one file per decision.",
    ):
        service.add_memory(store, text, type="semantic", sync=False)
    service.sync_index(store)
    on = service.recall(
        service.RecallRequest(store, "where do we keep the decision log", k=2, min_relevance=0.0)
    ).hits
    off = service.recall(service.RecallRequest(with_overrides(store, {"recall": {"speaker_bonus": 0}}), "where do we keep the decision log", k=2, min_relevance=0.0)).hits  # fmt: skip
    assert [hit.id for hit in on] == [hit.id for hit in off]
    assert "docs/adr" in on[0].body


def test_length_is_counted_alike_across_scripts():
    assert text_words("Wow, thanks!") == 2
    assert text_words("我们把数据库迁到了云上") == 5.5  # eleven characters, two to a word


def test_a_turn_shorter_than_the_usual_candidate_gets_less_and_a_longer_one_no_more():
    priors = length_priors({
        "chatter": "Wow, thanks!",
        "answer": "I baked a lemon cake with blueberry frosting for the party",
        "median": "We went to the lake on Saturday with the kids",
        "page": "word " * 5000,
    })  # fmt: skip
    assert priors["chatter"] < priors["median"] < priors["answer"] == priors["page"]
    assert length_priors({}) == {}


@pytest.mark.model
def test_in_a_conversation_the_turn_that_says_something_outranks_chatter(store):
    """A short turn that repeats the question's words ("The party was great, thanks!") is
    chatter next to the turn that answers: shorter than the usual turn, it ranks lower."""
    _conversation(store, [
        "Nate: The party was great, thanks!",
        "Joanna: Did you bake anything for it?",
        "Nate: Yes! I baked a lemon cake with blueberry frosting for the party, it took me all "
        "afternoon and everyone asked for the recipe.",
        "Joanna: Wow, a party! Nate, you always throw the best parties.",
        "Nate: Thanks!",
        "Joanna: My sister started her new job at the hospital this week and she already loves "
        "the team there.",
        "Nate: That is great news, tell her congratulations from me and my turtles, they send "
        "their best.",
        "Joanna: I finished the second draft of my screenplay last night and sent it to the "
        "producer for notes.",
    ])  # fmt: skip
    query = "What did Nate bake for the party?"
    hits = service.recall(service.RecallRequest(store, query, k=3, min_relevance=0.0)).hits
    assert "lemon cake" in hits[0].body
    flat = with_overrides(store, {"recall": {"length_prior": 0}})
    assert (
        "lemon cake"
        not in service.recall(service.RecallRequest(flat, query, k=3, min_relevance=0.0))
        .hits[0]
        .body
    )


@pytest.mark.model
def test_notes_written_one_by_one_are_not_ranked_by_length(store):
    """Outside a conversation a short note is as meant as a long one: no length prior."""
    for text in (
        "Production database is PostgreSQL 16.",
        "The analytics job copies the production database to the warehouse every night at two, "
        "after the backups finish, and posts the row counts to the data channel.",
    ):
        service.add_memory(store, text, type="semantic", sync=False)
    service.sync_index(store)
    query = "which database runs production"
    flat = with_overrides(store, {"recall": {"length_prior": 0}})
    strong = with_overrides(store, {"recall": {"length_prior": 2.0}})
    ranked = [
        hit.id
        for hit in service.recall(service.RecallRequest(strong, query, k=2, min_relevance=0.0)).hits
    ]
    assert ranked == [
        hit.id
        for hit in service.recall(service.RecallRequest(flat, query, k=2, min_relevance=0.0)).hits
    ]
