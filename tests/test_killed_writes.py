"""A process killed in the middle of a write leaves no temp file and no half of anything once
the next command ran: a killed compaction is rolled forward (every episode of the knowledge it
wrote gets marked, no second knowledge), and an add run again under the same request id after
its first run's write landed writes nothing twice. Real processes, killed with SIGKILL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memctl import service
from memctl.config import open_store
from memctl.service.lifecycle.compaction import compact
from memctl.service.lifecycle.task import begin_task, finish_task, step_task
from memctl.service.memories.lookup import get_memory, list_memories

REPO = Path(__file__).resolve().parents[1]
T0 = 1_750_000_000.0

# Runs `compact` and kills itself (SIGKILL) at the second rewrite of an episode, after that
# rewrite's temp file is written and synced, before it is swapped into place.
KILLED_COMPACTION = """
import os, signal, sys
from memctl.config import open_store
from memctl.service.lifecycle.compaction import compact
from memctl.store import files
swaps = []
real = files._exchange
def dying(first, second):
    swaps.append(first)
    if len(swaps) == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    return real(first, second)
files._exchange = dying
compact(open_store(sys.argv[1]), now=float(sys.argv[2]))
"""


def temp_files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.tmp"))


def episodes(store) -> list[str]:
    ids = []
    for n in range(3):
        now = T0 + 100 * n
        begin_task(store, f"Restart the payments worker ({n})", ["restart"], target="payments")
        step_task(store, "1", status="done", result="healthy", now=now + 1)
        ids.append(finish_task(store, lessons=["raise the memory limit"], now=now + 2).episode_id)
    return ids


@pytest.mark.slow
@pytest.mark.model
def test_a_killed_compaction_is_rolled_forward_and_leaves_no_temp_file(store):
    ids = episodes(store)
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_COMPACTION, str(store.root), str(T0 + 1000)],
        env={**os.environ, "PYTHONPATH": str(REPO), "MEMCTL_NO_SERVER": "1"},
        capture_output=True,
        check=False,
    )
    assert killed.returncode == -9, killed.stderr.decode()[-2000:]
    assert temp_files(store.root)  # the kill left one (the next scan removes it)
    [knowledge] = list_memories(store, types=["knowledge"]).memories
    marked = [i for i in ids if get_memory(store, i)[1].extra.get("consolidated_into")]
    assert len(marked) == 1  # half a compaction

    compact(open_store(store.root), now=T0 + 2000)  # the next command

    assert temp_files(store.root) == []
    [(_, after)] = list_memories(store, types=["knowledge"]).memories
    assert after.id == knowledge[1].id
    for episode_id in ids:
        assert get_memory(store, episode_id)[1].extra["consolidated_into"] == after.id


def test_a_temp_file_of_a_live_process_is_left_alone(store):
    folder = store.root / "semantic"
    folder.mkdir(exist_ok=True)
    mine = folder / f".note.md.{os.getpid()}.abcd1234.tmp"
    mine.write_bytes(b"being written")
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True
    )
    dead = folder / f".note.md.{int(gone.stdout)}.wxyz9876.tmp"
    dead.write_bytes(b"left by a kill")

    list_memories(store)  # any command's scan

    assert mine.exists() and not dead.exists()


def add(store_root: Path, text: str, request_id: str | None, *args: str):
    env = {**os.environ, "PYTHONPATH": str(REPO), "MEMCTL_NO_SERVER": "1"}
    env.pop("MEMCTL_REQUEST_ID", None)
    if request_id:
        env["MEMCTL_REQUEST_ID"] = request_id
    return subprocess.run(
        [sys.executable, "-m", "memctl", "--store", str(store_root), "add", text, "--json", *args],
        env=env,
        capture_output=True,
        check=False,
    )


@pytest.mark.slow
@pytest.mark.model
@pytest.mark.parametrize("options", [(), ("--no-dedup",)])
def test_an_add_run_again_under_its_request_id_writes_nothing_twice(store, options):
    """What the client does when the engine died after the add landed but before it replied:
    the same add, the same request id, in-process."""
    service.add_memory(store, "We deploy with make release, then promote the rollout")
    text = "The staging database is refreshed from production every Sunday night"
    first = add(store.root, text, "5f0c" * 8, *options)
    written = Path(json.loads(first.stdout)["path"])
    files_before, bytes_before = sorted(store.root.rglob("*.md")), written.read_bytes()

    again = add(store.root, text, "5f0c" * 8, *options)

    assert first.returncode == 0 and again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == json.loads(first.stdout)
    assert sorted(store.root.rglob("*.md")) == files_before
    assert written.read_bytes() == bytes_before  # not merged into itself either
    # the same id with other text is another request (a stray id never swallows an add)
    other = add(store.root, "Feature flags live in config/flags.yaml", "5f0c" * 8, *options)
    assert (
        other.returncode == 0 and json.loads(other.stdout)["id"] != json.loads(first.stdout)["id"]
    )
