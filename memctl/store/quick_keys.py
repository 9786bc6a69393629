"""A memory file's listing key (created, id) read from its front matter without parsing YAML.

`memctl list --limit N` wants the N newest of thousands of files; parsing each one's YAML to
sort them costs ~2 ms a file. memctl writes `id: <id>` and `created: '<UTC time>Z'` on lines of
their own, so those two lines are read as bytes. Anything else (a hand-written date, no id, a
file that does not start with front matter) gives None, and the caller parses that file in full:
the key is exact or not given.
"""

from __future__ import annotations

import os
import re

HEAD_BYTES = 4096  # the front matter memctl writes fits well within this
_ID = re.compile(rb"^id: ([0-9a-z][0-9a-z_-]*)\r?$", re.M)
_CREATED = re.compile(rb"^created: '(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)'\r?$", re.M)


def listing_key(path: str | os.PathLike[str]) -> tuple[str, str] | None:
    """(created, id) as the parsed memory would give them, or None when not plain here."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(HEAD_BYTES)
    except OSError:
        return None
    if not head.startswith(b"---\n"):
        return None
    end = head.find(b"\n---", 3)
    if end < 0:
        return None
    front = head[: end + 1]
    ids, created = _ID.findall(front), _CREATED.findall(front)
    if len(ids) != 1 or len(created) != 1:
        return None
    return created[0].decode(), ids[0].decode()
