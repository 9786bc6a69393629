"""Messages between the client and the server: a JSON header, then raw byte blobs.

A frame is a 4-byte big-endian header length, the header (UTF-8 JSON, with `blobs`: the length
of each blob), then the blobs. Standard input and the captured output travel as blobs, so any
bytes (not only valid UTF-8) come back exactly as the command wrote them.

One connection carries one exchange: the client's request, the server's `accepted` (or why
not), then for a command its result.

The JSON is written and read with the C half of the json package (`_json`, as client.py uses
`_socket`): `import json` brings `re` and `enum` with it, ~5 ms of every client process on a
clean install. These are the functions json.dumps and json.loads call themselves.
"""

from __future__ import annotations

from _json import encode_basestring_ascii as _quoted
from _json import make_scanner as _make_scanner

TYPE_CHECKING = False  # Why not typing.TYPE_CHECKING: the client imports this; typing costs ~5 ms
if TYPE_CHECKING:
    from typing import Any, Protocol

    class Stream(Protocol):
        """The part of a socket (socket.socket or _socket.socket) the protocol uses."""

        def sendall(self, data: bytes, /) -> Any: ...

        def recv(self, size: int, /) -> bytes: ...


PROTOCOL = 1
MAX_HEADER_BYTES = 16 * 1024 * 1024
MAX_BLOB_BYTES = 1024 * 1024 * 1024


def send_message(sock: Stream, header: dict[str, Any], blobs: tuple[bytes, ...] = ()) -> None:
    header = {**header, "blobs": [len(blob) for blob in blobs]}
    data = dumps(header).encode("utf-8")
    sock.sendall(len(data).to_bytes(4, "big") + data + b"".join(blobs))


def recv_message(sock: Stream) -> tuple[dict[str, Any], list[bytes]]:
    """One frame; ConnectionError when the peer closed the connection first."""
    size = int.from_bytes(_recv_exact(sock, 4), "big")
    if size > MAX_HEADER_BYTES:
        raise ConnectionError(f"message header of {size} bytes is too large")
    header = loads(_recv_exact(sock, size).decode("utf-8"))
    if not isinstance(header, dict):
        raise ConnectionError("message header is not a JSON object")
    sizes = header.get("blobs") or []
    if not all(isinstance(n, int) and 0 <= n <= MAX_BLOB_BYTES for n in sizes):
        raise ConnectionError("bad blob sizes in message header")
    return header, [_recv_exact(sock, n) for n in sizes]


def _recv_exact(sock: Stream, size: int) -> bytes:
    parts: list[bytes] = []
    missing = size
    while missing:
        chunk = sock.recv(min(missing, 1 << 20))
        if not chunk:
            raise ConnectionError("connection closed mid-message")
        parts.append(chunk)
        missing -= len(chunk)
    return b"".join(parts)


def dumps(value: Any) -> str:
    """Compact JSON of dicts (str keys), lists, tuples, str, int, float, bool and None; what
    json.dumps(value, separators=(",", ":")) gives."""
    return "".join(_encode(value))


def _encode(value: Any) -> list[str]:
    if isinstance(value, str):
        return [_quoted(value)]
    if value is None or isinstance(value, bool):
        return ["null" if value is None else "true" if value else "false"]
    if isinstance(value, int):
        return [int.__repr__(value)]
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return ["NaN" if value != value else "Infinity" if value > 0 else "-Infinity"]
        return [float.__repr__(value)]
    if isinstance(value, (list, tuple)):
        parts = ["["]
        for position, item in enumerate(value):
            parts += [","] if position else []
            parts += _encode(item)
        return parts + ["]"]
    if isinstance(value, dict):
        parts = ["{"]
        for position, (key, item) in enumerate(value.items()):
            if not isinstance(key, str):
                raise TypeError(f"message keys must be strings, not {type(key).__name__}")
            parts += [",", _quoted(key), ":"] if position else [_quoted(key), ":"]
            parts += _encode(item)
        return parts + ["}"]
    raise TypeError(f"{type(value).__name__} cannot travel in a message header")


class _Rules:
    """What json.JSONDecoder hands its C scanner: plain dicts, Python numbers, strict strings."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float  # NaN, Infinity, -Infinity


JSON_BLANKS = " \t\n\r"


def loads(text: str) -> Any:
    """json.loads(text); ValueError when the text is not one JSON value."""
    start = len(text) - len(text.lstrip(JSON_BLANKS))
    try:
        value, end = _make_scanner(_Rules())(text, start)  # type: ignore[arg-type]
    except StopIteration:
        raise ValueError("not JSON") from None
    if text[end:].strip(JSON_BLANKS):
        raise ValueError("data after the JSON value")
    return value
