"""Action-time memory on the project-task benchmark: what a whole session shows for a task.

python -m benchmarks.action_time [--split dev|test|all] [--layout per-project|shared]
                                 [--mirrors DIR] [--json OUT] [--set KEY=VALUE]

benchmarks.project_tasks scores what the prompt hook shows for a task's prompt. A coding agent
also gets the session-start context and, at action time, the memories anchored to each file it is
about to touch. Here each task is one session: SessionStart (with the `apply: always` rules),
then the prompt, then one Edit tool call per file the task's commit touched (the PreToolUse
hook). The three channels are scored as one union by benchmarks.project_tasks (its
`session+hook` system, with this session's channels plugged in through its `hook_injection`), so
essential recall, precision and tokens count everything the agent was shown.

Anchors are not written by hand: each memory's anchors come from memctl's own proposal code
(core.codebase.anchor_proposals) run on the memory's text against the repository's tree at the commit its
agent file was read from (a mirror of each repository: `fetch` it, or point --mirrors at clones).

--layout shared puts every project's memories in one user store, each bound to its project
(`project:` front matter, the repository's remote as memctl names it), beside an empty project
store per repository: leakage counts shown memories of another project.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from benchmarks.locomo import add_override_option, read_overrides
from benchmarks.project_tasks import run as tasks_run
from benchmarks.project_tasks.data_files import SPLITS, Dataset
from memctl.config import Store, with_overrides

MIRRORS = Path("/work/.mirror")
_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


def mirror_of(mirrors: Path, repo: str) -> Path:
    for candidate in (mirrors / repo.replace("/", "+") / "repo", mirrors / repo.split("/")[-1]):
        if candidate.exists():
            return candidate
    raise SystemExit(f"no mirror of {repo} under {mirrors}; fetch it or pass --mirrors")


def tree_at(repo: Path, commit: str, cache: Path):
    """A CodeTree of `repo` at `commit` whose symbol set is read once (git cat-file --batch)
    and kept in `cache`."""
    from memctl.store.code_tree import CodeTree, is_indexed_symbol

    tree = CodeTree.at_commit(repo, commit)
    if cache.is_file():
        symbols = frozenset(json.loads(cache.read_text(encoding="utf-8")))
    else:
        blobs = sorted(set(tree.files.values()))
        process = subprocess.run(
            ["git", "-C", str(repo), "cat-file", "--batch"],
            input="\n".join(blobs).encode() + b"\n",
            capture_output=True,
            check=True,
        )
        found: set[str] = set()
        data, at = process.stdout, 0
        while at < len(data):
            header_end = data.index(b"\n", at)
            header = data[at:header_end].split()
            if len(header) < 3:  # "<oid> missing": not in this mirror
                at = header_end + 1
                continue
            size = int(header[2])
            body = data[header_end + 1 : header_end + 1 + size]
            at = header_end + 1 + size + 1
            if size <= 1024 * 1024 and b"\0" not in body[:8000]:
                found.update(w.decode() for w in _WORD.findall(body))
        symbols = frozenset(w for w in found if is_indexed_symbol(w))
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(sorted(symbols)), encoding="utf-8")
    tree._symbols = symbols
    return tree


def remote_name(repo: str) -> str:
    from memctl.core.codebase.project_id import normalise_remote

    return normalise_remote(f"https://github.com/{repo}")


def anchor_store(store: Store, memories: list[dict], trees: dict, projects: dict[str, str]):
    """Propose anchors for each memory from its own text; bind it to its project when
    `projects` maps project keys to names (the shared layout). Returns anchor counts."""
    from memctl import service
    from memctl.core.codebase.anchor_proposals import propose_anchors
    from memctl.core.codebase.anchors import PROJECT_KEY
    from memctl.service.anchoring import anchored_extra
    from memctl.store.files import find_by_id, read_memory, write_memory

    counts = {"anchored": 0, "paths": 0, "symbols": 0, "commands": 0}
    for item in memories:
        tree = trees[item["project"]]
        proposal = propose_anchors(item["text"], tree.file_list(), tree.symbol_present).anchors
        relpath = find_by_id(store.root, item["id"])
        if relpath is None:
            continue
        memory = read_memory(store.root, relpath)
        extra = anchored_extra(memory.extra, proposal)
        if item["project"] in projects:
            extra[PROJECT_KEY] = projects[item["project"]]
        if extra != memory.extra:
            write_memory(store.root / relpath, replace(memory, extra=extra))
        if proposal:
            counts["anchored"] += 1
            for kind in ("paths", "symbols", "commands"):
                counts[kind] += len(getattr(proposal, kind))
    service.sync_index(store)
    return counts


class Sessions:
    """Runs each task as one session and keeps what each channel showed."""

    def __init__(self, args: argparse.Namespace, data: Dataset, mirrors: Path):
        self.args = args
        self.data = data
        self.mirrors = mirrors
        self.report: dict = {"channels": {}, "anchors": {}, "action_ms": []}
        self.project_stores: dict[str, Store] = {}
        self.user_store: Store | None = None
        self.trees: dict = {}

    # -- plugged into benchmarks.project_tasks.run ------------------------------------------

    def build_stores(self, data: Dataset, projects: list[str], layout: str, workdir: Path):
        from memctl import service

        self.trees = {
            r["key"]: tree_at(
                mirror_of(self.mirrors, r["repo"]),
                r["agent_commit"],
                workdir.parent / "symbols" / f"{r['key']}-{r['agent_commit'][:12]}.json",
            )
            for r in data.repos
            if r["key"] in projects
        }
        stores = ORIGINAL_BUILD(data, projects, layout, workdir)
        names = {r["key"]: remote_name(r["repo"]) for r in data.repos}
        if layout == tasks_run.SHARED:
            shared = next(iter(stores.values()))
            every = [m for p in data.projects() for m in data.memories_of(p)]
            self.trees.update(
                {
                    r["key"]: self.trees.get(r["key"])
                    or tree_at(
                        mirror_of(self.mirrors, r["repo"]),
                        r["agent_commit"],
                        workdir.parent / "symbols" / f"{r['key']}-{r['agent_commit'][:12]}.json",
                    )
                    for r in data.repos
                }
            )
            self.report["anchors"] = anchor_store(shared, every, self.trees, names)
            self.user_store = self._overridden(shared)
            for project in projects:
                folder = workdir / "projects" / project
                if not (folder / ".memory").is_dir():
                    folder.mkdir(parents=True, exist_ok=True)
                    subprocess.run(["git", "init", "-q", str(folder)], check=True)
                    url = f"https://github.com/{self._repo(project)}"
                    subprocess.run(
                        ["git", "-C", str(folder), "remote", "add", "origin", url], check=True
                    )
                    service.init_store(folder / ".memory")
                from memctl.config import open_store

                self.project_stores[project] = self._overridden(open_store(folder / ".memory"))
        else:
            for project, store in stores.items():
                rules = [m for m in data.memories_of(project) if m.get("type") != "episodic"]
                counts = anchor_store(store, rules, self.trees, {})
                self.report["anchors"][project] = counts
                self.project_stores[project] = self._overridden(store)
        self._plug_code_trees()
        self._run_sessions()
        return stores

    def hook_injection(self, store: Store, task: dict, events: tuple[str, ...]) -> dict:
        """The session as it ran (see _run_sessions): each channel's ids and Markdown."""
        return self.sessions[task["id"]]

    # -- the sessions -------------------------------------------------------------------------

    def _overridden(self, store: Store) -> Store:
        return with_overrides(store, self.args.overrides) if self.args.overrides else store

    def _repo(self, project: str) -> str:
        return next(r["repo"] for r in self.data.repos if r["key"] == project)

    def _plug_code_trees(self) -> None:
        """memctl reads the project's code from its folder; here each project's code is its
        repository at the agent file's commit."""
        import memctl.service.anchoring as anchoring
        import memctl.service.retrieval.action as action

        by_root = {}
        for project, store in self.project_stores.items():
            by_root[anchoring.project_of(store)[0]] = self.trees[project]

        def code_tree(store: Store, persist: bool = True):
            return by_root[anchoring.project_of(store)[0]]

        anchoring.code_tree = code_tree
        action.code_tree = code_tree

    def _run_sessions(self) -> None:
        from memctl.agents.action_events import action_request
        from memctl.agents.claude_code import HookPayload
        from memctl.agents.claude_code_events import prompt_context, session_start_context
        from memctl.core.language.tokens import estimate_tokens
        from memctl.service.retrieval.action import action_recall
        from memctl.store.hook_state import load_session_state

        self.sessions: dict[str, dict[str, tuple[list[str], str]]] = {}
        tokens = {"session": 0, "prompt": 0, "action": 0}
        tasks = self.data.tasks_of(self.args.split)
        for task in tasks:
            store = self.project_stores[task["project"]]
            user = self.user_store
            session = f"bench-{task['id']}-{time.monotonic_ns()}"

            def payload(event: str, session: str = session, **fields) -> HookPayload:
                return HookPayload(event=event, session_id=session, **fields)

            start = session_start_context(store, payload("SessionStart", source="startup"), user)
            started = list(load_session_state(store, session).get("shown") or [])
            prompt = prompt_context(store, payload("UserPromptSubmit", prompt=task["prompt"]), user)
            shown = list(load_session_state(store, session).get("shown") or [])
            prompted = [i for i in shown if i not in started]
            stores = [("project", store)] + ([("user", user)] if user is not None else [])
            acted: list[str] = []
            acted_blocks: list[str] = []
            for path in task["touched"]:
                began = time.perf_counter()
                request = action_request(
                    store, (path,), shown=frozenset(started + prompted + acted)
                )
                result = action_recall(stores, request)
                self.report["action_ms"].append((time.perf_counter() - began) * 1000)
                acted.extend(i.id for i in result.items if i.id not in acted)
                self.report.setdefault("details", []).extend(
                    {"task": task["id"], "path": path, "id": i.id, "via": i.via}
                    for i in result.items
                )
                tokens["action"] += result.tokens
                acted_blocks.append(result.markdown)
            tokens["session"] += estimate_tokens(start)
            tokens["prompt"] += estimate_tokens(prompt)
            self.sessions[task["id"]] = {
                "session": (started, start),
                "prompt": (prompted, prompt),
                "action": (acted, "".join(acted_blocks)),
            }
            self.report.setdefault("details", []).append(
                {"task": task["id"], "session": started, "prompt": prompted}
            )
        count = max(1, len(tasks))
        self.report["channels"] = {
            name: round(value / count, 1) for name, value in tokens.items()
        } | {"tasks": len(tasks)}


ORIGINAL_BUILD = tasks_run.build_stores
ORIGINAL_HOOK = tasks_run.hook_injection
ORIGINAL_LOAD = tasks_run.load


def channel_shares(sessions: Sessions, data: Dataset) -> dict:
    """Per channel, over the split's tasks: the essential needs it met first, and its ids."""
    from benchmarks.project_tasks.metrics import Labels

    met = {"session": 0, "prompt": 0, "action": 0}
    needs_total = 0
    shown = {"session": 0, "prompt": 0, "action": 0}
    relevant = {"session": 0, "prompt": 0, "action": 0}
    for task in data.tasks_of(sessions.args.split):
        labels = Labels.from_task(task)
        wanted = set(labels.needs.values())
        needs_total += len(wanted)
        channels = {name: ids for name, (ids, _) in sessions.sessions[task["id"]].items()}
        for name in ("session", "prompt", "action"):
            ids = channels[name]
            shown[name] += len(ids)
            relevant[name] += sum(1 for i in ids if labels.grades.get(i, 0) > 0)
            found = {labels.needs[i] for i in ids if i in labels.needs} & wanted
            met[name] += len(found)
            wanted -= found
    return {
        name: {
            "needs_met": met[name],
            "shown": shown[name],
            "precision": round(relevant[name] / shown[name], 3) if shown[name] else None,
        }
        for name in met
    } | {"needs": needs_total}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.action_time", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--split", choices=(*SPLITS, "all"), default="dev")
    parser.add_argument("--layout", choices=tasks_run.LAYOUTS, default="per-project")
    parser.add_argument("--mirrors", type=Path, default=MIRRORS)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--details", type=Path, default=None, help="per-task channels (JSONL)")
    parser.add_argument(
        "--grow",
        type=float,
        default=1.0,
        help="grow each store to this many times its agent-file memories with the project's "
        "earlier commits as episodes (benchmarks/project_tasks/growth.py); default 1: none",
    )
    add_override_option(parser, "--set hooks.action_k=0")
    args = parser.parse_args(argv)
    read_overrides(parser, args)
    args.systems = ("session+hook",)
    details_path, args.details = args.details, None
    from benchmarks.project_tasks.data_files import load

    data = load()
    sizes = None
    if args.grow > 1:
        from benchmarks.project_tasks.growth import grown

        data, sizes = grown(data, args.grow, args.mirrors)
    sessions = Sessions(args, data, args.mirrors)
    tasks_run.build_stores = sessions.build_stores
    tasks_run.hook_injection = sessions.hook_injection
    tasks_run.load = lambda: data
    try:
        result = tasks_run.run(args)
    finally:
        tasks_run.build_stores = ORIGINAL_BUILD
        tasks_run.hook_injection = ORIGINAL_HOOK
        tasks_run.load = ORIGINAL_LOAD
    result["store_sizes"] = sizes
    ms = sorted(sessions.report["action_ms"])
    result["benchmark"] = "action_time"
    result["anchors"] = sessions.report["anchors"]
    result["tokens_by_channel"] = sessions.report["channels"]
    result["channels"] = channel_shares(sessions, data)
    result["action_p50_ms"] = round(ms[len(ms) // 2], 1) if ms else None
    result["command"] = "python -m benchmarks.action_time " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    tasks_run.render(result)
    print(
        json.dumps(
            {k: result[k] for k in ("anchors", "tokens_by_channel", "channels", "action_p50_ms")},
            indent=1,
        )
    )
    if details_path:
        lines = sessions.report.get("details", [])
        details_path.write_text("".join(json.dumps(d) + "\n" for d in lines), encoding="utf-8")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
