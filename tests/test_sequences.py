"""Short memories written in a session are embedded after the memory before them."""

from __future__ import annotations

import pytest

from memctl import service
from memctl.core.files.sync import embed_hash
from memctl.core.recall.sequences import (
    MAX_CONTEXT_CHARS,
    contextual_text,
    ordered_members,
    predecessors,
)
from memctl.service.retrieval.indexing import MODEL_ID, Manifest, index_text, open_index
from memctl.store.files import read_memory

pytestmark = pytest.mark.usefixtures("fake_embedder")


def test_members_are_ordered_by_their_key_and_only_within_their_sequence():
    ordered = ordered_members(
        [("s1", "2", "b"), ("s1", "1", "a"), ("s2", "1", "x"), ("", "0", "loose")]
    )
    assert ordered == {"s1": ["a", "b"], "s2": ["x"]}
    assert predecessors(ordered) == {"a": None, "b": "a", "x": None}


def test_context_is_the_end_of_the_previous_text_and_only_for_short_memories():
    assert (
        contextual_text("Yes, with the kids.", "Did you go camping?")
        == "Did you go camping?\nYes, with the kids."
    )
    assert contextual_text("Yes.", None) == "Yes."
    long_previous = "intro " * 200 + "so where did you go camping?"
    text = contextual_text("At the lake.", long_previous)
    assert text.endswith("so where did you go camping?\nAt the lake.")
    assert len(text.split("\n")[0]) <= MAX_CONTEXT_CHARS + 1
    long_own = "word " * 200
    assert contextual_text(long_own, "Did you go camping?") == long_own


def _turns(store, texts, session="chat-1"):
    paths = []
    for n, text in enumerate(texts):
        added = service.add_memory(
            store,
            text,
            type="episodic",
            extra={"session_id": session},
            created=f"2026-01-01T10:00:0{n}Z",
            sync=False,
            dedup=False,
        )
        paths.append(added.path)
    return paths


def _embedded_hash(store, path) -> str:
    relpath = str(path.relative_to(store.root))
    return Manifest.load(store.index_dir).files[relpath].embed_hash


def test_a_turn_is_embedded_with_the_one_before_it_and_searched_by_its_own_words(
    store, fake_embedder
):
    first, second = _turns(
        store, ["Ana: did you go camping at the lake?", "Ben: yes, with the kids"]
    )
    service.sync_index(store)
    question = read_memory(store.root, first)
    answer = read_memory(store.root, second)
    expected = contextual_text(index_text(answer), question.body.strip())
    assert _embedded_hash(store, second) == embed_hash(MODEL_ID, expected)
    assert _embedded_hash(store, first) == embed_hash(MODEL_ID, index_text(question))
    assert sorted(fake_embedder.texts) == sorted([index_text(question), expected])
    # Full-text search still sees only the memory's own words.
    found = [
        hit.id
        for hit in service.recall(
            service.RecallRequest(store, "camping lake", k=5, mode="bm25")
        ).hits
    ]
    assert found == [question.id]
    rows = open_index(store).rows_for_ids([answer.id])
    assert [row["text"] for row in rows] == [index_text(answer)]


def test_editing_a_turn_re_embeds_the_next_one_and_no_other(store, fake_embedder):
    paths = _turns(
        store,
        [
            "Ana: did you go camping?",
            "Ben: yes, at the lake",
            "Ana: lovely, who went with you?",
            "Ben: my sister and the kids",
        ],
    )
    service.sync_index(store)
    before = [_embedded_hash(store, p) for p in paths]
    paths[0].write_text(paths[0].read_text().replace("camping?", "fishing?"))
    fake_embedder.texts.clear()
    report = service.sync_index(store)
    assert (report.updated, report.embedded) == (1, 2)
    # the edited turn, and the next one, embedded with the edited turn as its context
    assert len(fake_embedder.texts) == 2 and all("fishing?" in t for t in fake_embedder.texts)
    after = [_embedded_hash(store, p) for p in paths]
    assert [a != b for a, b in zip(after, before, strict=False)] == [True, True, False, False]


def test_deleting_a_turn_gives_the_next_one_a_new_context(store):
    paths = _turns(
        store, ["Ana: did you go camping?", "Ben: yes, at the lake", "Ana: who went with you?"]
    )
    service.sync_index(store)
    paths[1].unlink()
    report = service.sync_index(store)
    assert (report.removed, report.embedded) == (1, 1)
    first, third = (read_memory(store.root, p) for p in (paths[0], paths[2]))
    assert _embedded_hash(store, paths[2]) == embed_hash(
        MODEL_ID, contextual_text(index_text(third), first.body.strip())
    )


def test_the_index_rebuilt_from_scratch_holds_the_same_vectors(store):
    paths = _turns(
        store, ["Ana: did you go camping?", "Ben: yes, at the lake", "Ana: who went with you?"]
    )
    service.sync_index(store)
    before = [_embedded_hash(store, p) for p in paths]
    assert service.sync_index(store, rebuild=True).embedded == 3
    assert [_embedded_hash(store, p) for p in paths] == before


def test_memories_outside_a_session_are_embedded_alone(store):
    a = service.add_memory(store, "Deploys go through make release", sync=False, dedup=False)
    b = service.add_memory(store, "Alice owns billing", sync=False, dedup=False)
    service.sync_index(store)
    assert _embedded_hash(store, b.path) == embed_hash(
        MODEL_ID, index_text(read_memory(store.root, b.path))
    )
    assert _embedded_hash(store, a.path) == embed_hash(
        MODEL_ID, index_text(read_memory(store.root, a.path))
    )
