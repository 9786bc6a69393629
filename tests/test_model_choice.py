"""`embedding.model: auto` decides once, from the memories of the first sync, and never switches
a store's model by itself; `memctl index --model X` switches it when the user asks."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from memctl import service
from memctl.cli.app import app
from memctl.config import Store
from memctl.integrations.embedder import MODEL_ID, MULTILINGUAL_MODEL_ID
from memctl.service.retrieval.embedding import CHOICE_FILE, index_model
from memctl.store.index import Manifest

ENGLISH = [
    "The API uses PostgreSQL 15 for the main database",
    "Alice owns the billing service",
    "Tests run with pytest; use -m 'not model' for the fast tier",
    "We chose Redis for caching session tokens",
    "The staging cluster lives in region eu-west-1",
    "Code review needs two approvals before merge",
]
DEPLOY = "We deploy with make release, then promote the rollout"
DEPLOY_ZH = "我们用 make release 上线，然后推进发布"


def recorded_choice(store: Store) -> str:
    return json.loads((store.state_dir / CHOICE_FILE).read_text(encoding="utf-8"))["model"]


def test_auto_records_its_choice_at_the_first_sync_with_memories(store: Store, fake_embedder):
    service.sync_index(store)  # an empty store decides nothing yet
    assert not (store.state_dir / CHOICE_FILE).exists()
    for text in ENGLISH:
        service.add_memory(store, text, sync=False, dedup=False)
    service.sync_index(store)
    assert recorded_choice(store) == MODEL_ID
    for i in range(4):  # now mostly Chinese: still the recorded model
        service.add_memory(store, f"{DEPLOY_ZH}，第{i}次", sync=False, dedup=False)
    service.sync_index(store)
    assert index_model(store).id == MODEL_ID
    assert Manifest.load(store.index_dir).model == MODEL_ID


@pytest.mark.model
def test_one_chinese_memory_does_not_lower_english_recall(store: Store):
    """The README's example in a 7-memory English store, then one Chinese memory arrives."""
    deploy = service.add_memory(store, DEPLOY, type="procedural", tags=["deploy"]).memory.id
    for text in ENGLISH:
        service.add_memory(store, text)
    before = service.recall(service.RecallRequest(store, "how do we ship to production")).hits
    assert [h.id for h in before][:1] == [deploy]

    chinese = service.add_memory(store, DEPLOY_ZH).memory.id
    after = service.recall(service.RecallRequest(store, "how do we ship to production")).hits
    assert index_model(store).id == MODEL_ID
    assert [h.id for h in after][:1] == [deploy]
    assert after[0].relevance == pytest.approx(before[0].relevance, abs=1e-6)
    # The Chinese memory is found by its words (bigrams on the full-text side).
    assert [h.id for h in service.recall(service.RecallRequest(store, "怎么上线")).hits][:1] == [
        chinese
    ]


@pytest.mark.model
def test_index_model_switches_the_store_and_keeps_it(store: Store):
    chinese = service.add_memory(store, DEPLOY_ZH).memory.id
    service.add_memory(store, DEPLOY)
    assert index_model(store).id == MULTILINGUAL_MODEL_ID  # decided by the first memory
    result = CliRunner().invoke(
        app, ["--store", str(store.root), "index", "--model", MODEL_ID, "--json"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["embedded"] == 2
    assert recorded_choice(store) == MODEL_ID == Manifest.load(store.index_dir).model
    result = CliRunner().invoke(
        app, ["--store", str(store.root), "index", "--model", "multilingual"]
    )
    assert result.exit_code == 0, result.output
    assert Manifest.load(store.index_dir).model == MULTILINGUAL_MODEL_ID
    assert [h.id for h in service.recall(service.RecallRequest(store, "怎么上线")).hits][:1] == [
        chinese
    ]


def test_index_model_refuses_a_model_config_yaml_contradicts(store: Store, fake_embedder):
    config = store.root / "config.yaml"
    config.write_text(
        config.read_text(encoding="utf-8").replace("model: auto", f"model: {MODEL_ID}"),
        encoding="utf-8",
    )
    result = CliRunner().invoke(
        app, ["--store", str(store.root), "index", "--model", "multilingual"]
    )
    assert result.exit_code != 0
    assert "config.yaml" in result.output and "embedding.model" in result.output
