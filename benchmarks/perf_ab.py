"""Before/after of whole-process latency: two checkouts of memctl, each on its own copy of one store.

    git worktree add --detach /tmp/memctl-before <commit>
    python -m benchmarks.perf_ab --before /tmp/memctl-before --after . --store DIR/.memory

Requests alternate between the two versions one by one (cold ones first, server off; then one
server per version), so a busy machine's swings fall on both sides alike. Medians; `--json` keeps
every sample. The store is copied twice beside `--workdir`; it is never written to.
`--cold-only` times only the cold commands, `--runs` of each, with each process's own CPU time
(user + system), steadier than wall time while other work shares the machine.
By default both versions' servers are up and each round asks one, then the other: the work one
does after its reply (an add's index write, the file watch) then runs beside the other's next
request. `--one-server` runs the warm rounds in blocks, one server up at a time, as a user has
one per store; the blocks alternate the versions' order.

`--memctl EXE` times that `memctl` script instead of this interpreter's, for both versions (the
checkouts still win through PYTHONPATH). A venv made for it runs no other project's start-up
code, as a user's `pip install memctl` does not:

    python -m venv /tmp/wheel-venv && /tmp/wheel-venv/bin/pip install .
    python -m benchmarks.perf_ab ... --memctl /tmp/wheel-venv/bin/memctl

(an editable install's finder, and any `.pth` file of the interpreter's site-packages, cost
every process its import time: ~14 ms for setuptools' editable finder).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.perf_process import byte_compile, hook_input, memctl_command
from benchmarks.synthetic import generate_notes, generate_queries

WARM = ("recall_ms", "context_ms", "hook_prompt_ms", "add_ms", "help_ms")
COLD = ("cold_recall_ms", "cold_add_ms")


class Version:
    def __init__(
        self, label: str, code: Path, root: Path, cache: Path, command: list[str] | None = None
    ):
        self.label, self.code, self.root, self.cache = label, code, root, cache
        self.command = command or memctl_command()
        self.samples: dict[str, list[float]] = {
            kind: [] for kind in (*COLD, *WARM, "python_pass_ms")
        }
        # A cold command's own CPU (user + system, ms): on a busy machine steadier than its wall.
        self.cold_cpu: dict[str, list[float]] = {kind: [] for kind in COLD}
        self.server: subprocess.Popen | None = None
        # Server CPU (ms) from the start of a request to the start of this version's next one:
        # the command, the work after its reply, and the file watch it set off (what outlasts
        # that slot is charged to the next). Less noisy than wall time on a busy machine.
        self.server_cpu: dict[str, list[float]] = {kind: [] for kind in WARM}
        self._pending_cpu: tuple[str, float] | None = None

    def env(self, server: bool) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCTL_")}
        env["PYTHONPATH"] = str(self.code)
        env["XDG_CACHE_HOME"] = str(self.cache)  # Why: each version's own --help cache
        env["MEMCTL_RUNTIME_DIR"] = str(self.cache / "engine")  # the new code's engine folder
        if not server:
            env["MEMCTL_NO_SERVER"] = "1"
        return env

    def _note_server_cpu(self, kind: str | None) -> None:
        """Charge the server CPU since the last request's start to that request's kind."""
        if self.server is None:
            return
        now = server_cpu_ms(self.server.pid)
        if self._pending_cpu is not None:
            last_kind, then = self._pending_cpu
            self.server_cpu[last_kind].append(now - then)
        self._pending_cpu = None if kind is None else (kind, now)

    def time_python_pass(self) -> None:
        """`python -c pass` beside each round: the floor every process pays (the ratios)."""
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        self.samples["python_pass_ms"].append((time.perf_counter() - started) * 1000)

    def time(self, kind: str, args: list[str], stdin: bytes = b"", server: bool = True) -> None:
        if server:
            self._note_server_cpu(kind)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(
            [*self.command, *args],
            cwd=self.root.parent,
            env=self.env(server),
            input=stdin,
            capture_output=True,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{self.label}: memctl {' '.join(args)}: {done.stderr[-400:]!r}")
        self.samples[kind].append((time.perf_counter() - started) * 1000)
        if kind in self.cold_cpu:
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            used = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
            self.cold_cpu[kind].append(used * 1000)

    def start_server(self) -> None:
        # Why the version's own CLI for status and stop: the old code runs one server per store
        # (`--store S serve`), the new one engine per user (its folder in MEMCTL_RUNTIME_DIR);
        # `--store S serve` starts either, and `server status --json` reports either's pid.
        self.server = subprocess.Popen(
            [*self.command, "--store", str(self.root), "serve", "--idle-minutes", "0"],
            env=self.env(True),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 900
        while self.status().get("pid") != self.server.pid:
            if self.server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{self.label}: memctl serve did not start")
            time.sleep(0.2)

    def status(self) -> dict:
        done = subprocess.run(
            [*self.command, "--store", str(self.root), "server", "status", "--json"],
            env=self.env(True),
            capture_output=True,
            check=False,
        )
        try:
            return json.loads(done.stdout)
        except ValueError:
            return {}

    def stop_server(self) -> None:
        if self.server is not None:
            self._note_server_cpu(None)
            subprocess.run(
                [*self.command, "--store", str(self.root), "server", "stop"],
                env=self.env(True),
                capture_output=True,
                check=False,
            )
            self.server.wait(timeout=120)


def server_cpu_ms(pid: int) -> float:
    """The process's user and system CPU so far (every thread, ended ones too), in ms; in clock
    ticks (10 ms), so only sums over many requests mean much."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def alternate(versions: list[Version], round_number: int) -> list[Version]:
    return versions if round_number % 2 == 0 else list(reversed(versions))


def measure(
    versions: list[Version], runs: int, seed: int, cold_only: bool = False, one_server: bool = False
) -> None:
    cold_runs = runs if cold_only else max(5, runs // 3)
    queries = generate_queries(runs * 3 + cold_runs + 3, seed + 5)
    notes = [note.text for note in generate_notes(runs + cold_runs, seed + 9)]
    for n in range(cold_runs):
        for version in alternate(versions, n):
            version.time(
                "cold_recall_ms", ["recall", queries[3 * runs + n], "-k", "5"], server=False
            )
            version.time("cold_add_ms", ["add", notes[runs + n]], server=False)
            version.time_python_pass()
    if cold_only:
        return
    rounds = [(n, alternate(versions, n)) for n in range(runs)]
    if one_server:
        # Blocks of rounds, one server up at a time, the versions' order alternating by block.
        size = -(-runs // ONE_SERVER_BLOCKS)
        for block, start in enumerate(range(0, runs, size)):
            for version in alternate(versions, block):
                _warm_rounds(
                    [version],
                    [(n, [version]) for n in range(start, min(runs, start + size))],
                    queries,
                    notes,
                    runs,
                )
    else:
        _warm_rounds(versions, rounds, queries, notes, runs)


# --one-server: the warm rounds in this many blocks per version.
ONE_SERVER_BLOCKS = 4


def _warm_rounds(
    versions: list[Version],
    rounds: list[tuple[int, list[Version]]],
    queries: list[str],
    notes: list[str],
    runs: int,
) -> None:
    """Start a server per version, warm it, time each round's requests, stop the servers."""
    for version in versions:
        version.start_server()
    try:
        for version in versions:  # the first requests warm lazy paths
            for query in queries[-3:]:
                subprocess.run(
                    [*version.command, "recall", query, "-k", "5"],
                    cwd=version.root.parent,
                    env=version.env(True),
                    capture_output=True,
                    check=False,
                )
        for n, order in rounds:
            for version in order:
                version.time("recall_ms", ["recall", queries[n], "-k", "5"])
                version.time("context_ms", ["context", queries[runs + n]])
                prompt = hook_input(version.root.parent, queries[2 * runs + n], f"ab-{n}")
                version.time(
                    "hook_prompt_ms", ["hook", "claude-code", "user-prompt-submit"], prompt
                )
                version.time("add_ms", ["add", notes[n]])
                version.time("help_ms", ["--help"])
                version.time_python_pass()
    finally:
        for version in versions:
            version.stop_server()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="a checkout of the old code")
    parser.add_argument("--after", type=Path, required=True, help="a checkout of the new code")
    parser.add_argument("--store", type=Path, required=True, help="a store (.memory) to copy")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workdir", type=Path, default=Path("perf-ab"))
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--cold-only", action="store_true", help="only the cold figures, --runs of each"
    )
    parser.add_argument(
        "--one-server",
        action="store_true",
        help="warm figures with one server up at a time, as a user has (blocks of rounds)",
    )
    parser.add_argument(
        "--memctl",
        type=Path,
        help="the memctl script to run (default: this interpreter's), e.g. a clean venv's",
    )
    args = parser.parse_args(argv)
    source = args.store.resolve()
    shutil.rmtree(args.workdir, ignore_errors=True)
    versions = []
    for label, code in (("before", args.before), ("after", args.after)):
        project = args.workdir / label
        shutil.copytree(
            source, project / ".memory", ignore=shutil.ignore_patterns("server.*", "barrier")
        )
        byte_compile(code.resolve())
        command = [str(args.memctl.absolute())] if args.memctl else None
        versions.append(
            Version(label, code.resolve(), project / ".memory", project / "cache", command)
        )
    load = [round(os.getloadavg()[0], 2)]
    measure(versions, args.runs, args.seed, args.cold_only, args.one_server)
    load.append(round(os.getloadavg()[0], 2))
    summary = {
        v.label: {k: round(statistics.median(s), 1) for k, s in v.samples.items() if s}
        for v in versions
    }
    print(f"memctl: {' '.join(versions[0].command)}; load average {load[0]} -> {load[1]}")
    cpu = {
        v.label: {k: round(statistics.mean(s), 1) for k, s in v.server_cpu.items() if s}
        for v in versions
    }
    floor = {v.label: summary[v.label].get("python_pass_ms") or 1.0 for v in versions}
    print(f"{'figure':<16}{'before':>10}{'after':>10}{'after/before':>14}  (x python -c pass)")
    for kind in (*WARM, *COLD, "python_pass_ms"):
        if kind in summary["before"] and kind in summary["after"]:
            old, new = summary["before"][kind], summary["after"][kind]
            print(
                f"{kind:<16}{old:>10}{new:>10}{new / old:>14.2f}"
                f"  ({old / floor['before']:.1f}x -> {new / floor['after']:.1f}x)"
            )
    cold_cpu = {
        v.label: {k: round(statistics.median(s), 1) for k, s in v.cold_cpu.items() if s}
        for v in versions
    }
    print("cold commands' own CPU (user + system), median ms")
    for kind in COLD:
        print(f"{kind:<16}{cold_cpu['before'][kind]:>10}{cold_cpu['after'][kind]:>10}")
    if not args.cold_only:
        print("server CPU from a request's start to its server's next one, mean ms (an add's")
        print("index write after its reply falls partly in the next slot, --help's; 10 ms ticks)")
        for kind in WARM:
            if kind in cpu["before"] and kind in cpu["after"]:
                print(f"{kind:<16}{cpu['before'][kind]:>10}{cpu['after'][kind]:>10}")
    if args.json:
        raw = {v.label: v.samples for v in versions}
        args.json.write_text(
            json.dumps(
                {
                    "medians": summary,
                    "cold_cpu_ms": cold_cpu,
                    "server_cpu_ms": cpu,
                    "load": load,
                    "samples": raw,
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
