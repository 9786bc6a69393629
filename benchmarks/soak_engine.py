"""Soak: many mixed requests for several stores to one engine; its RSS must not grow with the
number of requests (flat after warm-up), and every answer must come from its own store.

    python -m benchmarks.soak_engine --store DIR/.memory [--stores 3] [--requests 10000]

The requests go over the engine's socket as the thin client sends them (no process per
request, so 10,000 fit in minutes): recall, context, the prompt hook, `list --limit 20`,
`stats` and adds of a few texts again and again (after the first, each merges). The engine's
RSS is sampled every `--every` requests; growth is measured from the sample at the end of
warm-up (`--warmup` requests) to the largest one after it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.perf_process import hook_input, memctl_command

QUERIES = [
    "how do we deploy the service",
    "which database do we use",
    "who owns the billing pipeline",
    "what broke in the last release",
    "how are secrets rotated",
]
ADDS = [
    "The soak test adds this note about the nightly export job again and again",
    "Soak note: the staging cluster keeps its logs for seven days",
    "Soak note: the on-call rota is posted every Monday morning",
]
MIX = (
    ["recall"] * 8 + ["context"] * 3 + ["hook"] * 3 + ["list"] * 2 + ["stats"] + ["add"] * 2
)  # one cycle: 19 requests


def request_for(n: int, project: Path) -> tuple[list[str], bytes]:
    kind = MIX[n % len(MIX)]
    query = QUERIES[(n // len(MIX)) % len(QUERIES)]
    if kind == "recall":
        return ["recall", query, "-k", "5", "--json"], b""
    if kind == "context":
        return ["context", query], b""
    if kind == "hook":
        return ["hook", "claude-code", "user-prompt-submit"], hook_input(
            project, query, f"soak-{n % 50}"
        )
    if kind == "list":
        return ["list", "--limit", "20", "--json", "--store-only"], b""
    if kind == "stats":
        return ["stats", "--json"], b""
    return ["add", ADDS[n % len(ADDS)], "--json"], b""


def send(root: Path, project: Path, argv: list[str], stdin: bytes) -> tuple[int, bytes]:
    """One request as memctl.server.client sends it; (exit code, stdout)."""
    from memctl.server import location
    from memctl.server.client import _connect, terminal_facts
    from memctl.server.identity import code_identity
    from memctl.server.protocol import PROTOCOL, recv_message, send_message

    sock = _connect(location.socket_path(os.environ))
    if sock is None:
        raise RuntimeError("the engine is not there")
    try:
        header = {
            "op": "run",
            "protocol": PROTOCOL,
            "code": code_identity(),
            "config": location.config_digest(location.config_bytes(str(root))),
            "store": str(root),
            "argv": argv,
            "argv0": "memctl",
            "main_package": None,
            "cwd": str(project),
            "env": dict(os.environ),
            "streams": terminal_facts(os.environ),
        }
        send_message(sock, header, (stdin,))
        sock.settimeout(600)
        accepted, _ = recv_message(sock)
        if accepted.get("accepted") is not True:
            raise RuntimeError(f"declined: {accepted}")
        result, blobs = recv_message(sock)
    finally:
        sock.close()
    out = b"".join(b for n, b in zip(result.get("streams") or [], blobs, strict=False) if n == 1)
    return int(result.get("exit", 1)), out


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def check_store(argv: list[str], out: bytes, project: Path) -> bool:
    """A recall's hits and an add's file are all in this project's store."""
    store = str(project / ".memory") + "/"
    if argv[0] == "recall":
        return all(hit["path"].startswith(store) for hit in json.loads(out))
    if argv[0] == "add":
        return json.loads(out)["path"].startswith(store)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", type=Path, required=True, help="a store (.memory) to copy")
    parser.add_argument("--stores", type=int, default=3)
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--warmup", type=int, default=1_000)
    parser.add_argument("--every", type=int, default=250)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="memctl-soak-"))
    os.environ["MEMCTL_RUNTIME_DIR"] = str(work / "engine")
    os.environ["MEMCTL_USER_STORE"] = str(work / "no-user-store")
    os.environ.pop("MEMCTL_NO_SERVER", None)
    projects = []
    for n in range(args.stores):
        shutil.copytree(
            args.store,
            work / f"p{n}" / ".memory",
            ignore=shutil.ignore_patterns("server.*", "barrier"),
        )
        projects.append(work / f"p{n}")
    engine = subprocess.Popen(
        [*memctl_command(), "serve", "--idle-minutes", "0"],
        env=os.environ.copy(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=open(work / "engine.log", "wb"),  # noqa: SIM115 - the child owns it
    )
    samples: list[tuple[int, float]] = []
    wrong = failed = 0
    started = time.perf_counter()
    try:
        from memctl.server import location

        while not os.path.exists(location.socket_path(os.environ)):
            if engine.poll() is not None:
                raise RuntimeError("the engine did not start")
            time.sleep(0.2)
        for n in range(args.requests):
            project = projects[n % len(projects)]
            command, stdin = request_for(n, project)
            code, out = send(project / ".memory", project, command, stdin)
            if code != 0:
                failed += 1
            elif not check_store(command, out, project):
                wrong += 1
            if (n + 1) % args.every == 0:
                samples.append((n + 1, rss_mb(engine.pid)))
                print(f"{n + 1:>6} requests  rss {samples[-1][1]} MB", file=sys.stderr)
                if args.json:  # Why so often: a run cut short still leaves its samples
                    progress = {"requests_done": n + 1, "failed": failed, "wrong_store": wrong}
                    args.json.write_text(json.dumps({**progress, "samples": samples}))
    finally:
        engine.terminate()
        engine.wait(timeout=120)
    after_warmup = [rss for count, rss in samples if count >= args.warmup]
    base = after_warmup[0] if after_warmup else 0.0
    growth = round(100 * (max(after_warmup) - base) / base, 2) if base else None
    result = {
        "benchmark": "soak_engine",
        "requests": args.requests,
        "stores": args.stores,
        "failed": failed,
        "wrong_store": wrong,
        "rss_after_warmup_mb": base,
        "rss_max_mb": max(after_warmup) if after_warmup else None,
        "rss_last_mb": samples[-1][1] if samples else None,
        "growth_pct": growth,
        "seconds": round(time.perf_counter() - started, 1),
        "samples": samples,
    }
    print(json.dumps({k: v for k, v in result.items() if k != "samples"}, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
