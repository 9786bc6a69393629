"""The git pre-commit check: staged memory files must parse and carry no unredacted secrets.

It reads what is staged (`git show :path`), not the work tree, so a file fixed on disk but not
re-added still stops the commit. Problems name the file and line; secret values never appear.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from memctl.agents.git_hooks import staged_content, staged_paths
from memctl.config import Store
from memctl.core.errors import InvalidMemoryFile
from memctl.core.files.frontmatter import parse_memory
from memctl.core.files.memory import is_memory_filename
from memctl.store.files import default_id, default_type, is_private_path

_ROOT_FILES = {"README.md", "CHANGELOG.md"}


@dataclass(frozen=True)
class StagedProblem:
    path: str  # as git shows it, relative to the repository root
    line: int
    problem: str
    warning: bool = False  # a value read leniently (core.files.lenient): reported, does not refuse

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {'warning: ' if self.warning else ''}{self.problem}"


def memory_relpath(repo_path: str, repo: Path, store: Store) -> str | None:
    """The path inside the store of a staged file, or None if it is not a memory file."""
    try:
        inside = (repo / repo_path).resolve().relative_to(store.root.resolve())
    except ValueError:
        return None
    parts = PurePosixPath(inside.as_posix()).parts
    if not parts or any(part.startswith(".") for part in parts[:-1]):
        return None  # .index/, .state/ and other hidden folders hold no memories
    if not is_memory_filename(parts[-1]) or (len(parts) == 1 and parts[0] in _ROOT_FILES):
        return None
    return "/".join(parts)


def check_staged(repo: Path, store: Store) -> list[StagedProblem]:
    """Every problem in the staged memory files of `store`, in path order."""
    problems: list[StagedProblem] = []
    for repo_path in sorted(staged_paths(repo)):
        relpath = memory_relpath(repo_path, repo, store)
        if relpath is None:
            continue
        if is_private_path(store.root, relpath):
            problems.append(
                StagedProblem(
                    repo_path,
                    1,
                    "private memory staged; private/ stays "
                    "out of git (unstage it with `git restore --staged`)",
                )
            )
            continue
        problems.extend(
            check_memory_bytes(repo_path, relpath, staged_content(repo, repo_path), store)
        )
    return problems


def check_memory_bytes(
    shown_path: str, relpath: str, raw: bytes, store: Store
) -> list[StagedProblem]:
    """Parse errors (including conflict markers), then unredacted secrets, of one file."""
    try:
        memory = parse_memory(shown_path, raw, default_id(relpath), default_type(relpath))
    except InvalidMemoryFile as exc:
        return [StagedProblem(shown_path, exc.line, exc.problem)]
    if memory.scope == "private":
        return [
            StagedProblem(
                shown_path,
                2,
                "private memory staged (scope: private); move it under private/, which stays "
                "out of git, and unstage it with `git restore --staged`",
            )
        ]
    lenient = [StagedProblem(shown_path, n, p, warning=True) for n, p in memory.warnings]
    return lenient + [
        StagedProblem(
            shown_path,
            line,
            f"unredacted {kind}; remove it or replace it with "
            f"[REDACTED_{kind.upper()}] (memctl add redacts on its own)",
        )
        for line, kind in find_secrets(raw.decode("utf-8", errors="replace"), store)
    ]


def find_secrets(text: str, store: Store) -> list[tuple[int, str]]:
    """(line, kind) of what memctl's own write path would have redacted, one per line and kind."""
    settings = store.settings.redaction
    if not settings.enabled:
        return []
    from memctl.core.redaction.redact import (
        redact,  # Why here: the regex tables load only when needed
    )

    whole = redact(text, disabled=settings.disabled, extra_patterns=settings.patterns)
    if not whole.total:
        return []
    found: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        for kind in redact(
            line, disabled=settings.disabled, extra_patterns=settings.patterns
        ).counts:
            found.append((number, kind))
    if not found:  # a value spanning lines (a private key block): point at where it starts
        first = _first_changed_line(text, whole.text)
        found = [(first, kind) for kind in whole.counts]
    return found


def _first_changed_line(original: str, redacted: str) -> int:
    for number, (before, after) in enumerate(
        zip(original.splitlines(), redacted.splitlines(), strict=False), start=1
    ):
        if before != after:
            return number
    return 1
