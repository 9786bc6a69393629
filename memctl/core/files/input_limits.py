"""What memctl refuses at the door: text the store would later refuse to read or skip (pure).

A memory file over `limits.max_file_bytes`, one holding a NUL byte or a git conflict block is
reported and left out by every later command, so `add`, `session add`, `import` and MCP `add`
refuse such text up front, in one line naming the limit, instead of writing a file nobody can
recall. Text that is not valid UTF-8 (a Latin-1 byte on the command line or on stdin reaches
Python as a lone surrogate) is refused the same way, before anything tries to encode it.
"""

from __future__ import annotations

import re

from memctl.core.errors import MemctlError

# Room left in a memory file for its front matter (id, title, tags, times, relations).
FRONT_MATTER_ROOM = 4096
_CONFLICT_LINE = re.compile(r"^(?:<{7}|={7}|>{7})(?:\s|$)", re.MULTILINE)
_SURROGATE = re.compile(r"[\ud800-\udfff]")


class InputRefused(MemctlError):
    """Text memctl will not store as given. Exit code 1."""

    kind = "input_refused"


def human_bytes(size: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"


def invalid_utf8(text: str) -> str | None:
    """`byte 0xe9` for text decoded with surrogateescape from bytes that are not UTF-8."""
    found = _SURROGATE.search(text)
    if found is None:
        return None
    code = ord(found.group(0))
    byte = f"byte 0x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"U+{code:04X}"
    return f"{byte} at character {found.start() + 1}"


def check_utf8(text: str, what: str) -> str:
    """`text`, or InputRefused when it holds what cannot be UTF-8."""
    bad = invalid_utf8(text)
    if bad:
        raise InputRefused(f"{what} is not valid UTF-8 ({bad}); convert it to UTF-8 first.")
    return text


def check_input(text: str, max_bytes: int, what: str = "The text") -> str:
    """`text`, or InputRefused naming the first limit it breaks."""
    check_utf8(text, what)
    size = len(text.encode("utf-8"))
    if size + FRONT_MATTER_ROOM > max_bytes:
        raise InputRefused(
            f"{what} is {human_bytes(size)}; a memory file holds at most "
            f"{human_bytes(max_bytes - FRONT_MATTER_ROOM)} of text "
            "(limits.max_file_bytes in config.yaml). Split it, or raise the limit."
        )
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise InputRefused(
            f"{what} holds a NUL byte (line {line}): binary content cannot be a memory."
        )
    conflict = _CONFLICT_LINE.search(text)
    if conflict:
        line = text[: conflict.start()].count("\n") + 1
        raise InputRefused(
            f"{what} holds a git conflict marker (line {line}: {conflict.group(0).strip()}); "
            "resolve the conflict first."
        )
    return text


def check_file_size(data: bytes, max_bytes: int, what: str = "The memory") -> bytes:
    """The bytes of a memory file about to be written, or InputRefused when the file would be
    over the limit the reader applies (front matter and every derived field included)."""
    if len(data) > max_bytes:
        raise InputRefused(
            f"{what} would be a {human_bytes(len(data))} file; a memory file holds at most "
            f"{human_bytes(max_bytes)} (limits.max_file_bytes in config.yaml). Nothing was "
            "written: split it, or raise the limit."
        )
    return data


def check_query(query: str, max_bytes: int, what: str = "The query") -> str:
    """`query`, or InputRefused when it is longer than `max_bytes` (limits.max_query_bytes):
    a query is a few sentences; megabytes of it would only cost memory and time."""
    size = len(query.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise InputRefused(
            f"{what} is {human_bytes(size)}; at most {human_bytes(max_bytes)} is searched "
            "(limits.max_query_bytes in config.yaml). Ask with the few sentences that matter."
        )
    return query
