"""The user's engine's life: it starts itself once, leaves when no store is open any more, is
replaced by other code (a changed config.yaml only reopens its store), survives kill -9 and
hangs without losing an acknowledged write, and keeps its socket private. Real engine processes
on real stores in tmp dirs (each module has its own engine folder); waits are bounded polls."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import threading
from pathlib import Path

import pytest
from server_support import (
    COMMAND,
    REPO,
    alive,
    engine_home,  # noqa: F401 - this module's own engine folder
    engine_log,
    memctl,
    memctl_env,
    running_pid,
    server_processes,
    socket_of,
    start_server,
    stop_everything,
    wait_for_server,
    wait_until,
)

from memctl import service

pytestmark = [pytest.mark.resident_server, pytest.mark.model, pytest.mark.slow]


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "project"
    store = service.init_store(root)
    service.add_memory(store, "We deploy with make release, then promote the rollout")
    service.add_memory(store, "Use pnpm, never npm, for the frontend packages")
    yield root
    stop_everything(store.root)


def store_of(project: Path) -> Path:
    return project / ".memory"


def set_server_config(project: Path, key: str, value: str) -> None:
    """Change one key of the template's `server:` section, as a person edits it."""
    config = store_of(project) / "config.yaml"
    text, count = re.subn(rf"(?m)^(  {key}:) *[^ #\n]+", rf"\g<1> {value}", config.read_text())
    assert count == 1
    config.write_text(text)


def test_a_hot_command_starts_one_server_in_the_background(project):
    store = store_of(project)
    first = memctl("recall", "deploy", "--json", cwd=project)
    assert first.returncode == 0 and json.loads(first.stdout)[0]["title"].startswith("We deploy")
    pid = wait_for_server(store)
    assert "serving on" in engine_log().read_text()
    again = memctl("recall", "deploy", "--json", cwd=project)
    assert again.stdout == first.stdout and running_pid(store) == pid
    assert not (store / ".state" / "server.log").exists()  # the engine's files are its own


def test_the_socket_and_its_folder_are_private_to_their_owner(project):
    store = store_of(project)
    memctl("recall", "deploy", cwd=project)
    wait_for_server(store)
    mode = socket_of().stat().st_mode
    assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600
    assert stat.S_IMODE(socket_of().parent.stat().st_mode) == 0o700
    assert socket_of().parent.stat().st_uid == os.getuid()


def test_an_engine_folder_open_to_others_is_refused(project, tmp_path):
    store = store_of(project)
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    env = {"MEMCTL_RUNTIME_DIR": str(shared)}
    found = memctl("recall", "deploy", "--json", cwd=project, env=env)
    assert found.returncode == 0 and json.loads(found.stdout)  # answered in-process
    refused = subprocess.run(
        [*COMMAND, "serve"], env=memctl_env(True, env), capture_output=True, timeout=300
    )
    assert refused.returncode == 1 and b"not private" in refused.stderr
    assert list(shared.iterdir()) == [] and server_processes(store) == []


def test_server_auto_false_and_the_environment_keep_everything_in_process(project):
    store = store_of(project)
    log = engine_log()
    logged = log.read_bytes() if log.exists() else b""
    off = memctl("recall", "deploy", "--json", cwd=project, server=False)
    assert off.returncode == 0 and json.loads(off.stdout)
    set_server_config(project, "auto", "false")
    configured_off = memctl("recall", "deploy", "--json", cwd=project)
    assert configured_off.stdout == off.stdout
    assert not (socket_of().parent / "engine.starting").exists()
    assert (log.read_bytes() if log.exists() else b"") == logged  # no engine was started
    assert server_processes(store) == []


def test_an_idle_server_leaves(project):
    store = store_of(project)
    set_server_config(project, "idle_minutes", "0.02")  # 1.2 s
    log = engine_log()
    seen = len(log.read_text()) if log.exists() else 0  # earlier tests' engines logged there

    def logged() -> str:
        return log.read_text()[seen:] if log.exists() else ""

    memctl("recall", "deploy", cwd=project)
    wait_for_server(store)
    memctl("recall", "deploy", cwd=project)  # the engine opens the store, then closes it idle
    wait_until(lambda: "stopped\n" in logged(), "the engine to stop")
    text = logged()
    assert "serving on" in text and f"closed store {store}: idle for" in text
    assert "stopping: idle for" in text and "no store open" in text
    wait_until(lambda: not [p for p in server_processes(store) if alive(p)], "the process to end")
    assert not socket_of().exists()
    assert not (socket_of().parent / "engine.json").exists()


def test_the_engine_leaves_when_its_only_store_is_removed_and_never_recreates_it(project):
    store = store_of(project)
    memctl("recall", "deploy", cwd=project)
    pid = wait_for_server(store)
    memctl("recall", "deploy", cwd=project)  # opened in the engine
    shutil.rmtree(store)
    wait_until(lambda: not alive(pid), "the engine of a removed store to leave")
    assert f"closed store {store}: store folder removed" in engine_log().read_text()
    assert not store.exists()
    gone = memctl("recall", "deploy", cwd=project)
    assert gone.returncode == 1 and b"No .memory/ found" in gone.stderr
    assert not store.exists()


def test_two_clients_racing_end_with_one_server(project):
    store = store_of(project)
    env = memctl_env(True)
    racers = [
        subprocess.Popen(
            [*COMMAND, "recall", "deploy", "--json"],
            cwd=project,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(4)
    ]
    outputs = [racer.communicate(timeout=600) for racer in racers]
    assert all(racer.returncode == 0 for racer in racers), [err for _, err in outputs]
    assert len({out for out, _ in outputs}) == 1
    pid = wait_for_server(store)
    wait_until(lambda: [p for p in server_processes(store) if alive(p)] == [pid], "one server")


def test_servers_started_by_hand_at_once_leave_one_serving(project, tmp_path):
    store = store_of(project)
    env = memctl_env(True)
    contenders = [
        subprocess.Popen(
            [*COMMAND, "--store", str(store), "serve"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=open(tmp_path / f"serve-{n}.log", "wb"),  # noqa: SIM115 - the child owns it
        )
        for n in range(3)
    ]
    try:
        winner = wait_for_server(store)
        losers = [c for c in contenders if c.pid != winner]
        assert len(losers) == 2
        assert all(c.wait(timeout=300) == 0 for c in losers)
        assert running_pid(store) == winner
    finally:
        stop_everything(store)
        for contender in contenders:
            contender.wait(timeout=60)


def test_other_code_replaces_the_engine_and_a_changed_config_reopens_its_store(project, tmp_path):
    store = store_of(project)
    server = start_server(store, tmp_path / "serve.log")
    expected = memctl("recall", "deploy", "--json", cwd=project, server=False).stdout

    # Another install of memctl (an upgrade, another virtualenv): other code, same store.
    other = tmp_path / "other-install"
    shutil.copytree(REPO / "memctl", other / "memctl", ignore=shutil.ignore_patterns("__pycache__"))
    upgraded = memctl("recall", "deploy", "--json", cwd=project, pythonpath=other)
    assert upgraded.returncode == 0 and upgraded.stdout == expected  # answered in-process
    assert server.wait(timeout=300) == 0  # the old server left
    newer = wait_for_server(store, not_pid=server.pid)
    assert b"serve" in Path(f"/proc/{newer}/cmdline").read_bytes().split(b"\0")

    # Changed config.yaml: the same engine answers, with the store opened again.
    served = memctl("recall", "deploy", "--json", cwd=project, pythonpath=other)
    assert served.stdout == expected
    config = store / "config.yaml"
    config.write_text(config.read_text().replace("  k: 5", "  k: 1") + "# and a comment\n")
    expected = memctl("recall", "deploy", "--json", cwd=project, server=False).stdout
    assert len(json.loads(expected)) == 1
    changed = memctl("recall", "deploy", "--json", cwd=project, pythonpath=other)
    assert changed.stdout == expected and running_pid(store) == newer
    assert f"closed store {store}: config.yaml changed" in engine_log().read_text()


def test_kill_9_mid_write_loses_nothing_acknowledged(project, tmp_path):
    store = store_of(project)
    start_server(store, tmp_path / "serve.log")
    texts = [
        f"Runbook {n}: the {word} worker restarts after the nightly {other} export"
        for n, (word, other) in enumerate(
            zip(
                "ingest billing search mailer thumbnail audit report backup".split(),
                "ledger catalog invoice archive metrics session payroll webhook".split(),
                strict=True,
            )
        )
    ]
    results: dict[int, subprocess.CompletedProcess] = {}
    acknowledged = threading.Semaphore(0)

    def writer(numbers: list[int]) -> None:
        for n in numbers:
            results[n] = memctl("add", texts[n], "--no-dedup", "--json", cwd=project)
            acknowledged.release()

    threads = [threading.Thread(target=writer, args=([n, n + 4],)) for n in range(4)]
    for thread in threads:
        thread.start()
    acknowledged.acquire(timeout=600)  # one write answered; three writers still at work
    victim = running_pid(store)
    if victim is not None:
        os.kill(victim, signal.SIGKILL)
    for thread in threads:
        thread.join(timeout=900)

    assert sorted(results) == list(range(8))
    for n, done in results.items():
        assert done.returncode == 0, done.stderr
        path = Path(json.loads(done.stdout)["path"])
        assert path.read_text().endswith(texts[n] + "\n")
    ids = {json.loads(done.stdout)["id"] for done in results.values()}
    listed = memctl("list", "--json", cwd=project, server=False)
    assert ids <= {memory["id"] for memory in json.loads(listed.stdout)}
    for n in (0, 7):
        found = memctl("recall", texts[n], "--json", "-k", "1", cwd=project)
        assert json.loads(found.stdout)[0]["body"].strip() == texts[n]


def test_a_stale_socket_file_is_cleaned_up(project):
    store = store_of(project)
    path = socket_of()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))  # a socket file nobody listens on, as a crashed server leaves it
    dead.close()
    found = memctl("recall", "deploy", "--json", cwd=project)
    assert found.returncode == 0 and json.loads(found.stdout)
    wait_for_server(store)
    assert memctl("recall", "deploy", "--json", cwd=project).stdout == found.stdout


def test_a_hung_server_is_bypassed_then_replaced(project, tmp_path):
    store = store_of(project)
    server = start_server(store, tmp_path / "serve.log")
    expected = memctl("recall", "deploy", "--json", cwd=project, server=False)
    os.kill(server.pid, signal.SIGSTOP)  # alive, holding its lock and socket, answering nothing
    try:
        answered = memctl("recall", "deploy", "--json", cwd=project)
        assert answered.returncode == 0 and answered.stdout == expected.stdout
        hook = memctl(
            "hook",
            "claude-code",
            "user-prompt-submit",
            cwd=project,
            stdin=json.dumps(
                {"session_id": "s", "cwd": str(project), "prompt": "deploy?"}
            ).encode(),
        )
        assert hook.returncode == 0
        replacement = wait_for_server(store, not_pid=server.pid)
        assert replacement != server.pid
        assert server.wait(timeout=120) == -signal.SIGKILL
    finally:
        if alive(server.pid):
            os.kill(server.pid, signal.SIGKILL)
        server.wait(timeout=60)
