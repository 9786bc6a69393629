"""One question through every face (CLI --json, the prompt hook, MCP, the use-case): one ranking."""

from __future__ import annotations

import asyncio
import json

import pytest
import yaml
from typer.testing import CliRunner

from memctl import service
from memctl.agents.claude_code import HookPayload
from memctl.agents.claude_code_events import prompt_context
from memctl.cli.app import app
from memctl.config import CONFIG_FILENAME, open_store
from memctl.service.retrieval.use_case import PROMPT, RecallRequest, recall
from memctl.store.hook_state import load_session_state

NOTES = (
    "We deploy the billing service with kamal to the hetzner box on Fridays",
    "Deploys of the web app go through the staging cluster first",
    "The billing database listens on port 5433, not 5432",
    "Run pytest -m 'not model' for the fast tier of the test suite",
    "The billing service logs to /var/log/billing, rotated daily",
    "Release notes are written in CHANGELOG.md under Unreleased",
)
QUESTION = "how do we deploy the billing service"


@pytest.fixture
def notes_store(store, fake_embedder, monkeypatch):
    monkeypatch.chdir(store.root.parent)
    for text in NOTES:
        service.add_memory(store, text)
    # Why: the hook abstains below its floor or without a rare shared word; with both off it
    # shows its k best, as the others do.
    path = store.root / CONFIG_FILENAME
    config = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    config.setdefault("hooks", {}).update(
        prompt_min_relevance=0, prompt_min_rarity=0, prompt_k=3, prompt_budget=4000
    )
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return open_store(store.root)


@pytest.mark.parametrize("with_user_store", [False, True])
def test_every_face_gives_the_same_ranking(notes_store, no_user_store, with_user_store):
    store = notes_store
    user = None
    if with_user_store:
        from memctl.service.init import init_user_store

        user = init_user_store()
        service.add_memory(user, "How I deploy the billing service: kamal deploy, then watch logs")
    found = recall(RecallRequest(store=store, query=QUESTION, k=3)).hits
    use_case = [hit.id for hit in found]
    assert len(use_case) == 3
    # Why: the user store is read by every face, as the README says (MCP skipped it once).
    assert any(getattr(hit, "store", "project") == "user" for hit in found) == with_user_store

    cli = CliRunner().invoke(
        app, ["--store", str(store.root), "recall", QUESTION, "-k", "3", "--json"]
    )
    assert cli.exit_code == 0, cli.output
    assert [hit["id"] for hit in json.loads(cli.stdout)] == use_case

    from memctl.mcp.server import build_server

    server = build_server(store)
    result = asyncio.run(server.call_tool("recall", {"query": QUESTION, "k": 3}))
    assert not result.is_error, result.content
    hits = (result.structured_content or {}).get("result")
    assert [hit["id"] for hit in hits] == use_case

    payload = HookPayload(event="UserPromptSubmit", session_id="s1", prompt=QUESTION)
    block = prompt_context(store, payload, user)
    assert block
    shown = list(load_session_state(store, "s1").get("shown") or ())
    prompt = recall(RecallRequest(store=store, query=QUESTION, k=9, purpose=PROMPT)).hits
    assert shown == [hit.id for hit in prompt][:3] == use_case


def test_explain_traces_every_stage_and_the_cut(notes_store):
    result = recall(RecallRequest(store=notes_store, query=QUESTION, k=2, explain=True))
    (trace,) = result.explain()
    assert trace["stages"][0] == "fusion"
    candidates = trace["candidates"]
    assert [item["id"] for item in candidates[:2]] == [hit.id for hit in result.hits]
    assert all(item["cut"] is None for item in candidates[:2])
    assert all(item["cut"] for item in candidates[2:])
    assert all(set(item["scores"]) <= set(trace["stages"]) for item in candidates)
    assert trace["query"]["terms"] == ["deploy", "billing", "service"]


def test_relevance_means_the_same_in_every_mode(notes_store):
    """A hit's relevance is its own evidence (cosine and words), whichever retriever ranked it."""
    relevance = {}
    for mode in ("hybrid", "bm25", "vector"):
        request = RecallRequest(store=notes_store, query="billing database port", k=1, mode=mode)
        (hit,) = recall(request).hits
        relevance[mode] = (hit.id, round(hit.relevance, 6))
    assert len(set(relevance.values())) == 1, relevance


def test_a_long_prompt_still_finds_by_words_alone(notes_store):
    prompt = (
        "I have to change how the billing database connection is configured for staging, "
        "the port seems wrong and the service keeps failing on startup; can you look at the "
        "settings, find where the port comes from and fix the configuration for every stage"
    )
    hits = recall(RecallRequest(store=notes_store, query=prompt, mode="bm25")).hits
    assert hits and "port 5433" in hits[0].body


def test_an_explicit_k_returns_k_hits_unless_a_floor_is_asked(notes_store):
    unrelated = "favourite colour of the office cat"
    assert len(recall(RecallRequest(store=notes_store, query=unrelated, k=4)).hits) == 4
    floored = RecallRequest(store=notes_store, query=unrelated, k=4, min_relevance=0.9)
    assert recall(floored).hits == []
