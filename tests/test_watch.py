"""`memctl watch`: file changes reach the index, a burst of changes is one sync, Ctrl-C is clean."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from memctl import service
from memctl.integrations.watcher import Debounce, is_relevant_path, watch_store

ROOT = Path("/p/.memory")


@pytest.mark.parametrize(
    "relpath, directory, relevant",
    [
        ("semantic/db-port.md", False, True),
        ("notes.md", False, True),
        ("semantic", True, True),
        (".index/manifest.json", False, False),
        (".state/hooks.log", False, False),
        ("semantic/.db-port.md.x1y2.tmp", False, False),
        ("semantic/db-port.md.swp", False, False),
        ("semantic/db-port.md~", False, False),
        ("config.yaml", False, False),
        (".git/index", False, False),
    ],
)
def test_only_memory_files_and_folders_wake_the_watcher(relpath, directory, relevant):
    assert is_relevant_path(ROOT, ROOT / relpath, directory) is relevant


def test_a_burst_of_events_is_one_batch():
    debounce = Debounce(quiet_s=0.5, max_wait_s=5.0)
    for i in range(500):
        debounce.note(10.0 + i * 0.001)  # 500 events within half a second
        assert not debounce.due(10.0 + i * 0.001)
    assert not debounce.due(10.8)
    assert debounce.due(11.0)
    assert debounce.take() == 500
    assert not debounce.due(20.0) and debounce.wait_s(20.0) is None


def test_constant_churn_still_syncs_after_the_longest_wait():
    debounce = Debounce(quiet_s=0.5, max_wait_s=2.0)
    now = 0.0
    while not debounce.due(now):
        debounce.note(now)
        now += 0.1
    assert 2.0 <= now < 2.2 and debounce.events == 20


def wait_for(condition, limit_s: float = 60.0) -> bool:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            if condition():
                return True
        except ValueError:
            pass  # read while the watcher's sync was between writing rows and their text index
        time.sleep(0.05)
    return condition()


@pytest.fixture
def watching(store):
    """A watcher on `store` in a thread; yields the list of batch sizes it synced."""
    batches: list[int] = []
    stop, ready = threading.Event(), threading.Event()

    def sync(events: int) -> None:
        service.sync_index(store)
        batches.append(events)

    thread = threading.Thread(
        target=watch_store,
        args=(store.root, sync, stop),
        kwargs={"quiet_s": 0.3, "on_ready": ready.set},
        daemon=True,
    )
    thread.start()
    assert ready.wait(10)
    yield batches
    stop.set()
    thread.join(10)
    assert not thread.is_alive()


@pytest.mark.usefixtures("fake_embedder")
def test_an_edit_by_hand_reaches_recall(store, write_file, watching):
    write_file("semantic/port.md", "---\nid: port\n---\n\nPostgres listens on port 5433.\n")
    assert wait_for(
        lambda: any(
            h.id == "port"
            for h in service.recall(service.RecallRequest(store, "database port", sync=False)).hits
        )
    )
    write_file("semantic/port.md", "---\nid: port\n---\n\nRedis listens on port 6380.\n")
    assert wait_for(
        lambda: (
            "Redis"
            in service.recall(
                service.RecallRequest(store, "which port is redis on", k=1, sync=False)
            )
            .hits[0]
            .body
        )
    )
    (store.root / "semantic" / "port.md").unlink()
    assert wait_for(
        lambda: (
            service.recall(service.RecallRequest(store, "which port is redis on", sync=False)).hits
            == []
        )
    )


@pytest.mark.usefixtures("fake_embedder")
def test_many_files_at_once_give_few_syncs(store, watching, fake_embedder):
    folder = store.root / "semantic"
    folder.mkdir()
    for i in range(120):
        (folder / f"fact-{i}.md").write_text(
            f"Fact number {i} about service {i}.\n", encoding="utf-8"
        )
    assert wait_for(lambda: sum(watching) >= 120)
    assert len(watching) <= 3  # a checkout-sized burst is one sync, not one per file
    assert len(service.list_memories(store).memories) == 120
    assert len(fake_embedder.texts) == 120  # each file embedded once, whatever the batches


@pytest.mark.slow
@pytest.mark.parametrize(
    "inherited", [signal.SIG_DFL, signal.SIG_IGN], ids=["sigint-default", "sigint-ignored"]
)
def test_the_watch_command_stops_cleanly_on_ctrl_c(store, inherited):
    """Also when started with SIGINT ignored, as a script's background job (or pytest run as one)."""
    # The child inherits SIG_IGN, or starts with SIG_DFL, whatever pytest's own SIGINT is.
    previous = signal.signal(signal.SIGINT, inherited)
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "memctl", "--store", str(store.root), "watch"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    finally:
        signal.signal(signal.SIGINT, previous)
    try:
        lines = []
        assert wait_for(
            lambda: "Watching" in (lines.append(process.stderr.readline()) or "".join(lines))
        )
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0
    assert "Stopped watching" in err and "Traceback" not in err
