"""Performance of memctl on synthetic stores: ingest vs raw embedding, sync, recall latency, start-up, memory.

python -m benchmarks.perf [--quick] [--large] [--json OUT] [--sizes N ...] [--seed S]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table

from benchmarks import perf_process, perf_writes
from benchmarks.machine import machine_info, peak_rss_mb, summarize_seconds
from benchmarks.synthetic import generate_notes, generate_queries, write_notes

REPO_ROOT = Path(__file__).resolve().parents[1]
QUERY_COUNT = 50
FRESH_PROCESS_RUNS = 5
ADD_RUNS = 5
# The rate is per text: past these, a sample of the same texts says the same in less time.
RAW_EMBED_SAMPLE_MAX = 10_000
RAW_EMBED_SAMPLE_QUICK = 500

console = Console(stderr=True)

# Runs the memctl CLI in a fresh interpreter and records that process's own peak RSS (VmHWM: the
# high-water mark of the exec'd image; getrusage of children would also count the benchmark's own
# pages, which a forked child inherits in the accounting).
_CHILD_RUNNER = """
import atexit, sys
rss_file = sys.argv[1]
def _record_peak_rss():
    try:
        with open('/proc/self/status') as fh:
            for line in fh:
                if line.startswith('VmHWM:'):
                    with open(rss_file, 'w') as out:
                        out.write(line.split()[1])
    except OSError:
        pass
atexit.register(_record_peak_rss)
sys.argv = ['memctl'] + sys.argv[2:]
from memctl.cli.app import main
sys.exit(main())
"""


def run_cli(args: list[str], runs: int) -> dict:
    """Median wall time and peak RSS (median over runs, and the largest) of `memctl ARGS`, each run a new process."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    walls, peaks = [], []
    with tempfile.TemporaryDirectory(prefix="memctl-rss-") as tmp:
        rss_file = Path(tmp) / "rss"
        for _ in range(runs):
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-c", _CHILD_RUNNER, str(rss_file), *args],
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            walls.append(time.perf_counter() - start)
            if done.returncode != 0:
                raise RuntimeError(
                    f"memctl {' '.join(args)} failed ({done.returncode}): {done.stderr[-800:]}"
                )
            if rss_file.exists():
                peaks.append(int(rss_file.read_text() or 0) / 1024)
    return {
        "median_s": round(statistics.median(walls), 3),
        "min_s": round(min(walls), 3),
        "max_s": round(max(walls), 3),
        "runs": runs,
        "peak_rss_mb": round(statistics.median(peaks), 1) if peaks else None,
        "peak_rss_max_mb": round(max(peaks), 1) if peaks else None,
    }


def _timed(fn, *args, **kwargs) -> tuple[object, float]:
    start = time.perf_counter()
    value = fn(*args, **kwargs)
    return value, time.perf_counter() - start


def _cpu_seconds() -> float:
    """CPU time of this process, all threads: steadier than wall time on a machine others share."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure_embedding(store, texts: list[str]) -> dict:
    """fastembed through memctl's embedder, on the ingest texts, model load kept apart."""
    from memctl.service.retrieval.embedding import store_embedder

    embedder, load_s = _timed(store_embedder, store)
    embedder.embed(texts[:8])  # warm-up: first run allocates the ONNX session's buffers
    cpu = _cpu_seconds()
    _, embed_s = _timed(embedder.embed, texts)
    cpu = _cpu_seconds() - cpu
    return {
        "model_load_s": round(load_s, 3),
        "raw_embed_s": round(embed_s, 3),
        "raw_embed_rate_per_s": round(len(texts) / embed_s, 1),
        "raw_embed_cpu_ms_per_text": round(cpu * 1000 / len(texts), 2),
    }


def measure_size(size: int, seed: int, workdir: Path, raw_sample: int) -> dict:
    from memctl import service

    notes = generate_notes(size, seed)
    texts = [note.text for note in notes]
    store = service.init_store(workdir / f"store-{size}" / ".memory")
    figures: dict = {
        "memories": size,
        "avg_words": round(sum(len(t.split()) for t in texts) / size, 1),
    }

    sample = texts[:raw_sample]
    console.print(f"[{size}] raw embedding of {len(sample)} of the texts ...")
    figures.update(measure_embedding(store, sample))
    figures["raw_embed_texts"] = len(sample)

    console.print(f"[{size}] ingest: add_memory(sync=False) x {size}, then sync_index ...")
    start, cpu = time.perf_counter(), _cpu_seconds()
    first_path = write_notes(store, notes)
    add_s = time.perf_counter() - start
    report, sync_s = _timed(service.sync_index, store)
    ingest_s = add_s + sync_s
    cpu = _cpu_seconds() - cpu
    figures.update(
        {
            "add_files_s": round(add_s, 3),
            "first_sync_s": round(sync_s, 3),
            "ingest_s": round(ingest_s, 3),
            "ingest_rate_per_s": round(size / ingest_s, 1),
            "embedded": getattr(report, "embedded", None),
        }
    )
    figures["ingest_cpu_ms_per_memory"] = round(cpu * 1000 / size, 2)
    figures["ingest_to_raw_embed_ratio"] = round(
        figures["ingest_rate_per_s"] / figures["raw_embed_rate_per_s"], 3
    )
    figures["ingest_to_raw_embed_ratio_by_cpu"] = round(
        figures["raw_embed_cpu_ms_per_text"] / figures["ingest_cpu_ms_per_memory"], 3
    )

    noop = [_timed(service.sync_index, store)[1] for _ in range(3)]
    figures["noop_sync_s"] = round(statistics.median(noop), 4)
    figures["noop_sync_first_s"] = round(noop[0], 4)

    with open(first_path, "a", encoding="utf-8") as fh:
        fh.write("\nUpdate: the same fix also applies to the nightly export job.\n")
    changed, changed_s = _timed(service.sync_index, store)
    figures["one_changed_sync_s"] = round(changed_s, 4)
    figures["one_changed_reembedded"] = getattr(changed, "embedded", None)

    queries = generate_queries(QUERY_COUNT, seed + 1)
    _, figures["first_recall_s"] = _timed(service.recall, store, queries[0], k=10)
    figures["first_recall_s"] = round(figures["first_recall_s"], 4)
    with_check = [_timed(service.recall, store, q, k=10)[1] for q in queries]
    without_check = [_timed(service.recall, store, q, k=10, sync=False)[1] for q in queries]
    figures["recall_in_process"] = summarize_seconds(with_check)
    figures["recall_in_process_no_sync"] = summarize_seconds(without_check)

    extra_notes = generate_notes(ADD_RUNS, seed + 2)
    adds = [
        _timed(service.add_memory, store, note.text, type="semantic", tags=note.tags)[1]
        for note in extra_notes
    ]
    figures["add_one_with_dedup_and_sync"] = summarize_seconds(adds)

    console.print(f"[{size}] fresh `memctl recall` processes ...")
    figures["recall_fresh_process"] = run_cli(
        ["--store", str(store.root), "recall", queries[1], "-k", "10"], FRESH_PROCESS_RUNS
    )
    console.print(f"[{size}] cold and warm (resident server) processes ...")
    figures.update(perf_process.measure(store.root, seed))
    return figures


def render(result: dict) -> None:
    out = Console()
    out = out if out.is_terminal else Console(width=110)
    sizes = result["sizes"]
    table = Table(title="memctl performance (synthetic developer notes)", box=box.SIMPLE_HEAD)
    table.add_column("figure", no_wrap=True)
    for size in sizes:
        table.add_column(f"{int(size):,}", justify="right", no_wrap=True)
    rows = [
        ("raw embed rate (texts/s)", lambda f: f["raw_embed_rate_per_s"]),
        ("ingest rate (memories/s)", lambda f: f["ingest_rate_per_s"]),
        ("ingest / raw embed (wall)", lambda f: f["ingest_to_raw_embed_ratio"]),
        ("ingest / raw embed (CPU time)", lambda f: f["ingest_to_raw_embed_ratio_by_cpu"]),
        ("  writing files (s)", lambda f: f["add_files_s"]),
        ("  first sync (s)", lambda f: f["first_sync_s"]),
        ("no-op sync (s)", lambda f: f["noop_sync_s"]),
        ("sync after 1 change (s)", lambda f: f["one_changed_sync_s"]),
        ("recall in-process p50 (ms)", lambda f: f["recall_in_process"]["p50_ms"]),
        ("recall in-process p95 (ms)", lambda f: f["recall_in_process"]["p95_ms"]),
        ("  without sync check p50 (ms)", lambda f: f["recall_in_process_no_sync"]["p50_ms"]),
        ("add one (dedup + sync) p50 (ms)", lambda f: f["add_one_with_dedup_and_sync"]["p50_ms"]),
        ("recall, fresh process (s)", lambda f: f["recall_fresh_process"]["median_s"]),
        ("  its peak RSS (MB)", lambda f: f["recall_fresh_process"]["peak_rss_mb"]),
    ]
    for label, pick in rows:
        table.add_row(label, *(str(pick(sizes[size])) for size in sizes))
    for label, values in perf_process.render_lines(sizes):
        table.add_row(label, *values)
    out.print(table)
    help_run = result["cli_help"]
    out.print(
        f"`memctl --help`: {help_run['median_s']} s median of {help_run['runs']}, "
        f"peak RSS {help_run['peak_rss_mb']} MB; benchmark process peak RSS "
        f"{result['peak_rss_self_mb']} MB; total {result['total_s']} s"
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.perf", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--quick", action="store_true", help="1k memories only")
    parser.add_argument(
        "--large", action="store_true", help="add a 100k store (long: 30-60 min on 2 cores)"
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=None, help="explicit store sizes")
    parser.add_argument("--seed", type=int, default=7, help="seed of the text generator")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args(argv)
    if args.sizes is None:
        args.sizes = [1_000] if args.quick else [1_000, 10_000]
        if args.large:
            args.sizes.append(100_000)
    if any(size < QUERY_COUNT for size in args.sizes):
        parser.error(f"store sizes must be at least {QUERY_COUNT}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    sizes: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="memctl-perf-") as tmp:
        for size in args.sizes:
            raw_sample = RAW_EMBED_SAMPLE_QUICK if args.quick else RAW_EMBED_SAMPLE_MAX
            sizes[str(size)] = measure_size(size, args.seed, Path(tmp), raw_sample)
        writes = perf_writes.measure(args.sizes, args.seed, Path(tmp))
    result = {
        "benchmark": "perf",
        "seed": args.seed,
        "sizes": sizes,
        "writes": writes,
        "cli_help": run_cli(["--help"], FRESH_PROCESS_RUNS),
        **peak_rss_mb(),
        "total_s": 0.0,
        "machine": machine_info(),
        "command": "python -m benchmarks.perf " + " ".join(sys.argv[1:] if argv is None else argv),
    }
    result["total_s"] = round(time.perf_counter() - started, 2)
    render(result)
    perf_writes.render(result["writes"])
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        console.print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
