"""LoCoMo recall benchmark: every turn becomes a memory, every question is recalled and scored.

python -m benchmarks.locomo PATH/locomo10.json [--quick] [--json OUT] [--k 5 10]
                            [--conversations N] [--workdir DIR] [--details OUT.jsonl]
                            [--one-speaker] [--two-part]

`--one-speaker` keeps only the first speaker's turns as memories (the way a user's own side of
long chat histories is stored) and only the questions all of whose evidence that speaker said:
neighbours in a session are then the same person's other turns, not the reply to a question.
`--two-part` asks consecutive pairs of one-fact questions (one evidence turn each, in different
sessions) as one query, scored on both turns: the shape of a question whose answer is spread
over sessions. It combines with `--one-speaker`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table

from benchmarks.halves import LOCOMO_DEV, add_half_option, leading
from benchmarks.locomo_data import Conversation, load_conversations, two_part
from benchmarks.machine import machine_info, peak_rss_mb, summarize_seconds
from benchmarks.recalling import recall_hits
from benchmarks.scoring import CLEANING_KINDS, MODES, aggregate, metric_names, score_ranking
from memctl.config import with_overrides

# Bump when the way turns are written as memories changes: stores in --workdir are rebuilt.
INGEST_FORMAT = 3
MARKER_NAME = "ingested.json"
STATS_NAME = "write-stats.json"

console = Console(stderr=True)


def one_speaker(conv: Conversation) -> Conversation:
    """The conversation as the first speaker's memories: their turns, and the questions whose
    evidence lies wholly in them."""
    speaker = conv.speakers[0]
    turns = [turn for turn in conv.turns if turn.speaker == speaker]
    said = {turn.dia_id for turn in turns}
    questions = [q for q in conv.questions if set(q.evidence) <= said]
    return Conversation(
        sample_id=f"{conv.sample_id}-a",
        speakers=conv.speakers,
        turns=turns,
        questions=questions,
        cleaning=conv.cleaning,
        questions_total=len(questions),
    )


def _ingest_fingerprint(conv: Conversation) -> dict:
    return {"format": INGEST_FORMAT, "sample_id": conv.sample_id, "turns": len(conv.turns)}


def _write_turns(store, conv: Conversation) -> dict:
    """Add every turn as `memctl add` would; a turn memctl refuses as low-value is added with force."""
    from memctl import service
    from memctl.core.errors import LowValueContent

    stats: Counter = Counter()
    for turn in conv.turns:
        # session_id is memctl's own key for memories written in sequence (recall's neighbours).
        extra = {
            "speaker": turn.speaker,
            "dia_id": turn.dia_id,
            "session_id": f"{conv.sample_id}-s{turn.session}",
        }
        if turn.occurred_at:
            extra["occurred_at"] = turn.occurred_at
        fields = {"type": "episodic", "extra": extra, "created": turn.occurred_at, "sync": False}
        try:
            added = service.add_memory(store, turn.memory_text(), **fields)
        except LowValueContent:
            stats["low_value_forced"] += 1  # every turn may be evidence: keep it, and say so
            added = service.add_memory(store, turn.memory_text(), force=True, **fields)
        for kind, count in (getattr(added, "redacted", None) or {}).items():
            stats[f"redacted_{kind}"] += count
    return dict(stats)


def prepare_store(
    conv: Conversation, conv_dir: Path, overrides: dict | None = None
) -> tuple[object, dict]:
    """A store holding every turn of `conv`; reused when a previous run finished ingesting it.

    `overrides` (from --set) apply from the first write on, so e.g. another embedding model
    embeds the store, rather than a recall rebuilding it later.
    """
    from memctl import service
    from memctl.config import open_store

    store_dir = conv_dir / ".memory"
    marker = conv_dir / MARKER_NAME
    fingerprint = _ingest_fingerprint(conv)
    reused = (
        store_dir.is_dir()
        and marker.is_file()
        and json.loads(marker.read_text(encoding="utf-8")) == fingerprint
    )
    timing: dict = {"reused_store": reused}
    if reused:
        # Why: a run measures memctl's current defaults, not the config a reused store was born with.
        from memctl.service.init import templates_dir

        shutil.copyfile(templates_dir() / "config.yaml", store_dir / "config.yaml")
        store = _with_overrides(open_store(store_dir), overrides)
        timing["add_s"] = 0.0
        write_stats = json.loads((conv_dir / STATS_NAME).read_text(encoding="utf-8"))
    else:
        if conv_dir.exists():
            shutil.rmtree(conv_dir)  # a half-written or outdated store of our own
        conv_dir.mkdir(parents=True)
        start = time.perf_counter()
        store = _with_overrides(service.init_store(store_dir), overrides)
        write_stats = _write_turns(store, conv)
        timing["add_s"] = round(time.perf_counter() - start, 3)
    start = time.perf_counter()
    service.sync_index(store)
    timing["sync_s"] = round(time.perf_counter() - start, 3)
    if not reused:
        (conv_dir / STATS_NAME).write_text(json.dumps(write_stats), encoding="utf-8")
        marker.write_text(json.dumps(fingerprint), encoding="utf-8")
    timing["write_stats"] = write_stats
    return store, timing


def _with_overrides(store, overrides: dict | None):
    return with_overrides(store, overrides) if overrides else store


def _dia_id(hit) -> str | None:
    memory = getattr(hit, "memory", None)
    extra = getattr(memory, "extra", None) or {}
    value = extra.get("dia_id")
    return str(value) if value is not None else None


def evaluate(
    store, conv: Conversation, ks: list[int], details: list | None, modes: tuple[str, ...] = MODES
) -> tuple[list, dict, int]:
    """Recall every question in every mode; return scored rows, per-mode latencies, unmapped hit count."""

    depth = max(ks)
    rows = []
    latencies: dict[str, list[float]] = {mode: [] for mode in MODES}
    unmapped = 0
    for question in conv.questions:
        relevant = set(question.evidence)
        record = {
            "sample_id": conv.sample_id,
            "question": question.text,
            "category": question.category,
            "evidence": list(question.evidence),
        }
        for mode in modes:
            start = time.perf_counter()
            hits = recall_hits(store, question.text, k=depth, mode=mode, sync=False)
            latencies[mode].append(time.perf_counter() - start)
            ranked = [_dia_id(hit) for hit in hits]
            unmapped += sum(1 for item in ranked if item is None)
            rows.append((question.category, mode, score_ranking(ranked, relevant, ks)))
            record[mode] = ranked
        if details is not None:
            details.append(record)
    return rows, latencies, unmapped


def _stdout_console() -> Console:
    """A console that does not squeeze the table to 80 columns when the output goes to a file."""
    out = Console()
    return out if out.is_terminal else Console(width=110)


def add_section_rows(table: Table, sections: list, names: list[str]) -> None:
    """One row per mode of each (label, {mode: figures}, count) section, the best in bold."""
    for index, (label, modes, count) in enumerate(sections):
        best = {name: max(modes[m][name] for m in modes) for name in names}
        shown = [m for m in MODES if m in modes]
        for position, mode in enumerate(shown):
            cells = []
            for name in names:
                text = f"{modes[mode][name]:.3f}"
                cells.append(f"[bold]{text}[/bold]" if modes[mode][name] == best[name] else text)
            table.add_row(
                label if position == 0 else "",
                str(count) if position == 0 else "",
                mode,
                *cells,
                end_section=position == len(shown) - 1 and index < len(sections) - 1,
            )


def render(result: dict, ks: list[int]) -> None:
    out = _stdout_console()
    names = metric_names(ks)
    table = Table(
        title=f"LoCoMo turn-level recall, {result['questions']} questions",
        box=box.SIMPLE_HEAD,
        caption="any = recall_any, all = recall_all; best of the three modes in bold",
    )
    table.add_column("category", no_wrap=True)
    table.add_column("n", justify="right", no_wrap=True)
    table.add_column("mode", no_wrap=True)
    for name in names:
        table.add_column(name.replace("recall_", ""), justify="right", no_wrap=True)
    sections = [("overall", result["overall"], result["questions"])]
    sections += [
        (cat, modes, result["counts"][cat]) for cat, modes in result["by_category"].items()
    ]
    add_section_rows(table, sections, names)
    out.print(table)

    cleaning = Table(title="Evidence cleaning", show_header=True)
    cleaning.add_column("what")
    cleaning.add_column("these conversations", justify="right")
    cleaning.add_column("whole file", justify="right")
    for kind in CLEANING_KINDS:
        cleaning.add_row(
            kind, str(result["cleaning"][kind]), str(result["cleaning_whole_file"][kind])
        )
    out.print(cleaning)
    timing = result["timing"]
    lat = ", ".join(
        f"{m} p50 {timing['recall'][m]['p50_ms']} ms" for m in MODES if timing["recall"].get(m)
    )
    out.print(
        f"ingest {timing['add_s']} s + sync {timing['sync_s']} s for {timing['turns']} turns; "
        f"recall {lat}; total {timing['total_s']} s"
    )
    stats = result["write_stats"]
    redacted = {
        k.removeprefix("redacted_"): v for k, v in stats.items() if k.startswith("redacted_")
    }
    out.print(
        f"turns memctl refused as low-value (added with force): {stats.get('low_value_forced', 0)}; "
        f"redactions on write: {redacted or 'none'}"
    )
    if result["unmapped_hits"]:
        out.print(
            f"[yellow]{result['unmapped_hits']} hits had no dia_id in their metadata (scored as misses)"
        )


def parse_overrides(items: list[str]) -> dict:
    """`recall.fusion=rrf` -> {"recall": {"fusion": "rrf"}}; values are read as YAML."""
    import yaml

    overrides: dict = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--set expects KEY=VALUE, got {item!r}")
        *parents, leaf = key.strip().split(".")
        node = overrides
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = yaml.safe_load(raw)
    return overrides


def add_override_option(parser: argparse.ArgumentParser, example: str) -> None:
    """`--set KEY=VALUE`, repeatable; read_overrides() turns the values into a config mapping."""
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"override a config key for this run, e.g. {example} (value is YAML)",
    )


def read_overrides(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Replace args.overrides (KEY=VALUE strings) by their mapping; a bad one is a usage error."""
    try:
        args.overrides = parse_overrides(args.overrides)
    except ValueError as exc:
        parser.error(str(exc))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.locomo", description=__doc__.splitlines()[0]
    )
    parser.add_argument("data", type=Path, help="path to locomo10.json")
    parser.add_argument("--quick", action="store_true", help="first conversation only")
    parser.add_argument(
        "--one-speaker",
        action="store_true",
        help="only the first speaker's turns as memories, only questions on what they said",
    )
    parser.add_argument(
        "--two-part",
        action="store_true",
        help="ask pairs of one-fact questions from different sessions as one query",
    )
    parser.add_argument("--conversations", type=int, default=None, help="first N conversations")
    add_half_option(parser)
    parser.add_argument(
        "--k", type=int, nargs="+", default=[5, 10], help="cut-offs to score (default 5 10)"
    )
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="keep one store per conversation here and reuse it on later runs",
    )
    parser.add_argument(
        "--details", type=Path, default=None, help="per-question rankings as JSON lines"
    )
    parser.add_argument(
        "--modes",
        nargs="+",
        choices=MODES,
        default=list(MODES),
        help="retrieval modes to run (default: hybrid bm25 vector)",
    )
    add_override_option(
        parser, "--set recall.fusion=rrf --set 'recall.neighbour_weights=[]' (for ablations)"
    )
    args = parser.parse_args(argv)
    read_overrides(parser, args)
    if not args.data.is_file():
        parser.error(f"{args.data}: no such file")
    if any(k < 1 for k in args.k):
        parser.error("--k values must be positive")
    args.k = sorted(set(args.k))
    args.modes = tuple(m for m in MODES if m in args.modes)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    conversations = load_conversations(args.data)
    limit = 1 if args.quick else args.conversations
    selected = leading(conversations, LOCOMO_DEV, args.half)
    selected = selected[:limit] if limit else selected
    if args.one_speaker:
        selected = [one_speaker(conv) for conv in selected]
    if args.two_part:
        selected = [two_part(conv) for conv in selected]
    cleaning_all: Counter = sum((conv.cleaning for conv in conversations), Counter())
    cleaning: Counter = sum((conv.cleaning for conv in selected), Counter())
    questions_total = sum(conv.questions_total for conv in selected)

    temp = None
    workdir = args.workdir
    if workdir is None:
        temp = tempfile.TemporaryDirectory(prefix="memctl-locomo-")
        workdir = Path(temp.name)
    rows: list = []
    latencies: dict[str, list[float]] = {mode: [] for mode in MODES}
    timing = {"add_s": 0.0, "sync_s": 0.0, "turns": 0, "per_conversation": {}}
    details: list | None = [] if args.details else None
    by_conversation = {}
    unmapped = 0
    write_totals: Counter = Counter()
    try:
        for conv in selected:
            console.print(
                f"{conv.sample_id}: {len(conv.turns)} turns, {len(conv.questions)} questions"
            )
            store, conv_timing = prepare_store(conv, workdir / conv.sample_id, args.overrides)
            conv_rows, conv_latencies, conv_unmapped = evaluate(
                store, conv, args.k, details, args.modes
            )
            rows += conv_rows
            unmapped += conv_unmapped
            for mode, values in conv_latencies.items():
                latencies[mode] += values
            timing["add_s"] += conv_timing["add_s"]
            timing["sync_s"] += conv_timing["sync_s"]
            timing["turns"] += len(conv.turns)
            timing["per_conversation"][conv.sample_id] = conv_timing
            write_totals.update(conv_timing["write_stats"])
            by_conversation[conv.sample_id] = aggregate(conv_rows)["overall"]
    finally:
        if temp is not None:
            temp.cleanup()

    scored = aggregate(rows)
    timing["add_s"] = round(timing["add_s"], 3)
    timing["sync_s"] = round(timing["sync_s"], 3)
    timing["recall"] = {mode: summarize_seconds(values) for mode, values in latencies.items()}
    timing["total_s"] = round(time.perf_counter() - started, 2)
    scored_count = sum(scored["counts"].values())
    result = {
        "benchmark": "locomo",
        "data": str(args.data.name),
        "conversations": [conv.sample_id for conv in selected],
        "questions": scored_count,
        "questions_in_data": questions_total,
        "k": args.k,
        "overall": scored["overall"],
        "by_category": scored["by_category"],
        "counts": scored["counts"],
        "by_conversation": by_conversation,
        "cleaning": {kind: cleaning.get(kind, 0) for kind in CLEANING_KINDS},
        "cleaning_whole_file": {kind: cleaning_all.get(kind, 0) for kind in CLEANING_KINDS},
        "unmapped_hits": unmapped,
        "write_stats": dict(write_totals),
        "timing": timing,
        "machine": {**machine_info(), **peak_rss_mb()},
        "overrides": args.overrides,
        "command": "python -m benchmarks.locomo "
        + " ".join(sys.argv[1:] if argv is None else argv),
    }
    render(result, args.k)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        console.print(f"wrote {args.json}")
    if args.details is not None:
        args.details.parent.mkdir(parents=True, exist_ok=True)
        args.details.write_text(
            "".join(json.dumps(d) + "\n" for d in details or []), encoding="utf-8"
        )
        console.print(f"wrote {args.details}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
