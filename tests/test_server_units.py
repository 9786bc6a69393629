"""The resident server's small parts, without a server: the client's config reader agrees with
memctl.config, command lines are read as typer reads them, the wire format keeps bytes exact."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from memctl.config import load_config
from memctl.core.errors import InvalidConfig
from memctl.server import location
from memctl.server.client import CommandLine
from memctl.server.protocol import recv_message, send_message

TEMPLATE = (Path(__file__).resolve().parents[1] / "templates" / "config.yaml").read_text()


@pytest.mark.parametrize(
    "text",
    [
        "",
        "recall:\n  k: 3\n",
        TEMPLATE,
        TEMPLATE.replace("  auto: true ", "  auto: false"),
        "server:\n  idle_minutes: 5\n  auto: no   # off for this repo\n",
        "server:\n\n  # comment\n  auto: 'false'\nrecall: {k: 2}\n",
        "server: {auto: false, idle_minutes: 3}\n",
        "server: {idle_minutes: 3}\n",
        "server:\n  auto: true\nserver:\n  auto: false\n",  # repeated key: the last wins
        "server:\n  auto: 0\n",
        "server:\n  auto: off\n",
        "servers:\n  auto: false\n",
        "server:\n  nested:\n    auto: false\n",
        "server: [1, 2]\n",
    ],
)
def test_the_clients_server_auto_agrees_with_the_config(tmp_path, text):
    (tmp_path / "config.yaml").write_text(text)
    try:
        section = load_config(tmp_path).get("server")
    except InvalidConfig:  # the in-process path reports it, with its line, at once
        expected = False
    else:
        expected = not (isinstance(section, dict) and not section.get("auto", True))
    assert location.server_auto(text.encode(), tmp_path) is expected


def test_command_lines_are_read_like_typer_reads_them():
    line = CommandLine(["--store", "/tmp/s", "recall", "q", "-k", "3"])
    assert (line.name, line.store, line.rest, line.served) == (
        "recall",
        "/tmp/s",
        ["q", "-k", "3"],
        True,
    )
    assert CommandLine(["-s/tmp/s", "add", "-"]).reads_stdin
    assert CommandLine(["--store=/x", "context"]).store == "/x"
    assert CommandLine(["list", "--limit", "20"]).served  # listing from the engine
    assert not CommandLine(["show", "abc"]).served
    assert not CommandLine(["recall", "--help"]).served
    assert CommandLine(["hook", "claude-code", "user-prompt-submit"]).served
    assert (
        CommandLine(["hook", "claude-code", "--plain", "session-start"]).hook_event
        == "session-start"
    )
    assert not CommandLine(["hook", "git", "pre-commit"]).served
    assert CommandLine([]).name is None


def test_the_engine_folder_is_the_runtime_dir_else_the_cache_dir_and_must_be_private(tmp_path):
    runtime, cache = tmp_path / "run", tmp_path / "cache"
    runtime.mkdir()
    chosen = {"MEMCTL_RUNTIME_DIR": str(tmp_path / "engine"), "XDG_RUNTIME_DIR": str(runtime)}
    assert location.socket_path(chosen) == str(tmp_path / "engine" / "engine.sock")
    xdg = {"XDG_RUNTIME_DIR": str(runtime), "XDG_CACHE_HOME": str(cache)}
    assert location.socket_path(xdg) == str(runtime / "memctl" / "engine.sock")
    no_runtime = {"XDG_CACHE_HOME": str(cache), "HOME": str(tmp_path)}
    assert location.engine_dir(no_runtime) == str(cache / "memctl")
    assert location.engine_dir({"HOME": str(tmp_path)}) == str(tmp_path / ".cache" / "memctl")
    path = Path(location.socket_path(xdg))
    assert location.private_socket_dir(path)
    assert (path.parent.stat().st_mode & 0o777) == 0o700
    os.chmod(path.parent, 0o755)  # readable by others: refused
    assert not location.private_socket_dir(path)
    planted = tmp_path / "planted"
    planted.symlink_to(runtime)  # a symlink where the folder should be: refused
    assert not location.private_dir(planted)


def test_a_runtime_dir_too_long_for_a_socket_gets_a_hashed_socket(tmp_path):
    deep = {"MEMCTL_RUNTIME_DIR": str(tmp_path / ("x" * 120))}
    path = location.socket_path(deep)
    assert len(os.fsencode(path)) <= 107 and path.startswith(f"/tmp/memctl-{os.getuid()}/")
    assert path != location.socket_path({"MEMCTL_RUNTIME_DIR": str(tmp_path / ("y" * 120))})


def test_messages_carry_any_bytes_exactly():
    left, right = socket.socketpair()
    with left, right:
        blobs = (b"\xff\xfe not utf-8 \x00", b"", "é\n".encode() * 1000)
        send_message(left, {"op": "run", "argv": ["recall", "ü"]}, blobs)
        header, received = recv_message(right)
        assert header["argv"] == ["recall", "ü"] and tuple(received) == blobs
        left.close()
        with pytest.raises(ConnectionError):
            recv_message(right)


def test_a_served_add_answers_first_and_indexes_before_the_next_command(tmp_path, fake_embedder):
    """The server's runner leaves an add's index write for after the reply: the file is on
    disk when it answers; the index has it once the upkeep ran (before the next request)."""
    from memctl import service
    from memctl.cli.resident import ResidentCommands
    from memctl.store.index import Manifest

    project = tmp_path / "project"
    store = service.init_store(project)
    runner = ResidentCommands()
    runner.prepare()
    request = {
        "argv": ["add", "Deploys go out with make release, then argo promotes them"],
        "cwd": str(project),
        "env": {**os.environ, "MEMCTL_NO_SERVER": "1"},
    }
    code, chunks = runner.run(request, b"", None)
    assert code == 0, chunks
    written = Path(chunks[0][1].decode().split()[-1])
    assert written.read_text().endswith("then argo promotes them\n")
    relpath = written.relative_to(store.root).as_posix()
    assert relpath not in Manifest.load(store.index_dir).files  # answered before indexing
    assert runner.after_reply() == []
    assert relpath in Manifest.load(store.index_dir).files
    hits = service.recall(
        service.RecallRequest(store, "how do deploys go out", k=1, sync=False)
    ).hits
    assert [str(hit.path) for hit in hits] == [str(written)]


def test_headers_are_the_json_the_json_package_writes_and_reads():
    from memctl.server.protocol import dumps, loads

    header = {
        "argv": ["recall", 'ü "quoted" \\ \n', "\udcff"],  # an undecodable byte of argv
        "env": {"LANG": "C.UTF-8", "EMPTY": ""},
        "exit": -1,
        "ratio": 0.25,
        "flags": [True, False, None],
    }
    assert dumps(header) == json.dumps(header, separators=(",", ":"))
    assert loads(dumps(header)) == header
    assert loads(' {"cwd": "/x"}\n') == {"cwd": "/x"}  # a hook payload with its newline
    for bad in ("", "{", '{"a": 1} trailing', "{'a': 1}"):
        with pytest.raises(ValueError):
            loads(bad)


def test_only_reads_get_their_freshness_barrier_planted_as_they_start(tmp_path):
    """recall and context write no memory file before their first sync, so the server plants
    their barrier early; not for a write, nor while a killed forget waits to be finished (the
    command finishes it, writing files, before it syncs)."""
    from memctl import service
    from memctl.cli.resident import ResidentCommands
    from memctl.server.stores import StoreSession
    from memctl.store.forget_journal import journal_path

    store = service.init_store(tmp_path / "project")
    runner = ResidentCommands()
    session = StoreSession(root=store.root, store=store, config="")

    def reads_first(*argv: str) -> bool:
        return runner.reads_first({"argv": list(argv)}, session)

    assert reads_first("recall", "how do we deploy", "-k", "3")
    assert reads_first("--store", str(store.root), "context", "--format", "json")
    assert not reads_first("add", "we deploy with make release")
    assert not reads_first("hook", "claude-code", "user-prompt-submit")
    assert not runner.reads_first({"argv": ["recall", "deploy"]}, None)  # no store open
    store.state_dir.mkdir(parents=True, exist_ok=True)
    journal_path(store.state_dir).write_text("{}")
    assert not reads_first("recall", "how do we deploy")


def test_the_client_types_recall_and_the_hot_hooks_and_replays_what_it_is_unsure_of():
    from memctl.server.typed import typed_request

    typed = typed_request(
        ["--store", "s", "recall", "deploy steps", "-k", "3", "--tag", "a", "--tag=b", "--json"]
    )
    assert typed == {
        "use_case": "recall",
        "request": {
            "types": [],
            "tags": ["a", "b"],
            "k": 3,
            "as_json": True,
            "query": "deploy steps",
        },
    }
    assert typed_request(["recall", "--", "-k"])["request"]["query"] == "-k"
    hook = typed_request(["hook", "claude-code", "user-prompt-submit", "--plain"])
    assert hook == {"use_case": "hook", "event": "user-prompt-submit", "plain": True}
    for replayed in (
        ["recall", "x", "--path", "a.py"],  # path recall is not typed
        ["recall", "x", "-k3"],
        ["recall", "x", "-k", "three"],  # click words this error
        ["recall", "x", "--min-relevance", "nan"],
        ["recall", "x", "--help"],
        ["recall", "x", "y"],  # click reports the extra word
        ["recall"],
        ["recall", "x", "--json=yes"],
        ["--version", "recall", "x"],
        ["hook", "claude-code", "session-end"],
        ["hook", "git", "pre-commit"],
        ["add", "a note"],
    ):
        assert typed_request(replayed) is None, replayed
