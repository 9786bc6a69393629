"""Calibrate the relevance floor per embedding model: how high a cosine must be to mean "about".

python -m benchmarks.relevance_calibration [--models ID ...] [--workdir DIR] [--json OUT]

Each model places unrelated texts at its own typical cosine (all-MiniLM around 0.05, the
multilingual USE around 0.1-0.2), so one cosine threshold cannot serve both. For every model
this recalls (hybrid, no floor, top 10) the queries of two dev sets, the small store
(benchmarks/small_store_data.py, English) and the multilingual set (benchmarks/data/
multilingual.json, plus the no-answer queries below), and collects each hit's cosine to the
query and word coverage, labelled by the gold answers. From the cosines of hits that do not
answer their query it prints the model's null distribution (mean, standard deviation, high
quantiles) and from the gold hits the related one: core.recall.evidence.COSINE_SCALES is chosen from
these. Queries are split in two by position: figures are printed for the dev half (even
positions) and the held-out half (odd), then for the bundled example store (.memory.example,
never used to choose): the share of its no-answer queries that return anything at the
configured floor, and of its answerable ones whose answer comes first.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from benchmarks.recalling import recall_hits
from benchmarks.small_store import write_notes
from benchmarks.small_store_data import NOTES, QUERIES
from memctl.config import Store, with_overrides

REPO = Path(__file__).resolve().parent.parent
MULTILINGUAL = Path(__file__).parent / "data" / "multilingual.json"
DEPTH = 10
# No-answer queries for the multilingual store (Chinese, Japanese, Korean, mixed).
MULTILINGUAL_NONE = (
    "红烧肉怎么做才好吃",
    "明天北京会下雨吗",
    "推荐一本好看的科幻小说",
    "世界上最高的山是哪座",
    "小狗总是乱叫怎么办",
    "帮我写一首关于秋天的诗",
    "月亮离地球有多远",
    "周末去哪里爬山比较好",
    "今日の東京の天気はどうですか",
    "おいしいラーメン屋を教えて",
    "제주도 여행 추천해 주세요",
    "how many calories are in an avocado",
    "who won the football world cup in 2018",
    "这个 recipe 需要多少 sugar",
    "给我讲个笑话",
    "咖啡和茶哪个更健康",
)
# The example store (held out): queries with the file-name stem of their answer, and none.
EXAMPLE_QUERIES = (
    ("how do we ship to production", "how-to-deploy-to-production"),
    ("how do I release an urgent fix", "how-to-cut-a-hotfix-release"),
    ("which package manager does the web app use", "use-pnpm-not-npm"),
    ("why postgres and not mongo", "why-we-chose-postgres"),
    ("who is the tech lead", "maren-okafor"),
    ("how to change the database password safely", "how-to-rotate-the-postgres-app-password"),
    ("what happened when the disk filled up on staging", "staging-disk-filled-up"),
    ("how are error codes named", "error-codes-follow"),
    ("line length for python formatting", "format-python-with-ruff"),
    ("how do I run the tests", "how-to-run-the-test-suite"),
    ("what is a good recipe for lasagna", None),
    ("write a haiku about autumn", None),
    ("how far is the moon", None),
    ("ERR_PAY_4471", None),
    ("who won the tennis final yesterday", None),
    ("recommend a good podcast about history", None),
    ("what is the capital of Canada", None),
    ("how do I bake sourdough bread", None),
    ("红烧肉怎么做", None),
    ("explain quantum entanglement simply", None),
)


def small_store(root: Path, overrides: dict) -> tuple[Store, list[tuple[str, set[str]]]]:
    from memctl import service

    store = with_overrides(service.init_store(root / ".memory"), overrides)
    write_notes(store, NOTES)
    return store, [(query.text, set(query.gold)) for query in QUERIES]


def multilingual_store(root: Path, overrides: dict) -> tuple[Store, list[tuple[str, set[str]]]]:
    from benchmarks.multilingual import BENCH_KEY, build_store

    data = json.loads(MULTILINGUAL.read_text(encoding="utf-8"))
    store, _ = build_store(root / ".memory", data["memories"], overrides)
    by_bench = {}
    from memctl.store.files import read_memory, scan_files

    for relpath in scan_files(store.root, False):
        memory = read_memory(store.root, relpath)
        by_bench[str(memory.extra.get(BENCH_KEY))] = memory.id
    queries = [(q["query"], {by_bench.get(q["target"], "?")}) for q in data["queries"]]
    return store, queries + [(text, set()) for text in MULTILINGUAL_NONE]


def example_store(root: Path, overrides: dict) -> tuple[Store, list[tuple[str, set[str]]]]:
    from memctl.config import open_store
    from memctl.store.files import scan_files

    target = root / ".memory"
    shutil.copytree(REPO / ".memory.example", target, ignore=shutil.ignore_patterns(".index"))
    store = with_overrides(open_store(target), overrides)
    paths = sorted(scan_files(store.root, False))
    queries = []
    for text, stem in EXAMPLE_QUERIES:
        gold = {Path(p).stem for p in paths if stem and Path(p).stem.startswith(stem)}
        queries.append((text, gold))
    return store, queries


def collect(store: Store, queries: list[tuple[str, set[str]]], by_stem: bool = False) -> list:
    """Per query: its gold set and each hit's (is gold, cosine, coverage, relevance)."""
    from memctl import service

    service.sync_index(store)
    found = []
    for position, (text, gold) in enumerate(queries):
        hits = recall_hits(store, text, k=DEPTH, min_relevance=0.0, sync=False)
        found.append(
            {
                "query": text,
                "half": "dev" if position % 2 == 0 else "held_out",
                "answerable": bool(gold),
                "hits": [
                    {
                        "gold": (hit.path.stem if by_stem else hit.id) in gold,
                        "cosine": hit.cosine,
                        "coverage": round(hit.coverage, 4),
                        "relevance": round(hit.relevance, 4),
                    }
                    for hit in hits
                ],
            }
        )
    return found


def describe(records: list) -> dict:
    """The null (non-answer) and related (answer) cosine distributions, and floor figures."""
    null = [h["cosine"] for r in records for h in r["hits"] if not h["gold"] and h["cosine"]]
    top_null = [
        max((h["cosine"] or 0.0 for h in r["hits"]), default=0.0)
        for r in records
        if not r["answerable"]
    ]
    related = [h["cosine"] for r in records for h in r["hits"] if h["gold"] and h["cosine"]]
    null.sort()
    answerable = [r for r in records if r["answerable"]]
    none = [r for r in records if not r["answerable"]]
    return {
        "null_mean": round(statistics.fmean(null), 4) if null else None,
        "null_sd": round(statistics.pstdev(null), 4) if null else None,
        "null_p95": round(null[int(0.95 * (len(null) - 1))], 4) if null else None,
        "null_p99": round(null[int(0.99 * (len(null) - 1))], 4) if null else None,
        "no_answer_top_cosine_max": round(max(top_null), 4) if top_null else None,
        "related_median": round(statistics.median(related), 4) if related else None,
        "related_p10": round(sorted(related)[len(related) // 10], 4) if related else None,
        "answerable": len(answerable),
        "no_answer": len(none),
    }


def floor_figures(records: list, floor: float) -> dict:
    """At `floor`: answerable queries whose first kept hit is gold, no-answer ones kept."""
    answerable = [r for r in records if r["answerable"]]
    none = [r for r in records if not r["answerable"]]

    def kept(record):
        return [h for h in record["hits"] if h["relevance"] >= floor]

    return {
        "top1": round(
            sum(bool(kept(r)) and kept(r)[0]["gold"] for r in answerable) / len(answerable), 3
        )
        if answerable
        else None,
        "empty": round(sum(not kept(r) for r in answerable) / len(answerable), 3)
        if answerable
        else None,
        "false_positive": round(sum(bool(kept(r)) for r in none) / len(none), 3) if none else None,
    }


def main(argv: list[str] | None = None) -> int:
    from memctl.core.files.embedding import MODELS

    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.relevance_calibration", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--models", nargs="+", default=["all-MiniLM-L6-v2-int8", "use-multilingual-v3"]
    )
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="memctl-calibration-"))
    result: dict = {}
    for model in args.models:
        if model not in MODELS:
            parser.error(f"unknown model {model}")
        overrides = {"embedding": {"model": model}}
        per_set = {}
        for name, build in (
            ("small_store", small_store),
            ("multilingual", multilingual_store),
            ("example", example_store),
        ):
            root = workdir / model / name
            if root.exists():
                shutil.rmtree(root)
            root.mkdir(parents=True)
            store, queries = build(root, overrides)
            per_set[name] = collect(store, queries, by_stem=name == "example")
        floor = with_overrides(store, {}).settings.recall.min_relevance
        summary = {}
        for name, records in per_set.items():
            for half in ("dev", "held_out", "all"):
                chosen = [r for r in records if half == "all" or r["half"] == half]
                summary[f"{name}/{half}"] = {
                    **describe(chosen),
                    **floor_figures(chosen, floor),
                }
        result[model] = {"floor": floor, "summary": summary, "records": per_set}
        print(json.dumps({model: {"floor": floor, **summary}}, indent=1), flush=True)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
