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
import threading
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
MAX_ANCHORS_PER_KEY = 64  # paths, symbols or commands of one memory that are checked


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
    """The anchors a memory's front matter (its `extra` keys) holds, within the cost limits:
    at most MAX_ANCHORS_PER_KEY of each key, globs over the limit left out (`anchor_limits`
    says what was left out)."""
    apply = extra.get(APPLY_KEY)
    paths = [_relative(p) for p in _texts(extra.get("paths"))]
    return Anchors(
        paths=tuple(p for p in paths if glob_problem(p) is None)[:MAX_ANCHORS_PER_KEY],
        symbols=_texts(extra.get("symbols"))[:MAX_ANCHORS_PER_KEY],
        commands=_texts(extra.get("commands"))[:MAX_ANCHORS_PER_KEY],
        apply=apply if apply in APPLY_CHOICES else DEFAULT_APPLY,
    )


def anchor_limits(extra: Mapping[str, Any]) -> list[str]:
    """What `anchors_from` leaves out of a front matter, one sentence each ([] when nothing)."""
    notes = []
    for pattern in _texts(extra.get("paths")):
        problem = glob_problem(pattern)
        if problem:
            notes.append(f"path glob '{_shown(pattern)}' left out: {problem}")
    for key in ANCHOR_KEYS:
        count = len(_texts(extra.get(key)))
        if count > MAX_ANCHORS_PER_KEY:
            notes.append(
                f"'{key}' holds {count:,} entries; only the first {MAX_ANCHORS_PER_KEY} are used"
            )
    return notes


def _shown(pattern: str) -> str:
    return pattern if len(pattern) <= 60 else pattern[:57] + "..."


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


# Why limits: a glob comes from a memory file anyone with commit access can write. A long one,
# or thousands of them, must cost a bounded amount of work, never minutes.
MAX_GLOB_CHARS = 512
MAX_GLOB_WILDCARDS = 32  # `*`, `**` and `?` in one glob, runs of them counted once
_DFA_STATES_LIMIT = 4096  # subsets kept per glob before its table starts over


@dataclass(frozen=True)
class _Token:
    kind: str  # "char" | "one" | "class" | "star" | "any" | "dirs"
    char: str = ""
    klass: re.Pattern[str] | None = None


def glob_problem(pattern: str) -> str | None:
    """Why `pattern` is over the cost limit of a path anchor; None when it is within it."""
    if len(pattern) > MAX_GLOB_CHARS:
        return f"longer than {MAX_GLOB_CHARS} characters"
    # Why after tokenising: `**/**/**/` is one wildcard, however often it is repeated.
    wildcards = sum(token.kind != "char" and token.kind != "class" for token in _tokens(pattern))
    if wildcards > MAX_GLOB_WILDCARDS:
        return f"{wildcards} wildcards, over {MAX_GLOB_WILDCARDS}"
    return None


def _tokens(pattern: str) -> list[_Token]:
    """A path glob as tokens: `**/` any folders (or none), `**` anything, `*` and `?` within one
    folder name; a plain folder name (`docs/` or `src/api`) matches everything below it."""
    pattern = pattern.strip().lstrip("/")
    if pattern.endswith("/"):
        pattern += "**"
    # Why: an anchor without a folder (`Directory.Packages.props`) names that file anywhere.
    out = [] if "/" in pattern else [_Token("dirs")]
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("**/", i):
            token, i = _Token("dirs"), i + 3
        elif pattern.startswith("**", i):
            token, i = _Token("any"), i + 2
        elif char == "*":
            token, i = _Token("star"), i + 1
        elif char == "?":
            token, i = _Token("one"), i + 1
        elif char == "[" and pattern.find("]", i + 1) != -1:
            end = pattern.find("]", i + 1)
            body = fnmatch.translate(pattern[i : end + 1])[4:-3]
            token, i = _Token("class", klass=re.compile(body, re.DOTALL)), end + 1
        else:
            token, i = _Token("char", char), i + 1
        if token.kind in ("dirs", "any", "star") and out and out[-1].kind in ("dirs", "any"):
            # `**/**/`, `***`, `**/*` after `**`: the run matches what its widest part does.
            widest = "any" if "any" in (token.kind, out[-1].kind) else "dirs"
            if token.kind == "star" and out[-1].kind == "dirs":
                out.append(token)
                continue
            out[-1] = _Token(widest)
            continue
        if token.kind == "star" and out and out[-1].kind == "star":
            continue
        out.append(token)
    return out


class Glob:
    """A path glob compiled once, matched in time linear in the path's length.

    Why not a regex: `(?:.*/)?` repeated backtracks exponentially on a deep path (16 `**/` on a
    20-folder path ran for minutes). Here the glob is a small automaton whose state sets are
    turned into a table as paths are matched (a lazily built DFA), so each character costs one
    table look-up whatever the glob.
    """

    def __init__(self, pattern: str):
        self.pattern = pattern
        self.tokens = _tokens(pattern)
        self._accept = len(self.tokens)
        self._sets: dict[frozenset[int], int] = {}
        self._states: list[frozenset[int]] = []
        self._moves: list[dict[str, int]] = []
        self._lock = threading.Lock()
        self._start = self._state_id(self._closure({0}))

    def _state_id(self, states: frozenset[int]) -> int:
        with self._lock:  # a resident engine matches from more than one thread
            found = self._sets.get(states)
            if found is None:
                found = self._sets[states] = len(self._states)
                self._states.append(states)
                self._moves.append({})
            return found

    def _closure(self, states: set[int]) -> frozenset[int]:
        todo = list(states)
        while todo:
            state = todo.pop()
            if state < self._accept and self.tokens[state].kind in ("star", "any", "dirs"):
                if state + 1 not in states:
                    states.add(state + 1)
                    todo.append(state + 1)
        return frozenset(states)

    def _step(self, states: frozenset[int], char: str) -> frozenset[int]:
        out: set[int] = set()
        accept = self._accept
        for state in states:
            if state > accept:  # inside a `**/`: any folders, ended by a `/`
                out.add(state)
                if char == "/":
                    out.add(state - accept)
                continue
            if state == accept:
                continue
            token = self.tokens[state]
            kind = token.kind
            if kind == "char":
                if char == token.char:
                    out.add(state + 1)
            elif kind == "one" or kind == "star":
                if char != "/":
                    out.add(state + 1 if kind == "one" else state)
            elif kind == "any":
                out.add(state)
            elif kind == "dirs":
                out.add(accept + 1 + state)
                if char == "/":
                    out.add(state + 1)
            elif token.klass is not None and token.klass.fullmatch(char):
                out.add(state + 1)
        return self._closure(out)

    def match(self, path: str) -> bool:
        """Whether `path` (relative, `/`-separated) is matched, or lies below a match."""
        accept = self._accept
        current = self._start
        for index, char in enumerate(path):
            states = self._states[current]
            if char == "/" and accept in states:
                return True  # a folder the glob names: everything below it
            following = self._moves[current].get(char)
            if following is None:
                stepped = self._step(states, char)
                if not stepped:
                    return False
                if len(self._states) >= _DFA_STATES_LIMIT:
                    return self._match_rest(stepped, path[index + 1 :])
                following = self._state_id(stepped)
                self._moves[current][char] = following
            current = following
        return accept in self._states[current]

    def _match_rest(self, states: frozenset[int], rest: str) -> bool:
        """The same walk without the table (it is full): still linear, only slower."""
        for char in rest:
            if char == "/" and self._accept in states:
                return True
            states = self._step(states, char)
            if not states:
                return False
        return self._accept in states


@lru_cache(maxsize=4096)
def compiled_glob(pattern: str) -> Glob:
    """`pattern` compiled (once); a glob over the cost limit matches nothing."""
    if glob_problem(pattern):
        return _NEVER_MATCHES
    return Glob(pattern)


class _NeverMatches(Glob):
    def match(self, path: str) -> bool:
        return False


_NEVER_MATCHES = _NeverMatches("")


def path_matches(pattern: str, path: str) -> bool:
    return compiled_glob(pattern).match(_relative(path))


def matching_files(pattern: str, files: Iterable[str]) -> list[str]:
    glob = compiled_glob(pattern)
    return [f for f in files if glob.match(f)]


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
    glob = compiled_glob(pattern)
    return (glob.match(f) for f in files)


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
