"""Memory ids that are safe to put in a path: lock files, file names, state keys.

A memory file is untrusted input (a `git pull` can bring any text), so an id read from one is
checked before it names anything on disk.
"""

from __future__ import annotations

import hashlib
import re

MAX_ID_LENGTH = 80
_SAFE_ID = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._-]{{0,{MAX_ID_LENGTH - 1}}}")
_UNSAFE_RUN = re.compile(r"[^A-Za-z0-9._-]+")
ID_RULE = (
    f"use letters, digits, '.', '_' or '-' (starting with a letter or digit, "
    f"at most {MAX_ID_LENGTH} characters)"
)


def is_safe_id(value: str) -> bool:
    """Letters, digits, '.', '_', '-'; starts with a letter or digit; no separators; bounded."""
    return bool(_SAFE_ID.fullmatch(value))


def id_from_name(name: str) -> str:
    """A safe id for a hand-written file named `name` (without `.md`): the name itself when it is
    one, else its safe characters plus a short hash of the name, so two names never collide."""
    if is_safe_id(name):
        return name
    digest = hashlib.sha1(name.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    readable = _UNSAFE_RUN.sub("-", name).strip("._-")[: MAX_ID_LENGTH - 9].rstrip("._-")
    return f"{readable}-{digest}" if readable else f"m-{digest}"
