"""`memctl mcp` answers every malformed message with a JSON-RPC error (with the request's id
when it has a readable one, else null) and keeps serving. Each case is followed by a `ping`:
the replies that arrive before the ping's answer are the server's answer to the case."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("mcp")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CASES = [
    ("not JSON", b'{"jsonrpc":"2.0","id":11,"method":', None, -32700),
    ("nested too deep", b'{"jsonrpc":"2.0","id":12,"params":' + b"[" * 50000, None, -32700),
    ("an id too large to read", b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b"}", None, -32700),
    ("not an object", b"[1, 2]", None, -32600),
    ("wrong jsonrpc", b'{"jsonrpc":"1.0","id":13,"method":"tools/list"}', 13, -32600),
    ("no jsonrpc", b'{"id":"fourteen","method":"tools/list"}', "fourteen", -32600),
    ("no method", b'{"jsonrpc":"2.0","id":15}', 15, -32600),
    ("a method that is not a string", b'{"jsonrpc":"2.0","id":16,"method":5}', 16, -32600),
    ("params that are a list", b'{"jsonrpc":"2.0","id":17,"method":"tools/list","params":[1]}', 17, -32602),
    ("a fractional id", b'{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}', None, -32600),
    ("a boolean id", b'{"jsonrpc":"2.0","id":true,"method":"tools/list"}', None, -32600),
    ("an object id", b'{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}', None, -32600),
    ("a null id", b'{"jsonrpc":"2.0","id":null,"method":"tools/list"}', None, -32600),
]  # fmt: skip


@pytest.fixture
def server(store):
    env = {**os.environ, "MEMCTL_NO_SERVER": "1", "PYTHONPATH": REPO}
    process = subprocess.Popen(
        [sys.executable, "-m", "memctl", "--store", str(store.root), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert process.stdin is not None and process.stdout is not None
    yield process
    process.kill()
    process.wait()


def send(process, line: bytes) -> None:
    process.stdin.write(line + b"\n")
    process.stdin.flush()


def until_answer(process, request_id: int) -> list[dict]:
    """Every message up to the answer to `request_id`, that answer last."""
    seen = []
    while True:
        line = process.stdout.readline()
        assert line, "the server closed its output"
        seen.append(json.loads(line))
        if seen[-1].get("id") == request_id:
            return seen


@pytest.mark.slow
def test_every_malformed_message_gets_one_error_reply_and_the_server_keeps_serving(server):
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}
    send(
        server,
        json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}).encode(),
    )
    until_answer(server, 0)
    send(server, b'{"jsonrpc":"2.0","method":"notifications/initialized"}')

    for number, (name, line, expected_id, code) in enumerate(CASES, start=1000):
        send(server, line)
        send(server, json.dumps({"jsonrpc": "2.0", "id": number, "method": "ping"}).encode())
        *replies, pong = until_answer(server, number)
        assert pong.get("result") == {}, name
        assert len(replies) == 1, (name, replies)
        assert replies[0]["id"] == expected_id and replies[0]["error"]["code"] == code, name

    # a well-formed call after all that is answered as ever
    send(server, b'{"jsonrpc":"2.0","id":"last","method":"tools/list"}')
    [tools] = until_answer(server, "last")
    assert {tool["name"] for tool in tools["result"]["tools"]} >= {"recall", "add"}
