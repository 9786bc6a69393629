"""Project tasks, memctl next to its peers: the same memories, queries and scorer, one run.

python -m benchmarks.peers basic-memory [mempalace] [--half dev|test]
                           [--peer-python [NAME=]PATH ...] [--json OUT]
                           [--details OUT.jsonl] [--workdir DIR]

memctl is scored as `python -m benchmarks.project_tasks` scores it (its stores, `recall` top 5
in hybrid, bm25 and vector mode). The peer gets each project's memories as one Markdown file per
memory (benchmarks/peers/exchange.py) and each task's prompt, in its own interpreter
(`--peer-python`, or MEMCTL_PEER_PYTHON_<NAME> such as MEMCTL_PEER_PYTHON_BASIC_MEMORY: the
python of the peer's venv, set up as benchmarks/README.md says); its top 5 are scored with the same metrics
(benchmarks/project_tasks/metrics.py). The difference of each figure (peer minus memctl) comes
with a paired bootstrap interval over tasks.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table

from benchmarks.halves import HALVES, add_half_option
from benchmarks.machine import machine_info
from benchmarks.peers.exchange import ExportedStore, export_store, ids_from_stems, write_request
from benchmarks.project_tasks.data_files import Dataset, load
from benchmarks.project_tasks.metrics import DEPTH, Labels, score_shown, shown_from, summarize

MEMCTL_MODES = ("hybrid", "bm25", "vector")
FIGURES = ("ndcg@5", "essential_recall@5", "any_relevant")
ROW_KEYS = {"ndcg@5": "ndcg@5", "essential_recall@5": "essential_recall", "any_relevant": "any"}
PYTHON_ENV = "MEMCTL_PEER_PYTHON"
RESAMPLES = 10_000
HERE = Path(__file__).parent

console = Console(stderr=True)


@dataclass(frozen=True)
class Peer:
    """How to run one peer: its query script, and the settings changed from its defaults
    (environment variables, each with the reason it is changed)."""

    name: str
    script: str
    changed: Mapping[str, tuple[str, str]]  # variable -> (value, why)
    # (notes folder, fresh home, peer venv) -> the store's environment beyond `changed`
    environment: Callable[[Path, Path, Path], dict[str, str]] = field(
        default=lambda notes, home, venv: {}
    )


def _basic_memory_environment(notes: Path, home: Path, venv: Path) -> dict[str, str]:
    """A fresh home per store whose default project is the notes folder, and the MiniLM
    weights seeded in the peer's venv (no hub)."""
    return {
        "HOME": str(home),
        "BASIC_MEMORY_HOME": str(notes),
        "FASTEMBED_CACHE_PATH": str(venv / "fastembed-cache"),
        "HF_HUB_OFFLINE": "1",
    }


def _mempalace_environment(notes: Path, home: Path, venv: Path) -> dict[str, str]:
    """A fresh home and palace per store; its side links the seeded MiniLM into that home."""
    return {"HOME": str(home), "MEMPALACE_PALACE_PATH": str(notes.parent / "palace")}


PEERS = {
    "basic-memory": Peer(
        name="basic-memory",
        script="basic_memory_side.py",
        changed={
            "BASIC_MEMORY_SEMANTIC_EMBEDDING_MODEL": (
                "sentence-transformers/all-MiniLM-L6-v2",
                "memctl's model (its int8 ONNX), so the comparison is about ranking; "
                "default bge-small-en-v1.5 would be fetched from the hub",
            ),
            "BASIC_MEMORY_SEMANTIC_MIN_SIMILARITY": (
                "0",
                "default 0.55 is tuned for bge and drops almost every MiniLM hit",
            ),
        },
        environment=_basic_memory_environment,
    ),
    "mempalace": Peer(
        name="mempalace",
        script="mempalace_side.py",
        changed={},
        environment=_mempalace_environment,
    ),
}


def peer_pythons(peers: Sequence[str], asked: Sequence[str]) -> dict[str, Path]:
    """Each peer's venv interpreter: --peer-python NAME=PATH (a bare PATH when one peer is
    run), else $MEMCTL_PEER_PYTHON_<NAME> (basic-memory: ..._BASIC_MEMORY), else, for one
    peer, $MEMCTL_PEER_PYTHON."""
    given: dict[str, str] = {}
    for entry in asked:
        name, sep, value = entry.partition("=")
        if sep and name in PEERS:
            given[name] = value
        elif len(peers) == 1:
            given[peers[0]] = entry
        else:
            raise SystemExit(f"Error: --peer-python {entry}: say which peer, NAME=PATH")
    found = {}
    for name in peers:
        variable = f"{PYTHON_ENV}_{name.upper().replace('-', '_')}"
        value = given.get(name) or os.environ.get(variable)
        if not value and len(peers) == 1:
            value = os.environ.get(PYTHON_ENV)
        if not value:
            raise SystemExit(
                f"Error: give {name}'s interpreter with --peer-python or {variable} "
                "(setup: benchmarks/README.md, 'memctl next to its peers')"
            )
        path = Path(value).expanduser()
        if not path.is_file():
            raise SystemExit(f"Error: {path}: no such interpreter for {name} (--peer-python)")
        found[name] = path
    return found


def run_peer(
    peer: Peer, python: Path, store: ExportedStore, tasks: Sequence[dict], k: int, root: Path
) -> dict:
    """The peer's ranked stems for each task of one store, from its own process."""
    folder = root / store.name
    request = folder / "request.json"
    answer = folder / "answer.json"
    write_request(request, store, [{"id": t["id"], "text": t["prompt"]} for t in tasks], k)
    home = folder / "home"
    home.mkdir(parents=True, exist_ok=True)
    venv = python.parent.parent
    env = {
        "PATH": f"{python.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "LANG": "C.UTF-8",
        **peer.environment(store.notes, home, venv),
        **{name: value for name, (value, _) in peer.changed.items()},
    }
    script = HERE / peer.script
    done = subprocess.run(
        [str(python), str(script), str(request), str(answer)],
        env=env,
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
    )
    (folder / "peer.log").write_text(done.stdout + done.stderr, encoding="utf-8")
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-15:])
        raise SystemExit(
            f"Error: {peer.name} failed on {store.name} (log: {folder}/peer.log)\n{tail}"
        )
    return json.loads(answer.read_text(encoding="utf-8"))


def memctl_rankings(data: Dataset, tasks: list[dict], projects: list[str], workdir: Path) -> dict:
    """mode -> task id -> ranked ids, as benchmarks.project_tasks ranks them."""
    from benchmarks.project_tasks.run import build_stores, recall_ids

    stores = build_stores(data, projects, "per-project", workdir / "memctl")
    ranked: dict[str, dict[str, list[str]]] = {mode: {} for mode in MEMCTL_MODES}
    for task in tasks:
        store = stores[task["project"]]
        for mode in MEMCTL_MODES:
            ranked[mode][task["id"]] = recall_ids(store, task["prompt"], mode)
    return ranked


def score_rankings(
    data: Dataset, tasks: list[dict], ranked: Mapping[str, Sequence[str]]
) -> dict[str, dict]:
    """task id -> project_tasks' per-task figures for one system's top 5."""
    from memctl.core.language.tokens import estimate_tokens

    token_counts = {m["id"]: estimate_tokens(m["text"]) for m in data.memories}
    rows = {}
    for task in tasks:
        labels = Labels.from_task(task)
        ids = list(ranked.get(task["id"], []))[:DEPTH]
        row = score_shown(shown_from({"prompt": ids}, labels, token_counts), labels, ids)
        row["any"] = None if row["any_relevant"] is None else float(row["any_relevant"])
        rows[task["id"]] = row
    return rows


def paired(
    peer: Mapping[str, dict], base: Mapping[str, dict], key: str, seed: int = 0
) -> dict | None:
    """Peer minus base over the tasks where the figure applies: mean, 95% paired bootstrap
    interval, and per-task wins / losses / ties of the peer."""
    diffs = [
        peer[t][key] - base[t][key]
        for t in base
        if base[t].get(key) is not None and peer[t].get(key) is not None
    ]
    if not diffs:
        return None
    rng = random.Random(seed)
    n = len(diffs)
    means = sorted(sum(rng.choices(diffs, k=n)) / n for _ in range(RESAMPLES))
    low, high = means[int(0.025 * RESAMPLES)], means[int(0.975 * RESAMPLES) - 1]
    return {
        "tasks": n,
        "difference": sum(diffs) / n,
        "interval95": [low, high],
        "peer_wins": sum(1 for d in diffs if d > 0),
        "peer_losses": sum(1 for d in diffs if d < 0),
        "ties": sum(1 for d in diffs if d == 0),
    }


def compare(
    data: Dataset,
    tasks: list[dict],
    rankings: Mapping[str, Mapping[str, Sequence[str]]],
    peers: Sequence[str],
) -> dict:
    """half -> system -> figures, and half -> peer -> memctl mode -> figure -> the paired
    difference (peer minus memctl)."""
    rows = {system: score_rankings(data, tasks, ranked) for system, ranked in rankings.items()}
    result: dict = {}
    for half in sorted({t["split"] for t in tasks}):
        ids = [t["id"] for t in tasks if t["split"] == half]
        systems = {s: summarize([r[i] for i in ids]) for s, r in rows.items()}
        versus = {
            peer: {
                mode: {
                    figure: paired(
                        {i: rows[peer][i] for i in ids},
                        {i: rows[mode][i] for i in ids},
                        ROW_KEYS[figure],
                    )
                    for figure in FIGURES
                }
                for mode in MEMCTL_MODES
            }
            for peer in peers
        }
        result[half] = {"systems": systems, "peer_minus_memctl": versus}
    return result


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def render(result: dict) -> None:
    out = Console() if Console().is_terminal else Console(width=150)
    names = ", ".join(result["peers"])
    for half, figures in result["halves"].items():
        table = Table(
            title=f"Project tasks, {half} half: memctl and {names} ({result['tasks'][half]} tasks)",
            box=box.SIMPLE_HEAD,
        )
        for column in ("system", "nDCG@5", "essential R@5", "any relevant@5", "hits/task"):
            table.add_column(column, justify="left" if column == "system" else "right")
        for system, f in figures["systems"].items():
            cells = [f["ndcg@5"], f["essential_recall@5"], f["any_relevant"]]
            table.add_row(system, *(_fmt(c) for c in cells), f"{f['returned_per_task']:.2f}")
        out.print(table)
        for peer, by_mode in figures["peer_minus_memctl"].items():
            versus = Table(
                title=f"{peer} minus memctl, {half} half "
                "(mean [95% paired bootstrap] peer wins/losses/ties)",
                box=box.SIMPLE_HEAD,
            )
            versus.add_column("memctl mode")
            for figure in FIGURES:
                versus.add_column(figure, justify="right")
            for mode, by_figure in by_mode.items():
                versus.add_row(mode, *(_difference(by_figure[f]) for f in FIGURES))
            out.print(versus)


def _difference(d: dict | None) -> str:
    if d is None:
        return "-"
    low, high = d["interval95"]
    wins = f"{d['peer_wins']}/{d['peer_losses']}/{d['ties']}"
    return f"{d['difference']:+.3f} [{low:+.3f}, {high:+.3f}] {wins}"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.peers", description=__doc__.splitlines()[0]
    )
    parser.add_argument("peers", nargs="+", choices=sorted(PEERS), metavar="PEER")
    add_half_option(parser)
    parser.add_argument(
        "--peer-python",
        nargs="+",
        default=[],
        metavar="[NAME=]PATH",
        help=f"the python of each peer's venv (default: ${PYTHON_ENV}_<NAME>)",
    )
    parser.add_argument(
        "--jobs", type=int, default=1, help="a peer's stores indexed and queried at once"
    )
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument(
        "--details", type=Path, default=None, help="each task's ranked ids per system (JSONL)"
    )
    parser.add_argument(
        "--workdir", type=Path, default=None, help="keep the stores, notes and peer logs here"
    )
    return parser.parse_args(argv)


def run_one_peer(
    peer: Peer,
    python: Path,
    data: Dataset,
    tasks: list[dict],
    projects: list[str],
    root: Path,
    jobs: int = 1,
) -> tuple[dict[str, list[str]], dict]:
    """The peer's ranked ids for every task, store by store (`jobs` stores at once, each in
    its own process), and what it said about itself."""

    def one(project: str) -> tuple[ExportedStore, list[dict], dict]:
        console.print(f"{peer.name}: {project} ...")
        store = export_store(root, project, data.memories_of(project))
        own = [t for t in tasks if t["project"] == project]
        return store, own, run_peer(peer, python, store, own, DEPTH, root)

    ranked: dict[str, list[str]] = {}
    about: dict = {}
    search_types: dict[str, int] = {}
    begun = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        answers = list(pool.map(one, projects))
    for store, own, answer in answers:
        vectors = str((answer.get("settings") or {}).get("sqlite_vec", ""))
        if vectors.startswith("unavailable"):
            raise SystemExit(f"Error: {peer.name} cannot run vector search here: {vectors}")
        for kind, count in (answer.get("search_types") or {}).items():
            search_types[kind] = search_types.get(kind, 0) + count
        about.setdefault("stores", {})[store.name] = answer.get("settings")
        about |= {k: v for k, v in answer.items() if k in ("version", "python")}
        for task in own:
            ranked[task["id"]] = ids_from_stems(answer["results"][task["id"]], store.id_of)
    about |= {
        "search_types": search_types,
        "changed": {k: {"value": v, "why": w} for k, (v, w) in peer.changed.items()},
        "seconds": round(time.perf_counter() - begun, 1),
    }
    return ranked, about


def run(args: argparse.Namespace) -> dict:
    started = time.perf_counter()
    peers = list(dict.fromkeys(args.peers))
    pythons = peer_pythons(peers, args.peer_python)
    data = load()
    halves = [args.half] if args.half else list(HALVES)
    tasks = [t for half in halves for t in data.tasks_of(half)]
    projects = [p for half in halves for p in data.projects(half)]
    temp = None
    workdir = args.workdir
    if workdir is None:
        temp = tempfile.TemporaryDirectory(prefix="memctl-peers-")
        workdir = Path(temp.name)
    try:
        console.print(f"memctl: {len(projects)} per-project stores, {len(tasks)} tasks ...")
        rankings: dict[str, dict[str, list[str]]] = dict(
            memctl_rankings(data, tasks, projects, workdir)
        )
        about: dict[str, dict] = {}
        for name in peers:
            rankings[name], about[name] = run_one_peer(
                PEERS[name], pythons[name], data, tasks, projects, workdir / name, args.jobs
            )
        halves_figures = compare(data, tasks, rankings, peers)
        if args.details:
            lines = [
                json.dumps(
                    {"task": t["id"], "split": t["split"], "system": s, "ranked": r[t["id"]]}
                )
                for t in tasks
                for s, r in rankings.items()
            ]
            args.details.write_text("\n".join(lines) + "\n", encoding="utf-8")
    finally:
        if temp is not None:
            temp.cleanup()
    return {
        "benchmark": "peers",
        "peers": about,
        "memctl_commit": _commit(),
        "tasks": {h: len(data.tasks_of(h)) for h in halves},
        "halves": halves_figures,
        "total_s": round(time.perf_counter() - started, 1),
        "machine": machine_info(),
    }


def _commit() -> str | None:
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=HERE,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() or None


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    result = run(args)
    result["command"] = "python -m benchmarks.peers " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    render(result)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0
