"""The pure merge rules: history sections, subjects, value conflicts, and the seed's upsert rule."""

from __future__ import annotations

from memctl.core.files.frontmatter import parse_memory, render_memory
from memctl.core.files.history import current_text, join_history, split_history
from memctl.core.files.memory import Memory
from memctl.core.learning.revisions import (
    Neighbor,
    Thresholds,
    decide,
    derive_subject,
    first_person,
    not_adopted,
    reinforced,
    revised,
    values_conflict,
)

NOW = "2025-06-02T10:00:00Z"


def memory(body: str, type_: str = "preference", confidence: float = 0.8, **extra) -> Memory:
    return Memory(
        id="m" + str(abs(hash(body)) % 10**6),
        title=body.split("\n")[0],
        type=type_,
        confidence=confidence,
        body=body,
        extra=dict(extra),
    )


def test_history_round_trips_and_multiline_entries_stay_whole():
    body = join_history(
        "Use spaces.",
        ["2025-01-01T00:00:00Z replaced (confidence 0.80): Use tabs.\nIn Makefiles too."],
    )
    current, entries = split_history(body)
    assert current == "Use spaces."
    assert entries == [
        "2025-01-01T00:00:00Z replaced (confidence 0.80): Use tabs.\nIn Makefiles too."
    ]


def test_a_persons_own_history_prose_is_not_taken_for_the_section():
    body = "Service notes.\n\n## History\n\nThe service was split out of the monolith in 2021."
    assert split_history(body) == (body, [])
    assert "monolith" in Memory(id="x", body=body).embed_text()


def test_history_is_left_out_of_the_embedded_text():
    old = memory("The user prefers tabs for indentation.")
    new = memory("The user prefers spaces for indentation.")
    updated, action = revised(old, new, NOW)
    assert action == "updated"
    assert "tabs" in updated.body and "tabs" not in updated.embed_text()
    assert updated.embed_text() == new.embed_text()


def test_third_person_memories_are_read_back_as_the_users_words():
    assert (
        first_person("The user prefers tabs for indentation.") == "I prefer tabs for indentation."
    )
    assert first_person("The user's timezone is UTC+2.") == "my timezone is UTC+2."
    assert first_person("The user always uses vim.") == "I always use vim."
    assert first_person("用户喜欢深色主题。") == "我喜欢深色主题。"


def test_the_same_subject_is_found_however_the_statement_is_worded():
    assert (
        derive_subject("I prefer tabs", "preference")
        == derive_subject("The user prefers spaces for indentation.", "preference")
        == "preference:indentation"
    )
    assert derive_subject("The user's name is Ana.", "profile") == derive_subject(
        "My name is Bo", "profile"
    )
    assert derive_subject("The staging DB is on port 5433.", "semantic") == "fact:staging-db"
    assert derive_subject("We met on Tuesday and it went fine", "episodic") is None


def test_value_conflicts_catch_what_cosine_misses():
    assert values_conflict("The user's timezone is UTC+1.", "The user's timezone is UTC+2.")
    assert values_conflict("The user prefers pnpm over npm.", "The user prefers npm over pnpm.")
    assert values_conflict("Run `make release` to deploy.", "Run `make ship` to deploy.")
    assert values_conflict(
        "The user likes long commit messages.", "The user doesn't like long commit messages."
    )
    assert not values_conflict("We deploy with make release", "we deploy with `make release`.")


def test_decide_merges_near_duplicates_and_updates_changed_values():
    limits = Thresholds()
    tabs = memory("The user prefers tabs for indentation.", subject="preference:indentation")
    again = memory("The user prefers tabs for indentation!")
    assert (
        decide(again, "preference:indentation", [Neighbor(tabs, "a.md", 0.99)], limits).op
        == "merge"
    )

    spaces = memory("The user prefers spaces for indentation.")
    decision = decide(spaces, "preference:indentation", [Neighbor(tabs, "a.md", 0.75)], limits)
    assert (decision.op, decision.target.memory.id) == ("update", tabs.id)

    plus2 = memory("The user's timezone is UTC+2.", "profile")
    plus1 = memory("The user's timezone is UTC+1.", "profile")
    assert decide(plus2, "profile:timezone", [Neighbor(plus1, "b.md", 0.97)], limits).op == "update"
    # Alike, but the number names another thing, not a new value: both are kept.
    code2 = memory("Error code TW-E4002 means a shipment was rejected.", "semantic")
    code1 = memory("Error code TW-E4001 means a shipment was rejected.", "semantic")
    subject2 = derive_subject(code2.body, "semantic")
    assert decide(code2, subject2, [Neighbor(code1, "d.md", 0.99)], limits).op == "add"

    # The same subject and the same words (a paraphrase below the dedup threshold) is no change.
    short = memory("The user prefers tabs.")
    assert (
        decide(short, "preference:indentation", [Neighbor(tabs, "a.md", 0.8)], limits).op == "merge"
    )

    other = memory("The user prefers dark mode.")
    assert decide(other, "preference:theme", [Neighbor(tabs, "a.md", 0.5)], limits).op == "add"
    # A subject guessed from a head word needs more similarity than a precise one.
    vague = memory("Logs are noisy.", "semantic")
    stored = memory("Logs are kept for 30 days.", "semantic")
    assert decide(vague, "fact:log", [Neighbor(stored, "c.md", 0.5)], limits).op == "add"


def test_reinforcing_counts_mentions_and_caps_confidence():
    stored = memory("Use pnpm.", confidence=0.97)
    once = reinforced(stored, memory("Use pnpm!"), NOW)
    twice = reinforced(once, memory("Use pnpm."), NOW)
    assert (once.extra["mentions"], twice.extra["mentions"]) == (2, 3)
    assert once.confidence == 1.0 and twice.confidence == 1.0
    assert twice.body == stored.body and twice.updated == NOW


def test_a_lower_confidence_value_is_recorded_not_adopted():
    stored = memory("The user prefers tabs for indentation.", confidence=0.9)
    result, action = revised(stored, memory("The user prefers spaces.", confidence=0.6), NOW)
    assert action == "not_adopted"
    assert current_text(result.body) == stored.body and result.confidence == 0.9
    assert "not adopted" in split_history(result.body)[1][0] and "spaces" in result.body
    assert not_adopted(stored, memory("x y z", confidence=0.1), NOW).body.count("## History") == 1


def test_replaced_values_survive_a_file_round_trip():
    stored = memory("The user prefers tabs for indentation.", mentions=3)
    updated, _ = revised(
        stored, memory("The user prefers spaces for indentation.", confidence=0.85), NOW
    )
    updated, _ = revised(updated, memory("The user prefers tabs again.", confidence=0.9), NOW)
    parsed = parse_memory("f.md", render_memory(updated), "x", "preference")
    current, entries = split_history(parsed.body)
    assert current == "The user prefers tabs again."
    assert [e.split(" ")[1] for e in entries] == ["replaced", "replaced"]
    assert "mentions 3" in entries[0] and "spaces" in entries[1]
    assert parsed.source == "corrected_memory" and "mentions" not in parsed.extra
