"""Zero network without an LLM: add, recall, context and extract, with the real model, try no
connection off this machine and no DNS lookup.

Two guards watch one process: a Python audit hook (socket.connect, socket.getaddrinfo) sees
Python's sockets; strace, where it can attach, sees native code too (onnxruntime's telemetry
resolves its host from C++). A DNS lookup counts even through a resolver on 127.0.0.53.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memctl import service

pytestmark = [pytest.mark.model, pytest.mark.slow]

CONVERSATION = Path(__file__).parent / "fixtures" / "conversations" / "migration_planning.txt"

GUARDED = r"""
import ipaddress, json, sys

attempts = []

def off_machine(host):
    if host is None:
        return False
    try:
        return not ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return str(host) != "localhost"

def guard(event, args):
    if event == "socket.connect" and isinstance(args[1], tuple):
        host, port = args[1][0], args[1][1]
        if off_machine(host) or port == 53:
            attempts.append(f"connect {host}:{port}")
    elif event == "socket.getaddrinfo" and off_machine(args[0]):
        attempts.append(f"getaddrinfo {args[0]}")

sys.addaudithook(guard)

from typer.testing import CliRunner
from memctl.cli.app import build_app

app, runner = build_app(), CliRunner()
codes = [runner.invoke(app, argv).exit_code for argv in json.loads(sys.argv[1])]
# The control: a connect the guards must see (TEST-NET-1, non-blocking: one SYN at most).
import socket
probe = socket.socket()
probe.setblocking(False)
probe.connect_ex(("192.0.2.1", 9))
probe.close()
print(json.dumps({"codes": codes, "attempts": attempts}))
"""

# connect(3, {sa_family=AF_INET, sin_port=htons(443), sin_addr=inet_addr("1.2.3.4")}, 16)
_TRACED = re.compile(
    r'sa_family=AF_INET6?, sin6?_port=htons\((\d+)\).*?(?:inet_addr\(|inet_pton\(AF_INET6, )"([^"]+)"'
)


def off_machine_connects(trace: str) -> list[str]:
    found = []
    for port, host in _TRACED.findall(trace):
        if not ipaddress.ip_address(host).is_loopback or port == "53":
            found.append(f"{host}:{port}")
    return found


def strace_works() -> bool:
    if shutil.which("strace") is None:
        return False
    done = subprocess.run(["strace", "-o", os.devnull, "true"], capture_output=True, check=False)
    return done.returncode == 0


def test_add_recall_context_and_extract_try_no_network(tmp_path):
    store = service.init_store(tmp_path)
    commands = [
        ["--store", str(store.root), "add", "Production deploys go through make release."],
        ["--store", str(store.root), "recall", "how do we deploy"],
        ["--store", str(store.root), "context"],
        ["--store", str(store.root), "extract", str(CONVERSATION)],
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCTL_LLM")}
    env.update(MEMCTL_NO_SERVER="1", HF_HUB_OFFLINE="0")
    trace = tmp_path / "trace.txt"
    prefix = ["strace", "-f", "-qq", "-e", "trace=connect", "-o", str(trace)]
    traced = strace_works()
    done = subprocess.run(
        [*(prefix if traced else []), sys.executable, "-c", GUARDED, json.dumps(commands)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["codes"] == [0, 0, 0, 0]
    assert report["attempts"] == ["connect 192.0.2.1:9"]  # the control, and nothing else
    if traced:
        assert off_machine_connects(trace.read_text()) == ["192.0.2.1:9"]
