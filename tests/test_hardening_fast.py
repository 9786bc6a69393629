"""The fast part of benchmarks/hardening.py (the issue-34 cases), run by CI with the real CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.hardening import REPO, Runner
from benchmarks.hostile import (
    config_not_yaml,
    forget_goal,
    hook_ingest_any_file,
    hostile_store,
)

pytestmark = [pytest.mark.slow, pytest.mark.model]


@pytest.fixture
def runner(tmp_path: Path) -> Runner:
    return Runner(REPO, tmp_path)


def test_every_command_survives_a_store_of_hostile_files(runner):
    said = hostile_store(runner)
    assert "9 commands: 0 crashed" in said
    assert "0 hung" in said
    assert "escape bytes printed by 0" in said
    assert "0 hostile files rewritten" in said
    assert "0 files written outside" in said
    assert "good memory recalled" in said
    # export lacks the files it could not read, so it says so with exit 1; the rest answer
    assert "export 1" in said and "list 0" in said and "recall 0" in said


@pytest.mark.parametrize("kind", ["fifo", "bomb"])
def test_a_config_that_is_not_yaml_is_an_error_naming_it_not_a_hang(runner, kind):
    said = config_not_yaml(kind)(runner)
    assert said.startswith("list exit 1:")
    assert "config.yaml" in said


def test_hook_ingest_leaves_a_file_that_is_not_its_job_alone(runner):
    assert hook_ingest_any_file(runner) == "hook ingest exit 1; the file is left as it was"


def test_forget_of_an_unknown_id_keeps_the_task(runner):
    assert forget_goal(runner) == "forget goal exit 1; task show exit 0"
