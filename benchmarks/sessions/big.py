"""`python -m benchmarks.sessions.big`: one long transcript through the SessionEnd ingest.

The transcript is real corpus sessions of the dev half (committed ones, in manifest order: all of
cipher-box, then chkit) joined line by line and cut at the last whole line within `--mb` MiB
(default 4): the size of a long working day with one agent. Each run ingests it into a fresh store
in a child process (benchmarks/sessions/ingest_one.py, the hook's SessionEnd handler with
final=True, the work the detached `memctl hook ingest` does) and reports wall seconds, CPU seconds
and the peak RSS (VmHWM) of the process doing the work and of any child it waited for. Then it
asks one `memctl recall` in a fresh process, so that work an ingest leaves to the next sync is
counted too (in-process, MEMCTL_NO_SERVER=1: no resident engine hides the work).

`--memctl DIR` runs another checkout's memctl (e.g. an older commit's worktree) on the same
transcript; repeat it to compare several in one run. Run under `nice -n 10` on a shared machine.
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
from typing import Any

from benchmarks.sessions.corpus import cache_dir, load_sessions, transcript_path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PROJECTS = ("cipher-box", "chkit")  # dev half, committed (MIT)
RECALL_QUERY = "how do we run the tests for the crypto package"
TEMPLATE_FOLDERS = "transcript_folders: [~/.claude/projects]"

# Init a store with the memctl on PYTHONPATH, let its hooks read the benchmark's transcript folder.
_INIT = """
import json, sys
from pathlib import Path
from memctl.service.init import init_store
root = init_store(Path(sys.argv[1])).root
config = root / "config.yaml"
text = config.read_text(encoding="utf-8")
line = "transcript_folders: [~/.claude/projects]"
if line in text:
    folders = "transcript_folders: [~/.claude/projects, " + json.dumps(sys.argv[2]) + "]"
    config.write_text(text.replace(line, folders), encoding="utf-8")
print(root)
"""


def big_transcript(megabytes: float = 4.0, where: Path | None = None) -> Path:
    """The joined transcript (built once, then reused from the cache)."""
    limit = int(megabytes * 1024 * 1024)
    target = (where or cache_dir()) / "big" / f"big-{megabytes:g}mb.jsonl"
    if target.is_file() and limit - 1_000_000 < target.stat().st_size <= limit:
        return target
    chosen = [s for s in load_sessions() if s.project in PROJECTS and s.committed]
    chosen.sort(key=lambda s: (PROJECTS.index(s.project), s.started))
    out = bytearray()
    for session in chosen:
        for line in transcript_path(session).read_bytes().splitlines(keepends=True):
            if len(out) + len(line) > limit:
                break
            out += line if line.endswith(b"\n") else line + b"\n"
        else:
            continue
        break
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    tmp.write_bytes(bytes(out))
    tmp.replace(target)
    return target


def _env(memctl_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(memctl_dir)
    env.pop("MEMCTL_STORE", None)
    # Why: in-process, so the figures are this process's; no resident engine does the work.
    env["MEMCTL_NO_SERVER"] = "1"
    return env


def _json_line(done: subprocess.CompletedProcess) -> dict[str, Any]:
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return {"outcome": "crashed", "detail": done.stderr[-2000:]}
    return json.loads(lines[-1])


def timed_child(argv: list[str], env: dict[str, str], cwd: Path) -> dict[str, Any]:
    """Run `argv`; its wall and CPU seconds and peak RSS, from the kernel's account of it."""
    started = time.perf_counter()
    child = subprocess.Popen(
        argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    stderr = child.stderr.read().decode("utf-8", "replace") if child.stderr else ""
    return {
        "outcome": "ok" if child.returncode == 0 else "error",
        "detail": stderr[-2000:] if child.returncode else "",
        "seconds": round(time.perf_counter() - started, 3),
        "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 3),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
    }


def one_run(memctl_dir: Path, transcript: Path, work: Path, recall: bool = True) -> dict[str, Any]:
    """Ingest `transcript` into a fresh store with the memctl in `memctl_dir`, then recall once."""
    project = Path(tempfile.mkdtemp(prefix="big-", dir=work))
    env = _env(memctl_dir)
    env["MEMCTL_USER_STORE"] = str(project / "user-store")  # never the person's own
    init = subprocess.run(
        [sys.executable, "-c", _INIT, str(project), str(transcript.parent)],
        capture_output=True,
        text=True,
        env=env,
        cwd=project,
        check=True,
    )
    store = Path(init.stdout.strip().splitlines()[-1])
    # Why the script's path, not -m: the other checkout may have no benchmarks.sessions package.
    argv = [sys.executable, str(HERE / "ingest_one.py"), str(store), str(transcript)]
    done = subprocess.run(
        [*argv, "big-session", str(project)],
        capture_output=True,
        text=True,
        env=env,
        cwd=project,
        check=False,
    )
    result = _json_line(done)
    result["memories"] = sum(1 for _ in store.rglob("*.md"))
    if recall:
        result["recall"] = timed_child(
            [sys.executable, "-m", "memctl", "--store", str(store), "recall", RECALL_QUERY],
            env,
            project,
        )
    return result


def _median(runs: list[dict[str, Any]], *keys: str) -> float | None:
    values = []
    for run in runs:
        value: Any = run
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, (int, float)):
            values.append(value)
    return round(statistics.median(values), 2) if values else None


def summarize(name: str, runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "memctl": name,
        "runs": len(runs),
        "outcomes": sorted({run.get("outcome", "?") for run in runs}),
        "seconds": _median(runs, "seconds"),
        "cpu_seconds": _median(runs, "cpu_seconds"),
        "peak_rss_mb": _median(runs, "peak_rss_mb"),
        "memories": _median(runs, "memories"),
        "recall_seconds": _median(runs, "recall", "seconds"),
        "recall_cpu_seconds": _median(runs, "recall", "cpu_seconds"),
        "recall_peak_rss_mb": _median(runs, "recall", "peak_rss_mb"),
    }


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| memctl | ingest wall s | ingest CPU s | ingest peak MB | memories "
        "| next recall wall s | CPU s | peak MB |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        cells = [
            row["memctl"],
            row["seconds"],
            row["cpu_seconds"],
            row["peak_rss_mb"],
            row["memories"],
            row["recall_seconds"],
            row["recall_cpu_seconds"],
            row["recall_peak_rss_mb"],
        ]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.sessions.big",
        description="Time and peak memory of the SessionEnd ingest of one long transcript.",
    )
    parser.add_argument("--mb", type=float, default=4.0, help="transcript size in MiB (4)")
    parser.add_argument("--runs", type=int, default=3, help="runs per memctl, median reported")
    parser.add_argument(
        "--memctl",
        action="append",
        metavar="DIR",
        help="a checkout whose memctl to run, DIR or DIR@RUNS (repeatable; default: this one)",
    )
    parser.add_argument("--transcript", metavar="FILE", help="ingest this JSONL file instead")
    parser.add_argument("--no-recall", action="store_true", help="skip the recall after ingest")
    parser.add_argument("--json", metavar="OUT", help="write every run to this JSON file")
    return parser.parse_args(argv)


def _checkout(spec: str, runs: int) -> tuple[Path, int]:
    """`DIR` or `DIR@N` (N runs of that checkout instead of --runs: a slow old one)."""
    where, _, times = spec.partition("@")
    return Path(where).resolve(), int(times) if times else runs


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    transcript = Path(args.transcript).resolve() if args.transcript else big_transcript(args.mb)
    print(f"transcript: {transcript} ({transcript.stat().st_size:,} bytes)", file=sys.stderr)
    checkouts = [_checkout(d, args.runs) for d in args.memctl or [str(ROOT)]]
    runs: dict[str, list[dict[str, Any]]] = {str(c): [] for c, _ in checkouts}
    with tempfile.TemporaryDirectory(prefix="memctl-big-") as tmp:
        # Why interleaved: load on a shared machine drifts; each checkout sees the same drift.
        for number in range(max(n for _, n in checkouts)):
            for checkout, times in checkouts:
                if number >= times:
                    continue
                result = one_run(checkout, transcript, Path(tmp), recall=not args.no_recall)
                runs[str(checkout)].append(result)
                print(f"[{number + 1}/{args.runs}] {checkout}: {result}", file=sys.stderr)
    rows = [summarize(name, found) for name, found in runs.items()]
    print(table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": rows, "runs": runs}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
