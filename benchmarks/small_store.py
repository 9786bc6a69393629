"""Small-store recall benchmark: one team's ~90 project memories, ~150 queries with gold answers.

python -m benchmarks.small_store [--json OUT] [--modes hybrid bm25 vector] [--set KEY=VALUE]
                                 [--details OUT.jsonl] [--workdir DIR]

Reports, per retrieval mode: top-1 (the first hit answers the query), recall@5 (share of the
gold memories in the top 5), how often an answerable query got nothing back (the relevance
floor dropped the answer), and the floor's false-positive rate: the share of queries that
nothing in the store answers which still returned something.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table

from benchmarks.halves import add_half_option, alternating
from benchmarks.locomo import add_override_option, read_overrides
from benchmarks.machine import machine_info
from benchmarks.recalling import recall_hits
from benchmarks.small_store_data import NOTES, QUERIES, Note, Query
from memctl.config import Store, with_overrides

MODES = ("hybrid", "bm25", "vector")
DEPTH = 5
STORE_FORMAT = 1  # bump when the notes or how they are written change: --workdir stores rebuild

console = Console(stderr=True)


def write_notes(store: Store, notes: tuple[Note, ...]) -> None:
    """Each note through memctl's write path under its fixed id and date, then one sync."""
    from memctl import service

    for note in notes:
        service.add_memory(
            store,
            note.text,
            type=note.type,
            tags=list(note.tags),
            created=f"{note.created}T09:00:00Z",
            memory_id=note.id,
            dedup=False,
            force=True,
            sync=False,
        )
    service.sync_index(store)


def build_store(directory: Path, notes: tuple[Note, ...] = NOTES) -> Store:
    """A store holding `notes`, written through memctl's own write path, then synced."""
    from memctl import service
    from memctl.config import open_store

    marker = directory / "small-store.json"
    fingerprint = {"format": STORE_FORMAT, "notes": [n.id for n in notes]}
    store_dir = directory / ".memory"
    if marker.is_file() and json.loads(marker.read_text(encoding="utf-8")) == fingerprint:
        from memctl.service.init import templates_dir

        shutil.copyfile(templates_dir() / "config.yaml", store_dir / "config.yaml")
        store = open_store(store_dir)
        service.sync_index(store)
        return store
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    store = service.init_store(store_dir)
    write_notes(store, notes)
    marker.write_text(json.dumps(fingerprint), encoding="utf-8")
    return store


def score_query(query: Query, ranked: list[str]) -> dict:
    """Figures of one query's ranking (ids, best first, already cut at the floor and at k)."""
    if not query.gold:
        return {"returned_anything": float(bool(ranked))}
    gold = set(query.gold)
    return {
        "top1": float(bool(ranked) and ranked[0] in gold),
        f"recall@{DEPTH}": len(gold & set(ranked[:DEPTH])) / len(gold),
        "empty": float(not ranked),
    }


def evaluate(
    store: Store, modes: tuple[str, ...], details: list | None, queries: list[Query] | None = None
) -> dict:

    per_mode: dict[str, dict[str, list]] = {}
    latencies: dict[str, list[float]] = defaultdict(list)
    for mode in modes:
        rows: dict[str, list] = defaultdict(list)
        for query in QUERIES if queries is None else queries:
            start = time.perf_counter()
            hits = recall_hits(store, query.text, k=DEPTH, mode=mode, sync=False, as_of=query.as_of)
            latencies[mode].append(time.perf_counter() - start)
            ranked = [hit.id for hit in hits]
            scored = score_query(query, ranked)
            rows["all" if query.gold else "none"].append(scored)
            if query.gold:
                rows[query.kind].append(scored)
            if details is not None:
                details.append(
                    {
                        "mode": mode,
                        "query": query.text,
                        "gold": list(query.gold),
                        "ranked": ranked,
                        "relevance": [round(getattr(h, "relevance", 0.0), 4) for h in hits],
                        "score": [round(h.score, 4) for h in hits],
                    }
                )
        per_mode[mode] = {group: _means(items) for group, items in rows.items()}
        per_mode[mode]["_counts"] = {group: len(items) for group, items in rows.items()}
    return {"modes": per_mode, "latency_ms": _latency(latencies)}


def _means(items: list[dict]) -> dict[str, float]:
    keys = sorted({key for item in items for key in item})
    return {key: round(sum(item[key] for item in items) / len(items), 4) for key in keys}


def _latency(latencies: dict[str, list[float]]) -> dict[str, float]:
    return {
        mode: round(sorted(values)[len(values) // 2] * 1000, 1)
        for mode, values in latencies.items()
        if values
    }


def render(result: dict) -> None:
    out = Console() if Console().is_terminal else Console(width=110)
    table = Table(
        title=f"Small-store recall: {result['memories']} memories, {result['queries']} queries "
        f"({result['no_answer_queries']} with no answer)",
        box=box.SIMPLE_HEAD,
        caption="false positives = no-answer queries that returned anything",
    )
    for column in ("mode", "top-1", f"recall@{DEPTH}", "answerable, empty", "false positives"):
        table.add_column(column, justify="right" if column != "mode" else "left")
    for mode, groups in result["modes"].items():
        answerable, none = groups.get("all", {}), groups.get("none", {})
        table.add_row(
            mode,
            f"{answerable.get('top1', 0):.3f}",
            f"{answerable.get(f'recall@{DEPTH}', 0):.3f}",
            f"{answerable.get('empty', 0):.3f}",
            f"{none.get('returned_anything', 0):.3f}",
        )
    out.print(table)
    kinds = Table(title="top-1 by kind of query", box=box.SIMPLE_HEAD)
    kinds.add_column("mode")
    names = [k for k in ("paraphrase", "lexical", "identifier", "time") if k in result["kinds"]]
    for name in names:
        kinds.add_column(f"{name} ({result['kinds'][name]})", justify="right")
    for mode, groups in result["modes"].items():
        kinds.add_row(mode, *(f"{groups.get(name, {}).get('top1', 0):.3f}" for name in names))
    out.print(kinds)
    out.print(f"recall p50 ms: {result['latency_ms']}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.small_store", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--details", type=Path, default=None, help="per-query rankings")
    parser.add_argument("--workdir", type=Path, default=None, help="keep the store here")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    add_half_option(parser)
    add_override_option(parser, "--set recall.min_relevance=0")
    args = parser.parse_args(argv)
    read_overrides(parser, args)
    args.modes = tuple(m for m in MODES if m in args.modes)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    temp = None
    workdir = args.workdir
    if workdir is None:
        temp = tempfile.TemporaryDirectory(prefix="memctl-small-")
        workdir = Path(temp.name)
    details: list | None = [] if args.details else None
    asked = alternating(QUERIES, args.half)
    try:
        store = build_store(workdir / "fernway")
        if args.overrides:
            from memctl import service

            store = with_overrides(store, args.overrides)
            service.sync_index(store)  # Why: an embedding.model override re-embeds the store
        evaluated = evaluate(store, args.modes, details, asked)
    finally:
        if temp is not None:
            temp.cleanup()
    result = {
        "benchmark": "small_store",
        "memories": len(NOTES),
        "half": args.half,
        "queries": len(asked),
        "no_answer_queries": sum(1 for q in asked if not q.gold),
        "kinds": dict(Counter(q.kind for q in asked if q.gold)),
        **evaluated,
        "overrides": args.overrides,
        "total_s": round(time.perf_counter() - started, 2),
        "machine": machine_info(),
        "command": "python -m benchmarks.small_store "
        + " ".join(sys.argv[1:] if argv is None else argv),
    }
    render(result)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    if details is not None and args.details:
        args.details.write_text("".join(json.dumps(d) + "\n" for d in details), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
