"""Multilingual recall: Chinese paraphrases, keywords, and queries across Chinese and English.

python -m benchmarks.multilingual [--json OUT] [--set KEY=VALUE]... [--data PATH]

Every memory of benchmarks/data/multilingual.json is written with `service.add_memory` (the
code `memctl add` runs: redaction, low-value filter, dedup), then every query is recalled in
each mode and scored by where its one target memory ranks: top-1 and top-3 per query group.
"""

from __future__ import annotations

import argparse
import json
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
from benchmarks.machine import machine_info, peak_rss_mb
from benchmarks.recalling import recall_hits
from benchmarks.scoring import MODES
from memctl.config import Store, with_overrides

DATA = Path(__file__).parent / "data" / "multilingual.json"
DEPTH = 3  # the deepest cut-off scored
GROUPS = ("zh_paraphrase", "zh_keywords", "en_to_zh", "zh_to_en", "ja_ko")
BENCH_KEY = "bench_id"  # front matter key naming the data set's memory

console = Console(stderr=True)


def build_store(root: Path, memories: list[dict], overrides: dict) -> tuple[Store, dict]:
    """A store holding every memory, written one by one through the normal write path."""
    from memctl import service
    from memctl.core.errors import LowValueContent

    store = service.init_store(root)
    if overrides:
        store = with_overrides(store, overrides)
    actions: Counter = Counter()
    started = time.perf_counter()
    for memory in memories:
        fields = {"extra": {BENCH_KEY: memory["id"]}}
        try:
            added = service.add_memory(store, memory["text"], **fields)
        except LowValueContent:
            actions["low_value_forced"] += 1
            added = service.add_memory(store, memory["text"], force=True, **fields)
        actions[added.action] += 1
    service.sync_index(store)
    timing = {"write_s": round(time.perf_counter() - started, 2), "actions": dict(actions)}
    return store, timing


def rank_of(store: Store, query: dict, mode: str) -> int | None:
    """1-based rank of the query's target among the top DEPTH, None if it is not there."""

    hits = recall_hits(store, query["query"], k=DEPTH, mode=mode, sync=False)
    found = [str(hit.memory.extra.get(BENCH_KEY)) for hit in hits]
    return found.index(query["target"]) + 1 if query["target"] in found else None


def score(ranks: list[int | None]) -> dict:
    n = len(ranks)
    return {
        "n": n,
        "top1": round(sum(1 for r in ranks if r == 1) / n, 3) if n else None,
        "top3": round(sum(1 for r in ranks if r is not None and r <= 3) / n, 3) if n else None,
    }


def evaluate(store: Store, queries: list[dict], modes: tuple[str, ...]) -> tuple[dict, list]:
    ranks: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    details = []
    for query in queries:
        record = {**query}
        for mode in modes:
            rank = rank_of(store, query, mode)
            ranks[query["group"]][mode].append(rank)
            ranks["overall"][mode].append(rank)
            record[mode] = rank
        details.append(record)
    groups = [g for g in (*GROUPS, "overall") if g in ranks]
    return {g: {mode: score(ranks[g][mode]) for mode in modes} for g in groups}, details


def render(result: dict) -> None:
    out = Console()
    out = out if out.is_terminal else Console(width=110)
    table = Table(title=f"memctl multilingual recall ({result['model']})", box=box.SIMPLE_HEAD)
    table.add_column("group (n)", no_wrap=True)
    table.add_column("mode")
    table.add_column("top-1", justify="right")
    table.add_column("top-3", justify="right")
    for group, by_mode in result["scores"].items():
        for i, (mode, figures) in enumerate(by_mode.items()):
            label = f"{group} ({figures['n']})" if i == 0 else ""
            table.add_row(label, mode, f"{figures['top1']:.3f}", f"{figures['top3']:.3f}")
    out.print(table)
    out.print(
        f"{result['memories']} memories written in {result['timing']['write_s']} s "
        f"({result['timing']['actions']}); total {result['total_s']} s"
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.multilingual", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--data", type=Path, default=DATA, help="memories and queries (JSON)")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--details", action="store_true", help="per-query ranks in the JSON")
    parser.add_argument(
        "--modes", nargs="+", choices=MODES, default=list(MODES), help="retrieval modes to run"
    )
    add_half_option(parser)
    add_override_option(parser, "--set embedding.model=multilingual")
    args = parser.parse_args(argv)
    read_overrides(parser, args)
    args.modes = tuple(m for m in MODES if m in args.modes)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    data = json.loads(args.data.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory(prefix="memctl-multilingual-") as tmp:
        store, timing = build_store(Path(tmp) / ".memory", data["memories"], args.overrides)
        from memctl.service.retrieval.embedding import index_model

        model = index_model(store).id
        scores, details = evaluate(store, alternating(data["queries"], args.half), args.modes)
    result = {
        "benchmark": "multilingual",
        "data": args.data.name,
        "model": model,
        "memories": len(data["memories"]),
        "half": args.half,
        "queries": len(alternating(data["queries"], args.half)),
        "overrides": args.overrides,
        "scores": scores,
        "timing": timing,
        **peak_rss_mb(),
        "total_s": round(time.perf_counter() - started, 2),
        "machine": machine_info(),
        "command": "python -m benchmarks.multilingual "
        + " ".join(sys.argv[1:] if argv is None else argv),
    }
    if args.details:
        result["details"] = details
    render(result)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        console.print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
