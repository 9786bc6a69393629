"""Resident memory with many stores in use, before/after: the total RSS of every memctl server
process, with one store and with ten (each a copy of one 1k store) plus the user store, and
their CPU while idle.

    git worktree add --detach /tmp/memctl-before <commit>
    python -m benchmarks.perf_engine --before /tmp/memctl-before --after . \
        --store DIR/.memory --user-store DIR/.memory [--stores 10] [--json OUT]

Each version runs from its checkout (PYTHONPATH) with its own folders; servers start as a user's
commands start them (a hot command in each project, then one more once it serves), and each
project gets a recall and a prompt hook through its server. RSS is VmRSS from /proc summed over
the version's `serve` processes (found by an environment tag), read after a quiet second; idle
CPU is their user + system time over `--idle-s` seconds with no request.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.perf_process import byte_compile, hook_input, memctl_command

TAG = "MEMCTL_BENCH_ENGINE"
PATIENCE_S = 600.0


class Version:
    def __init__(self, label: str, code: Path, workdir: Path, user_store: Path):
        self.label, self.code, self.workdir, self.user_store = label, code, workdir, user_store

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCTL_")}
        env["PYTHONPATH"] = str(self.code)
        env["XDG_CACHE_HOME"] = str(self.workdir / "cache")
        env["MEMCTL_RUNTIME_DIR"] = str(self.workdir / "engine")
        env["MEMCTL_USER_STORE"] = str(self.user_store)
        env[TAG] = self.label
        return env

    def run(self, args: list[str], cwd: Path, stdin: bytes = b"") -> subprocess.CompletedProcess:
        return subprocess.run(
            [*memctl_command(), *args],
            cwd=cwd,
            env=self.env(),
            input=stdin,
            capture_output=True,
            check=False,
        )

    def serving(self, project: Path) -> bool:
        done = self.run(["server", "status", "--json"], project)
        try:
            return bool(json.loads(done.stdout).get("running"))
        except ValueError:
            return False

    def use(self, project: Path, query: str, session: str) -> float:
        """What an agent session does in a project: its first command starts the server; once
        it serves, a recall and a prompt hook go through it. The first recall's wall ms."""
        started = time.perf_counter()
        self.run(["recall", query], project)
        first = (time.perf_counter() - started) * 1000
        deadline = time.monotonic() + PATIENCE_S
        while not self.serving(project):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.label}: no server for {project}")
            time.sleep(0.3)
        for args, stdin in (
            (["recall", query, "-k", "5"], b""),
            (["hook", "claude-code", "user-prompt-submit"], hook_input(project, query, session)),
        ):
            done = self.run(args, project, stdin)
            if done.returncode != 0:
                raise RuntimeError(f"{self.label}: {args}: {done.stderr[-400:]!r}")
        return first

    def stop(self, projects: list[Path]) -> None:
        for project in projects:
            self.run(["server", "stop"], project)
        for pid in server_pids(self.label):
            os.kill(pid, 15)


def server_pids(label: str) -> list[int]:
    found = []
    needle = f"{TAG}={label}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if b"serve" not in (entry / "cmdline").read_bytes().split(b"\0"):
                continue
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def rss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return round(total / 1024, 1)


def cpu_s(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except OSError:
            continue
    return total / os.sysconf("SC_CLK_TCK")


def measure(version: Version, projects: list[Path], idle_s: float) -> dict:
    queries = ["how do we deploy the service", "which database do we use", "who owns billing"]
    version.use(projects[0], queries[0], "one")
    time.sleep(1.0)
    one = server_pids(version.label)
    figures = {"one_store": {"processes": len(one), "rss_mb": rss_mb(one)}}
    # The first recall in each further project: in-process before (no server for that store
    # yet); after, the engine already up for the first project answers it.
    firsts = [
        version.use(project, queries[n % len(queries)], f"s{n}")
        for n, project in enumerate(projects[1:], start=1)
    ]
    figures["first_recall_in_another_store_ms"] = round(statistics.median(firsts), 1)
    # The user store, as a session reading the person's own memories.
    version.use(version.user_store.parent, "what do I prefer", "user")
    time.sleep(1.0)
    many = server_pids(version.label)
    before_idle = cpu_s(many)
    time.sleep(idle_s)
    figures["all_stores"] = {
        "stores": len(projects) + 1,
        "processes": len(many),
        "rss_mb": rss_mb(many),
        "idle_cpu_pct": round(100 * (cpu_s(many) - before_idle) / idle_s, 2),
    }
    version.stop([*projects, version.user_store.parent])
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, required=True)
    parser.add_argument("--store", type=Path, required=True, help="a 1k store (.memory) to copy")
    parser.add_argument("--user-store", type=Path, required=True, help="a user store to copy")
    parser.add_argument("--stores", type=int, default=10)
    parser.add_argument("--idle-s", type=float, default=10.0)
    parser.add_argument("--workdir", type=Path, default=Path("perf-engine"))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    shutil.rmtree(args.workdir, ignore_errors=True)
    ignore = shutil.ignore_patterns("server.*", "barrier")
    results = {}
    for label, code in (("before", args.before), ("after", args.after)):
        base = (args.workdir / label).resolve()
        projects = []
        for n in range(args.stores):
            shutil.copytree(args.store, base / f"project-{n}" / ".memory", ignore=ignore)
            projects.append(base / f"project-{n}")
        user = base / "user" / ".memory"
        shutil.copytree(args.user_store, user, ignore=ignore)
        byte_compile(code.resolve())
        version = Version(label, code.resolve(), base, user)
        print(f"[{label}] {args.stores} stores + the user store ...", file=sys.stderr)
        results[label] = measure(version, projects, args.idle_s)
    print(f"{'figure':<34}{'before':>10}{'after':>10}")
    for part, key in (
        ("one_store", "processes"),
        ("one_store", "rss_mb"),
        ("all_stores", "processes"),
        ("all_stores", "rss_mb"),
        ("all_stores", "idle_cpu_pct"),
    ):
        old, new = results["before"][part][key], results["after"][part][key]
        print(f"{part + '.' + key:<34}{old:>10}{new:>10}")
    key = "first_recall_in_another_store_ms"
    print(f"{key:<34}{results['before'][key]:>10}{results['after'][key]:>10}")
    if args.json:
        args.json.write_text(json.dumps({"benchmark": "perf_engine", **results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
