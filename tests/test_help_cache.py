"""`memctl --help` answered from the cache: the text typer prints, for the same code only."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from memctl.cli.app import MODULE_OF
from memctl.cli.help_cache import HelpEntry, is_help_request


def test_only_command_words_before_a_final_help_are_cached():
    assert is_help_request(["--help"], MODULE_OF)
    assert is_help_request(["recall", "--help"], MODULE_OF)
    assert is_help_request(["hook", "claude-code", "--help"], MODULE_OF)
    assert not is_help_request(["recall", "some query", "--help"], MODULE_OF)
    assert not is_help_request(["nosuch", "--help"], MODULE_OF)
    assert not is_help_request(["--store", "x", "--help"], MODULE_OF)
    assert not is_help_request(["recall", "--help", "x"], MODULE_OF)


def test_an_entry_is_used_only_by_the_same_code_and_width(tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path), "COLUMNS": "100", "LINES": "40"}
    HelpEntry(["--help"], env, identity="code-1").write("Usage: one\n")
    assert HelpEntry(["--help"], env, identity="code-1").read() == "Usage: one\n"
    assert HelpEntry(["--help"], env, identity="code-2").read() is None
    assert HelpEntry(["--help"], {**env, "COLUMNS": "60"}, identity="code-1").read() is None
    assert HelpEntry(["add", "--help"], env, identity="code-1").read() is None


@pytest.mark.slow
def test_help_from_the_cache_is_what_typer_prints_and_follows_code_changes(tmp_path):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), "COLUMNS": "80", "LINES": "24"}

    def run_help() -> str:
        done = subprocess.run(
            [sys.executable, "-m", "memctl", "--help"], env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    printed = run_help()  # a miss: typer prints it, the entry is written
    (entry,) = (tmp_path / "memctl").iterdir()
    assert printed.startswith("Usage: python -m memctl [OPTIONS] COMMAND")
    assert "recall" in printed and "Start with: memctl init" in printed
    assert run_help() == printed  # a hit: the same bytes

    # An entry written by other code (another identity) is not used, and is replaced.
    key, _, _ = entry.read_text(encoding="utf-8").partition("\n")
    other = "0000beef-1" + key[key.index("\0") :]
    entry.write_text(f"{other}\nUsage: stale help of other code\n", encoding="utf-8")
    assert run_help() == printed
    assert entry.read_text(encoding="utf-8") == f"{key}\n{printed}"
