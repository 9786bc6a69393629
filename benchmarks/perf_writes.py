"""Write performance: concurrent adds, import rate against raw embedding, index growth, ANN recall.

python -m benchmarks.perf_writes [--quick] [--large] [--json OUT] [--sizes N ...] [--ann]
    [--figures concurrent cold import recall growth] [--import-lines N] [--workdir DIR]

Also run by `python -m benchmarks.perf` (its `writes` section), on the stores that built.
Processes inherit the environment: with MEMCTL_NO_SERVER=1 every `memctl` runs in-process
(`server_off` in the JSON says which); `cold_add_s` always runs with the server off.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table

from benchmarks.machine import machine_info, summarize_seconds
from benchmarks.recalling import recall_hits
from benchmarks.synthetic import generate_notes, generate_queries, write_notes

REPO_ROOT = Path(__file__).resolve().parents[1]
WRITERS, ADDS_PER_WRITER = 8, 25
GROWTH_ADDS = 1000
COLD_ADD_RUNS = 5
RECALL_QUERIES = 50
RAW_EMBED_SAMPLE = 2000
ANN_QUERIES = 100
FIGURES = ("concurrent", "cold", "import", "recall", "growth")

console = Console(stderr=True)


def _env(server_off: bool | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    if server_off:
        env["MEMCTL_NO_SERVER"] = "1"
    return env


def _memctl(store_root: Path, *args: str, env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "memctl", "--store", str(store_root), *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"memctl {args[0]} failed ({done.returncode}): {done.stderr[-800:]}")


def _process_cpu(pid: int) -> float | None:
    """CPU seconds (user + system) a running process has used so far; None without /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else 0


def _versions(store_root: Path) -> int | None:
    import lance

    table = store_root / ".index" / "memories.lance"
    return len(lance.dataset(str(table)).versions()) if table.is_dir() else None


def _note_args(note) -> list[str]:
    args = ["add", note.text, "--type", note.type]
    for tag in note.tags:
        args += ["--tag", tag]
    return args


# --- figures ----------------------------------------------------------------------------------


def concurrent_adds(store_root: Path, seed: int, writers: int, adds: int) -> dict:
    """`writers` workers, each running `adds` `memctl add` processes one after another.

    Unless the server is off, the store's server is started first and waited for: the figure
    is the steady state of agents writing to a store in use, not a server's start-up."""
    from benchmarks.perf_process import byte_compile, start_server

    byte_compile(REPO_ROOT)
    notes = generate_notes(writers * adds, seed)
    env = _env()
    if os.environ.get("MEMCTL_NO_SERVER") != "1":
        server = start_server(store_root)
        try:
            cpu = _process_cpu(server.pid)
            figures = _concurrent_adds(store_root, notes, writers, adds, env)
            if cpu is not None and (after := _process_cpu(server.pid)) is not None:
                figures["concurrent_server_cpu_s_per_add"] = round(
                    (after - cpu) / (writers * adds), 3
                )
            return figures
        finally:
            from memctl.server.control import stop_server

            stop_server()
            server.wait(timeout=120)
    return _concurrent_adds(store_root, notes, writers, adds, env)


def _concurrent_adds(store_root: Path, notes, writers: int, adds: int, env) -> dict:

    def worker(start: int) -> None:
        for note in notes[start : start + adds]:
            _memctl(store_root, *_note_args(note), env=env)

    cpu = _children_cpu()
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=writers) as pool:
        list(pool.map(worker, range(0, writers * adds, adds)))
    wall = time.perf_counter() - started
    return {
        "concurrent_s": round(wall, 2),
        "concurrent_adds": writers * adds,
        "adds_per_s": round(writers * adds / wall, 2),
        "concurrent_cpu_s_per_add": round((_children_cpu() - cpu) / (writers * adds), 3),
    }


def cold_adds(store_root: Path, seed: int, runs: int) -> dict:
    env = _env(server_off=True)
    walls = []
    for note in generate_notes(runs, seed):
        started = time.perf_counter()
        _memctl(store_root, *_note_args(note), env=env)
        walls.append(time.perf_counter() - started)
    return {"cold_add_s": round(statistics.median(walls), 3), "cold_add_runs": runs}


def import_rate(store_root: Path, seed: int, lines: int, workdir: Path) -> dict:
    """`memctl import` of a JSONL file of new notes, beside the raw embed rate of its texts."""
    from memctl.config import open_store
    from memctl.integrations.embedder import get_embedder

    notes = generate_notes(lines, seed)
    source = workdir / f"import-{lines}.jsonl"
    source.write_text(
        "".join(
            json.dumps({"body": n.text, "type": n.type, "tags": list(n.tags)}) + "\n" for n in notes
        ),
        encoding="utf-8",
    )
    cpu = _children_cpu()
    started = time.perf_counter()
    _memctl(store_root, "import", str(source), "--json", env=_env())
    wall = time.perf_counter() - started
    import_cpu = _children_cpu() - cpu

    embedder = get_embedder(open_store(store_root).settings.embedding)
    sample = [n.text for n in notes[:RAW_EMBED_SAMPLE]]
    embedder.embed(sample[:8])  # warm-up, as in perf.py
    usage = resource.getrusage(resource.RUSAGE_SELF)
    raw_cpu = usage.ru_utime + usage.ru_stime
    raw_started = time.perf_counter()
    embedder.embed(sample)
    raw_wall = time.perf_counter() - raw_started
    usage = resource.getrusage(resource.RUSAGE_SELF)
    raw_cpu = usage.ru_utime + usage.ru_stime - raw_cpu
    figures = {
        "import_lines": lines,
        "import_s": round(wall, 2),
        "import_per_s": round(lines / wall, 2),
        "import_cpu_ms_per_line": round(import_cpu * 1000 / lines, 2),
        "raw_embed_rate_per_s": round(len(sample) / raw_wall, 2),
        "raw_embed_cpu_ms_per_text": round(raw_cpu * 1000 / len(sample), 2),
    }
    figures["import_to_raw_embed"] = round(
        figures["import_per_s"] / figures["raw_embed_rate_per_s"], 3
    )
    figures["import_to_raw_embed_by_cpu"] = round(
        figures["raw_embed_cpu_ms_per_text"] / figures["import_cpu_ms_per_line"], 3
    )
    return figures


def recall_latency(store_root: Path, seed: int) -> dict:
    from memctl.config import open_store

    store = open_store(store_root)
    queries = generate_queries(RECALL_QUERIES, seed)
    recall_hits(store, queries[0], k=10)  # load the model, sync
    times = []
    for query in queries:
        started = time.perf_counter()
        recall_hits(store, query, k=10)
        times.append(time.perf_counter() - started)
    return {"recall_p50_ms": summarize_seconds(times)["p50_ms"]}


def index_growth(seed: int, workdir: Path, adds: int) -> dict:
    """`adds` single `add_memory` calls (dedup and sync, as `memctl add` does) on a new store,
    against a fresh build of the same files."""
    from memctl import service
    from memctl.config import open_store

    root = workdir / "growth" / ".memory"
    store = service.init_store(root)
    started = time.perf_counter()
    for note in generate_notes(adds, seed):
        service.add_memory(store, note.text, type=note.type, tags=note.tags)
    wall = time.perf_counter() - started
    figures = {
        "growth_adds": adds,
        "growth_adds_per_s_in_process": round(adds / wall, 2),
        "index_bytes_after_1000_adds": _folder_bytes(store.index_dir),
        "table_bytes_after_1000_adds": _folder_bytes(store.index_dir / "memories.lance"),
        "index_versions_after_1000_adds": _versions(root),
    }
    fresh_root = workdir / "growth-fresh" / ".memory"
    shutil.copytree(root, fresh_root, ignore=shutil.ignore_patterns(".index", ".state"))
    service.sync_index(open_store(fresh_root), rebuild=True)
    figures["index_bytes_fresh_build"] = _folder_bytes(fresh_root / ".index")
    figures["table_bytes_fresh_build"] = _folder_bytes(fresh_root / ".index" / "memories.lance")
    figures["index_bytes_ratio"] = round(
        figures["index_bytes_after_1000_adds"] / figures["index_bytes_fresh_build"], 3
    )
    figures["table_bytes_ratio"] = round(
        figures["table_bytes_after_1000_adds"] / figures["table_bytes_fresh_build"], 3
    )
    return figures


def ann_recall(rows: int, seed: int, workdir: Path, vector_cache: Path | None) -> dict:
    """recall@10 and latency of the ANN index memctl builds at `rows` rows, against the exact
    flat scan, on embedded synthetic notes (queries: generated questions and note texts)."""
    import numpy as np

    from memctl.integrations.embedder import get_embedder
    from memctl.integrations.query_embedder import get_query_embedder
    from memctl.store.index import MemoryIndex
    from memctl.store.index_maintenance import MaintenancePolicy

    notes = generate_notes(rows, seed)
    vectors = _cached_vectors([n.text for n in notes], vector_cache, get_embedder())
    index = MemoryIndex(workdir / "ann", 384, policy=MaintenancePolicy(ann_min_rows=rows))
    index.apply([], [_ann_row(i, note) for i, note in enumerate(notes)], vectors)
    started = time.perf_counter()
    state = index.maintain().vector_index
    build_s = time.perf_counter() - started
    embedder = get_query_embedder()
    queries = [embedder.embed_query(q) for q in generate_queries(ANN_QUERIES // 2, seed + 5)]
    rng = np.random.default_rng(seed)
    queries += [embedder.embed_query(notes[i].text) for i in rng.choice(rows, ANN_QUERIES // 2)]
    where = "archived = false"
    hits, ann_times, flat_times = [], [], []
    dataset = index.dataset()
    for query in queries:
        started = time.perf_counter()
        ann = [r["id"] for r in index.search_vector(query, 10, where)]
        ann_times.append(time.perf_counter() - started)
        started = time.perf_counter()
        flat = dataset.to_table(
            columns=["id"],
            nearest={
                "column": "vector",
                "q": query,
                "k": 10,
                "metric": "cosine",
                "use_index": False,
            },
            filter=where,
            prefilter=True,
        )
        flat_times.append(time.perf_counter() - started)
        hits.append(len(set(ann) & set(flat.column("id").to_pylist())) / 10)
    return {
        "ann_rows": rows,
        "ann_state": state,
        "ann_build_s": round(build_s, 2),
        "ann_recall_at_10": round(statistics.fmean(hits), 4),
        "ann_recall_at_10_min": round(min(hits), 2),
        "ann_query_p50_ms": summarize_seconds(ann_times)["p50_ms"],
        "flat_query_p50_ms": summarize_seconds(flat_times)["p50_ms"],
        "ann_queries": len(queries),
    }


def _ann_row(i: int, note) -> dict:
    return {
        "id": f"n{i:07d}",
        "chunk": 0,
        "path": f"{note.type}/n{i}.md",
        "title": note.text[:60],
        "type": note.type,
        "tags": "," + ",".join(note.tags) + "," if note.tags else "",
        "agent": "",
        "scope": "project",
        "archived": False,
        "created": note.created,
        "updated": note.created,
        "importance": note.importance,
        "pinned": False,
        "embed_hash": f"h{i}",
        "sequence": "",
        "text": note.text,
    }


def _cached_vectors(texts: list[str], cache: Path | None, embedder):
    """Embeddings of `texts`, kept in `cache` (keyed by count) so a rerun does not embed again."""
    import hashlib

    import numpy as np

    digest = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
    path = cache / f"vectors-{len(texts)}-{digest}.npy" if cache else None
    if path and path.is_file():
        return np.load(path)
    vectors = np.concatenate(
        [embedder.embed(texts[i : i + 2048]) for i in range(0, len(texts), 2048)]
    )
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, vectors)
    return vectors


# --- the section --------------------------------------------------------------------------------


def build_store(size: int, seed: int, workdir: Path) -> Path:
    """A store of `size` notes, written as files and indexed in one sync (as perf.py does)."""
    from memctl import service

    store = service.init_store(workdir / f"store-{size}" / ".memory")
    write_notes(store, generate_notes(size, seed))
    service.sync_index(store)
    return store.root


def measure(
    sizes: list[int],
    seed: int,
    workdir: Path,
    *,
    writers: int = WRITERS,
    adds: int = ADDS_PER_WRITER,
    import_lines: int | None = None,
    growth_adds: int = GROWTH_ADDS,
    ann_rows: int | None = None,
    vector_cache: Path | None = None,
    figures_wanted: tuple[str, ...] = FIGURES,
) -> dict:
    """The `writes` section: per size, then the index growth figures and (if asked) ANN recall.

    The top-level figures repeat those of the largest size. `figures_wanted`: a subset of FIGURES.
    """
    wanted = set(figures_wanted)
    by_size: dict[str, dict] = {}
    for size in sizes:
        store_root = workdir / f"store-{size}" / ".memory"
        if not store_root.is_dir():
            console.print(f"[writes {size}] building the store ...")
            store_root = build_store(size, seed, workdir)
        figures: dict = {"memories": size}
        if "concurrent" in wanted:
            console.print(f"[writes {size}] {writers} x {adds} concurrent `memctl add` ...")
            figures.update(concurrent_adds(store_root, seed + 31, writers, adds))
            figures[f"concurrent_{writers}x{adds}_s"] = figures.pop("concurrent_s")
            figures["index_versions_after_concurrent"] = _versions(store_root)
        if "cold" in wanted:
            console.print(f"[writes {size}] cold `memctl add` ...")
            figures.update(cold_adds(store_root, seed + 37, COLD_ADD_RUNS))
        if "import" in wanted:
            lines = import_lines or size
            console.print(f"[writes {size}] `memctl import` of {lines} lines ...")
            figures.update(import_rate(store_root, seed + 41, lines, workdir))
        if "recall" in wanted:
            figures.update(recall_latency(store_root, seed + 43))
        figures["index_bytes"] = _folder_bytes(store_root / ".index")
        by_size[str(size)] = figures
    result: dict = dict(by_size[str(max(sizes))]) if sizes else {}
    result["by_size"] = by_size
    result["server_off"] = os.environ.get("MEMCTL_NO_SERVER") == "1"
    if growth_adds and "growth" in wanted:
        console.print(f"[writes] {growth_adds} single adds on a new store ...")
        result.update(index_growth(seed + 47, workdir, growth_adds))
    if ann_rows:
        console.print(f"[writes] ANN index at {ann_rows} rows ...")
        result["ann"] = ann_recall(ann_rows, seed, workdir, vector_cache)
    return result


def render(writes: dict) -> None:
    out = Console()
    out = out if out.is_terminal else Console(width=110)
    sizes = writes.get("by_size", {})
    table = Table(title="memctl writes", box=box.SIMPLE_HEAD)
    table.add_column("figure", no_wrap=True)
    for size in sizes:
        table.add_column(f"{int(size):,}", justify="right", no_wrap=True)
    concurrent = next((k for k in writes if k.startswith("concurrent_") and k.endswith("_s")), "")
    rows = [
        (f"{concurrent[11:-2]} concurrent adds (s)", concurrent),
        ("  adds/s overall", "adds_per_s"),
        ("  CPU s per add (clients)", "concurrent_cpu_s_per_add"),
        ("  CPU s per add (server)", "concurrent_server_cpu_s_per_add"),
        ("cold `memctl add` (s)", "cold_add_s"),
        ("import rate (lines/s)", "import_per_s"),
        ("raw embed rate, same texts (/s)", "raw_embed_rate_per_s"),
        ("import / raw embed (wall)", "import_to_raw_embed"),
        ("import / raw embed (CPU)", "import_to_raw_embed_by_cpu"),
        ("recall p50 after the writes (ms)", "recall_p50_ms"),
        ("index bytes after the writes", "index_bytes"),
    ]
    for label, key in rows:
        table.add_row(label, *(str(sizes[s].get(key, "-")) for s in sizes))
    out.print(table)
    if "index_bytes_after_1000_adds" in writes:
        out.print(
            f"{writes['growth_adds']} single adds: index {writes['index_bytes_after_1000_adds']:,} "
            f"bytes, {writes['index_versions_after_1000_adds']} versions; fresh build "
            f"{writes['index_bytes_fresh_build']:,} bytes (x{writes['index_bytes_ratio']}; "
            f"table alone x{writes['table_bytes_ratio']})"
        )
    if "ann" in writes:
        ann = writes["ann"]
        out.print(
            f"ANN at {ann['ann_rows']:,} rows: recall@10 {ann['ann_recall_at_10']} against the flat "
            f"scan, p50 {ann['ann_query_p50_ms']} ms (flat {ann['flat_query_p50_ms']} ms), "
            f"built in {ann['ann_build_s']} s"
        )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.perf_writes", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--quick", action="store_true", help="1k memories only")
    parser.add_argument("--large", action="store_true", help="add a 100k store")
    parser.add_argument("--sizes", type=int, nargs="+", default=None)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--writers", type=int, default=WRITERS)
    parser.add_argument("--adds", type=int, default=ADDS_PER_WRITER, help="adds per writer")
    parser.add_argument(
        "--import-lines", type=int, default=None, help="lines to import (default: store size)"
    )
    parser.add_argument("--growth-adds", type=int, default=GROWTH_ADDS)
    parser.add_argument("--ann", action="store_true", help="measure the ANN index's recall@10")
    parser.add_argument("--ann-rows", type=int, default=50_000)
    parser.add_argument("--vector-cache", type=Path, default=None, help="keep ANN embeddings here")
    parser.add_argument("--workdir", type=Path, default=None, help="keep the stores here")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--figures",
        nargs="+",
        choices=FIGURES,
        default=list(FIGURES),
        help="measure only these (default: all)",
    )
    args = parser.parse_args(argv)
    if args.sizes is None:
        args.sizes = [1_000] if args.quick else [1_000, 10_000]
        if args.large:
            args.sizes.append(100_000)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="memctl-writes-") as tmp:
        workdir = args.workdir or Path(tmp)
        writes = measure(
            args.sizes,
            args.seed,
            workdir,
            writers=args.writers,
            adds=args.adds,
            import_lines=args.import_lines,
            growth_adds=args.growth_adds,
            ann_rows=args.ann_rows if args.ann else None,
            vector_cache=args.vector_cache,
            figures_wanted=tuple(args.figures),
        )
    result = {
        "benchmark": "perf_writes",
        "seed": args.seed,
        "writes": writes,
        "total_s": round(time.perf_counter() - started, 2),
        "machine": machine_info(),
        "command": "python -m benchmarks.perf_writes "
        + " ".join(sys.argv[1:] if argv is None else argv),
    }
    render(writes)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        console.print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
