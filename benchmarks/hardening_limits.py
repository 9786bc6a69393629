"""Hardening, bad-luck family: full disks, file-size limits and kills, run with the real CLI and
the real engine, before/after.

    python -m benchmarks.hardening_limits --before /tmp/memctl-before --json limits.json

Each run builds its stores in a temp folder and runs `python -m memctl` with PYTHONPATH set to
a checkout (this repository is "after"; --before names an older checkout, e.g. one made with
`git worktree add --detach /tmp/memctl-before <commit>`). Families:

- `file-size limit`: `memctl add` under RLIMIT_FSIZE from 0 to 64 KB (what `ulimit -f` sets).
- `full disk`: `memctl add` on a 3 MB tmpfs filled to 0-128 KB free (skipped where no tmpfs
  can be mounted: it needs root).
- `engine killed mid-burst`: 12 clients add at once through the engine; the engine is killed
  (SIGKILL) as the first memory file of the burst appears; every client then finishes
  (in-process if need be).
- `compaction killed`: `memctl compact` killed at its 1st, 2nd or 3rd episode rewrite, after
  the rewrite's temp file is written; then the next `memctl compact`.

Counted per family: runs; `unexpected` (the "failed unexpectedly" report or a traceback);
`rollback` (an unrelated "cannot rollback"); `false failure` (exit 1 though the memory was
written); `false success` (exit 0 though it was not); `unclear` (exit 1 without a line naming
the limit); `lost` (an earlier memory gone); `twice` (an add written twice: two files or a
merge into itself); `temp files` (left once the next command ran); `half` (a consolidation's
episodes left unmarked after the next command); `extra knowledge`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIRST = "We deploy with make release, then promote the rollout"
TEXT = "The staging database is refreshed from production every Sunday night"
FILE_SIZE_KB = [0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64]
FREE_KB = [0, 2, 4, 8, 16, 32, 64, 128]
BURST_ROUNDS = 4
BURST_CLIENTS = 12

KILLED_COMPACTION = """
import os, signal, sys
from memctl.config import open_store
from memctl.service.lifecycle.compaction import compact
from memctl.store import files
swaps = []
real = files._exchange
def dying(first, second):
    swaps.append(first)
    if len(swaps) == int(sys.argv[2]):
        os.kill(os.getpid(), signal.SIGKILL)
    return real(first, second)
files._exchange = dying
compact(open_store(sys.argv[1]))
"""

EPISODES = """
import sys
from memctl.config import open_store
from memctl.service.lifecycle.task import begin_task, finish_task, step_task
store = open_store(sys.argv[1])
for n in range(3):
    begin_task(store, f"Restart the payments worker ({n})", ["restart"], target="payments")
    step_task(store, "1", status="done", result="healthy")
    finish_task(store, lessons=["raise the memory limit"])
"""


class Checkout:
    """Runs memctl from one checkout."""

    def __init__(self, path: Path, scratch: Path):
        self.path, self.scratch = path, scratch

    def env(self, server: bool = False, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCTL_")}
        env.update(PYTHONPATH=str(self.path), MEMCTL_USER_STORE=str(self.scratch / "no-user"))
        if not server:
            env["MEMCTL_NO_SERVER"] = "1"
        env.update(extra)
        return env

    def run(
        self, store: Path, *args: str, file_size: int | None = None, env=None, code=None
    ) -> subprocess.CompletedProcess:
        def limit() -> None:
            if file_size is not None:
                resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))

        command = [sys.executable, "-c", code] if code else [sys.executable, "-m", "memctl"]
        command += args if code else ["--store", str(store), *args]
        return subprocess.run(
            command,
            env=env or self.env(),
            capture_output=True,
            check=False,
            preexec_fn=limit,
            cwd=store.parent,
            timeout=600,
        )

    def store(self, folder: Path, first: bool = True) -> Path:
        folder.mkdir(parents=True)
        done = subprocess.run(
            [sys.executable, "-m", "memctl", "init", str(folder)],
            env=self.env(),
            capture_output=True,
            check=False,
            cwd=folder,
        )
        assert done.returncode == 0, done.stderr
        store = folder / ".memory"
        if first:
            added = self.run(store, "add", FIRST)
            assert added.returncode == 0, added.stderr
        return store


def memory_files(store: Path) -> list[Path]:
    return [p for p in store.rglob("*.md") if p.name != "README.md" and ".state" not in p.parts]


def temp_files(store: Path) -> int:
    return sum(1 for _ in store.rglob("*.tmp"))


def judge_add(store: Path, done: subprocess.CompletedProcess, limit_words: str) -> Counter:
    err = done.stderr.decode(errors="replace")
    landed = any(TEXT in p.read_text(errors="replace") for p in memory_files(store))
    seen: Counter = Counter(runs=1)
    seen["unexpected"] += "failed unexpectedly" in err or "Traceback" in err
    seen["rollback"] += "cannot rollback" in err
    seen["false failure"] += done.returncode != 0 and landed
    seen["false success"] += done.returncode == 0 and not landed
    errors = [line for line in err.splitlines() if line.startswith("Error:")]
    seen["unclear"] += done.returncode != 0 and not (len(errors) == 1 and limit_words in errors[0])
    seen["lost"] += not any(FIRST in p.read_text(errors="replace") for p in memory_files(store))
    return seen


def file_size_family(c: Checkout) -> Counter:
    total: Counter = Counter()
    for kilobytes in FILE_SIZE_KB:
        store = c.store(c.scratch / f"fsize-{kilobytes}")
        done = c.run(store, "add", TEXT, file_size=kilobytes * 1024)
        total += judge_add(store, done, "file-size limit")
    return total


def full_disk_family(c: Checkout) -> Counter | str:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return "skipped: mounting a tmpfs needs root"
    total: Counter = Counter()
    for kilobytes in FREE_KB:
        disk = Path(tempfile.mkdtemp(prefix="memctl-full-", dir=c.scratch))
        mounted = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(disk)],
            capture_output=True,
            check=False,
        )
        if mounted.returncode != 0:
            return f"skipped: {mounted.stderr.decode().strip()}"
        try:
            store = c.store(disk / "project")
            info = os.statvfs(disk)
            with open(disk / "filler", "ab") as filler:
                filler.write(b"\0" * max(0, info.f_bavail * info.f_frsize - kilobytes * 1024))
            done = c.run(store, "add", TEXT)
            total += judge_add(store, done, "no space left")
        finally:
            subprocess.run(["umount", str(disk)], check=False)
    return total


def _engine_pid(runtime: Path) -> int | None:
    try:
        info = json.loads((runtime / "engine.json").read_text())
    except (OSError, ValueError):
        return None
    return info.get("pid") if info.get("state") == "serving" else None


def burst_family(c: Checkout) -> Counter:
    total: Counter = Counter()
    for round_ in range(BURST_ROUNDS):
        total += _burst_round(c, round_)
    return total


def _burst_round(c: Checkout, round_: int) -> Counter:
    runtime = Path(tempfile.mkdtemp(prefix="mk-", dir="/tmp"))
    env = c.env(server=True, MEMCTL_RUNTIME_DIR=str(runtime))
    store = c.store(c.scratch / f"burst-{round_}", first=False)
    c.run(store, "recall", "warm", env=env)  # starts the engine
    deadline = time.monotonic() + 300
    while _engine_pid(runtime) is None and time.monotonic() < deadline:
        time.sleep(0.1)
    texts = [
        f"Runbook {round_}.{n}: the worker {n} restarts after export {n}"
        for n in range(BURST_CLIENTS)
    ]
    results: dict[int, subprocess.CompletedProcess] = {}
    first_done = threading.Event()

    def client(n: int) -> None:
        results[n] = c.run(store, "add", texts[n], "--no-dedup", env=env)
        first_done.set()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(BURST_CLIENTS)]
    for thread in threads:
        thread.start()
    # Why at the first file: the burst has written, its replies are not all out yet
    while not memory_files(store) and not first_done.is_set():
        time.sleep(0.002)
    pid = _engine_pid(runtime)
    if pid:
        os.kill(pid, signal.SIGKILL)
    for thread in threads:
        thread.join(900)
    c.run(store, "list")  # the next command
    bodies = Counter(text for p in memory_files(store) for text in texts if text in p.read_text())
    seen: Counter = Counter(runs=BURST_CLIENTS)
    seen["failed"] += sum(done.returncode != 0 for done in results.values())
    seen["twice"] += sum(count - 1 for count in bodies.values() if count > 1)
    seen["lost"] += sum(1 for text in texts if text not in bodies)
    seen["temp files"] += temp_files(store)
    pid = _engine_pid(runtime)
    if pid:
        os.kill(pid, signal.SIGTERM)
        time.sleep(1)
    shutil.rmtree(runtime, ignore_errors=True)
    return seen


def compaction_family(c: Checkout) -> Counter:
    total: Counter = Counter()
    for kill_at in (1, 2, 3):
        store = c.store(c.scratch / f"compact-{kill_at}", first=False)
        made = c.run(store, str(store), code=EPISODES)
        assert made.returncode == 0, made.stderr
        c.run(store, str(store), str(kill_at), code=KILLED_COMPACTION)
        c.run(store, "compact")  # the next command
        total["runs"] += 1
        total["temp files"] += temp_files(store)
        texts = [p.read_text() for p in memory_files(store)]
        knowledge = [t for t in texts if "\ntype: knowledge" in t]
        episodes = [t for t in texts if "\ntype: episodic" in t]
        total["extra knowledge"] += max(0, len(knowledge) - 1)
        total["half"] += bool(knowledge) and any("consolidated_into" not in t for t in episodes)
    return total


FAMILIES = {
    "file-size limit": file_size_family,
    "full disk": full_disk_family,
    "engine killed mid-burst": burst_family,
    "compaction killed": compaction_family,
}


def run_all(checkout: Path, only: list[str] | None) -> dict[str, object]:
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="memctl-limits-") as scratch:
        c = Checkout(checkout, Path(scratch))
        for name, family in FAMILIES.items():
            if only and not any(word in name for word in only):
                continue
            try:
                found = family(c)
            except Exception as exc:  # noqa: BLE001 - a family that cannot run says so
                found = f"family failed: {type(exc).__name__}: {exc}"[:120]
            results[name] = dict(found) if isinstance(found, Counter) else found
            print(f"  {checkout}: {name}: {results[name]}", file=sys.stderr)
    return results


def describe(found: object) -> str:
    if not isinstance(found, dict):
        return str(found)
    runs = found.get("runs", 0)
    bad = ", ".join(f"{k} {v}" for k, v in found.items() if k != "runs" and v)
    return f"{runs} runs: " + (bad or "all clean")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, help="a checkout of the version to compare with")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--only", nargs="*", help="run only the families whose name holds one")
    args = parser.parse_args()
    versions = {"before": args.before.resolve()} if args.before else {}
    versions["after"] = REPO
    results = {label: run_all(path, args.only) for label, path in versions.items()}
    print("| family | " + " | ".join(versions) + " |")
    print("|---|" + "---|" * len(versions))
    for name in results["after"]:
        print(f"| {name} | " + " | ".join(describe(results[v].get(name)) for v in versions) + " |")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
