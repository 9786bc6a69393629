"""The LLM plumbing, through litellm's real mock_response path (no network)."""

from __future__ import annotations

import pytest

from memctl.integrations.llm import LLMBadOutput, complete_json, complete_text, llm_settings

SETTINGS = {"model": "gpt-4o-mini", "timeout": 5}
ASK = [{"role": "user", "content": 'Return {"ok": true}'}]


def test_no_model_means_no_llm(store):
    assert llm_settings(store) is None


def test_model_from_environment(tmp_path):
    from memctl import service
    from memctl.config import open_store

    root = service.init_store(tmp_path).root
    assert (
        llm_settings(open_store(root, env={"MEMCTL_LLM_MODEL": "ollama/llama3.1"})).model
        == "ollama/llama3.1"
    )


def test_text_completion_reports_tokens_and_cost():
    reply = complete_text(SETTINGS, ASK, mock_response="hello")
    assert reply.text == "hello"
    assert reply.prompt_tokens > 0 and reply.completion_tokens > 0
    assert reply.cost_usd > 0  # gpt-4o-mini has a price in litellm's local cost map


def test_json_in_a_fence_is_accepted():
    data, reply = complete_json(SETTINGS, ASK, mock_response='Sure:\n```json\n{"ok": true}\n```')
    assert data == {"ok": True} and reply.calls == 1


def test_malformed_json_is_retried_once():
    data, reply = complete_json(SETTINGS, ASK, mock_response=["not json", '{"ok": 1}'])
    assert data == {"ok": 1}
    assert reply.calls == 2


def test_malformed_twice_is_reported():
    with pytest.raises(LLMBadOutput, match="malformed JSON twice"):
        complete_json(SETTINGS, ASK, mock_response=["nope", "still nope"])
