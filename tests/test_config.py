"""config.yaml is read into typed settings once, when a store is opened, and checked there:
a bad value stops the command with `config.yaml:LINE: what is wrong`, an unknown key warns."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from memctl import service
from memctl.config import DEFAULTS, HooksSettings, Settings, check_config, open_store
from memctl.core.errors import InvalidConfig


def run_memctl(store, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "memctl", "--store", str(store.root), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


# (config.yaml text, line of the culprit, what the message says)
BAD_CONFIGS = [
    ('recall:\n  k: "five"\n', 2, "recall.k must be a whole number, got 'five'"),
    ("recall:\n  k: 0\n", 2, "recall.k must be at least 1, got 0"),
    ("# weights\nrecall:\n  bm25_weight: -3\n", 3, "recall.bm25_weight must be at least 0"),
    ("write:\n  min_chars: 12\n  dedup_threshold: 1.5\n", 3, "must be between 0 and 1"),
    ("context:\n  min_relevance: -0.1\n", 2, "context.min_relevance must be between 0 and 1"),
    (
        "recall:\n  fusion: average\n",
        2,
        "recall.fusion must be one of: adaptive, zscore, score, rrf",
    ),
    ("recall:\n  neighbour_weights:\n    - 0.4\n    - -1\n", 4, "neighbour_weights.1"),
    ("decay:\n  weights:\n    age: heavy\n", 3, "decay.weights.age must be a number"),
    ("session:\n  compact_on_add: maybe\n", 2, "must be true or false"),
    ("hooks: 5\n", 1, "hooks must be a mapping of settings"),
    ("redaction:\n  disabled: email\n", 2, "redaction.disabled must be a list"),
    ("embedding:\n  model: bge-large\n", 2, "embedding.model must be one of"),
    ("recall:\n  k: [5\n", 3, "broken YAML"),
    ("- recall\n- k\n", 1, "must be a mapping of sections"),
]


@pytest.mark.parametrize("text, line, problem", BAD_CONFIGS)
def test_a_bad_value_stops_the_command_naming_file_and_line(store, text, line, problem):
    (store.root / "config.yaml").write_text(text, encoding="utf-8")
    done = run_memctl(store, "recall", "how do we deploy")
    assert done.returncode == 1, done.stderr
    assert f"config.yaml:{line}: " in done.stderr and problem in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    with pytest.raises(InvalidConfig) as caught:
        open_store(store.root)
    assert caught.value.line == line and problem in caught.value.problem


def test_a_bad_value_is_a_json_error_with_json(store):
    (store.root / "config.yaml").write_text('recall:\n  k: "five"\n', encoding="utf-8")
    done = run_memctl(store, "recall", "deploy", "--json")
    assert done.returncode == 1
    error = json.loads(done.stdout)["error"]
    assert error["kind"] == "invalid_config" and "config.yaml:2: recall.k" in error["message"]


@pytest.mark.model
def test_unknown_sections_and_keys_warn_with_their_line_and_the_command_runs(store):
    service.add_memory(store, "We deploy with make release every Tuesday")
    (store.root / "config.yaml").write_text(
        "recall:\n  k: 1\n  kk: 3\nrecal:\n  k: 4\n", encoding="utf-8"
    )
    done = run_memctl(store, "recall", "how do we deploy", "--json")
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)) == 1  # recall.k: 1 was read, the rest ignored
    assert "config.yaml:3: unknown setting 'recall.kk'" in done.stderr
    assert "config.yaml:4: unknown setting 'recal'" in done.stderr
    assert "known sections: embedding, recall" in done.stderr


def test_settings_are_typed_with_defaults_from_the_dataclasses(store):
    (store.root / "config.yaml").write_text(
        "recall:\n  bm25_weight: 1\n  neighbour_weights: [0.5]\ncontext:\n  split: {task: 0.5}\n",
        encoding="utf-8",
    )
    settings = open_store(store.root).settings
    assert settings.recall.bm25_weight == 1.0 and isinstance(settings.recall.bm25_weight, float)
    assert settings.recall.neighbour_weights == (0.5,)
    assert settings.recall.k == Settings().recall.k == DEFAULTS["recall"]["k"]
    assert (settings.context.split.task, settings.context.split.facts) == (0.5, 0.15)


def test_section_is_the_untyped_view_and_keeps_sections_it_does_not_know(store):
    (store.root / "config.yaml").write_text(
        "recall:\n  k: 7\nfuture:\n  idle_minutes: 10\n", encoding="utf-8"
    )
    opened = open_store(store.root, warn=None)
    assert opened.section("recall")["k"] == 7
    assert opened.section("recall")["neighbour_weights"] == [0.4, 0.1]
    assert opened.section("future") == {"idle_minutes": 10}
    assert opened.section("nothing") == {}


def test_the_environment_is_read_once_and_not_kept(store):
    (store.root / "config.yaml").write_text("llm:\n  api_key: sk-not-for-reprs\n", encoding="utf-8")
    opened = open_store(store.root, env={"MEMCTL_LLM_MODEL": "ollama/llama3.1", "HOME": "/x"})
    assert opened.settings.llm.model == "ollama/llama3.1"
    assert opened.settings.llm.api_key == "sk-not-for-reprs"
    assert "sk-not-for-reprs" not in repr(opened) and "HOME" not in repr(opened)
    assert not hasattr(opened, "env")


def test_a_replaced_key_names_its_successor_and_is_not_carried_over():
    data = {"hooks": {"prompt_min_similarity": 0.3}, "context": {"min_similarity": 0.2}}
    loaded = check_config(data, "config.yaml", {("hooks", "prompt_min_similarity"): 2})
    assert loaded.settings.hooks.prompt_min_relevance == HooksSettings().prompt_min_relevance
    assert any(
        "config.yaml:2: 'hooks.prompt_min_similarity' was replaced by 'hooks.prompt_min_relevance'"
        in warning
        for warning in loaded.warnings
    )
    assert any("'context.min_relevance'" in warning for warning in loaded.warnings)
