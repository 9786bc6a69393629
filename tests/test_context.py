"""`memctl context`: budgeted, sectioned, deterministic context for an agent's next call."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from memctl import service
from memctl.cli.app import app
from memctl.core.trust.fence import fence
from memctl.integrations.tokenizer import count_tokens
from memctl.service.lifecycle.session import add_turn
from memctl.service.lifecycle.task import begin_task, step_task
from memctl.service.retrieval.context import build_context

pytestmark = pytest.mark.model

T0 = 1_750_000_000.0
runner = CliRunner()


@pytest.fixture(scope="module")
def filled_once(tmp_path_factory):
    store = service.init_store(tmp_path_factory.mktemp("filled"))
    add = service.add_memory
    add(
        store,
        "Maria prefers tabs over spaces in Go code",
        type="preference",
        confidence=0.9,
        sync=False,
    )
    add(store, "Maria maybe likes dark mode", type="preference", confidence=0.4, sync=False)
    add(
        store,
        "Maria is the tech lead of the billing team",
        type="profile",
        confidence=0.8,
        sync=False,
    )
    add(
        store,
        "Billing runs on Postgres 16 behind pgbouncer; the pool size lives in deploy/values.yaml",
        type="semantic",
        sync=False,
    )
    add(
        store,
        "Release billing with make release; the canary stage lasts 15 minutes",
        type="procedural",
        sync=False,
    )
    add(
        store,
        "## Summary\nThe March billing migration failed because pg_restore ran without --no-owner.",
        type="episodic",
        title="Billing migration attempt",
        sync=False,
    )
    add(store, "The office plants are watered on Mondays", type="semantic")
    begin_task(
        store, "Migrate billing to Postgres 16", ["dump MySQL", "restore into Postgres 16"], now=T0
    )
    step_task(store, "1", status="done", result="dump is 4.2 GB", now=T0 + 1)
    step_task(store, "2", status="in_progress", now=T0 + 2)
    turns = [
        ("system", "You help the billing team."),
        ("user", "Where do we configure the pool size?"),
        ("assistant", "In deploy/values.yaml, key pgbouncer.pool_size."),
        ("user", "Set it to 120 then."),
        ("assistant", "Done: pool_size is 120 in deploy/values.yaml."),
    ]
    for n, (role, text) in enumerate(turns):
        add_turn(store, "s1", role, text, now=T0 + 10 + n)
    return store


@pytest.fixture
def filled(filled_once, copy_store):
    """A store with memories, a task and a session, built once; each test gets its own copy."""
    return copy_store(filled_once)


def test_context_has_its_sections_and_says_where_memories_came_from(filled):
    result = build_context(filled, "billing database migration", session_id="s1")
    text = result.markdown
    for heading in (
        "## Current task",
        "## Session s1",
        "### Recent turns",
        "## Relevant memories",
        "## Preferences and profile",
    ):
        assert heading in text
    assert "**Now:**" not in text and "[>] 2. restore into Postgres 16" in text
    assert "**User:** Set it to 120 then." in text and "You help the billing team" not in text
    vias = {m["title"]: m["via"] for m in result.memories}
    assert (
        "semantic" in vias["Billing migration attempt"]
        and "recent" in vias["Billing migration attempt"]
    )
    assert "office plants" not in text  # unrelated, and found only by vector nearness
    assert "tabs over spaces" in text and "dark mode" not in text  # confidence 0.4 < 0.6
    assert result.tokens <= 2000 and not result.left_out


@pytest.mark.parametrize("share", [0.25, 0.5, 0.9])
def test_context_stays_within_budget_and_says_what_was_left_out(filled, share):
    whole = build_context(
        filled, "billing database migration", budget=10_000, session_id="s1"
    ).tokens
    fenced = count_tokens(fence("")) + 2  # the notes fence: a fixed cost on every budget
    budget = fenced + int((whole - fenced) * share)
    result = build_context(filled, "billing database migration", budget=budget, session_id="s1")
    assert count_tokens(result.markdown) <= budget
    assert result.tokens == count_tokens(result.markdown)
    assert result.left_out or result.shortened
    assert f"_To fit {budget} tokens:" in result.markdown
    assert "Migrate billing to Postgres 16" in result.markdown  # the goal is the last thing to go


def test_lower_value_parts_shrink_first(filled):
    for n in range(6):
        role = "user" if n % 2 == 0 else "assistant"
        text = (
            f"Turn {n}: "
            + "we compared pgbouncer transaction pooling with session pooling for billing. " * 4
        )
        add_turn(filled, "long", role, text, now=T0 + 100 + n)
    tight = build_context(filled, "billing database migration", budget=450, session_id="long")
    shown = [t["shown"] for t in tight.session["turns"]]
    assert shown[0] != "full" and shown[-1] == "full"  # older turns go before newer ones
    order = {"full": 0, "short": 1, "left out": 2}
    assert [order[s] for s in shown] == sorted((order[s] for s in shown), reverse=True)
    assert tight.task["shown"] == "full"  # the task was within its share of the budget


def test_context_is_byte_identical_on_a_second_run(filled, monkeypatch):
    monkeypatch.setenv("MEMCTL_STORE", str(filled.root))
    first = runner.invoke(app, ["context", "billing", "--session", "s1", "--budget", "400"])
    second = runner.invoke(app, ["context", "billing", "--session", "s1", "--budget", "400"])
    assert first.exit_code == 0, first.output
    assert first.stdout_bytes == second.stdout_bytes
    as_json = json.loads(
        runner.invoke(app, ["context", "billing", "--session", "s1", "--json"]).stdout
    )
    assert (
        as_json["query"] == "billing"
        and as_json["task"]["goal"] == "Migrate billing to Postgres 16"
    )
    assert as_json["session"]["id"] == "s1" and as_json["facts"]


def test_without_a_query_the_task_goal_is_the_query(filled):
    result = build_context(filled)
    assert result.query_from == "task" and "Migrate billing" in result.query
    assert result.session is None


def test_an_empty_store_says_so(store):
    expected = fence("## Memory context\n\n_Nothing to recall yet._\n")
    assert build_context(store).markdown == expected


def test_a_store_of_facts_asked_without_a_topic_does_not_read_as_empty(store):
    service.add_memory(store, "Deploys go through make release-canary, then promote", sync=False)
    service.add_memory(store, "The staging database is pg-staging-2, read-only", sync=False)
    # A session start: no query, task or session; no preferences or profile facts to show.
    markdown = build_context(store).markdown
    assert "Nothing to recall yet" not in markdown
    assert "holds 2 memories" in markdown and "memctl recall" in markdown
    # Asked about something nothing is about: says that, not that memory is empty.
    unrelated = build_context(store, query="quarterly marketing newsletter font").markdown
    assert "Nothing in memory is relevant to this" in unrelated
