"""Rebuild the project-task data from the public repositories it was taken from.

python -m benchmarks.project_tasks.sources [--cache DIR] [--mirror-root DIR] [--check]

Each repository of data/repos.json is cloned (blobless, given network) into the cache, or read
from a local bare mirror (`<mirror-root>/<owner>+<name>/repo`) when one exists. From the agent
file at its recorded commit come the memories (benchmarks.project_tasks.items, ids in file
order); from each hand-written task of data/tasks/<key>.json its full commit hash and the files
that commit touched. The results are data/memories.jsonl and data/tasks.jsonl, which is what the
benchmark reads: it needs no network. `--check` rebuilds in memory and fails if the committed
files differ.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from benchmarks.project_tasks.items import extract_items

DATA = Path(__file__).parent / "data"
DEFAULT_CACHE = Path.home() / ".cache" / "memctl-bench" / "project_tasks"
DEFAULT_MIRRORS = Path("/work/.mirror")


def load_repos() -> list[dict]:
    return json.loads((DATA / "repos.json").read_text(encoding="utf-8"))


def git(directory: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(directory), *args], capture_output=True, text=True, check=True
    )
    return done.stdout


def source_dir(repo: dict, cache: Path, mirrors: Path) -> Path:
    """A git directory holding the repository's history: a local mirror, else a cached clone."""
    mirror = mirrors / repo["repo"].replace("/", "+") / "repo"
    if (mirror / "HEAD").is_file():
        return mirror
    clone = cache / repo["repo"].replace("/", "+")
    if not (clone / "HEAD").is_file():
        clone.parent.mkdir(parents=True, exist_ok=True)
        url = f"https://github.com/{repo['repo']}.git"
        subprocess.run(
            ["git", "clone", "--bare", "--filter=blob:none", url, str(clone)], check=True
        )
    return clone


def memories_of(repo: dict, directory: Path) -> list[dict]:
    text = git(directory, "show", f"{repo['agent_commit']}:{repo['agent_path']}")
    return [
        {
            "id": f"{repo['key']}-{number:03d}",
            "project": repo["key"],
            "text": item.text,
            "section": item.section,
            "repo": repo["repo"],
            "path": repo["agent_path"],
            "line": item.line,
            "commit": repo["agent_commit"],
            "license": repo["license"],
        }
        for number, item in enumerate(extract_items(text), 1)
    ]


def expand_labels(key: str, groups: list) -> dict[str, dict]:
    """Authored `[["017 057 102", 2, "why"], ...]` -> one label per memory id.

    The ids of one group say the same thing (an agent file often repeats a rule), so for an
    essential group they are alternatives: `need` names the group, and essential recall counts
    a need as met when any one of its memories is shown.
    """
    labels: dict[str, dict] = {}
    for ids, grade, reason in groups:
        numbers = ids.split()
        need = f"{key}-{numbers[0]}" if grade == 2 else None
        for number in numbers:
            memory_id = f"{key}-{number}"
            if memory_id in labels:
                raise ValueError(f"{key}: memory {memory_id} labelled twice in one task")
            labels[memory_id] = {"grade": grade, "reason": reason, "need": need}
    return dict(sorted(labels.items()))


def tasks_of(repo: dict, directory: Path) -> list[dict]:
    authored = json.loads((DATA / "tasks" / f"{repo['key']}.json").read_text(encoding="utf-8"))
    rows = []
    for number, task in enumerate(authored, 1):
        commit = git(directory, "rev-parse", f"{task['commit']}^{{commit}}").strip()
        touched = git(directory, "show", "--format=", "--name-only", commit).split()
        labels = expand_labels(repo["key"], task.get("labels", []))
        rows.append(
            {
                "id": f"{repo['key']}-t{number:02d}",
                "project": repo["key"],
                "split": repo["split"],
                "repo": repo["repo"],
                "commit": commit,
                "subject": git(directory, "show", "-s", "--format=%s", commit).strip(),
                "prompt": task["prompt"],
                "touched": touched,
                "labels": labels,
            }
        )
    return rows


def jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows)


def rebuild(cache: Path, mirrors: Path, keys: list[str] | None = None) -> tuple[str, str]:
    memories: list[dict] = []
    tasks: list[dict] = []
    for repo in load_repos():
        if keys and repo["key"] not in keys:
            continue
        if not (DATA / "tasks" / f"{repo['key']}.json").is_file():
            print(f"{repo['key']}: no tasks written yet, skipped", file=sys.stderr)
            continue
        directory = source_dir(repo, cache, mirrors)
        memories.extend(memories_of(repo, directory))
        tasks.extend(tasks_of(repo, directory))
    return jsonl(memories), jsonl(tasks)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--mirror-root", type=Path, default=DEFAULT_MIRRORS)
    parser.add_argument("--check", action="store_true", help="fail if the data files differ")
    args = parser.parse_args(argv)
    memories, tasks = rebuild(args.cache, args.mirror_root)
    targets = {DATA / "memories.jsonl": memories, DATA / "tasks.jsonl": tasks}
    if args.check:
        stale = [p.name for p, text in targets.items() if p.read_text(encoding="utf-8") != text]
        if stale:
            print(f"out of date: {', '.join(stale)}", file=sys.stderr)
            return 1
        print("data files match their sources")
        return 0
    for path, text in targets.items():
        path.write_text(text, encoding="utf-8")
    print(f"wrote {memories.count(chr(10))} memories, {tasks.count(chr(10))} tasks")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
