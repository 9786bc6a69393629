"""Bounded work: anchor globs cost linear time and have a cost limit, and one slow command in
the engine cannot hold every other store's requests. Hostile commands run in a subprocess with a
timeout as a guard (so a regression fails instead of hanging the suite), never as an assertion
about speed."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from memctl import service
from memctl.core.codebase.anchors import anchors_from, path_matches
from memctl.server import daemon
from memctl.server.protocol import PROTOCOL, recv_message, send_message

REPO = Path(__file__).resolve().parent.parent
GUARD_S = 120  # a guard against a hang, not a measure: the old matcher ran for hours here


def memctl(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCTL_")}
    env.update(PYTHONPATH=str(REPO), MEMCTL_NO_SERVER="1", MEMCTL_USER_STORE=str(cwd / "none"))
    return subprocess.run(
        [sys.executable, "-m", "memctl", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=GUARD_S,
        check=False,
    )


def deep_project(tmp_path: Path) -> Path:
    """A project whose files sit 22 folders deep, and a store."""
    project = tmp_path / "deep"
    folder = project.joinpath(*["d"] * 22)
    folder.mkdir(parents=True)
    (folder / "y.py").write_text("x = 1\n")
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("def serve():\n    pass\n")
    service.init_store(project)
    return project


def anchored(project: Path, name: str, paths: list[str]) -> Path:
    listed = "".join(f"- '{p}'\n" for p in paths)
    path = project / ".memory" / "procedural" / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nid: {name}\ntype: procedural\npaths:\n{listed}---\n\nRun make.\n")
    return path


MATCHES = """
from memctl.core.codebase.anchors import path_matches
deep = "/".join(["d"] * 22) + "/y.py"
assert path_matches("**/" * 32 + "y.py", deep)
assert not path_matches("**/" * 32 + "z.py", deep)
assert path_matches("**/" * 16 + "d/*.py", deep)
assert path_matches("d/**/" * 10 + "y.py", deep)
assert not path_matches("d/**/" * 23 + "y.py", deep)
assert not path_matches("*a" * 20 + "b", "a" * 200)
print("ok")
"""


def test_repeated_double_stars_match_a_deep_path_like_one_does(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", MATCHES],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=GUARD_S,
        check=False,
    )
    assert done.stdout.strip() == "ok", done.stderr
    assert path_matches("src/**/*.py", "src/a/b/c.py") and not path_matches(
        "src/*.py", "src/a/b.py"
    )


@pytest.mark.slow
def test_stale_with_hostile_globs_on_a_deep_tree_finishes_and_names_what_it_left_out(tmp_path):
    project = deep_project(tmp_path)
    anchored(project, "deepglob0001", ["**/" * 16 + "z.py"])  # matches nothing: stale
    anchored(project, "deepglob0002", ["**/" * 16 + "y.py"])  # matches the deep file
    many = anchored(project, "manyglobs001", [f"src/**/mod{n}/**/*.py" for n in range(10_000)])
    done = memctl(project, "stale", "--json")
    assert done.returncode == 0, done.stderr
    import json

    stale = {item["id"] for item in json.loads(done.stdout)}
    assert "deepglob0001" in stale and "deepglob0002" not in stale
    assert "manyglobs001" in stale
    assert str(many) in done.stderr and "10,000 entries" in done.stderr


def test_a_memory_with_too_many_or_too_costly_globs_keeps_the_first_within_the_limit():
    from memctl.core.codebase.anchors import MAX_ANCHORS_PER_KEY, anchor_limits

    costly = "*a" * 40 + ".py"
    extra = {"paths": [costly, *[f"src/{n}.py" for n in range(200)]]}
    anchors = anchors_from(extra)
    assert len(anchors.paths) == MAX_ANCHORS_PER_KEY
    assert costly not in anchors.paths and anchors.paths[0] == "src/0.py"
    notes = anchor_limits(extra)
    assert any("left out" in note and "wildcards" in note for note in notes)
    assert any("201 entries" in note for note in notes)


# --- the engine: a per-request deadline --------------------------------------------------------


class _HeldRunner:
    """A command runner whose commands for one store wait until released (a stand-in for a
    command that runs long, such as an `index` of a large store)."""

    def __init__(self, slow_root: Path):
        self.slow_root = slow_root.resolve()
        self.release = threading.Event()
        self.slow_started = threading.Event()
        self.ran: list[str] = []

    def prepare(self) -> None:
        pass

    def run(self, request, stdin, session):
        self.ran.append(request["store"])
        if Path(request["store"]).resolve() == self.slow_root:
            self.slow_started.set()
            self.release.wait(GUARD_S)
        return 0, [(1, b"done\n")]

    def batchable(self, request) -> bool:
        return False

    def reads_first(self, request, session) -> bool:
        return False

    def run_burst(self, requests, session):
        return [self.run(r, s, session) for r, s in requests]

    def after_reply(self) -> list[str]:
        return []


def _ask(engine: daemon.Engine, root: Path) -> tuple[socket.socket, threading.Thread]:
    client, served = socket.socketpair()
    header = {
        "op": "run",
        "protocol": PROTOCOL,
        "code": engine.code,
        "store": str(root),
        "argv": ["recall", "x"],
        "env": {},
    }
    send_message(client, header, (b"",))
    worker = threading.Thread(target=engine._handle, args=(served,), daemon=True)
    worker.start()
    return client, worker


def test_a_slow_command_of_one_store_does_not_hold_another_stores_requests(
    tmp_path, monkeypatch, fake_embedder
):
    monkeypatch.setattr(daemon, "REQUEST_WAIT_S", 0.5)
    monkeypatch.setenv("MEMCTL_RUNTIME_DIR", str(tmp_path / "engine"))
    slow = service.init_store(tmp_path / "slow").root
    other = service.init_store(tmp_path / "other").root
    runner = _HeldRunner(slow)
    engine = daemon.Engine(runner)
    try:
        slow_client, slow_worker = _ask(engine, slow)
        assert recv_message(slow_client)[0]["accepted"] is True
        # Accepted is not yet running: on a loaded machine the next request could start first.
        assert runner.slow_started.wait(GUARD_S)

        # Queued behind the slow command: handed back once past its deadline, unanswered, so
        # the client runs it in-process (the slow command is still running meanwhile).
        queued_client, queued_worker = _ask(engine, other)
        assert recv_message(queued_client)[0]["accepted"] is True
        queued_worker.join(GUARD_S)
        assert not queued_worker.is_alive() and not runner.release.is_set()
        queued_client.settimeout(GUARD_S)
        with pytest.raises(ConnectionError):
            recv_message(queued_client)

        # Arriving while the slow command is past the deadline: declined at the door.
        late_client, late_worker = _ask(engine, other)
        answer = recv_message(late_client)[0]
        late_worker.join(GUARD_S)
        assert answer["accepted"] is False and answer["restart"] is False
        assert answer["reason"].startswith("busy:") and str(slow.resolve()) in answer["reason"]
        assert str(other.resolve()) not in [str(Path(r).resolve()) for r in runner.ran]
    finally:
        runner.release.set()
    slow_worker.join(GUARD_S)
    assert recv_message(slow_client)[0]["exit"] == 0  # the slow one still gets its answer
    assert engine._busy_reason() is None
