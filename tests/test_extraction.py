"""`memctl extract`: offline rules and the LLM (through litellm's mock_response), on real stores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memctl import service
from memctl.agents.transcripts import read_conversation, read_conversation_file
from memctl.cli.app import app
from memctl.config import open_store
from memctl.core.files.history import split_history
from memctl.integrations.llm import LLMBadOutput
from memctl.service.extraction import extract
from memctl.store.files import read_memory, scan_files

FIXTURE = Path(__file__).parent / "fixtures" / "conversations" / "claude_code_session.jsonl"
runner = CliRunner()


def snapshot(store) -> dict[str, bytes]:
    return {p: (store.root / p).read_bytes() for p in scan_files(store.root)}


def bodies(store) -> dict[str, str]:
    return {read_memory(store.root, p).body.strip(): p for p in scan_files(store.root)}


@pytest.fixture
def llm_store(store):
    return open_store(store.root, env={"MEMCTL_LLM_MODEL": "gpt-4o-mini"})


@pytest.mark.model
def test_offline_dry_run_plans_and_writes_nothing_then_a_run_writes_the_plan(store):
    turns = read_conversation_file(FIXTURE)
    planned = extract(store, turns, dry_run=True, use_llm=False)

    assert planned.mode == "rules" and snapshot(store) == {}
    by_text = {item.text: item for item in planned.plan}
    assert by_text["The user's name is Ana."].type == "profile"
    assert by_text["Never add new dependencies without asking the user first."].type == "procedural"
    assert {item.op for item in planned.plan} == {"ADD"}

    done = extract(store, turns, use_llm=False)
    assert [a["action"] for a in done.applied] == ["created"] * len(planned.plan)
    assert set(bodies(store)) == set(by_text)
    name = read_memory(store.root, bodies(store)["The user's name is Ana."])
    assert (name.type, name.source, name.confidence) == ("profile", "explicit_user_input", 0.9)
    assert name.extra["subject"] == "profile:name"

    again = extract(store, turns, dry_run=True, use_llm=False)
    assert {item.op for item in again.plan} == {"NOOP"}
    assert {item.target_id for item in again.plan} == {
        read_memory(store.root, p).id for p in scan_files(store.root)
    }


@pytest.mark.model
def test_offline_a_changed_preference_is_planned_as_an_update(store):
    tabs = service.add_memory(store, "I prefer tabs for indentation", type="preference")
    turns = read_conversation(
        "user: Actually, I prefer spaces for indentation now.\nassistant: Noted."
    )

    plan = extract(store, turns, dry_run=True, use_llm=False).plan
    assert [(i.op, i.target_id) for i in plan] == [("UPDATE", tabs.memory.id)]

    applied = extract(store, turns, use_llm=False).applied
    assert [(a["action"], a["id"]) for a in applied] == [("updated", tabs.memory.id)]
    current, history = split_history(
        read_memory(store.root, next(iter(scan_files(store.root)))).body
    )
    assert "spaces" in current and "I prefer tabs for indentation" in history[0]


@pytest.mark.model
def test_offline_a_change_of_mind_in_one_conversation_updates_the_earlier_item(store):
    turns = read_conversation(
        "user: I prefer tabs for indentation.\nassistant: OK.\n"
        "user: Sorry, I changed my mind: I prefer spaces for indentation."
    )
    plan = extract(store, turns, dry_run=True, use_llm=False).plan
    assert [(i.op, i.target_label) for i in plan] == [("ADD", ""), ("UPDATE", "item 1")]
    extract(store, turns, use_llm=False)
    assert len(scan_files(store.root)) == 1


def _llm_reply(*memories: dict) -> str:
    return json.dumps({"memories": list(memories)})


@pytest.mark.model
def test_llm_plan_is_applied_through_the_write_path(llm_store):
    tabs = service.add_memory(llm_store, "I prefer tabs for indentation", type="preference")
    deploy = service.add_memory(llm_store, "We deploy with make release", type="procedural")
    reply = _llm_reply(
        {
            "op": "ADD",
            "type": "profile",
            "text": "The user's name is Ana.",
            "target_id": None,
            "confidence": 0.9,
            "reason": "stated",
        },
        {
            "op": "UPDATE",
            "type": "preference",
            "text": "The user prefers spaces for indentation.",
            "target_id": tabs.memory.id,
            "confidence": 0.9,
            "reason": "changed",
        },
        {
            "op": "NOOP",
            "type": "procedural",
            "text": "Deploys use make release.",
            "target_id": deploy.memory.id,
            "confidence": 0.8,
            "reason": "known",
        },
    )
    turns = read_conversation_file(FIXTURE)

    dry = extract(llm_store, turns, dry_run=True, mock_response=reply)
    assert dry.mode == "llm" and len(scan_files(llm_store.root)) == 2
    assert [(i.op, i.target_id) for i in dry.plan] == [
        ("ADD", None),
        ("UPDATE", tabs.memory.id),
        ("NOOP", deploy.memory.id),
    ]
    assert dry.usage["calls"] == 1 and dry.usage["prompt_tokens"] > 0 and dry.usage["cost_usd"] > 0

    done = extract(llm_store, turns, mock_response=reply)
    assert [a["action"] for a in done.applied] == ["created", "updated", "merged"]
    texts = bodies(llm_store)
    name = read_memory(llm_store.root, texts["The user's name is Ana."])
    assert name.source == "implicit_inference" and name.confidence == 0.9
    updated = read_memory(llm_store.root, tabs.path.relative_to(llm_store.root).as_posix())
    assert split_history(updated.body)[0] == "The user prefers spaces for indentation."
    merged = read_memory(llm_store.root, deploy.path.relative_to(llm_store.root).as_posix())
    assert merged.extra["mentions"] == 2 and merged.body.strip() == "We deploy with make release"


@pytest.mark.model
def test_llm_malformed_twice_writes_nothing(llm_store):
    service.add_memory(llm_store, "I prefer tabs for indentation", type="preference")
    before = snapshot(llm_store)
    with pytest.raises(LLMBadOutput, match="malformed JSON twice") as caught:
        extract(
            llm_store, read_conversation_file(FIXTURE), mock_response=["not json", "{still not"]
        )
    assert caught.value.reply.calls == 2
    assert snapshot(llm_store) == before


@pytest.mark.model
@pytest.mark.parametrize(
    "bad",
    [
        {"op": "DELETE", "type": "preference", "text": "x y z", "confidence": 0.5},
        {
            "op": "UPDATE",
            "type": "preference",
            "text": "Spaces.",
            "target_id": "nosuchid",
            "confidence": 0.9,
        },
        {"op": "ADD", "type": "preference", "text": "Spaces please.", "confidence": 1.5},
    ],
)
def test_llm_bad_shape_once_is_retried_and_the_valid_retry_applied(llm_store, bad):
    good = _llm_reply(
        {
            "op": "ADD",
            "type": "preference",
            "text": "The user prefers dark mode in every editor.",
            "target_id": None,
            "confidence": 0.85,
            "reason": "stated",
        }
    )
    result = extract(
        llm_store,
        read_conversation("user: I prefer dark mode in every editor."),
        mock_response=[_llm_reply(bad), good],
    )
    assert result.usage["calls"] == 2
    assert [a["action"] for a in result.applied] == ["created"]
    assert list(bodies(llm_store)) == ["The user prefers dark mode in every editor."]


@pytest.mark.model
def test_cli_extract_offline_and_with_a_mocked_llm(store, monkeypatch):
    monkeypatch.setenv("MEMCTL_STORE", str(store.root))
    monkeypatch.delenv("MEMCTL_LLM_MODEL", raising=False)
    table = runner.invoke(app, ["extract", str(FIXTURE), "--dry-run"])
    assert table.exit_code == 0, table.output
    assert "The user's name is Ana." in table.stdout and "Dry run: nothing written." in table.stdout
    assert (
        runner.invoke(app, ["extract", str(FIXTURE), "--llm"]).exit_code == 2
    )  # no model configured

    monkeypatch.setenv("MEMCTL_LLM_MODEL", "gpt-4o-mini")
    reply = _llm_reply(
        {
            "op": "ADD",
            "type": "profile",
            "text": "The user's name is Ana.",
            "target_id": None,
            "confidence": 0.9,
            "reason": "introduced herself",
        }
    )
    out = runner.invoke(
        app, ["extract", "-", "--json", "--llm-mock-response", reply], input=FIXTURE.read_text()
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["mode"] == "llm" and data["usage"]["completion_tokens"] > 0
    assert [(a["action"], a["id"]) for a in data["applied"]] == [
        ("created", data["applied"][0]["id"])
    ]
    failed = runner.invoke(
        app,
        [
            "extract",
            str(FIXTURE),
            "--json",
            "--llm-mock-response",
            "nope",
            "--llm-mock-response",
            "nope",
        ],
    )
    assert failed.exit_code == 1
    error = json.loads(failed.stdout)
    assert error["error"]["kind"] == "llm_bad_output" and error["usage"]["calls"] == 2
    assert len(scan_files(store.root)) == 1
