"""What the store would refuse to read back is refused at the door, in one line, exit 1."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from memctl import service
from memctl.cli.app import app
from memctl.config import open_store
from memctl.core.errors import InvalidMemoryFile
from memctl.core.files.input_limits import InputRefused
from memctl.service.memories.exchange import ImportRefused, import_file

runner = CliRunner()
CONFLICT = "Deploy notes\n<<<<<<< HEAD\nmake release\n=======\nmake ship\n>>>>>>> main\n"


def small_limit(store, size: int = 8192):
    config = store.root / "config.yaml"
    config.write_text(
        config.read_text(encoding="utf-8") + f"\nlimits:\n  max_file_bytes: {size}\n",
        encoding="utf-8",
    )
    return open_store(store.root)


def memory_files(store) -> list:
    return [p for p in store.root.rglob("*.md") if p.name != "README.md"]


def invoke(store, *args, **kwargs):
    return runner.invoke(app, ["--store", str(store.root), *args], **kwargs)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("x " * 5000, "limits.max_file_bytes"),
        ("A note about the build\x00 with a NUL byte", "NUL byte"),
        (CONFLICT, "conflict marker (line 2"),
    ],
)
def test_add_refuses_what_the_store_would_skip_and_writes_nothing(
    store, fake_embedder, text, named
):
    small_limit(store)
    result = invoke(store, "add", "-", input=text)
    assert result.exit_code == 1
    assert named in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "unexpectedly" not in result.output
    assert memory_files(store) == [] and fake_embedder.texts == []


def test_the_add_service_refuses_before_redacting_or_embedding(store, fake_embedder):
    """What MCP `add` calls: a clear error the agent reads, before any slow step."""
    store = small_limit(store)
    with pytest.raises(InputRefused, match="limits.max_file_bytes"):
        service.add_memory(store, "token=abc " * 100_000)
    with pytest.raises(InputRefused, match="not valid UTF-8"):
        service.add_memory(store, "caf\udce9 menu for the team lunch")
    with pytest.raises(InputRefused, match="The title"):
        service.add_memory(store, "A fine note about lunch", title="bad\x00title")
    assert memory_files(store) == [] and fake_embedder.texts == []


def test_session_add_refuses_a_turn_the_store_could_not_keep(store, fake_embedder):
    small_limit(store)
    result = invoke(store, "session", "add", "-S", "s1", "-", input="word " * 3000)
    assert result.exit_code == 1 and "limits.max_file_bytes" in result.stderr
    result = invoke(store, "session", "add", "-S", "s1", CONFLICT)
    assert result.exit_code == 1 and "conflict marker" in result.stderr
    assert not list(store.state_dir.glob("sessions/*"))


def test_import_refuses_the_file_naming_each_bad_line(store, fake_embedder, tmp_path):
    store = small_limit(store)
    lines = [
        {"text": "We deploy with make release"},
        {"text": "A record with a NUL \x00 byte"},
        {"text": "y " * 5000},
        {"text": CONFLICT},
    ]
    source = tmp_path / "records.jsonl"
    source.write_text("\n".join(json.dumps(r) for r in lines) + "\n", encoding="utf-8")
    with pytest.raises(ImportRefused) as refused:
        import_file(store, source)
    assert [p.line for p in refused.value.problems] == [2, 3, 4]
    assert all(isinstance(p, InvalidMemoryFile) for p in refused.value.problems)
    assert memory_files(store) == []


def test_stdin_that_is_not_utf8_is_a_clear_error(store, fake_embedder):
    result = invoke(store, "add", "-", input=b"caf\xe9 menu for the team lunch")
    assert result.exit_code == 1
    assert "not valid UTF-8 (byte 0xe9 on line 1)" in result.stderr
    assert memory_files(store) == []


@pytest.mark.slow
@pytest.mark.parametrize("command", [["add"], ["recall"], ["session", "add", "-S", "s1"]])
def test_an_argument_that_is_not_utf8_is_a_clear_error(store, command):
    """A Latin-1 byte in argv (Python reads it as a lone surrogate) is named, not a crash."""
    args = [sys.executable, "-m", "memctl", "--store", str(store.root), *command]
    env = {**os.environ, "MEMCTL_NO_SERVER": "1", "LC_ALL": "C.UTF-8"}
    done = subprocess.run([*args, b"caf\xe9 menu"], capture_output=True, env=env, check=False)
    err = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 1
    assert "not valid UTF-8 (byte 0xe9" in err and "caf\\xe9" in err
    assert "unexpectedly" not in err and "Traceback" not in err
