"""Fail clearly: an error memctl did not expect is one sentence on stderr (or JSON), exit 1, and
the traceback only under MEMCTL_DEBUG=1."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from memctl.cli.app import app

runner = CliRunner()


@pytest.fixture
def broken_store(store):
    """A store whose semantic/ folder is a file: writing a memory there fails with an OSError."""
    shutil.rmtree(store.root / "semantic", ignore_errors=True)
    (store.root / "semantic").write_text("not a folder\n")
    return store


def add(store, *args: str, debug: bool = False):
    env = {"MEMCTL_DEBUG": "1" if debug else "0"}
    return runner.invoke(
        app, ["--store", str(store.root), "add", *args, "We deploy with make release."], env=env
    )


@pytest.mark.usefixtures("fake_embedder")
def test_an_unexpected_error_is_one_sentence_and_exit_1(broken_store):
    done = add(broken_store)
    assert done.exit_code == 1
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "unexpectedly (FileExistsError" in done.stderr and "MEMCTL_DEBUG=1" in done.stderr

    as_json = add(broken_store, "--json")
    assert as_json.exit_code == 1
    assert json.loads(as_json.stdout)["error"]["kind"] == "unexpected"

    debug = add(broken_store, debug=True)
    assert debug.exit_code == 1 and "Traceback" in debug.stderr


def test_extract_of_a_missing_file_is_a_clear_error(store, tmp_path):
    missing = tmp_path / "missing.jsonl"
    done = runner.invoke(app, ["--store", str(store.root), "extract", str(missing)])
    assert done.exit_code == 1
    assert done.stderr.strip() == f"Error: Cannot read {missing}: No such file or directory."
