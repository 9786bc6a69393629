"""The MCP server's stdio edge: every line is checked before the MCP library sees it.

The library drops a line it cannot read (bad JSON, a batch, a wrong `jsonrpc`, no method, a
method or id of the wrong type, params that are not an object, an id too large to read) without
a word, so a client waits for an answer that never comes. Here such a line gets the JSON-RPC
error reply the specification asks for: -32700 when it is not JSON, -32600 when it is not a
request the server can take, with the request's id when it has a readable one, else null.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602


def _readable_id(message: dict[str, Any]) -> int | str | None:
    """The message's id when MCP allows it (a string, or an integer that is not a bool)."""
    value = message.get("id")
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return None


def malformed(line: str) -> tuple[int | str | None, int, str] | None:
    """(id, code, message) of the error reply a line needs; None when the MCP library can take
    it as it is."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return None, PARSE_ERROR, "Parse error: the line is not one JSON value"
    if not isinstance(message, dict):
        return None, INVALID_REQUEST, "Invalid Request: a message is one JSON object"
    request_id = _readable_id(message)
    if "id" in message and request_id is None:
        return None, INVALID_REQUEST, "Invalid Request: an id is a string or an integer"
    if message.get("jsonrpc") != "2.0":
        return request_id, INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"'
    if "method" not in message:
        if request_id is not None and ("result" in message or "error" in message):
            return None  # a response to a request of the server's
        return request_id, INVALID_REQUEST, "Invalid Request: no method"
    if not isinstance(message["method"], str):
        return request_id, INVALID_REQUEST, "Invalid Request: the method is a string"
    if "params" in message and not isinstance(message["params"], dict | None):
        return request_id, INVALID_PARAMS, "Invalid params: params must be an object"
    from mcp_types import jsonrpc_message_adapter

    try:
        jsonrpc_message_adapter.validate_python(message, by_name=False)
    except ValueError as exc:
        return request_id, INVALID_REQUEST, f"Invalid Request: {str(exc).splitlines()[0][:200]}"
    return None


class CheckedLines:
    """Standard input for the MCP library's stdio transport: the lines it can read pass; each
    other line is answered here with its error reply, on the transport's own write stream."""

    def __init__(self, lines: Any):
        import anyio

        self._lines = lines
        self._replies: Any = None
        self._ready = anyio.Event()

    def answer_with(self, write_stream: Any) -> None:
        self._replies = write_stream
        self._ready.set()

    def __aiter__(self) -> AsyncIterator[str]:
        return self._checked()

    async def _checked(self) -> AsyncIterator[str]:
        from mcp.shared.message import SessionMessage
        from mcp_types import ErrorData, JSONRPCError

        async for line in self._lines:
            if not line.strip():
                continue
            problem = malformed(line)
            if problem is None:
                yield line
                continue
            request_id, code, text = problem
            await self._ready.wait()
            reply = JSONRPCError(
                jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=text)
            )
            await self._replies.send(SessionMessage(reply))


def _own_stdin() -> Any:
    """The wire, read from a private copy of fd 0; fd 0 itself then reads the null device, so a
    child process (git) cannot eat a message meant for the server."""
    from io import TextIOWrapper

    import anyio

    wire = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    stream = TextIOWrapper(os.fdopen(wire, "rb"), encoding="utf-8", errors="replace")
    return anyio.wrap_file(stream)


def serve_stdio(server: Any) -> None:
    """Serve an MCPServer over stdio with every malformed line answered (see the docstring)."""
    import anyio

    async def serve() -> None:
        from mcp.server.stdio import stdio_server

        lines = CheckedLines(_own_stdin())
        async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
            lines.answer_with(write_stream)
            lowlevel = server._lowlevel_server
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

    if sys.stdin is None:
        server.run("stdio")
        return
    anyio.run(serve)
