"""Stale anchors on a real repository's history: flagged when the code is gone, kept when it moved.

python -m benchmarks.stale_anchors [--repo DIR] [--json OUT]

Memories are anchored at an old commit A of modelcontextprotocol/python-sdk (MIT licence), with
memctl's own proposal code on texts that name a file or a symbol: one memory per file that git
later deletes or renames between A and a later commit B, a fixed sample of files that survive, and
a fixed sample of the classes and functions defined at A. Then the repository moves to B the way
a clone does: commit by commit along the first-parent history, in steps, with memctl carrying
path anchors along git's renames at each step (what its post-merge / post-checkout hooks do), and
the anchors are checked against B's tree (file list and symbol index by content hash).

Scored against git itself: every memory whose file was deleted (no rename) or whose symbol no
longer occurs anywhere in B (`git grep -w`) must be stale; no memory whose file was only renamed
may lose its anchor; no memory whose file and symbols survive may be flagged. The commits and
figures of the last run are kept in benchmarks/data/stale_anchors.json (ids and paths only).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = "modelcontextprotocol/python-sdk"
LICENSE = "MIT"
COMMIT_A = "3e86edfb2f3a4854ad99b7a2e15945dcdd90f74c"
COMMIT_B = "57394b0548d1e2dc2dce8d67d84985769df3b8bb"
STEP = 20  # first-parent commits per checkout
SURVIVING_FILES = 60
SYMBOLS = 150
DEFAULT_MIRROR = Path("/work/.mirror/modelcontextprotocol+python-sdk/repo")
RESULT = Path(__file__).parent / "data" / "stale_anchors.json"
_DEFINED = re.compile(rb"^\s*(?:class|def|async def)\s+([A-Za-z_][A-Za-z0-9_]*)", re.MULTILINE)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout


def full_commit(repo: Path, commit: str) -> str:
    return git(repo, "rev-parse", commit).strip()


def fixed_sample(items: list[str], count: int) -> list[str]:
    """Every n-th item of the sorted list: the same sample on every run."""
    items = sorted(items)
    if len(items) <= count:
        return items
    step = len(items) / count
    return [items[int(n * step)] for n in range(count)]


def checkouts(repo: Path, a: str, b: str) -> list[str]:
    """The commits a clone stops at on its way from A to B: every STEP-th first parent."""
    chain = git(repo, "rev-list", "--first-parent", "--reverse", f"{a}..{b}").split()
    stops = [a, *chain[STEP - 1 :: STEP]]
    return stops + ([b] if stops[-1] != b else [])


def followed_paths(repo: Path, stops: list[str], paths: list[str]) -> dict[str, str]:
    """Where each path of A is at the last stop, following git's renames stop by stop (the
    benchmark's own reading of `git diff -M --name-status`, independent of memctl's)."""
    where = {path: path for path in paths}
    for old, new in zip(stops, stops[1:], strict=False):
        fields = git(repo, "diff", "-M", "--name-status", "-z", old, new).split("\0")
        moves, at = {}, 0
        while at < len(fields) - 1:
            status = fields[at]
            if status.startswith(("R", "C")):
                if status.startswith("R"):
                    moves[fields[at + 1]] = fields[at + 2]
                at += 3
            else:
                at += 2
        where = {path: moves.get(now, now) for path, now in where.items()}
    return where


def memories_at_a(repo: Path, a: str, b: str) -> list[dict]:
    """Memory texts about files and symbols of commit A, with what became of each."""
    from memctl.store.code_tree import CodeTree, is_indexed_symbol

    tree_a = CodeTree.at_commit(repo, a)
    files_b = set(CodeTree.at_commit(repo, b).files)
    where = followed_paths(repo, checkouts(repo, a, b), sorted(tree_a.files))
    fates = {}
    for path, now in where.items():
        if now not in files_b:
            fates[path] = "deleted"
        elif now != path:
            fates[path] = "renamed"
        else:
            fates[path] = "kept"
    gone = [p for p, fate in fates.items() if fate != "kept"]
    kept = fixed_sample([p for p, fate in fates.items() if fate == "kept"], SURVIVING_FILES)
    memories = [
        {"id": f"file-{n:03d}", "text": f"Before changing `{path}`, read its module notes.",
         "fate": fates[path], "path": path}
        for n, path in enumerate(sorted(gone) + kept)
    ]  # fmt: skip
    defined: set[str] = set()
    for path in tree_a.files:
        if path.endswith(".py"):
            data = tree_a.read(path) or b""
            defined.update(m.decode() for m in _DEFINED.findall(data))
    symbols = fixed_sample([s for s in defined if is_indexed_symbol(s)], SYMBOLS)
    for n, symbol in enumerate(symbols):
        present = subprocess.run(
            ["git", "-C", str(repo), "grep", "-q", "-w", "-F", symbol, b, "--"], check=False
        ).returncode
        memories.append(
            {
                "id": f"symbol-{n:03d}",
                "text": f"{symbol} is the place to start for this behaviour.",
                "fate": "kept" if present == 0 else "deleted",
                "symbol": symbol,
            }
        )
    return memories


def run(repo: Path) -> dict:
    from memctl.core.codebase.anchor_proposals import propose_anchors
    from memctl.core.codebase.anchors import renamed_anchors, staleness
    from memctl.store.code_tree import CodeTree, renames_between

    started = time.perf_counter()
    a, b = full_commit(repo, COMMIT_A), full_commit(repo, COMMIT_B)
    memories = memories_at_a(repo, a, b)
    with tempfile.TemporaryDirectory(prefix="memctl-stale-") as temp:
        cache = Path(temp) / "code_symbols.json"
        tree_a = CodeTree.at_commit(repo, a, cache)
        anchors = {
            m["id"]: propose_anchors(m["text"], tree_a.file_list(), tree_a.symbol_present).anchors
            for m in memories
        }
        unanchored = [m["id"] for m in memories if not anchors[m["id"]]]
        # Check out B step by step along the first-parent history, carrying renames each time.
        stops = checkouts(repo, a, b)
        for old, new in zip(stops, stops[1:], strict=False):
            renames = renames_between(repo, old, new)
            anchors = {key: renamed_anchors(value, renames) for key, value in anchors.items()}
        tree_b = CodeTree.at_commit(repo, b, cache)  # the symbol cache carries over from A
        files_b = tree_b.file_list()
        flagged = {
            key: bool(staleness(value, files_b, tree_b.symbol_present))
            for key, value in anchors.items()
        }
    rows: dict[str, dict[str, int]] = {}
    misses = []
    for memory in memories:
        kind = "file" if "path" in memory else "symbol"
        key = f"{kind} {memory['fate']}"
        row = rows.setdefault(key, {"memories": 0, "flagged_stale": 0})
        row["memories"] += 1
        row["flagged_stale"] += flagged[memory["id"]]
        want_stale = memory["fate"] == "deleted"
        if flagged[memory["id"]] != want_stale:
            misses.append(memory["id"])
    renamed_ok = sum(
        1
        for m in memories
        if m["fate"] == "renamed"
        and not flagged[m["id"]]
        and m["path"] not in anchors[m["id"]].paths
    )
    return {
        "benchmark": "stale_anchors",
        "repository": REPO,
        "license": LICENSE,
        "commit_a": a,
        "commit_b": b,
        "checkouts": len(stops) - 1,
        "first_parent_commits": int(
            git(repo, "rev-list", "--count", "--first-parent", f"{a}..{b}")
        ),
        "rows": dict(sorted(rows.items())),
        "renamed_anchor_carried": renamed_ok,
        "unanchored": unanchored,
        "wrong": misses,
        "total_s": round(time.perf_counter() - started, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.stale_anchors", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--repo", type=Path, default=DEFAULT_MIRROR, help="a clone of " + REPO)
    parser.add_argument("--json", type=Path, default=None, help=f"default: {RESULT}")
    args = parser.parse_args(argv)
    if not (args.repo / "HEAD").exists() and not (args.repo / ".git").exists():
        print(f"no clone of {REPO} at {args.repo}; pass --repo", file=sys.stderr)
        return 2
    result = run(args.repo)
    for key, row in result["rows"].items():
        print(f"{key:16} {row['memories']:4} memories, {row['flagged_stale']:4} flagged stale")
    print(
        f"renamed files whose anchor moved along: {result['renamed_anchor_carried']}; "
        f"wrong: {len(result['wrong'])}; unanchored: {len(result['unanchored'])}; "
        f"{result['checkouts']} checkouts over {result['first_parent_commits']} commits, "
        f"{result['total_s']} s"
    )
    out = args.json or RESULT
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0 if not result["wrong"] else 1


if __name__ == "__main__":
    sys.exit(main())
