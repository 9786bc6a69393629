"""Embedding models side by side on the multilingual set: vector recall alone, speed, load time.

python -m benchmarks.multilingual_models [--models ID ...] [--threads N] [--repeats N] [--json OUT]

Every model memctl can run (core.files.embedding.MODELS, those whose package is installed) embeds the
68 memories of benchmarks/data/multilingual.json through the same embedder `memctl` uses; each
query is ranked against them by cosine, which is what `--modes vector` of
benchmarks.multilingual scores through the index. Texts/s is the median of `--repeats` passes
over all memories in one batch (more texts than the embedder's cache of recent texts holds);
query ms is the median time to embed one query the way `memctl recall` does.
This is how the model that `embedding.model: multilingual` maps to was chosen.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table

from benchmarks.machine import machine_info
from benchmarks.multilingual import DATA, GROUPS, score
from memctl.config import EmbeddingSettings
from memctl.core.errors import ModelUnavailable
from memctl.core.files.embedding import MODELS

console = Console(stderr=True)


def evaluate_model(model_id: str, data: dict, threads: int, repeats: int) -> dict:
    """Load `model_id`, time its embedding of every memory, rank every query by cosine."""
    import numpy as np

    from memctl.integrations.embedder import RECENT_TEXTS, get_embedder
    from memctl.integrations.query_embedder import get_query_embedder

    texts = [memory["text"] for memory in data["memories"]]
    ids = [memory["id"] for memory in data["memories"]]
    # Why: a batch the embedder remembers would be timed from its cache, not its model.
    assert len(texts) > RECENT_TEXTS, "the timed batch must not fit the cache of recent texts"
    started = time.perf_counter()
    settings = EmbeddingSettings(model=model_id, threads=threads)
    embedder = get_embedder(settings)
    load_s = time.perf_counter() - started
    rates, cpu_ms = [], []
    for _ in range(repeats):
        started, cpu_started = time.perf_counter(), time.process_time()
        vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
        rates.append(len(texts) / (time.perf_counter() - started))
        cpu_ms.append(1000 * (time.process_time() - cpu_started) / len(texts))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ranks: dict[str, list[int | None]] = {group: [] for group in (*GROUPS, "overall")}
    query_embedder = get_query_embedder(settings)  # what `memctl recall` embeds its query with
    query_embedder.embed_query(data["queries"][0]["query"])
    query_ms = []
    for query in data["queries"]:
        started = time.perf_counter()
        vector = np.asarray(query_embedder.embed_query(query["query"]), dtype=np.float32)
        query_ms.append(1000 * (time.perf_counter() - started))
        order = np.argsort(-(vectors @ (vector / np.linalg.norm(vector))))[:3]
        top = [ids[i] for i in order]
        rank = top.index(query["target"]) + 1 if query["target"] in top else None
        ranks[query["group"]].append(rank)
        ranks["overall"].append(rank)
    return {
        "model": model_id,
        "load_s": round(load_s, 2),
        "texts_per_s": round(statistics.median(rates), 1),
        # CPU time of all threads: steadier than texts/s on a busy machine.
        "cpu_ms_per_text": round(statistics.median(cpu_ms), 1),
        "query_ms_p50": round(statistics.median(query_ms), 1),
        "scores": {group: score(found) for group, found in ranks.items() if found},
    }


def render(results: list[dict]) -> None:
    out = Console()
    out = out if out.is_terminal else Console(width=160)
    table = Table(title="vector recall alone, top-1 / top-3", box=box.SIMPLE_HEAD)
    table.add_column("model", no_wrap=True)
    groups = [g for g in (*GROUPS, "overall") if g in results[0]["scores"]]
    for group in groups:
        table.add_column(f"{group} ({results[0]['scores'][group]['n']})", justify="right")
    table.add_column("texts/s", justify="right")
    table.add_column("CPU ms/text", justify="right")
    table.add_column("query ms", justify="right")
    table.add_column("load s", justify="right")
    for result in results:
        cells = [
            f"{result['scores'][g]['top1']:.3f}/{result['scores'][g]['top3']:.3f}" for g in groups
        ]
        table.add_row(
            result["model"],
            *cells,
            str(result["texts_per_s"]),
            str(result["cpu_ms_per_text"]),
            str(result["query_ms_p50"]),
            str(result["load_s"]),
        )
    out.print(table)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.multilingual_models", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--models", nargs="+", choices=sorted(MODELS), default=sorted(MODELS))
    parser.add_argument("--data", type=Path, default=DATA, help="memories and queries (JSON)")
    parser.add_argument("--threads", type=int, default=2, help="embedding threads (default 2)")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes (median)")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args(argv)
    data = json.loads(args.data.read_text(encoding="utf-8"))
    results = []
    for model_id in args.models:
        try:
            results.append(evaluate_model(model_id, data, args.threads, args.repeats))
        except ModelUnavailable as exc:
            console.print(f"[yellow]skipped {model_id}:[/] {exc}")
    if not results:
        console.print("no model could be loaded")
        return 1
    render(results)
    if args.json:
        report = {
            "benchmark": "multilingual_models",
            "data": args.data.name,
            "threads": args.threads,
            "results": results,
            "machine": machine_info(),
            "command": "python -m benchmarks.multilingual_models "
            + " ".join(sys.argv[1:] if argv is None else argv),
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        console.print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
