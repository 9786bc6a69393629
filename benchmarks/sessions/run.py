"""`python -m benchmarks.sessions`: score learning from real sessions (see benchmarks/README.md)."""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.sessions.corpus import (
    Session,
    available,
    cache_dir,
    load_sessions,
    transcript_path,
)
from benchmarks.sessions.judge import is_narration, judge_memory, sentences
from benchmarks.sessions.labels import KINDS, Item, Repeat, grade, load_labels

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class SessionResult:
    session: Session
    ingest: dict[str, Any]
    memories: list[dict[str, Any]] = field(default_factory=list)
    grades: dict[str, str] = field(default_factory=dict)  # item id -> yes | partly | no
    reachable: dict[str, str] = field(
        default_factory=dict
    )  # the same, quarantined memories left out
    sentences: int = 0
    narration: int = 0


@dataclass
class RepeatResult:
    repeat: Repeat
    grade: str  # yes | partly | no
    injections: int
    tokens: int
    start_tokens: int
    first_line: int | None  # line of the first injection that satisfied the item


TEMPLATE_FOLDERS = "transcript_folders: [~/.claude/projects]"


def fresh_store(where: Path) -> Path:
    """A new store whose hooks may read the benchmark's transcripts (they live in the cache,
    not in ~/.claude/projects; memctl versions without the setting need nothing)."""
    from memctl.service.init import init_store

    where.mkdir(parents=True, exist_ok=True)
    root = init_store(where).root
    config = root / "config.yaml"
    text = config.read_text(encoding="utf-8")
    if TEMPLATE_FOLDERS in text:
        folders = f"transcript_folders: [~/.claude/projects, {json.dumps(str(cache_dir()))}]"
        config.write_text(text.replace(TEMPLATE_FOLDERS, folders), encoding="utf-8")
    return root


def ingest(store: Path, transcript: Path, session: Session, project: Path) -> dict[str, Any]:
    """One SessionEnd ingest in a child process (benchmarks.sessions.ingest_one)."""
    argv = [
        sys.executable,
        "-m",
        "benchmarks.sessions.ingest_one",
        str(store),
        str(transcript),
        session.session_id,
        str(project),
    ]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, check=False)
    if done.returncode != 0 or not done.stdout.strip():
        return {"outcome": "crashed", "detail": done.stderr[-2000:], "seconds": 0, "peak_rss_mb": 0}
    return json.loads(done.stdout.strip().splitlines()[-1])


def written(store: Path) -> list[tuple[Any, bool]]:
    """(memory, quarantined) for every memory in the store."""
    from memctl.config import open_store
    from memctl.service.memories.lookup import list_memories
    from memctl.service.provenance import gate_for

    opened = open_store(store)
    gate = gate_for(opened)
    return [(memory, gate.quarantined(memory)) for _, memory in list_memories(opened).memories]


def memory_text(memory: Any) -> str:
    return f"{memory.title}\n{memory.body}"


def score_session(
    session: Session, items: list[Item], work: Path, reuse: bool = False
) -> SessionResult:
    """Ingest the session into a fresh store (or, with `reuse`, take the store and figures an
    earlier run left in `work`) and judge what it wrote."""
    transcript = transcript_path(session)
    project = work / "ingest" / session.id.replace("/", "__")
    figures = project / "ingest.json"
    if reuse and figures.is_file():
        store = project / ".memory"
        measured = json.loads(figures.read_text(encoding="utf-8"))
    else:
        if project.exists():
            shutil.rmtree(project)
        store = fresh_store(project)
        measured = ingest(store, transcript, session, project)
        figures.write_text(json.dumps(measured), encoding="utf-8")
    result = SessionResult(session, measured)
    mine = [item for item in items if item.session == session.id]
    current = [item for item in mine if not item.refuted]
    best: dict[str, str] = {item.id: "no" for item in current}
    reachable: dict[str, str] = {item.id: "no" for item in current}
    for memory, quarantined in written(store):
        text = memory_text(memory)
        verdict = judge_memory(text, mine)
        said = sentences(memory.body)
        narrated = sum(1 for s in said if is_narration(s))
        result.sentences += len(said)
        result.narration += narrated
        result.memories.append(
            {
                "id": memory.id,
                "type": memory.type,
                "title": memory.title,
                "verdict": verdict.verdict,
                "items": list(verdict.items),
                "quarantined": quarantined,
                "sentences": len(said),
                "narration": narrated,
            }
        )
        for item in current:
            mark = grade(text, item)
            _better(best, item.id, mark)
            if not quarantined:
                _better(reachable, item.id, mark)
    result.grades = best
    result.reachable = reachable
    return result


def _better(marks: dict[str, str], item_id: str, mark: str) -> None:
    if mark == "yes" or (mark == "partly" and marks[item_id] == "no"):
        marks[item_id] = mark


def score_repeats(
    todo: list[Repeat], sessions: list[Session], items: dict[str, Item], work: Path
) -> list[RepeatResult]:
    """Per project: one store fed the project's sessions in order; before a session with a
    repeat is fed, a copy of the store (holding only the earlier sessions) replays it."""
    results: list[RepeatResult] = []
    for project in sorted({sessions_by_id(sessions)[r.session].project for r in todo}):
        ordered = sorted((s for s in sessions if s.project == project), key=lambda s: s.started)
        root = work / "replay" / project
        if root.exists():
            shutil.rmtree(root)
        store = fresh_store(root / "project")
        last = max(i for i, s in enumerate(ordered) if any(r.session == s.id for r in todo))
        for index, session in enumerate(ordered[: last + 1]):
            for repeat in (r for r in todo if r.session == session.id):
                print(f"replay {repeat.session} to line {repeat.line}", file=sys.stderr, flush=True)
                results.append(_replay_one(repeat, session, items[repeat.item], root))
            if index < last:  # Why: no later replay needs the last one's memories
                ingest(store, transcript_path(session), session, root / "project")
    return results


def sessions_by_id(sessions: list[Session]) -> dict[str, Session]:
    return {s.id: s for s in sessions}


def _replay_one(repeat: Repeat, later: Session, item: Item, root: Path) -> RepeatResult:
    from benchmarks.sessions.replay import replay
    from memctl.core.language.tokens import estimate_tokens

    copy = root / f"at-{later.name}"
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(root / "project", copy)
    injections = replay(transcript_path(later), copy / ".memory", copy, repeat.line)
    mark, first = "no", None
    for injection in injections:
        got = grade(injection.text, item)
        if got == "yes":
            mark, first = "yes", injection.line
            break
        if got == "partly" and mark == "no":
            mark, first = "partly", injection.line
    return RepeatResult(
        repeat,
        mark,
        len(injections),
        sum(estimate_tokens(i.text) for i in injections),
        sum(estimate_tokens(i.text) for i in injections if i.event == "SessionStart"),
        first,
    )


def _ratio(part: float, whole: float) -> float | None:
    return round(part / whole, 3) if whole else None


def summarize(
    results: list[SessionResult], repeats: list[RepeatResult], kind_of: dict[str, str]
) -> dict[str, Any]:
    grades = [(r.session.id, item_id, mark) for r in results for item_id, mark in r.grades.items()]
    kinds: dict[str, Counter] = defaultdict(Counter)
    total: Counter = Counter()
    for _, item_id, mark in grades:
        kinds[kind_of[item_id]][mark] += 1
        total[mark] += 1
    n_items = sum(total.values())
    reach = Counter(mark for r in results for mark in r.reachable.values())
    verdicts = Counter(m["verdict"] for r in results for m in r.memories)
    memories = sum(verdicts.values())
    quarantined = sum(1 for r in results for m in r.memories if m["quarantined"])
    useful_q = sum(
        1 for r in results for m in r.memories if m["quarantined"] and m["verdict"] == "useful"
    )
    seconds = [r.ingest.get("seconds", 0) for r in results]
    rss = [r.ingest.get("peak_rss_mb", 0) for r in results]
    cpu = [r.ingest["cpu_seconds"] for r in results if "cpu_seconds" in r.ingest]
    errors = [r.session.id for r in results if r.ingest.get("outcome") != "ok"]
    sentences_total = sum(r.sentences for r in results)
    narration = sum(r.narration for r in results)
    rep = Counter(r.grade for r in repeats)
    return {
        "sessions": len(results),
        "projects": len({r.session.project for r in results}),
        "items": n_items,
        "recall_yes": _ratio(total["yes"], n_items),
        "recall_partly": _ratio(total["partly"], n_items),
        "recall_any": _ratio(total["yes"] + total["partly"], n_items),
        "recall_reachable_yes": _ratio(reach["yes"], n_items),
        "by_kind": {
            kind: {
                "items": sum(kinds[kind].values()),
                "yes": kinds[kind]["yes"],
                "partly": kinds[kind]["partly"],
                "recall_yes": _ratio(kinds[kind]["yes"], sum(kinds[kind].values())),
            }
            for kind in KINDS
        },
        "memories": memories,
        "useful": verdicts["useful"],
        "partly_useful": verdicts["partly"],
        "noise": verdicts["noise"],
        "wrong": verdicts["wrong"],
        "precision": _ratio(verdicts["useful"], memories),
        "precision_lenient": _ratio(verdicts["useful"] + verdicts["partly"], memories),
        "sentences": sentences_total,
        "narration_sentences": narration,
        "narration_share": _ratio(narration, sentences_total),
        "quarantined": quarantined,
        "quarantine_share": _ratio(quarantined, memories),
        "useful_quarantined": useful_q,
        "repeats": len(repeats),
        "repeats_preempted": rep["yes"],
        "repeats_partly": rep["partly"],
        "preempted_share": _ratio(rep["yes"], len(repeats)),
        "tokens_injected_per_replay": round(statistics.fmean([r.tokens for r in repeats]), 1)
        if repeats
        else None,
        "session_start_tokens": round(statistics.fmean([r.start_tokens for r in repeats]), 1)
        if repeats
        else None,
        "ingest_seconds_median": round(statistics.median(seconds), 2) if seconds else None,
        "ingest_seconds_max": round(max(seconds), 2) if seconds else None,
        "ingest_cpu_seconds_median": round(statistics.median(cpu), 2) if cpu else None,
        "ingest_cpu_seconds_max": round(max(cpu), 2) if cpu else None,
        "peak_rss_mb_median": round(statistics.median(rss), 1) if rss else None,
        "peak_rss_mb_max": round(max(rss), 1) if rss else None,
        "largest_transcript_mb": round(max(r.session.bytes for r in results) / 1e6, 2)
        if results
        else None,
        "ingest_errors": errors,
    }


ROWS = [
    ("sessions / projects", lambda s: f"{s['sessions']} / {s['projects']}"),
    ("items labelled", lambda s: str(s["items"])),
    ("item recall: yes", lambda s: _pct(s["recall_yes"])),
    ("item recall: yes or partly", lambda s: _pct(s["recall_any"])),
    ("item recall: yes, not quarantined", lambda s: _pct(s["recall_reachable_yes"])),
    *[(f"  {kind} (yes, of n)", lambda s, k=kind: _kind(s, k)) for kind in KINDS],
    ("memories written", lambda s: str(s["memories"])),
    (
        "  useful / partly / noise / wrong",
        lambda s: f"{s['useful']} / {s['partly_useful']} / {s['noise']} / {s['wrong']}",
    ),
    ("precision (useful / written)", lambda s: _pct(s["precision"])),
    ("narration share of sentences", lambda s: _pct(s["narration_share"])),
    ("quarantined (of written)", lambda s: f"{s['quarantined']} ({_pct(s['quarantine_share'])})"),
    ("  of them useful", lambda s: str(s["useful_quarantined"])),
    (
        "repeats pre-empted",
        lambda s: f"{s['repeats_preempted']} of {s['repeats']} (+{s['repeats_partly']} partly)",
    ),
    ("tokens injected per replay", lambda s: str(s["tokens_injected_per_replay"])),
    ("  of them at session start", lambda s: str(s["session_start_tokens"])),
    (
        "ingest s (median / max)",
        lambda s: f"{s['ingest_seconds_median']} / {s['ingest_seconds_max']}",
    ),
    (
        "ingest CPU s (median / max)",
        lambda s: f"{s['ingest_cpu_seconds_median']} / {s['ingest_cpu_seconds_max']}",
    ),
    ("peak MB (median / max)", lambda s: f"{s['peak_rss_mb_median']} / {s['peak_rss_mb_max']}"),
    ("largest transcript MB", lambda s: str(s["largest_transcript_mb"])),
    ("ingest errors", lambda s: str(len(s["ingest_errors"]))),
]


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _kind(summary: dict[str, Any], kind: str) -> str:
    entry = summary["by_kind"][kind]
    if not entry["items"]:
        return "-"
    return f"{_pct(entry['recall_yes'])} ({entry['yes']}+{entry['partly']}p of {entry['items']})"


def table(summaries: dict[str, dict[str, Any]]) -> str:
    halves = list(summaries)
    width = max(len(name) for name, _ in ROWS)
    lines = ["| " + "metric".ljust(width) + " | " + " | ".join(halves) + " |"]
    lines.append("|" + "-" * (width + 2) + "|" + "|".join("-" * (len(h) + 2) for h in halves) + "|")
    for name, render in ROWS:
        cells = [render(summaries[h]) for h in halves]
        lines.append("| " + name.ljust(width) + " | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.sessions",
        description="Score what memctl learns from recorded Claude Code sessions (no LLM).",
    )
    parser.add_argument("--half", choices=("dev", "test", "all"), default="all")
    parser.add_argument("--json", metavar="OUT", help="write every figure to this JSON file")
    parser.add_argument(
        "--workdir", metavar="DIR", help="keep the stores here (default: a temp dir)"
    )
    parser.add_argument("--project", action="append", help="only this project (repeatable)")
    parser.add_argument("--no-replay", action="store_true", help="skip the repeats replay")
    parser.add_argument(
        "--reuse-stores",
        action="store_true",
        help="with --workdir: judge the stores an earlier run left there instead of ingesting again",
    )
    parser.add_argument(
        "--replay-only",
        action="store_true",
        help="only the repeats replay (no per-session scoring)",
    )
    parser.add_argument("--manifest", metavar="FILE", help=argparse.SUPPRESS)
    parser.add_argument("--labels", metavar="DIR", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sessions = load_sessions(Path(args.manifest)) if args.manifest else load_sessions()
    items, repeats = load_labels(Path(args.labels)) if args.labels else load_labels()
    halves = ["dev", "test"] if args.half == "all" else [args.half]
    chosen = [s for s in sessions if s.half in halves]
    if args.project:
        chosen = [s for s in chosen if s.project in args.project]
    chosen, missing = available(chosen)
    for message in missing:
        print(f"skipped: {message}", file=sys.stderr)
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="memctl-sessions-"))
    by_id = {item.id: item for item in items}
    results: list[SessionResult] = []
    scored = [] if args.replay_only else sorted(chosen, key=lambda s: (s.project, s.started))
    for number, session in enumerate(scored, 1):
        print(f"[{number}/{len(scored)}] ingest {session.id}", file=sys.stderr, flush=True)
        results.append(score_session(session, items, work, reuse=args.reuse_stores))
    repeat_results: list[RepeatResult] = []
    if not args.no_replay:
        ids = {s.id for s in chosen}
        todo = [r for r in repeats if r.session in ids]
        repeat_results = score_repeats(todo, chosen, by_id, work)
    summaries = {}
    for half in halves:
        mine = [r for r in results if r.session.half == half]
        reps = [r for r in repeat_results if _half_of(r.repeat.session, chosen) == half]
        summaries[half] = summarize(mine, reps, {i.id: i.kind for i in items})
    print(table(summaries))
    if args.json:
        report = {
            "summaries": summaries,
            "sessions": [
                {
                    "id": r.session.id,
                    "half": r.session.half,
                    "ingest": r.ingest,
                    "grades": r.grades,
                    "reachable": r.reachable,
                    "memories": r.memories,
                    "sentences": r.sentences,
                    "narration": r.narration,
                }
                for r in results
            ],
            "repeats": [
                {
                    "item": r.repeat.item,
                    "session": r.repeat.session,
                    "line": r.repeat.line,
                    "grade": r.grade,
                    "first_line": r.first_line,
                    "injections": r.injections,
                    "tokens": r.tokens,
                    "start_tokens": r.start_tokens,
                }
                for r in repeat_results
            ],
        }
        Path(args.json).write_text(
            json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8"
        )
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _half_of(session_id: str, sessions: list[Session]) -> str:
    return next(s.half for s in sessions if s.id == session_id)
