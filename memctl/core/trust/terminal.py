"""Text from memories and file names made safe to print on a terminal.

A memory is data a teammate's branch can hold. Printed raw, an escape sequence in it can move
the cursor, hide lines, set the window title or write the user's clipboard (OSC 52). Everything
memctl prints that came from a file goes through `printable`: escape sequences (CSI, OSC, DCS,
...) and every other control character go, except the newline and the tab.
"""

from __future__ import annotations

import re

# ESC followed by a CSI (`[`), a string command (`]`, `P`, `X`, `^`, `_`, ended by BEL or ST),
# or a single character; and the 8-bit forms (C1: U+0080-U+009F).
# Why an unterminated string command loses only its introducer: without its end there is no
# telling where the payload stops, and the text after it must not vanish.
_ESCAPE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?"  # CSI ... final byte
    r"|\x1b[\]PX^_][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"  # OSC / DCS / SOS / PM / APC ... BEL or ST
    r"|\x1b[ -/]*[0-~]?"  # two-character and nF escapes (an unterminated OSC's `ESC ]` too)
    r"|\x9b[0-?]*[ -/]*[@-~]?"  # 8-bit CSI
    r"|[\x90\x98\x9d\x9e\x9f][^\x07\x1b\x9c]*(?:\x07|\x9c)"  # 8-bit string commands
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """`text` without escape sequences and control characters (newline and tab stay); a
    carriage return becomes a newline so it cannot overwrite what came before on the line."""
    if text.isprintable():
        return text
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub("", _ESCAPE.sub("", text))


def printable_name(name: str) -> str:
    """A file name from os.scandir (undecodable bytes as surrogates) as printable text."""
    return printable(name.encode("utf-8", "surrogateescape").decode("utf-8", "replace"))
