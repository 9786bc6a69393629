"""MemoryBank recall benchmark: one store per user, one memory per exchange, every probing
question recalled in each mode and scored against our gold evidence, per language and kind.

python -m benchmarks.memorybank [--lang en|cn|both] [--quick] [--users N] [--json OUT]
                                [--workdir DIR] [--details OUT.jsonl] [--modes ...] [--set K=V]

A memory holds one exchange, "User: <query>\\nAssistant: <response>": the questions ask about
both sides (what the user said they like, what the companion recommended), the two sides only
answer together ("Do you have any recommendations?" / "I recommend ..."), and the labels are
those of memctl's own transcripts, saying who said what. Each memory is dated on its day
(`occurred_at` and `created`, minutes apart in the day's order), and questions are asked as of
the day after the user's last chat, so "On May 2nd" / "5月2日" can be resolved. Stores use the
config template's `embedding.model` (`auto`): the report names the model each language got.
Data and gold: benchmarks/data/memorybank (MIT; see its LICENSE and benchmarks/memorybank_data).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from rich import box
from rich.table import Table

from benchmarks.halves import MEMORYBANK_DEV, add_half_option, leading
from benchmarks.locomo import (
    _dia_id,
    _stdout_console,
    add_override_option,
    add_section_rows,
    console,
    prepare_store,
    read_overrides,
)
from benchmarks.locomo_data import Conversation, Turn
from benchmarks.machine import machine_info, peak_rss_mb, summarize_seconds
from benchmarks.memorybank_data import (
    DATA_DIR,
    KINDS,
    LANGUAGES,
    User,
    load_users,
    metric_names,
    score_question,
)
from benchmarks.recalling import recall_hits
from benchmarks.scoring import MODES, aggregate

QUICK_USERS = 2


def conversation(user: User) -> Conversation:
    """The user's exchanges as LoCoMo-style turns, so locomo.prepare_store writes them: the turn
    text is the exchange's memory text after its "User: " label, dated on its day."""
    days = sorted({exchange.day for exchange in user.exchanges})
    turns = []
    for exchange in user.exchanges:
        index = int(exchange.exchange_id.rsplit("#", 1)[1])
        body = exchange.memory_text().removeprefix("User: ")
        turns.append(
            Turn(
                dia_id=exchange.exchange_id,
                speaker="User",
                text=body,
                session=days.index(exchange.day) + 1,
                occurred_at=f"{exchange.day}T12:{index:02d}:00Z",
            )
        )
    return Conversation(user.sample_id, ("User", "Assistant"), turns, [])


def evaluate(
    store, user: User, args: argparse.Namespace, details: list | None, errors: list
) -> tuple[list, dict]:
    """Recall every answerable question in every mode; scored rows and per-mode latencies.

    A recall that raises counts as a miss and is listed in `errors`."""

    rows = []
    latencies: dict[str, list[float]] = {mode: [] for mode in args.modes}
    for question in user.questions:
        query = question.text
        as_of = None if args.ask_now else user.as_of
        record = {
            "lang": user.lang,
            "user": user.name,
            "index": question.index,
            "question": question.text,
            "kind": question.kind,
            "evidence": [sorted(group) for group in question.groups],
        }
        for mode in args.modes:
            start = time.perf_counter()
            try:
                hits = recall_hits(store, query, k=10, mode=mode, sync=False, as_of=as_of)
            except Exception as exc:  # noqa: BLE001 - a failing recall is a result, not a stop
                errors.append(
                    {
                        "user": user.sample_id,
                        "question": query,
                        "mode": mode,
                        "error": f"{type(exc).__name__}: {str(exc)[:200]}",
                    }
                )
                hits = []
            latencies[mode].append(time.perf_counter() - start)
            ranked = [_dia_id(hit) for hit in hits]
            rows.append((question.kind, mode, score_question(ranked, question)))
            record[mode] = ranked
        if details is not None:
            details.append(record)
    return rows, latencies


def hybrid_below_parts(languages: dict) -> list[dict]:
    """Every (language, section, metric) where hybrid scores below BM25 or vector alone."""
    cells = []
    for lang, result in languages.items():
        sections = {"overall": result["overall"], **result["by_kind"]}
        for section, modes in sections.items():
            if not {"hybrid", "bm25", "vector"} <= set(modes):
                continue
            for name in metric_names():
                best_part = max(modes["bm25"][name], modes["vector"][name])
                if modes["hybrid"][name] < best_part:
                    cells.append(
                        {
                            "lang": lang,
                            "section": section,
                            "metric": name,
                            "hybrid": round(modes["hybrid"][name], 3),
                            "bm25": round(modes["bm25"][name], 3),
                            "vector": round(modes["vector"][name], 3),
                        }
                    )
    return cells


def run_language(users: list[User], workdir: Path, args: argparse.Namespace, details) -> dict:
    from memctl.service.retrieval.embedding import index_model

    rows: list = []
    latencies: dict[str, list[float]] = {mode: [] for mode in args.modes}
    models: set[str] = set()
    errors: list[dict] = []
    timing = {"add_s": 0.0, "sync_s": 0.0, "exchanges": 0}
    for user in users:
        console.print(
            f"{user.sample_id}: {len(user.exchanges)} exchanges, {len(user.questions)} questions"
        )
        store, store_timing = prepare_store(
            conversation(user), workdir / user.sample_id, args.overrides
        )
        models.add(index_model(store).id)
        user_rows, user_latencies = evaluate(store, user, args, details, errors)
        rows += user_rows
        for mode, values in user_latencies.items():
            latencies[mode] += values
        timing["add_s"] += store_timing["add_s"]
        timing["sync_s"] += store_timing["sync_s"]
        timing["exchanges"] += len(user.exchanges)
    scored = aggregate(rows)
    order = [kind for kind in KINDS if kind in scored["by_category"]]
    return {
        "users": [user.name for user in users],
        "questions": sum(scored["counts"].values()),
        "unanswerable": [q for user in users for q in user.unanswerable],
        "embedding_models": sorted(models),
        "recall_errors": errors,
        "overall": scored["overall"],
        "by_kind": {kind: scored["by_category"][kind] for kind in order},
        "counts": {kind: scored["counts"][kind] for kind in order},
        "timing": {
            "add_s": round(timing["add_s"], 2),
            "sync_s": round(timing["sync_s"], 2),
            "exchanges": timing["exchanges"],
            "recall": {mode: summarize_seconds(values) for mode, values in latencies.items()},
        },
    }


def render(result: dict) -> None:
    out = _stdout_console()
    names = metric_names()
    for lang, data in result["languages"].items():
        table = Table(
            title=f"MemoryBank ({lang}) exchange-level recall, {data['questions']} questions, "
            f"embedding {', '.join(data['embedding_models'])}",
            box=box.SIMPLE_HEAD,
            caption="any = recall_any, all = recall_all; best of the modes in bold",
        )
        for column in ("kind", "n", "mode"):
            table.add_column(column, no_wrap=True, justify="right" if column == "n" else "left")
        for name in names:
            table.add_column(name.replace("recall_", ""), justify="right", no_wrap=True)
        sections = [("overall", data["overall"], data["questions"])]
        sections += [(kind, modes, data["counts"][kind]) for kind, modes in data["by_kind"].items()]
        add_section_rows(table, sections, names)
        out.print(table)
        if data["recall_errors"]:
            out.print(f"[yellow]{len(data['recall_errors'])} recalls raised (scored as misses):")
            for error in data["recall_errors"][:5]:
                out.print(f"  {error['mode']} {error['question']!r}: {error['error']}")
        if data["unanswerable"]:
            out.print(f"not scored (nothing in the {lang} dialogs answers): {data['unanswerable']}")
    below = result["hybrid_below_parts"]
    out.print(f"cells where hybrid is below BM25 or vector alone: {len(below)}")
    for cell in below:
        out.print(
            f"  {cell['lang']} {cell['section']} {cell['metric']}: hybrid {cell['hybrid']:.3f}, "
            f"bm25 {cell['bm25']:.3f}, vector {cell['vector']:.3f}"
        )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.memorybank", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--lang", choices=(*LANGUAGES, "both"), default="both")
    parser.add_argument(
        "--quick", action="store_true", help=f"first {QUICK_USERS} users of each language"
    )
    parser.add_argument(
        "--ask-now",
        action="store_true",
        help="ask without --as-of (dates resolve against today): what the time bonus adds",
    )
    parser.add_argument("--users", type=int, default=None, help="first N users of each language")
    add_half_option(parser)
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR, help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument(
        "--workdir", type=Path, default=None, help="keep one store per user here and reuse it"
    )
    parser.add_argument("--details", type=Path, default=None, help="per-question rankings (JSONL)")
    parser.add_argument(
        "--modes", nargs="+", choices=MODES, default=list(MODES), help="default: all three"
    )
    add_override_option(parser, "--set recall.fusion=rrf")
    args = parser.parse_args(argv)
    read_overrides(parser, args)
    if args.users is not None and args.users < 1:
        parser.error("--users must be positive")
    args.modes = tuple(m for m in MODES if m in args.modes)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    limit = QUICK_USERS if args.quick else args.users
    languages = LANGUAGES if args.lang == "both" else (args.lang,)
    temp = None
    workdir = args.workdir
    if workdir is None:
        temp = tempfile.TemporaryDirectory(prefix="memctl-memorybank-")
        workdir = Path(temp.name)
    details: list | None = [] if args.details else None
    results = {}
    try:
        for lang in languages:
            users = leading(load_users(lang, args.data_dir), MEMORYBANK_DEV, args.half)[:limit]
            results[lang] = run_language(users, workdir, args, details)
    finally:
        if temp is not None:
            temp.cleanup()
    result = {
        "benchmark": "memorybank",
        "source": "zhongwanjun/MemoryBank-SiliconFriend@ddd1b449 (MIT) + memctl gold.json",
        "languages": results,
        "hybrid_below_parts": hybrid_below_parts(results),
        "total_s": round(time.perf_counter() - started, 2),
        "machine": {**machine_info(), **peak_rss_mb()},
        "overrides": args.overrides,
        "command": "python -m benchmarks.memorybank "
        + " ".join(sys.argv[1:] if argv is None else argv),
    }
    render(result)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", "utf-8")
        console.print(f"wrote {args.json}")
    if args.details is not None:
        args.details.parent.mkdir(parents=True, exist_ok=True)
        lines = "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in details or [])
        args.details.write_text(lines, encoding="utf-8")
        console.print(f"wrote {args.details}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
