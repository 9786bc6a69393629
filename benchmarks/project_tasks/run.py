"""Project memory for coding agents: does recall show the agent the project rules a task needs?

python -m benchmarks.project_tasks [--split dev|test|all] [--layout per-project|shared]
                                   [--systems hybrid bm25 vector hook] [--json OUT]
                                   [--details OUT.jsonl] [--workdir DIR] [--set KEY=VALUE]

Memories are the items of public repositories' agent files (AGENTS.md, CLAUDE.md, ...); tasks
are later commits of the same repositories, phrased as the prompt a developer would type, with
the memories a careful engineer would want shown, graded from each commit's diff (data/, built
by benchmarks.project_tasks.sources). Each task's prompt goes to `memctl recall` in each mode
(top 5, the configured relevance floor applies) and to the UserPromptSubmit hook's own use-case
(agents.claude_code_events.prompt_context: what the hook injects). See README.md here.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table

from benchmarks.locomo import add_override_option, read_overrides
from benchmarks.machine import machine_info
from benchmarks.project_tasks.data_files import SPLITS, Dataset, load
from benchmarks.project_tasks.metrics import DEPTH, Labels, score_shown, shown_from, summarize
from benchmarks.recalling import recall_hits
from memctl.config import Store, with_overrides

SYSTEMS = ("hybrid", "bm25", "vector", "hook", "session", "session+hook")
HOOK_SYSTEMS = ("hook", "session", "session+hook")
LAYOUTS = ("per-project", "shared")
STORE_FORMAT = 1  # bump when how memories are written changes: --workdir stores rebuild
SHARED = "shared"

console = Console(stderr=True)


def write_memories(store: Store, memories: list[dict], tag_project: bool) -> None:
    """Each item through memctl's write path under its fixed id, typed as `memctl import` would
    type it (by its heading), then one sync."""
    from memctl import service
    from memctl.core.files.agent_files import type_for_heading

    for memory in memories:
        service.add_memory(
            store,
            memory["text"],
            type=memory.get("type") or type_for_heading(memory["section"]),
            tags=[memory["project"]] if tag_project else [],
            memory_id=memory["id"],
            created=memory.get("created") or "2026-01-01T09:00:00Z",
            dedup=False,
            force=True,
            sync=False,
        )
    service.sync_index(store)


def build_store(directory: Path, memories: list[dict], tag_project: bool = False) -> Store:
    """A store of `memories` at directory/.memory, reused when --workdir already holds it."""
    from memctl import service
    from memctl.config import open_store

    marker = directory / "project-tasks.json"
    fingerprint = {"format": STORE_FORMAT, "memories": [[m["id"], m["text"]] for m in memories]}
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
    write_memories(store, memories, tag_project)
    marker.write_text(json.dumps(fingerprint), encoding="utf-8")
    return store


def build_stores(data: Dataset, projects: list[str], layout: str, workdir: Path) -> dict:
    """project -> store; in the shared layout every project maps to the one store of all."""
    if layout == SHARED:
        every = [m for p in data.projects() for m in data.memories_of(p)]
        store = build_store(workdir / SHARED, every, tag_project=True)
        return {p: store for p in projects}
    return {p: build_store(workdir / p, data.memories_of(p)) for p in projects}


def recall_ids(store: Store, prompt: str, mode: str) -> list[str]:

    return [hit.id for hit in recall_hits(store, prompt, k=DEPTH, mode=mode, sync=False)]


def hook_injection(store: Store, task: dict, events: tuple[str, ...]) -> dict[str, tuple]:
    """What the agent hooks inject for the task in a fresh session, event by event as Claude
    Code fires them: SessionStart's context block (`session`) and/or UserPromptSubmit's block for
    the task's prompt (`prompt`, which skips what the session start already showed). Each
    channel: (ids shown, read from the session's shown list; the Markdown injected)."""
    from memctl.agents.claude_code import HookPayload
    from memctl.agents.claude_code_events import prompt_context, session_start_context
    from memctl.store.hook_state import load_session_state

    session = f"bench-{task['id']}-{time.monotonic_ns()}"
    channels: dict[str, tuple] = {}
    before: list[str] = []
    for event in events:
        if event == "session":
            payload = HookPayload(event="SessionStart", session_id=session, source="startup")
            markdown = session_start_context(store, payload)
        else:
            payload = HookPayload(
                event="UserPromptSubmit", session_id=session, prompt=task["prompt"]
            )
            markdown = prompt_context(store, payload)
        shown = list(load_session_state(store, session).get("shown") or [])
        channels[event] = ([i for i in shown if i not in before] if markdown else [], markdown)
        before = shown
    return channels


HOOK_EVENTS = {"hook": ("prompt",), "session": ("session",), "session+hook": ("session", "prompt")}


def evaluate(
    data: Dataset,
    stores: dict,
    tasks: list[dict],
    systems: tuple[str, ...],
    details: list | None,
    extra: dict | None = None,
) -> dict:
    """system -> split (and "by_project" -> project) -> figures. `extra` (task id -> {channel: ids}) adds other channels'
    injections (session start, action time) to every system's own, scored as one union."""
    from memctl.core.language.tokens import estimate_tokens

    token_counts = {m["id"]: estimate_tokens(m["text"]) for m in data.memories}
    project_of = {m["id"]: m["project"] for m in data.memories}
    rows: dict[str, dict[str, list]] = {s: {} for s in systems}
    by_project: dict[str, dict[str, list]] = {s: {} for s in systems}
    latencies: dict[str, list[float]] = {s: [] for s in systems}
    for task in tasks:
        labels = Labels.from_task(task)
        store = stores[task["project"]]
        for system in systems:
            start = time.perf_counter()
            block_tokens = None
            if system in HOOK_SYSTEMS:
                injected = hook_injection(store, task, HOOK_EVENTS[system])
                own = {channel: ids for channel, (ids, _) in injected.items()}
                block_tokens = sum(estimate_tokens(md) for _, md in injected.values())
            else:
                own = {"prompt": recall_ids(store, task["prompt"], system)}
            latencies[system].append(time.perf_counter() - start)
            channels = {**own, **((extra or {}).get(task["id"]) or {})}
            if extra and block_tokens is not None:
                mine = {i for ids in own.values() for i in ids}
                others = {i for k, ids in channels.items() if k not in own for i in ids} - mine
                block_tokens += sum(token_counts.get(i, 0) for i in others)
            shown = shown_from(
                channels, labels, token_counts, task["project"], project_of, block_tokens
            )
            # Why: nDCG ranks one list; a session block is the same for every task, not a ranking.
            ranked = own.get("prompt") if "session" not in own else None
            row = score_shown(shown, labels, ranked)
            ranked = [i for ids in own.values() for i in ids]
            rows[system].setdefault(task["split"], []).append(row)
            by_project[system].setdefault(task["project"], []).append(row)
            if details is not None:
                details.append({"system": system, "task": task["id"], "shown": ranked, **row})
    figures: dict = {}
    for system, by_split in rows.items():
        figures[system] = {split: summarize(r) for split, r in sorted(by_split.items())}
        if len(by_split) > 1:
            figures[system]["all"] = summarize([r for rs in by_split.values() for r in rs])
        figures[system]["by_project"] = {
            project: summarize(r) for project, r in by_project[system].items()
        }
        values = sorted(latencies[system])
        figures[system]["p50_ms"] = round(values[len(values) // 2] * 1000, 1) if values else None
    return figures


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def render(result: dict) -> None:
    out = Console() if Console().is_terminal else Console(width=130)
    for split in [s for s in (*SPLITS, "all") if s in result["splits"]]:
        table = Table(
            title=f"Project tasks, {split} half ({result['layout']} stores): "
            f"{result['tasks'][split]} tasks, {result['abstention_tasks'][split]} with nothing "
            "relevant",
            box=box.SIMPLE_HEAD,
        )
        columns = ["system", "nDCG@5", "essential R@5", "precision", "false inj."]
        columns += ["tokens/task", "relevant tok.", "hits/task"]
        if result["layout"] == SHARED:
            columns.append("leakage")
        for column in columns:
            table.add_column(column, justify="left" if column == "system" else "right")
        for system, by_split in result["systems"].items():
            f = by_split.get(split)
            if not f:
                continue
            cells = [
                system,
                _fmt(f["ndcg@5"]),
                _fmt(f["essential_recall@5"]),
                _fmt(f["precision"]),
                _fmt(f["false_injection"]),
                _fmt(f["tokens_per_task"], 1),
                _fmt(f["relevant_token_share"]),
                _fmt(f["returned_per_task"], 2),
            ]
            if result["layout"] == SHARED:
                cells.append(_fmt(f["leakage"]))
            table.add_row(*cells)
        out.print(table)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.project_tasks", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--split", choices=(*SPLITS, "all"), default="all")
    parser.add_argument("--layout", choices=LAYOUTS, default="per-project")
    parser.add_argument("--systems", nargs="+", choices=SYSTEMS, default=list(SYSTEMS))
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--details", type=Path, default=None, help="per-task figures (JSONL)")
    parser.add_argument("--workdir", type=Path, default=None, help="keep the stores here")
    add_override_option(parser, "--set hooks.prompt_min_relevance=0.4")
    args = parser.parse_args(argv)
    read_overrides(parser, args)
    args.systems = tuple(s for s in SYSTEMS if s in args.systems)
    return args


def run(args: argparse.Namespace, extra: dict | None = None) -> dict:
    """Build (or reuse) the stores and score every system; the result as --json writes it."""
    started = time.perf_counter()
    data = load()
    tasks = data.tasks_of(args.split)
    projects = data.projects(args.split)
    temp = None
    workdir = args.workdir
    if workdir is None:
        temp = tempfile.TemporaryDirectory(prefix="memctl-project-tasks-")
        workdir = Path(temp.name)
    details: list | None = [] if args.details else None
    try:
        console.print(f"building {args.layout} stores for {len(projects)} projects ...")
        stores = build_stores(data, projects, args.layout, workdir / args.layout)
        if args.overrides:
            from memctl import service

            stores = {p: with_overrides(s, args.overrides) for p, s in stores.items()}
            for store in {id(s): s for s in stores.values()}.values():
                service.sync_index(store)  # Why: an embedding.model override re-embeds
        console.print(f"scoring {len(tasks)} tasks ...")
        systems = evaluate(data, stores, tasks, args.systems, details, extra)
    finally:
        if temp is not None:
            temp.cleanup()
    splits = sorted({t["split"] for t in tasks})
    splits += ["all"] if len(splits) > 1 else []
    result = {
        "benchmark": "project_tasks",
        "layout": args.layout,
        "splits": splits,
        "projects": projects,
        "memories": sum(len(data.memories_of(p)) for p in projects),
        "tasks": {s: len(data.tasks_of(s)) for s in splits},
        "abstention_tasks": {
            s: sum(1 for t in data.tasks_of(s) if not t["labels"]) for s in splits
        },
        "systems": systems,
        "overrides": args.overrides,
        "total_s": round(time.perf_counter() - started, 2),
        "machine": machine_info(),
    }
    if details is not None and args.details:
        args.details.write_text("".join(json.dumps(d) + "\n" for d in details), encoding="utf-8")
    return result


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    result = run(args)
    result["command"] = "python -m benchmarks.project_tasks " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    render(result)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0
