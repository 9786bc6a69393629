"""USE v3 and e5 combined, vector recall alone: the ensemble and the ways of combining them tried.

python -m benchmarks.multilingual_ensemble [--data PATH] [--json OUT]

Embeds the memories and queries of benchmarks/data/multilingual.json once with each model
(USE v3; e5 raw and centred, see integrations.multilingual.E5Embedder), then ranks every query
by each way of combining the two cosines and scores top-1 / top-3 per group, like
benchmarks.multilingual_models. It also prints the null statistics the ensemble uses (cosines of
queries to memories that do not answer them, on the dev half: queries at even positions) and
checks that the shipped EnsembleEmbedder ranks as the formula it stands for.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table

from benchmarks.machine import machine_info
from benchmarks.multilingual import DATA, GROUPS, score

console = Console(stderr=True)


def ranks_of(scores, targets: list[int], groups: list[str]) -> dict:
    import numpy as np

    found: dict[str, list[int | None]] = {group: [] for group in (*GROUPS, "overall")}
    for row, target in enumerate(targets):
        top = list(np.argsort(-scores[row], kind="stable")[:3])
        rank = top.index(target) + 1 if target in top else None
        found[groups[row]].append(rank)
        found["overall"].append(rank)
    return {group: score(ranks) for group, ranks in found.items() if ranks}


def null_of(scores, mask) -> tuple[float, float]:
    values = scores[mask]
    return round(float(values.mean()), 3), round(float(values.std()), 3)


def less_script_means(vectors, texts: list[str], queries: list[str], script_slot):
    """Cosines after subtracting, from every vector, the mean memory vector of its script (the
    store's own means: what aligning a model's languages would take), renormalised."""
    import numpy as np

    memories, asked = (np.array(v, dtype=np.float32) for v in vectors)
    memory_slots = np.array([script_slot(t) for t in texts])
    query_slots = np.array([script_slot(q) for q in queries])
    for slot in set(memory_slots.tolist()):
        mean = memories[memory_slots == slot].mean(axis=0)
        memories[memory_slots == slot] -= mean
        asked[query_slots == slot] -= mean
    memories /= np.linalg.norm(memories, axis=1, keepdims=True)
    asked /= np.linalg.norm(asked, axis=1, keepdims=True)
    return asked @ memories.T


def main(argv: list[str] | None = None) -> int:
    import numpy as np

    from memctl.config import EmbeddingSettings
    from memctl.integrations.multilingual import (
        E5_SAME_SCRIPT_NULL,
        USE_CROSS_SCRIPT_NULL,
        E5Embedder,
        EnsembleEmbedder,
        UseEmbedder,
        script_slot,
    )

    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.multilingual_ensemble", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--data", type=Path, default=DATA, help="memories and queries (JSON)")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args(argv)
    data = json.loads(args.data.read_text(encoding="utf-8"))
    texts = [memory["text"] for memory in data["memories"]]
    queries = [query["query"] for query in data["queries"]]
    ids = [memory["id"] for memory in data["memories"]]
    targets = [ids.index(query["target"]) for query in data["queries"]]
    groups = [query["group"] for query in data["queries"]]

    settings = EmbeddingSettings(model="use-e5-ensemble", threads=2)
    use, e5, raw = UseEmbedder(settings), E5Embedder(settings), E5Embedder(settings, False)
    cosines = {}
    vectors = {}
    for name, model in (("use", use), ("e5 centred", e5), ("e5 raw", raw)):
        memories = np.asarray(model.embed(texts))
        asked = np.stack([model.embed_query(query) for query in queries])
        vectors[name] = (memories, asked)
        cosines[name] = asked @ memories.T
    same = np.equal.outer(
        np.array([script_slot(q) for q in queries]), np.array([script_slot(t) for t in texts])
    )
    unrelated = np.ones_like(same)
    unrelated[np.arange(len(targets)), targets] = False
    dev = np.zeros_like(same)
    dev[::2] = True
    nulls = {
        "e5 centred, same script": null_of(cosines["e5 centred"], unrelated & dev & same),
        "use, across scripts": null_of(cosines["use"], unrelated & dev & ~same),
        "use, same script": null_of(cosines["use"], unrelated & dev & same),
    }

    def gated(same_scores, cross_scores):
        return np.where(same, same_scores, cross_scores)

    def z(scores, null):
        return (scores - null[0]) / null[1]

    use_cos, e5_cos = cosines["use"], cosines["e5 centred"]
    for name in ("use", "e5 raw"):
        cosines[f"{name} less script means"] = less_script_means(
            vectors[name], texts, queries, script_slot
        )
    ensemble = EnsembleEmbedder(settings)
    shipped = np.stack([ensemble.embed_query(q) for q in queries]) @ ensemble.embed(texts).T
    formula = gated(z(e5_cos, E5_SAME_SCRIPT_NULL), z(use_cos, USE_CROSS_SCRIPT_NULL))
    ways = {
        "USE alone": use_cos,
        "e5 alone (raw)": cosines["e5 raw"],
        "e5 alone (centred)": e5_cos,
        "USE less each script's mean (store)": cosines["use less script means"],
        "e5 less each script's mean (store)": cosines["e5 raw less script means"],
        "mean of USE and e5 cosines": (use_cos + e5_cos) / 2,
        "e5 within a script, USE across (plain cosines)": gated(e5_cos, use_cos),
        "ensemble: each in sd above its null (shipped)": shipped,
    }
    results = {name: ranks_of(scores, targets, groups) for name, scores in ways.items()}
    agreement = float(np.mean(np.argmax(shipped, 1) == np.argmax(formula, 1)))

    out = Console()
    out = out if out.is_terminal else Console(width=160)
    table = Table(title="vector recall alone, top-1 / top-3", box=box.SIMPLE_HEAD)
    table.add_column("combination", no_wrap=True)
    shown = [g for g in (*GROUPS, "overall") if g in results["USE alone"]]
    for group in shown:
        table.add_column(f"{group} ({results['USE alone'][group]['n']})", justify="right")
    for name, by_group in results.items():
        table.add_row(
            name, *(f"{by_group[g]['top1']:.3f}/{by_group[g]['top3']:.3f}" for g in shown)
        )
    out.print(table)
    out.print(f"null cosines on the dev half (mean, sd): {nulls}")
    out.print(f"shipped vectors and formula agree on the first hit for {agreement:.0%} of queries")
    if args.json:
        report = {
            "benchmark": "multilingual_ensemble",
            "data": args.data.name,
            "results": results,
            "nulls_dev_half": nulls,
            "shipped_agrees_with_formula": agreement,
            "machine": machine_info(),
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        console.print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
