"""Which memories name a file: its path, a folder it sits in, its file name or its stem.

Why: the rule an agent needs before it touches `.changeset/fix-bug.md` or
`pkg/github/__toolsnaps__/tool.snap` is usually written about the folder ("create a file in
`.changeset/`", "commit the `.snap` files in `pkg/github/__toolsnaps__/`"), not anchored to
the file. A memory whose text names the file or one of its folders is about what the agent is
about to touch; on the project-task benchmark's dev half such memories are relevant about four
times as often as what the session start shows.

A name is evidence only when few memories hold it: `src/` or `tests/` is named by much of a
store and says nothing about one file (`distinctive`). Pure: the caller keeps the texts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

MIN_DIR_CHARS = 3  # a folder name shorter than this ("ui", "js") is part of too many words
MIN_STEM_CHARS = 4  # the same for a file's stem ("io.go" -> "io")
_PART = re.compile(r"[\w\-]+")
# A stem that is a coined name (`license-check`, `tool_aliases`, `agentToolInput`, `v2`), not a
# word: "main", "issues" or "types" name a file in a path and anything at all in prose.
_COINED = re.compile(r"[-_0-9]|[a-z][A-Z]")
_PATH_IN_TEXT = re.compile(r"[\w.\-]+(?:/[\w.\-{}<>*]+)+/?|[\w\-]+\.[A-Za-z]{1,6}\b")


def path_keys(path: str) -> tuple[str, ...]:
    """What a memory may call the file at `path` (relative to the project), most specific
    first: the path, its file name, its folders from the deepest (`a/b/`, `a/`), each folder's
    name (`b/`), and its stem when that is a coined name rather than a word."""
    parts = [part for part in path.strip().strip("/").split("/") if part and part != "."]
    if not parts:
        return ()
    name = parts[-1]
    keys = ["/".join(parts), name]
    keys += ["/".join(parts[:end]) + "/" for end in range(len(parts) - 1, 0, -1)]
    keys += [f"{part}/" for part in reversed(parts[:-1]) if len(part) >= MIN_DIR_CHARS]
    stem = name.split(".")[0]
    if "." in name and len(stem) >= MIN_STEM_CHARS and _COINED.search(stem):
        keys.append(stem)
    return tuple(dict.fromkeys(keys))


def paths_in(text: str) -> tuple[str, ...]:
    """The file paths and file names a prompt names (`pkg/github/issues.go`, `README.md`)."""
    found = (match.rstrip(".") for match in _PATH_IN_TEXT.findall(text))
    return tuple(dict.fromkeys(path for path in found if path and not path.startswith("http")))


def names(text: str, key: str) -> bool:
    """`text` names `key` as a path, folder or word: not inside a longer name (`tools/` is
    not named by `devtools/`, `issues` not by `issues_test`), and a folder not as the start
    of another one's path (`src/` is not named by `src/billing/`, which is about that folder)."""
    return re.search(r"(?<![\w\-/.])" + re.escape(key) + r"(?![\w\-])", text) is not None


def key_parts(key: str) -> tuple[str, ...]:
    """The words a text must hold to name `key` (for a lookup by word before the exact test)."""
    return tuple(_PART.findall(key))


class NamedIndex:
    """The memories' texts by word, to find those naming a key without reading them all."""

    def __init__(self, texts: Mapping[str, str]):
        self.texts = dict(texts)
        self.by_word: dict[str, set[str]] = {}
        for memory_id, text in self.texts.items():
            for word in set(_PART.findall(text)):
                self.by_word.setdefault(word, set()).add(memory_id)

    def naming(self, key: str) -> set[str]:
        """Ids of the memories whose text names `key`."""
        parts = key_parts(key)
        if not parts:
            return set()
        candidates = set.intersection(*(self.by_word.get(part, set()) for part in parts))
        return {i for i in candidates if names(self.texts[i], key)}


def distinctive(found: set[str], size: int, max_share: float) -> bool:
    """Whether a key named by `found` memories of a store of `size` says something about one
    file: at most `max_share` of the store, and never fewer than 2 allowed."""
    return bool(found) and len(found) <= max(2, int(max_share * size))


def named_by(index: NamedIndex, paths: Iterable[str], max_share: float) -> list[str]:
    """Ids of the memories naming any of `paths` by a distinctive key, the most specific
    keys' first (a path named whole before a folder, a folder before a stem)."""
    out: dict[str, None] = {}
    size = len(index.texts)
    for path in paths:
        for key in path_keys(path):
            found = index.naming(key)
            if distinctive(found, size, max_share):
                out.update(dict.fromkeys(sorted(found)))
    return list(out)
