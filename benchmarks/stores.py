"""Where memory lives, measured: recall with and without a user store, and the index on object
storage (publish, a clone's first sync and recall) against a local rebuild of the same store.

python -m benchmarks.stores [--size 1000] [--runs 5] [--json OUT]

The object-storage half runs against moto's S3 server on loopback (pip install 'moto[server]');
without moto it is skipped. Fresh-process times are medians of --runs processes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console

from benchmarks.machine import machine_info
from benchmarks.perf import run_cli
from benchmarks.synthetic import generate_notes, generate_queries, write_notes

console = Console(stderr=True)
PREFERENCES = [
    "I prefer answers in short bullet points",
    "I like tabs in Go files and four spaces in Python",
    "Answer in English even when I write in Chinese",
    "I use neovim with the default keymap",
    "I want tests run before every commit suggestion",
    "I dislike one-letter variable names",
    "My timezone is Europe/Berlin",
    "I prefer small commits with clear messages",
    "I like type hints on public functions",
    "I avoid global state in libraries",
]


def build_project(root: Path, size: int) -> dict:
    from memctl import service

    store = service.init_store(root)
    write_notes(store, generate_notes(size, seed=7))
    start = time.perf_counter()
    report = service.sync_index(store)
    return {"first_build_s": round(time.perf_counter() - start, 3), "embedded": report.embedded}


def recall_ids(store: Path, query: str) -> list[list[str]]:
    done = subprocess.run(
        [sys.executable, "-m", "memctl", "--store", str(store), "recall", query, "--json"],
        capture_output=True,
        text=True,
        check=True,
        env=os.environ,
    )
    return [[hit["id"], hit.get("store", "project")] for hit in json.loads(done.stdout)]


def user_store_figures(project: Path, workdir: Path, runs: int) -> dict:
    from memctl import service
    from memctl.service.init import init_user_store

    queries = generate_queries(2, seed=11) + ["how should answers be formatted"]
    figures: dict = {"queries": queries}
    os.environ["MEMCTL_USER_STORE"] = str(workdir / "no-user-store")
    figures["without"] = {q: run_cli(["--store", str(project), "recall", q], runs) for q in queries}
    figures["without_hits"] = {q: recall_ids(project, q) for q in queries}
    os.environ["MEMCTL_USER_STORE"] = str(workdir / "user")
    user = init_user_store()
    for text in PREFERENCES:
        service.add_memory(user, text, type="preference", sync=False)
    service.sync_index(user)
    figures["with"] = {q: run_cli(["--store", str(project), "recall", q], runs) for q in queries}
    figures["with_hits"] = {q: recall_ids(project, q) for q in queries}
    figures["store_only"] = {
        q: run_cli(["--store", str(project), "recall", q, "--store-only"], runs) for q in queries
    }
    os.environ["MEMCTL_USER_STORE"] = str(workdir / "no-user-store")
    return figures


def start_moto() -> tuple[subprocess.Popen, str] | None:
    try:
        import boto3  # noqa: F401
        import moto.server  # noqa: F401
    except ImportError:
        return None
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return server, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.2)
    server.terminate()
    return None


def timed_cli(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "memctl", *args], capture_output=True, check=True, env=os.environ
    )
    return round(time.perf_counter() - start, 3)


def remote_figures(project: Path, workdir: Path, runs: int) -> dict | None:
    started = start_moto()
    if started is None:
        console.print("moto is not installed: object-storage figures skipped")
        return None
    server, endpoint = started
    try:
        import boto3

        os.environ.update(
            AWS_ACCESS_KEY_ID="bench",
            AWS_SECRET_ACCESS_KEY="bench",
            AWS_REGION="us-east-1",
            AWS_ENDPOINT=endpoint,
            AWS_ALLOW_HTTP="true",
        )
        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(
            Bucket="bench"
        )
        config = project / "config.yaml"
        config.write_text(config.read_text() + "\nindex:\n  uri: s3://bench/memctl\n")
        query = generate_queries(1, seed=11)[0]
        figures: dict = {"query": query}
        figures["publish_s"] = timed_cli(["--store", str(project), "index", "--publish"])
        clone = workdir / "clone" / ".memory"
        shutil.copytree(project, clone, ignore=shutil.ignore_patterns(".index", ".state"))
        (clone / "config.yaml").write_text((clone / "config.yaml").read_text() + "  mode: remote\n")
        figures["clone_first_sync_s"] = timed_cli(["--store", str(clone), "index"])
        figures["clone_noop_sync_s"] = timed_cli(["--store", str(clone), "index"])
        figures["remote_recall"] = run_cli(["--store", str(clone), "recall", query], runs)
        figures["local_recall"] = run_cli(["--store", str(project), "recall", query], runs)
        figures["same_hits"] = recall_ids(clone, query) == recall_ids(project, query)
        figures["local_rebuild_s"] = timed_cli(["--store", str(project), "index", "--rebuild"])
        return figures
    finally:
        server.terminate()
        server.wait(timeout=30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    os.environ.setdefault("MEMCTL_NO_SERVER", "1")
    with tempfile.TemporaryDirectory(prefix="memctl-stores-") as tmp:
        workdir = Path(tmp)
        project = workdir / "project" / ".memory"
        console.print(f"building a project store of {args.size} synthetic notes ...")
        result = {"machine": machine_info(), "size": args.size, **build_project(project, args.size)}
        console.print("recall with and without a user store ...")
        result["user_store"] = user_store_figures(project, workdir, args.runs)
        console.print("publish to S3 (moto), a remote clone, and a local rebuild ...")
        result["remote"] = remote_figures(project, workdir, args.runs)
    text = json.dumps(result, indent=2)
    if args.json:
        args.json.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
