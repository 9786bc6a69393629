"""Anchors proposed from a memory's words: the paths, symbols and commands it names that exist.

A proposal is only what the text names *and* the working tree holds: a file path or glob that
matches a file, an identifier that occurs in the code, a backticked command whose program is a
known tool or a script in the tree. Nothing is guessed from meaning; the user sees the proposal
and can edit it. Pure: the tree comes in as a file list and a symbol test.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass

from memctl.core.codebase.anchors import DEFAULT_APPLY, Anchors, is_glob, matching_files

MAX_PER_KIND = 6
BROAD_FILES, BROAD_SHARE = 20, 0.05

_BACKTICKED = re.compile(r"`([^`\n]{1,200})`")
# A path-like token: has a slash, a glob character, or ends in a file extension.
_TOKEN = re.compile(r"[\w.*?\[\]/@+-]+")
_EXTENSION = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,9}$")
_CAMEL = re.compile(r"^_*[A-Za-z][a-z0-9_]*[A-Z]\w*$|^_*[A-Z][a-z0-9]+[A-Z]\w*$")
_SNAKE = re.compile(r"^_*[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+$")
# Files without an extension worth anchoring to when named in plain prose.
_PLAIN_FILES = frozenset(
    "Makefile Dockerfile Justfile justfile Gemfile Rakefile Procfile Jenkinsfile".split()
)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Programs whose invocations are worth anchoring to (the agent's Bash tool runs them).
KNOWN_TOOLS = frozenset(
    "npm pnpm yarn npx bun deno node tsc eslint prettier vitest jest turbo nx make just cargo "
    "rustup go dotnet msbuild nuget pytest python python3 uv uvx pip poetry tox nox hatch ruff "
    "mypy black isort pre-commit git gh docker docker-compose kubectl helm terraform bundle rake "
    "rails rspec gem ruby gradle gradlew mvn composer php phpunit mix elixir swift xcodebuild "
    "flutter dart cmake ctest bazel changeset".split()
)
# Subcommands after which the next word names the script (`npm run build`, `uv run pytest`).
_RUNNERS = frozenset({"run", "exec", "x", "dlx", "test"})
_EVERY_TASK = re.compile(
    r"\bbefore (?:you )?(?:opening|open|creating|submitting|sending|pushing|push|committing|"
    r"commit|merging|marking)\b[^.;]{0,30}?\b(?:pull request|PR|commit|push|work complete|"
    r"change|merge)s?\b|\bbefore committing\b|\b(?:every|each|all) (?:PRs?|pull requests?|"
    r"commits?)\b",
    re.IGNORECASE,
)
# A rule scoped to some changes: "when you change X", "if you edit X", "after touching X".
_CONDITION = re.compile(
    r"\b(?:when|whenever|if|after|once)\s+(?:you\s+|we\s+)?(?:chang|edit|modif|touch|updat|"
    r"add|renam|delet|remov|regenerat|bump)\w*\b",
    re.IGNORECASE,
)
# Scripts a command line starts with: shell and PowerShell files, or extensionless programs.
_SCRIPT_SUFFIXES = (".sh", ".bash", ".ps1", ".cmd", ".bat")
# Words that look like identifiers in prose but are not worth an anchor.
_PROSE = frozenset({"e_g", "i_e", "TODO", "README", "JavaScript", "TypeScript", "GitHub"})


@dataclass(frozen=True)
class Proposal:
    anchors: Anchors

    def describe(self) -> str:
        """One line for the user: what was proposed, by kind."""
        parts = [
            f"{kind}: {', '.join(values)}"
            for kind, values in (
                ("paths", self.anchors.paths),
                ("symbols", self.anchors.symbols),
                ("commands", self.anchors.commands),
            )
            if values
        ]
        return "; ".join(parts)


def propose_anchors(
    text: str, files: Collection[str], symbol_present: Callable[[str], bool]
) -> Proposal:
    """The anchors `text` names that exist in a tree of `files` (paths relative to its root)."""
    commands = _commands(text, files)
    command_words = {word for command in commands for word in command.split()}
    programs = {command.split()[0].removeprefix("./") for command in commands}
    # Why: a script the text runs is a command anchor; the same words are not also a path.
    paths = [path for path in _paths(text, files) if path not in programs]
    path_words = {part for path in paths for part in re.split(r"[/.]", path)}
    symbols = [
        name
        for name in _identifiers(text)
        if name not in command_words and name not in path_words and symbol_present(name)
    ]
    return Proposal(
        Anchors(
            paths=tuple(paths[:MAX_PER_KIND]),
            symbols=tuple(symbols[:MAX_PER_KIND]),
            commands=tuple(commands[:MAX_PER_KIND]),
            apply="always" if applies_to_every_task(text) and not paths else DEFAULT_APPLY,
        )
    )


def applies_to_every_task(text: str) -> bool:
    """A rule for every change rather than for some files: "before opening a pull request,
    run ...", "before committing", "every PR must ...". A rule that says when it applies ("when
    you change the schema, ... before committing") is about those changes, not every one."""
    return bool(_EVERY_TASK.search(text)) and not _CONDITION.search(text)


def _unique(values: list[str]) -> list[str]:
    return list(dict.fromkeys(values))


def _paths(text: str, files: Collection[str]) -> list[str]:
    basenames: dict[str, int] = {}
    for path in files:
        basenames[path.rsplit("/", 1)[-1]] = basenames.get(path.rsplit("/", 1)[-1], 0) + 1
    quoted = {span.strip().removeprefix("./") for span in _BACKTICKED.findall(text)}
    found = []
    for raw in _TOKEN.findall(text):
        token = raw.rstrip(".,:;'\")").lstrip("'\"(").removeprefix("./")
        if len(token) < 3 or token.startswith(("http", "//")) or "://" in token:
            continue
        named = token in quoted or token.startswith(".") or token in _PLAIN_FILES
        if named and (token in files or ("/" not in token and token in basenames)):
            found.append(token)  # a file named exactly: `.gitattributes`, `Makefile`
            continue
        anchor = _path_anchor(token, files, basenames)
        if anchor:
            found.append(anchor)
    return _unique(found)


def _path_anchor(token: str, files: Collection[str], basenames: dict[str, int]) -> str | None:
    has_slash = "/" in token.strip("/")
    if is_glob(token):
        matched = matching_files(token, files) if has_slash or _EXTENSION.search(token) else []
        return token if matched and not _too_broad(len(matched), len(files)) else None
    if token.startswith(".") and _EXTENSION.fullmatch(token) and token.count(".") == 1:
        glob = f"**/*{token}"  # `.resx`: every file of that kind
        matched = matching_files(glob, files)
        return glob if matched and not _too_broad(len(matched), len(files)) else None
    if has_slash:
        # Why not folders: a memory naming `pkg/github/` is rarely about every file in it
        # (measured on the project-task benchmark's dev half: 4 of 50 such injections helped).
        path = token.strip("/")
        return path if path in files else None
    if not _EXTENSION.search(token):
        return None
    if token in basenames:
        return token
    # `Designer.cs`: the last part of a file name (Resources.Designer.cs)
    if token[0].isupper() and token.count(".") == 1:
        suffix_glob = f"**/*.{token}"
        if matching_files(suffix_glob, files):
            return suffix_glob
    return None


def _too_broad(matched: int, total: int) -> bool:
    """A glob matching a large share of the tree (`*_test.go`, `.ts`) says little about any
    one action; it would fire on most of them."""
    return matched > BROAD_FILES and matched > BROAD_SHARE * total


def _identifiers(text: str) -> list[str]:
    """Words shaped like code symbols (an inner capital or an underscore, 4+ characters)."""
    names = [
        word
        for word in _WORD.findall(text)
        if len(word) >= 4 and (_CAMEL.match(word) or _SNAKE.match(word))
    ]
    return [n for n in _unique(names) if n not in _PROSE]


def _runs_script(words: list[str], program: str, scripts: set[str]) -> bool:
    """A backticked span runs a script of the tree: a shell file or an extensionless program,
    or any file given arguments or called as `./x`. A bare path (`src/billing/invoice.py`)
    names a file: it is a path anchor, not a command."""
    if program not in scripts:
        return False
    name = program.rsplit("/", 1)[-1]
    return (
        program.endswith(_SCRIPT_SUFFIXES)
        or "." not in name
        or len(words) > 1
        or words[0].startswith("./")
    )


def _commands(text: str, files: Collection[str]) -> list[str]:
    scripts = {path for path in files if "/" in path or path.endswith((".sh", ".py", ".ps1"))}
    found = []
    for span in _BACKTICKED.findall(text):
        words = span.strip().split()
        if not words or words[0].startswith("-"):
            continue
        program = words[0].removeprefix("./")
        if program not in KNOWN_TOOLS and not _runs_script(words, program, scripts):
            continue
        keep = 2
        if len(words) > 1 and words[1] in _RUNNERS:
            keep = 3
        kept = [w for w in words[:keep] if not w.startswith(("-", "<", "$", "{"))]
        found.append(" ".join([words[0], *kept[1:]]) if kept else words[0])
    return _unique(found)
