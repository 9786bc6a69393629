"""Facts that share a guessed subject but name another ticket, region or team stay separate
memories, each findable by its identifiers; a true update keeps the old value's identifiers
searchable and never nests its `## History`."""

from __future__ import annotations

import pytest

from benchmarks.bulk_import import records, write_jsonl
from memctl import service
from memctl.core.files.history import HEADING, earlier_identifiers, split_history
from memctl.core.files.memory import Memory
from memctl.core.learning.facts import distinct_facts
from memctl.core.learning.revisions import superseded
from memctl.core.learning.supersession import SupersedeLimits, supersedes
from memctl.service.memories.exchange import import_file
from memctl.service.memories.lookup import list_memories

R2 = "The profile service pages on-call after 80 seconds in region r2; ticket OPS-1444 tracks it."
R3 = "The profile service pages on-call after 45 seconds in region r3; ticket OPS-1600 tracks it."


def test_another_ticket_region_or_team_is_another_fact():
    assert distinct_facts(R2, R3)
    assert distinct_facts(
        "Deploys of the ledger are approved by team Kestrel in region r1.",
        "Deploys of the ledger are approved by team Falcon in region r4.",
    )
    # A different ticket is another fact even when the new text says something changed.
    assert distinct_facts(R2, R3.replace("pages", "now pages"))
    assert not supersedes(R2, R3.replace("pages", "now pages"), 0.9, SupersedeLimits())


def test_a_new_value_of_the_same_fact_is_still_an_update():
    assert not distinct_facts(R2, R2.replace("80 seconds", "45 seconds"))
    assert not distinct_facts("We run Python 3.11 in production.", "Production now runs 3.12.")
    assert not distinct_facts("The staging cluster is in r2.", "The staging cluster moved to r3.")
    assert not distinct_facts("Alerts page the SRE rotation.", R2)  # only adds identifiers


def test_two_adds_with_the_same_subject_but_other_tickets_are_two_memories(store, fake_embedder):
    first = service.add_memory(store, R2)
    second = service.add_memory(store, R3)
    assert second.created and second.memory.id != first.memory.id
    for ticket, wanted in (("OPS-1444", first), ("OPS-1600", second)):
        assert wanted.memory.id in [
            h.id for h in service.recall(service.RecallRequest(store, ticket)).hits
        ], ticket


def test_a_true_update_keeps_the_old_tickets_findable(store, fake_embedder):
    first = service.add_memory(store, R2)
    updated = service.add_memory(
        store, "The profile service pages on-call after 45 seconds in region r2; ticket OPS-1444."
    )
    assert updated.action == "updated" and updated.memory.id == first.memory.id
    again = service.add_memory(
        store, "The profile service pages on-call after 30 seconds in region r2; ticket OPS-1444."
    )
    assert again.action == "updated"
    body = again.path.read_text(encoding="utf-8")
    assert body.count(HEADING) == 1 and "80 seconds" in body and "45 seconds" in body


def test_identifiers_of_an_earlier_value_stay_searchable(store, fake_embedder):
    """A value moved into History (here by a hand-written update) is still found by its codes."""
    body = (
        "Escalations go to ticket OPS-2001.\n\n## History\n\n- 2026-01-01T00:00:00Z replaced "
        "(confidence 0.80): Escalations went to pager queue PGQ77 in r7."
    )
    assert earlier_identifiers(body) == ["pgq77", "r7"]
    path = store.root / "semantic" / "escalations.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nid: esc1\ntype: semantic\n---\n\n{body}\n", encoding="utf-8")
    service.add_memory(store, "Escalations of billing go to ticket OPS-3000 in region r1.")
    assert [h.id for h in service.recall(service.RecallRequest(store, "PGQ77")).hits] == ["esc1"]
    assert "PGQ77" not in service.recall(service.RecallRequest(store, "PGQ77")).hits[0].title


def test_history_does_not_nest_when_a_hand_edit_quoted_a_section():
    """A hand note after the History made the whole body 'current' once; the quoted (indented)
    heading inside the entry must not be taken for the section on the next update."""
    body = (
        "Port 8081.\n\n## History\n\n- 2026-01-01T00:00:00Z replaced (confidence 0.80): Port 8080."
        "\n\nChecked by hand."
    )
    memory = Memory(id="p", body=body, type="semantic")
    for i, port in enumerate(("8082", "8083", "8084"), start=2):
        memory = superseded(memory, Memory(id="n", body=f"Port {port}."), f"2026-01-0{i}T00:00:00Z")
    current, entries = split_history(memory.body)
    assert current == "Port 8084."
    assert len(entries) == 3  # one per update, each holding what it replaced
    assert sum(line == HEADING for line in memory.body.splitlines()) == 1
    for kept in ("8080", "8081", "8082", "8083", "Checked by hand."):
        assert kept in memory.body


def test_a_bulk_import_of_distinct_templated_facts_keeps_every_ticket(
    store, fake_embedder, tmp_path
):
    rows = records(60)
    result = import_file(store, write_jsonl(tmp_path / "records.jsonl", rows))
    assert len(result.added) == len(rows) and not result.merged and not result.skipped
    memories = [m for _, m in list_memories(store).memories]
    assert not [m.id for m in memories if m.extra.get("superseded_by")]
    missing = [
        row["ticket"]
        for row in rows
        if not any(
            row["ticket"] in h.path.read_text(encoding="utf-8")
            for h in service.recall(service.RecallRequest(store, row["ticket"], k=5)).hits
        )
    ]
    assert missing == []


@pytest.mark.parametrize("count", [60])
def test_distinct_templated_notes_are_never_marked_superseded(store, fake_embedder, count):
    for i in range(count):
        service.add_memory(
            store,
            f"The gateway service in region r{i % 7 + 1} is owned by team T{i} "
            f"and tracked in ticket INC-{5000 + i}.",
            sync=False,
        )
    service.sync_index(store)
    memories = [m for _, m in list_memories(store).memories]
    assert len(memories) == count
    assert not [m.id for m in memories if m.extra.get("superseded_by")]


def test_an_update_renews_a_title_older_versions_cut_mid_word():
    old = Memory(
        id="t",
        title="The profile service pages on-call after 80 seconds in region r2; ticket OPS-14…",
        body=R2,
        type="semantic",
    )
    new = Memory(id="n", body=R2.replace("80 seconds", "45 seconds"), type="semantic")
    assert superseded(old, new, "2026-01-02T00:00:00Z").title.startswith(
        "The profile service pages on-call after 45 seconds"
    )
