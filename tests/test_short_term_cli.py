"""The session, task, compact and context commands, and token counting that never goes online."""

from __future__ import annotations

import json
import socket

import pytest
from typer.testing import CliRunner

from memctl.cli.app import app
from memctl.core.language.tokens import estimate_tokens
from memctl.integrations import tokenizer

runner = CliRunner()


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MEMCTL_STORE", raising=False)
    assert runner.invoke(app, ["init"]).exit_code == 0
    return tmp_path


def invoke(*args: str, input: str | None = None):
    return runner.invoke(app, list(args), input=input)


def test_session_commands(project):
    assert (
        invoke("session", "add", "--session", "s1", "--role", "system", "Be brief.").exit_code == 0
    )
    piped = invoke(
        "session", "add", "-S", "s1", "-", input="We ship on Fridays.\nNever on holidays.\n"
    )
    assert piped.exit_code == 0, piped.output
    added = json.loads(
        invoke("session", "add", "-S", "s1", "-r", "assistant", "Noted.", "--json").stdout
    )
    assert added["session_turns"] == 3 and added["tokens"] > 0

    shown = json.loads(invoke("session", "show", "s1", "--json").stdout)
    assert [t["role"] for t in shown["turns"]] == ["system", "user", "assistant"]
    assert shown["turns"][1]["content"] == "We ship on Fridays.\nNever on holidays.\n"
    listed = json.loads(invoke("session", "list", "--json").stdout)
    assert [s["id"] for s in listed] == ["s1"] and "turns" not in listed[0]

    ended = json.loads(invoke("session", "end", "s1", "--json").stdout)
    assert "episode_id" not in ended and "exchanges" in ended["note"]  # one exchange only

    bad = invoke("session", "add", "-S", "s1", "-r", "robot", "hi", "--json")
    assert bad.exit_code == 2 and json.loads(bad.stdout)["error"]["kind"] == "usage"
    missing = invoke("session", "show", "nope")
    assert missing.exit_code == 1 and "No session 'nope'" in missing.output


@pytest.mark.usefixtures("fake_embedder")
def test_task_commands_end_in_an_episode(project):
    assert invoke("task", "show", "--json").stdout.strip() == "null"
    started = invoke(
        "task", "start", "Upgrade Redis to 7.2", "--plan", "snapshot", "--plan", "upgrade"
    )
    assert started.exit_code == 0, started.output
    assert (
        invoke("task", "step", "1", "--status", "done", "--result", "snapshot at 02:00").exit_code
        == 0
    )
    assert invoke("task", "note", "host", "cache-2").exit_code == 0
    shown = json.loads(invoke("task", "show", "--json").stdout)
    assert shown["steps"][0] == {
        **shown["steps"][0],
        "status": "done",
        "result": "snapshot at 02:00",
    }
    assert shown["notes"] == {"host": "cache-2"}
    wrong = invoke("task", "step", "2", "--status", "finished")
    assert wrong.exit_code == 2

    done = json.loads(
        invoke("task", "done", "--failed", "--lesson", "check replica lag first", "--json").stdout
    )
    assert done["outcome"] == "failed"
    episode = json.loads(invoke("show", done["episode_id"], "--json").stdout)
    assert "check replica lag first" in json.dumps(episode)
    assert invoke("task", "show").stdout.strip() == "No task in progress."


@pytest.mark.model
def test_compact_dry_run_and_context_commands(project):
    for n in range(3):
        invoke("task", "start", f"Rotate the API key ({n})", "--target", "api-gateway")
        invoke("task", "done", "--lesson", "update the vault path too")
    dry = json.loads(invoke("compact", "--dry-run", "--json").stdout)
    assert dry["dry_run"] and dry["written"] == 0 and len(dry["consolidations"]) == 1
    table = invoke("compact", "--dry-run")
    assert "consolidate" in table.stdout and "Dry run: nothing was written." in table.stdout
    real = json.loads(invoke("compact", "--json").stdout)
    assert real["written"] == 1 and real["consolidations"][0]["knowledge_id"]
    assert invoke("compact").stdout.strip() == "Nothing to compact."

    context = invoke("context", "api key rotation", "--budget", "300")
    assert context.exit_code == 0 and context.stdout.startswith("<memctl-notes>\n")
    assert "\n## Relevant memories\n" in context.stdout and "\n# " not in context.stdout
    assert "via knowledge" in context.stdout
    assert invoke("context", "x", "--budget", "10").exit_code == 2


def test_token_counts_use_the_local_cl100k_copy():
    if tokenizer.tokenizer_name() != "cl100k_base":
        pytest.skip("no local cl100k_base file in this environment")
    assert tokenizer.count_tokens("hello world") == 2


def test_without_a_local_encoding_tokens_are_estimated_and_nothing_goes_online(
    tmp_path, monkeypatch
):
    def no_network(*args, **kwargs):
        raise AssertionError("token counting tried the network")

    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(tokenizer, "_candidate_dirs", lambda: [tmp_path])
    tokenizer._encoding.cache_clear()
    try:
        assert tokenizer.tokenizer_name() == "estimate"
        assert tokenizer.count_tokens("hello world, hello") == estimate_tokens("hello world, hello")
    finally:
        tokenizer._encoding.cache_clear()
    assert estimate_tokens("你好世界") == 4 and estimate_tokens("abcdefgh") == 2
