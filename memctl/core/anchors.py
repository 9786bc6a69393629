"""Anchors: what in the code a memory is about, and whether that code still exists.

A memory may name `paths:` (globs relative to the project root), `symbols:` (identifiers) and
`commands:` in its front matter, and say when it applies (`apply: always | auto | manual`, as
Cursor's alwaysApply / globs rules do). The action-time hook injects a memory when the agent is
about to touch what it is anchored to; a memory whose paths match no file any more, or whose
symbols occur nowhere in the tree, is stale. Pure: the tree comes in as data.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

# Front matter keys, in the order they are written (after memctl's own fields, before the rest).
PROJECT_KEY = "project"
APPLY_KEY = "apply"
ANCHOR_KEYS = ("paths", "symbols", "commands")
KEY_ORDER = (PROJECT_KEY, APPLY_KEY, *ANCHOR_KEYS)
APPLY_CHOICES = ("always", "auto", "manual")
DEFAULT_APPLY = "auto"


@dataclass(frozen=True)
class Anchors:
    paths: tuple[str, ...] = ()
    symbols: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    apply: str = DEFAULT_APPLY

    def __bool__(self) -> bool:
        return bool(self.paths or self.symbols or self.commands)

    def to_dict(self) -> dict[str, Any]:
        return {
            "paths": list(self.paths),
            "symbols": list(self.symbols),
            "commands": list(self.commands),
            "apply": self.apply,
        }


def _texts(value: Any) -> tuple[str, ...]:
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (list, tuple)):
        return tuple(str(item) for item in value if str(item).strip())
    return ()


def anchor_problem(extra: Mapping[str, Any]) -> tuple[str, str] | None:
    """(key, what is wrong) for the first anchor key of a front matter that does not fit."""
    for key in ANCHOR_KEYS:
        value = extra.get(key)
        if value is None or isinstance(value, str):
            continue
        if not isinstance(value, list) or not all(isinstance(v, (str, int, float)) for v in value):
            return key, f"'{key}' must be a list of text"
    apply = extra.get(APPLY_KEY)
    if apply is not None and apply not in APPLY_CHOICES:
        return APPLY_KEY, f"'apply' is '{apply}'; expected one of {', '.join(APPLY_CHOICES)}"
    project = extra.get(PROJECT_KEY)
    if project is not None and not isinstance(project, str):
        return PROJECT_KEY, "'project' must be text"
    return None


def anchors_from(extra: Mapping[str, Any]) -> Anchors:
    """The anchors a memory's front matter (its `extra` keys) holds."""
    apply = extra.get(APPLY_KEY)
    return Anchors(
        paths=tuple(_relative(p) for p in _texts(extra.get("paths"))),
        symbols=_texts(extra.get("symbols")),
        commands=_texts(extra.get("commands")),
        apply=apply if apply in APPLY_CHOICES else DEFAULT_APPLY,
    )


def _relative(path: str) -> str:
    path = path.strip()
    while path.startswith("./"):
        path = path[2:]
    return path


def with_anchors(extra: Mapping[str, Any], anchors: Anchors) -> dict[str, Any]:
    """`extra` holding `anchors` (empty lists and the default `apply` are not written)."""
    out = {k: v for k, v in extra.items() if k not in (APPLY_KEY, *ANCHOR_KEYS)}
    for key in ANCHOR_KEYS:
        values = list(getattr(anchors, key))
        if values:
            out[key] = values
    if anchors.apply != DEFAULT_APPLY:
        out[APPLY_KEY] = anchors.apply
    return out


# --- matching --------------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A path glob as a regex: `**` crosses folders, `*` and `?` do not; a plain folder name
    (`docs/` or `src/api`) matches everything below it."""
    pattern = pattern.strip().lstrip("/")
    if pattern.endswith("/"):
        pattern += "**"
    out, i = [], 0
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif char == "*":
            out.append("[^/]*")
            i += 1
        elif char == "?":
            out.append("[^/]")
            i += 1
        elif char == "[":
            end = pattern.find("]", i)
            if end == -1:
                out.append(re.escape(char))
                i += 1
            else:
                out.append(fnmatch.translate(pattern[i : end + 1])[4:-3])
                i = end + 1
        else:
            out.append(re.escape(char))
            i += 1
    body = "".join(out)
    # Why: an anchor without a folder (`Directory.Packages.props`) names that file anywhere.
    prefix = "" if "/" in pattern else "(?:.*/)?"
    return re.compile(f"{prefix}{body}(?:/.*)?$")


def path_matches(pattern: str, path: str) -> bool:
    return bool(_glob_regex(pattern).match(_relative(path)))


def matching_files(pattern: str, files: Iterable[str]) -> list[str]:
    regex = _glob_regex(pattern)
    return [f for f in files if regex.match(f)]


def is_glob(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")


_SHELL_WORD = re.compile(r"[^\s;&|()<>]+")


def command_matches(anchor: str, command_line: str) -> bool:
    """An anchored command (`pnpm changeset`, `make`) is the start of one of the command
    line's commands (split at `&&`, `;`, `|`), word for word."""
    want = anchor.split()
    if not want:
        return False
    for part in re.split(r"&&|\|\||[;|\n]", command_line):
        words = _SHELL_WORD.findall(part)
        while words and "=" in words[0] and not words[0].startswith("="):
            words = words[1:]  # FOO=1 make
        if words[: len(want)] == want:
            return True
    return False


# --- freshness -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Staleness:
    missing_paths: tuple[str, ...] = ()
    missing_symbols: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.missing_paths or self.missing_symbols)

    def reason(self) -> str:
        parts = []
        if self.missing_paths:
            parts.append("no file matches " + ", ".join(self.missing_paths))
        if self.missing_symbols:
            parts.append("not in the code any more: " + ", ".join(self.missing_symbols))
        return "; ".join(parts)


def staleness(
    anchors: Anchors, files: Collection[str], symbol_present: Callable[[str], bool]
) -> Staleness:
    """Which of a memory's path and symbol anchors the tree no longer holds."""
    missing_paths = tuple(p for p in anchors.paths if not any(_match_all(p, files)))
    missing_symbols = tuple(s for s in anchors.symbols if not symbol_present(s))
    return Staleness(missing_paths, missing_symbols)


def _match_all(pattern: str, files: Collection[str]) -> Iterable[bool]:
    if not is_glob(pattern) and pattern in files:
        return (True,)
    regex = _glob_regex(pattern)
    return (bool(regex.match(f)) for f in files)


def renamed_anchors(anchors: Anchors, renames: Mapping[str, str]) -> Anchors:
    """Anchors with every path that names a renamed file exactly carried to its new name."""
    if not renames:
        return anchors
    paths = tuple(renames.get(p, p) for p in anchors.paths)
    return (
        anchors
        if paths == anchors.paths
        else Anchors(paths, anchors.symbols, anchors.commands, anchors.apply)
    )
