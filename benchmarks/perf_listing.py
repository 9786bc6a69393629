"""Listing, stats and `server status`, before/after: whole processes, medians, one run.

    python -m benchmarks.perf_listing --before /tmp/memctl-before --after . \
        --store DIR/.memory [--runs 5] [--json OUT]

Rows (wall ms, median of --runs processes, the versions alternating run by run):
`list --json` (before: every memory, oldest first: it has no --limit), `list --limit 20 --json`
(after), `stats --json` and `server status`, each cold (MEMCTL_NO_SERVER=1) and warm (the
version's server or engine up), and `python -c pass` as the floor.
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

from benchmarks.perf_process import byte_compile, memctl_command


class Version:
    def __init__(self, label: str, code: Path, root: Path, cache: Path):
        self.label, self.code, self.root, self.cache = label, code, root, cache
        self.samples: dict[str, list[float]] = {}

    def env(self, server: bool) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCTL_")}
        env["PYTHONPATH"] = str(self.code)
        env["XDG_CACHE_HOME"] = str(self.cache)
        env["MEMCTL_RUNTIME_DIR"] = str(self.cache / "engine")
        env["MEMCTL_USER_STORE"] = str(self.cache / "no-user-store")
        if not server:
            env["MEMCTL_NO_SERVER"] = "1"
        return env

    def run(self, args: list[str], server: bool) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*memctl_command(), "--store", str(self.root), *args],
            env=self.env(server),
            capture_output=True,
            check=False,
        )

    def time(self, name: str, args: list[str], server: bool) -> None:
        started = time.perf_counter()
        done = self.run(args, server)
        wall = (time.perf_counter() - started) * 1000
        if done.returncode != 0:
            raise RuntimeError(f"{self.label}: {args}: {done.stderr[-400:]!r}")
        self.samples.setdefault(name, []).append(wall)

    def start(self) -> subprocess.Popen:
        server = subprocess.Popen(
            [*memctl_command(), "--store", str(self.root), "serve", "--idle-minutes", "0"],
            env=self.env(True),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 900
        while True:
            done = self.run(["server", "status", "--json"], True)
            try:
                if json.loads(done.stdout).get("pid") == server.pid:
                    return server
            except ValueError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{self.label}: no server")
            time.sleep(0.3)


def rows(version: Version) -> list[tuple[str, list[str]]]:
    listing = (
        ["list", "--json"] if version.label == "before" else ["list", "--limit", "20", "--json"]
    )
    return [("list", listing), ("stats", ["stats", "--json"]), ("status", ["server", "status"])]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, required=True)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--workdir", type=Path, default=Path("perf-listing"))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    shutil.rmtree(args.workdir, ignore_errors=True)
    versions = []
    for label, code in (("before", args.before), ("after", args.after)):
        project = (args.workdir / label).resolve()
        shutil.copytree(
            args.store, project / ".memory", ignore=shutil.ignore_patterns("server.*", "barrier")
        )
        byte_compile(code.resolve())
        versions.append(Version(label, code.resolve(), project / ".memory", project / "cache"))
    floor: list[float] = []
    for n in range(args.runs):
        for version in versions if n % 2 == 0 else versions[::-1]:
            for name, command in rows(version):
                version.time(f"cold_{name}_ms", command, server=False)
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        floor.append((time.perf_counter() - started) * 1000)
    servers = [version.start() for version in versions]
    try:
        for version in versions:  # the first requests open the store and fill its caches
            for _name, command in rows(version):
                version.run(command, True)
        for n in range(args.runs):
            for version in versions if n % 2 == 0 else versions[::-1]:
                for name, command in rows(version):
                    version.time(f"warm_{name}_ms", command, server=True)
    finally:
        for version, server in zip(versions, servers, strict=True):
            version.run(["server", "stop"], True)
            server.wait(timeout=120)
    medians = {
        v.label: {k: round(statistics.median(s), 1) for k, s in v.samples.items()} for v in versions
    }
    base = statistics.median(floor)
    print(f"python -c pass: {base:.1f} ms; store {args.store}")
    print(f"{'figure':<18}{'before':>10}{'after':>10}{'after/before':>14}")
    for name in medians["after"]:
        old, new = medians["before"][name], medians["after"][name]
        print(f"{name:<18}{old:>10}{new:>10}{new / old:>14.2f}")
    if args.json:
        args.json.write_text(
            json.dumps({"medians": medians, "python_pass_ms": round(base, 1)}, indent=1)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
