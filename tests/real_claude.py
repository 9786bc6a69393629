"""The real Claude Code client from npm, driven against a loopback mock of the Anthropic API.

Tests use this to prove what reaches the model: the client runs its real hook machinery (settings,
plugins, matchers, timeouts) and sends its real requests; the mock records every request body and
answers from a script of turns (text, or a tool call the client then executes).

The client is installed once per machine into a cache folder (`MEMCTL_CLAUDE_CODE_DIR`, else
`~/.cache/memctl-tests/claude-code`) with `npm install`; `claude_binary()` returns None when npm is
missing or the install fails, and `require_claude()` turns that into a skip that says why.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

CLAUDE_CODE_VERSION = "2.1.332"
_install_lock = threading.Lock()
_install_error: list[str] = []


def _cache_dir() -> Path:
    configured = os.environ.get("MEMCTL_CLAUDE_CODE_DIR")
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "memctl-tests" / f"claude-code-{CLAUDE_CODE_VERSION}"


def claude_binary() -> Path | None:
    """The installed client's executable, installing it from npm on first use; None if impossible."""
    with _install_lock:
        folder = _cache_dir()
        binary = folder / "node_modules" / ".bin" / "claude"
        if binary.exists():
            return binary
        if _install_error:
            return None
        npm = shutil.which("npm")
        if npm is None:
            _install_error.append("npm is not installed")
            return None
        folder.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--prefix", str(folder),
             f"@anthropic-ai/claude-code@{CLAUDE_CODE_VERSION}"],
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        if done.returncode != 0 or not binary.exists():
            _install_error.append(f"npm install failed: {done.stderr.strip()[-300:]}")
            return None
        return binary


def require_claude() -> Path:
    binary = claude_binary()
    if binary is None:
        pytest.skip(f"the real Claude Code client is unavailable: {_install_error[-1]}")
    return binary


@dataclass(frozen=True)
class ToolCall:
    """A turn in which the model asks the client to run a tool."""

    name: str
    input: dict[str, Any]


Turn = str | ToolCall


@dataclass
class MockAnthropic:
    """Answers /v1/messages from `turns` in order (the last one repeats); records every request."""

    turns: list[Turn]
    requests: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""
    _next: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def conversation_requests(self) -> list[dict[str, Any]]:
        """The requests that carry the session's conversation (not title or quota side calls)."""
        return [r for r in self.requests if r.get("tools")]

    def next_turn(self) -> Turn:
        with self._lock:
            turn = self.turns[min(self._next, len(self.turns) - 1)]
            self._next += 1
            return turn


def all_text(request: dict[str, Any]) -> str:
    """Every string the model would read in one request: system prompt and all message content."""
    parts: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            for key, item in value.items():
                if key in ("text", "content", "system", "messages"):
                    walk(item)

    walk(request.get("system", []))
    walk(request.get("messages", []))
    return "\n".join(parts)


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _message_events(turn: Turn, model: str) -> list[bytes]:
    stop = "tool_use" if isinstance(turn, ToolCall) else "end_turn"
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_mock", "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 1},
        },
    }  # fmt: skip
    events = [_sse("message_start", start)]
    if isinstance(turn, ToolCall):
        block = {"type": "tool_use", "id": "toolu_mock1", "name": turn.name, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(turn.input)}
    else:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": turn}
    events += [
        _sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
        _sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 5}}),
        _sse("message_stop", {"type": "message_stop"}),
    ]  # fmt: skip
    return events


def _message_json(turn: Turn, model: str) -> dict[str, Any]:
    if isinstance(turn, ToolCall):
        content: list[dict[str, Any]] = [
            {"type": "tool_use", "id": "toolu_mock1", "name": turn.name, "input": turn.input}
        ]
        stop = "tool_use"
    else:
        content, stop = [{"type": "text", "text": turn}], "end_turn"
    return {
        "id": "msg_mock", "type": "message", "role": "assistant", "model": model,
        "content": content, "stop_reason": stop, "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }  # fmt: skip


def _handler(mock: MockAnthropic) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def _reply(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._reply(200, {})

        def do_HEAD(self) -> None:
            self.send_response(200)
            self.end_headers()

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {}
            path = self.path.split("?")[0]
            if path.endswith("/count_tokens"):
                self._reply(200, {"input_tokens": 10})
                return
            if not path.endswith("/v1/messages"):
                self._reply(200, {})
                return
            with mock._lock:
                mock.requests.append(body)
            # Side calls (titles, quota checks) carry no tools: answer them without using a turn.
            turn: Turn = mock.next_turn() if body.get("tools") else "ok"
            model = str(body.get("model", "claude-mock"))
            if body.get("stream"):
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.end_headers()
                for chunk in _message_events(turn, model):
                    self.wfile.write(chunk)
                    self.wfile.flush()
                self.close_connection = True
            else:
                self._reply(200, _message_json(turn, model))

    return Handler


@contextmanager
def mock_anthropic(turns: list[Turn]) -> Iterator[MockAnthropic]:
    mock = MockAnthropic(turns=list(turns))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(mock))
    mock.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield mock
    finally:
        server.shutdown()
        server.server_close()


def client_env(home: Path, api_url: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """An environment that isolates the client in `home` and keeps every call on loopback."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("ANTHROPIC_", "CLAUDE", "MEMCTL_"))
    }
    env.update(
        HOME=str(home),
        CLAUDE_CONFIG_DIR=str(home / ".claude"),
        ANTHROPIC_BASE_URL=api_url,
        ANTHROPIC_API_KEY="sk-ant-test-dummy",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_TELEMETRY="1",
        DISABLE_AUTOUPDATER="1",
        DISABLE_ERROR_REPORTING="1",
        CLAUDE_CODE_ENABLE_TELEMETRY="0",
        NO_PROXY="*",
    )
    env.update(extra or {})
    return env


def run_claude(
    binary: Path,
    prompt: str,
    *,
    cwd: Path,
    env: dict[str, str],
    extra_args: tuple[str, ...] = (),
    timeout: float = 240,
) -> subprocess.CompletedProcess[str]:
    """`claude -p PROMPT` in `cwd`, the file and shell tools allowed without asking, JSON output."""
    return subprocess.run(
        [str(binary), "-p", prompt, "--output-format", "json",
         "--allowedTools", "Read,Edit,Write,MultiEdit,Bash", *extra_args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
        stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip


@dataclass(frozen=True)
class MemctlProject:
    """A project folder under an isolated HOME, and the environment memctl runs in there."""

    root: Path
    env: dict[str, str]

    @classmethod
    def make(cls, home: Path) -> MemctlProject:
        root = home / "project"
        root.mkdir(parents=True, exist_ok=True)
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("MEMCTL_")},
            "HOME": str(home),
            "MEMCTL_USER_STORE": str(home / "user-memory"),
            "MEMCTL_NO_SERVER": "1",
        }
        return cls(root, env)

    def memctl(self, *args: str) -> subprocess.CompletedProcess[str]:
        """This checkout's memctl in the project; a failure fails the test with its stderr."""
        from tests.server_support import COMMAND

        done = subprocess.run(
            [*COMMAND, *args], cwd=self.root, env=self.env, capture_output=True, text=True,
            check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done

    def install_hooks(self) -> None:
        """memctl's Claude Code hooks, calling this checkout's memctl (as one on PATH would be)."""
        import shlex

        from tests.server_support import COMMAND

        self.memctl("hooks", "install", "claude-code", "--command", shlex.join(COMMAND))

    def client_env(self, api_url: str) -> dict[str, str]:
        """The client's environment: isolated, on loopback, with this project's memctl settings."""
        memctl_vars = {k: v for k, v in self.env.items() if k.startswith("MEMCTL_")}
        return client_env(self.root.parent, api_url, {"PATH": self.env["PATH"], **memctl_vars})

    def ask(self, prompt: str, turns: list[Turn] | None = None) -> list[dict[str, Any]]:
        """`claude -p PROMPT` in the project against the mock model answering `turns`; the
        conversation requests the model received (at least one, or the test fails)."""
        binary = require_claude()
        with mock_anthropic(turns or ["Noted."]) as api:
            done = run_claude(binary, prompt, cwd=self.root, env=self.client_env(api.url))
            assert done.returncode == 0, done.stderr
            requests = api.conversation_requests()
        assert requests, "the client sent no conversation request to the mock API"
        return requests
