"""The perf benchmark's text generator: same seed, same store; lengths inside the stated bounds."""

from __future__ import annotations

from benchmarks.synthetic import generate_notes, generate_queries


def test_same_seed_gives_the_same_notes_and_another_seed_does_not():
    assert generate_notes(50, seed=3) == generate_notes(50, seed=3)
    assert generate_notes(50, seed=3) != generate_notes(50, seed=4)


def test_every_note_has_20_to_80_words():
    lengths = [len(note.text.split()) for note in generate_notes(2000, seed=1)]
    assert min(lengths) >= 20
    assert max(lengths) <= 80


def test_notes_are_distinct_and_use_a_wide_vocabulary():
    notes = generate_notes(1000, seed=5)
    assert len({note.text for note in notes}) == 1000
    words = {word.lower().strip(".,;:`") for note in notes for word in note.text.split()}
    assert len(words) > 1500


def test_queries_are_reproducible():
    assert generate_queries(20, seed=2) == generate_queries(20, seed=2)
    assert all(query.strip() for query in generate_queries(20, seed=2))
