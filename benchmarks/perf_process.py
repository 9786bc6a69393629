"""Whole-process latency of hot commands, warm (resident server) and cold (server off).

Each figure is the median wall time of >= 20 runs of the installed `memctl` script as a shell
starts it (a new process per run, output captured), against one synthetic store:

- `cold.*`: MEMCTL_NO_SERVER=1, every process imports and loads everything itself (before);
- `warm.*`: a `memctl serve` for the store runs, so the process is the thin client (after).
  `warm.help_ms` is `memctl --help`, which never needs the server.

python -m benchmarks.perf_process [--sizes N ...] [--runs 20] [--json OUT]
(`python -m benchmarks.perf` runs it for each of its sizes too.)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.machine import machine_info
from benchmarks.synthetic import generate_notes, generate_queries, write_notes

REPO_ROOT = Path(__file__).resolve().parents[1]
RUNS = 20
WARM_FIGURES = ("recall_ms", "add_ms", "context_ms", "hook_prompt_ms", "help_ms")
COLD_FIGURES = ("recall_ms", "add_ms")
# Rows for benchmarks.perf's table: label, section, figure.
ROWS = (
    ("cold `memctl recall`, process (ms)", "cold", "recall_ms"),
    ("warm `memctl recall`, process (ms)", "warm", "recall_ms"),
    ("cold `memctl add`, process (ms)", "cold", "add_ms"),
    ("warm `memctl add`, process (ms)", "warm", "add_ms"),
    ("warm `memctl context`, process (ms)", "warm", "context_ms"),
    ("warm prompt hook, process (ms)", "warm", "hook_prompt_ms"),
    ("`memctl --help`, process (ms)", "warm", "help_ms"),
)


def memctl_command() -> list[str]:
    script = Path(sys.executable).with_name("memctl")
    return [str(script)] if script.exists() else [sys.executable, "-m", "memctl"]


def byte_compile(code: Path) -> None:
    """Compile memctl's modules once, as `pip install` does: with PYTHONDONTWRITEBYTECODE set
    (or a read-only checkout) every process would compile changed modules from source again,
    which a user's installed memctl never does."""
    import compileall

    compileall.compile_dir(code / "memctl", quiet=1)


def memctl_env(server: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MEMCTL_NO_SERVER", "MEMCTL_STORE")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    if not server:
        env["MEMCTL_NO_SERVER"] = "1"
    return env


def timed_runs(argv_and_stdin: list[tuple[list[str], bytes]], cwd: Path, server: bool) -> dict:
    """Median, min and max wall time of one process per entry, in milliseconds."""
    env = memctl_env(server)
    walls = []
    for args, stdin in argv_and_stdin:
        start = time.perf_counter()
        done = subprocess.run(
            [*memctl_command(), *args],
            cwd=cwd,
            env=env,
            input=stdin,
            capture_output=True,
            check=False,
        )
        walls.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise RuntimeError(f"memctl {' '.join(args)} failed: {done.stderr[-800:]!r}")
    return {
        "median": round(statistics.median(walls) * 1000, 1),
        "min": round(min(walls) * 1000, 1),
        "max": round(max(walls) * 1000, 1),
    }


def section(timings: dict[str, dict], runs: int) -> dict:
    """{"recall_ms": median, ..., "spread_ms": {"recall_ms": [min, max]}, "runs": n}."""
    figures: dict = {name: timing["median"] for name, timing in timings.items()}
    figures["spread_ms"] = {name: [t["min"], t["max"]] for name, t in timings.items()}
    figures["runs"] = runs
    return figures


def hook_input(project: Path, prompt: str, session: str) -> bytes:
    return json.dumps(
        {
            "session_id": session,
            "transcript_path": str(project / "transcript.jsonl"),
            "cwd": str(project),
            "hook_event_name": "UserPromptSubmit",
            "prompt": prompt,
        }
    ).encode()


def start_server(store_root: Path) -> subprocess.Popen:
    from memctl.server.control import server_status

    process = subprocess.Popen(
        [*memctl_command(), "--store", str(store_root), "serve", "--idle-minutes", "0"],
        env=memctl_env(True),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 600
    while server_status(store_root)["pid"] != process.pid:  # the engine, serving every store
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("memctl serve did not start")
        time.sleep(0.1)
    return process


def measure(store_root: Path, seed: int = 7, runs: int = RUNS) -> dict[str, dict]:
    """{"cold": {...}, "warm": {...}} for the store at `store_root` (its project is the parent)."""
    from memctl.server.control import stop_server

    project = store_root.parent
    byte_compile(REPO_ROOT)
    queries = generate_queries(runs * 3, seed + 5)
    notes = [note.text for note in generate_notes(runs * 2, seed + 9)]
    recalls = [(["recall", query, "-k", "5"], b"") for query in queries[:runs]]

    cold = {
        "recall_ms": timed_runs(recalls, project, server=False),
        "add_ms": timed_runs([(["add", text], b"") for text in notes[:runs]], project, False),
    }
    server = start_server(store_root)
    try:
        timed_runs(recalls[:3], project, server=True)  # first requests warm lazy paths
        warm = {
            "recall_ms": timed_runs(recalls, project, server=True),
            "add_ms": timed_runs([(["add", text], b"") for text in notes[runs:]], project, True),
            "context_ms": timed_runs(
                [(["context", query], b"") for query in queries[runs : runs * 2]], project, True
            ),
            "hook_prompt_ms": timed_runs(
                [
                    (
                        ["hook", "claude-code", "user-prompt-submit"],
                        hook_input(project, query, f"bench-{n}"),
                    )
                    for n, query in enumerate(queries[runs * 2 :])
                ],
                project,
                True,
            ),
            "help_ms": timed_runs([(["--help"], b"")] * runs, project, True),
        }
    finally:
        stop_server()
        server.wait(timeout=120)
    return {"cold": section(cold, runs), "warm": section(warm, runs)}


def build_store(size: int, seed: int, workdir: Path) -> Path:
    """The synthetic store benchmarks.perf builds, written and indexed in bulk."""
    from memctl import service

    store = service.init_store(workdir / f"store-{size}")
    write_notes(store, generate_notes(size, seed))
    service.sync_index(store)
    return store.root


def render_lines(sizes: dict[str, dict]) -> list[tuple[str, list[str]]]:
    """(label, one value per size) for the table: the median of each figure."""
    return [
        (label, [str(sizes[size].get(part, {}).get(figure)) for size in sizes])
        for label, part, figure in ROWS
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.perf_process")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    sizes: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="memctl-perf-process-") as tmp:
        for size in args.sizes:
            print(f"[{size}] building the store ...", file=sys.stderr)
            root = build_store(size, args.seed, Path(tmp))
            print(f"[{size}] measuring processes ...", file=sys.stderr)
            sizes[str(size)] = {"memories": size, **measure(root, args.seed, args.runs)}
    result = {
        "benchmark": "perf_process",
        "sizes": sizes,
        "machine": machine_info(),
        "command": "python -m benchmarks.perf_process "
        + " ".join(sys.argv[1:] if argv is None else argv),
    }
    for label, values in render_lines(sizes):
        print(f"{label:<40} " + "  ".join(f"{v:>8}" for v in values))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
