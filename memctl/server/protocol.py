"""Messages between the client and the server: a JSON header, then raw byte blobs.

A frame is a 4-byte big-endian header length, the header (UTF-8 JSON, with `blobs`: the length
of each blob), then the blobs. Standard input and the captured output travel as blobs, so any
bytes (not only valid UTF-8) come back exactly as the command wrote them.

One connection carries one exchange: the client's request, the server's `accepted` (or why
not), then for a command its result.
"""

from __future__ import annotations

import json

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
    data = json.dumps(header, separators=(",", ":")).encode("utf-8")
    sock.sendall(len(data).to_bytes(4, "big") + data + b"".join(blobs))


def recv_message(sock: Stream) -> tuple[dict[str, Any], list[bytes]]:
    """One frame; ConnectionError when the peer closed the connection first."""
    size = int.from_bytes(_recv_exact(sock, 4), "big")
    if size > MAX_HEADER_BYTES:
        raise ConnectionError(f"message header of {size} bytes is too large")
    header = json.loads(_recv_exact(sock, size).decode("utf-8"))
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
