"""What a session's own tool calls teach, without an LLM: the project's commands and gotchas.

A Bash command the agent ran and that succeeded is how this project tests, builds, lints,
type-checks or formats; the next session should not have to find it again. Only development
commands count (a runner such as pnpm, cargo or pytest doing one of those jobs): `ls`, `git
status` and one-off scripts teach nothing durable. A command that failed and was followed by
a different command of the same kind that succeeded is a gotcha: the failing form, then the
one that works. Every memory is anchored to its command (`commands:`) so the action-time hook
shows it when the agent is about to run it. Pure: tool calls in, candidates out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from memctl.core.learning.conversation import Candidate, ToolCall

SOURCE = "system_generated"  # observed from the agent's tool calls, nobody's words
MAX_COMMANDS = 10  # per session: the few a next session needs, not a shell history
MAX_GOTCHAS = 3

# First words that run a project's tooling.
_RUNNERS = frozenset(
    "npm pnpm yarn bun npx bunx deno node uv uvx poetry pipenv python python3 pytest tox nox "
    "go cargo rustc make just mvn gradle ./gradlew gradlew dotnet flutter dart mix bundle rake "
    "rspec composer php phpunit swift xcodebuild cmake ctest ruff mypy pyright eslint tsc "
    "prettier biome black isort flake8 pylint golangci-lint mage nx turbo lerna vitest jest "
    "playwright cypress hatch pdm rye task sbt lein clj elixir zig mise doppler wrangler "
    "docker-compose".split()
)
# A runner that is also a general tool counts only with these subcommands.
_SUBCOMMAND_RUNNERS = {"gh": ("run",), "docker": ("compose",)}
# (kind, words that say it) in the order a command is classified.
_KINDS = (
    ("type-check", r"typecheck|type-check|tsc\b[^|]*--noEmit|mypy|pyright|check-types|types"),
    ("tests", r"tests?|spec|pytest|jest|vitest|mocha|rspec|phpunit|ctest|playwright|cypress"),
    ("lint", r"lint|eslint|ruff check|flake8|pylint|clippy|golangci|vet|biome check"),
    ("format", r"format|fmt|prettier|black|isort|ruff format"),
    ("build", r"build|compile|tsc|make$|bundle|package"),
    ("database migrations", r"migrat\w*|db:push|prisma"),
    ("code generation", r"codegen|generate|gen\b"),
    ("CI runs", r"run (?:list|view|watch)"),
    ("dev server", r"dev|serve|preview"),
)
_KIND_PATTERNS = tuple(
    (kind, re.compile(rf"(?:^|[\s:/-])(?:{words})(?:$|[\s:])", re.I)) for kind, words in _KINDS
)
# Flags that pick one case or only say how loud to be: the general command leaves them out.
_CASE_FLAGS = frozenset("-- -run --run -k -t --grep --testNamePattern".split())
_QUIET_FLAGS = re.compile(r"^-(?:v+|q+|x|s|count=\d+)$")
MAX_EXAMPLE_CHARS = 100
_PHRASES = {
    "tests": "Run the tests with",
    "type-check": "Type-check with",
    "lint": "Lint with",
    "format": "Format the code with",
    "build": "Build with",
    "database migrations": "Run the database migrations with",
    "code generation": "Generate code with",
    "CI runs": "Look at CI runs with",
    "dev server": "Run the app locally with",
}
_NOISE_TAIL = re.compile(
    r"\s*(?:2>&1|2>/dev/null|>\s*/dev/null|&|\|\s*(?:tail|head|grep|less|cat|tee|wc)\b.*|"
    r";\s*echo\b.*)$"
)
_LEADING_CD = re.compile(r"^\s*cd\s+\S+\s*&&\s*")
_ENV_PREFIX = re.compile(r"^(?:[A-Z_][A-Z0-9_]*=\S*\s+)+")
_FILE_ARG = re.compile(r"(?:^|\s)(?:\S+/)*\S+\.(?:[a-z]{1,5})(?=\s|$)|(?:^|\s)\S*/\S*(?=\s|$)")


@dataclass(frozen=True)
class Command:
    """A development command, as the next session should type it."""

    kind: str
    text: str  # what to run (specific arguments dropped)
    example: str  # one full form the agent ran, when it differs
    anchor: str  # the words the action-time hook matches


def command_candidates(calls: Sequence[ToolCall], home: str = "") -> list[Candidate]:
    """The project's commands and gotchas these tool calls show, strongest first."""
    return _commands(calls, home) + _gotchas(calls, home)


def development_command(command_line: str, home: str = "") -> Command | None:
    """The first development command in a Bash command line, or None (no project command)."""
    found = development_commands(command_line, home)
    return found[0] if found else None


def development_commands(command_line: str, home: str = "") -> list[Command]:
    """Every development command of a Bash command line (`mise run fmt && mise run lint`)."""
    found: list[Command] = []
    for part in _parts(command_line):
        line = _tidy(part, home)
        words = line.split()
        if not words:
            continue
        runner = words[0]
        wanted = _SUBCOMMAND_RUNNERS.get(runner)
        if runner not in _RUNNERS and not (wanted and words[1:2] and words[1] in wanted):
            continue
        kind = _kind(words)
        if kind is None:
            continue
        general = _up_to_the_job(_general(words).split(), kind)
        anchor = general.split(" <id>")[0]
        found.append(Command(kind, general, line if line != general else "", anchor))
    return found


def _parts(command_line: str) -> list[str]:
    if "\n" in command_line.strip() or "<<" in command_line:
        return []  # scripts and heredocs (commit messages, PR bodies) are not commands to keep
    return [p for p in re.split(r"&&|\|\||;", _LEADING_CD.sub("", command_line)) if p.strip()]


def _tidy(part: str, home: str) -> str:
    text = part.strip()
    for _ in range(3):
        text = _NOISE_TAIL.sub("", text).strip()
    text = _ENV_PREFIX.sub("", text)
    if home:
        text = text.replace(home.rstrip("/") + "/", "~/").replace(home.rstrip("/"), "~")
    return " ".join(text.split())


def _kind(words: list[str]) -> str | None:
    # Why only the first few words: `pytest tests/test_build.py` is tests, not a build.
    # Why without flag values: `--config dev` does not make a command a dev server (the
    # module after `python -m` is no flag value).
    head = " ".join(
        w
        for i, w in enumerate(words[:6])
        if i == 0 or w.startswith("-") or not words[i - 1].startswith("-") or words[i - 1] == "-m"
    )
    for kind, pattern in _KIND_PATTERNS:
        if pattern.search(head):
            return kind
    return None


def _up_to_the_job(words: list[str], kind: str) -> str:
    """The command up to the word that says its job, flags after it dropped: `uv run pytest -W
    default --tb=no` -> `uv run pytest`, `gh run list --branch x` -> `gh run list`; flags
    before it stay (`pnpm --filter api test`). Variants of one command become one memory."""
    pattern = dict(_KIND_PATTERNS)[kind]
    for end in range(1, len(words) + 1):
        if pattern.search(" ".join(words[:end])):
            rest = words[end:]
            # A sub-command right after a runner word (`gh run view`, `wrangler pages dev`) stays.
            while (
                rest
                and not rest[0].startswith("-")
                and rest[0] != "<id>"
                and kind
                in (
                    "CI runs",
                    "dev server",
                )
            ):
                if pattern.search(" ".join(words[: end + 1])) and end < 3:
                    end += 1
                    rest = words[end:]
                else:
                    break
            return " ".join(words[:end])
    return " ".join(words)


def _general(words: list[str]) -> str:
    """The command without what names one file or one case: `pnpm --filter api test --
    src/a.spec.ts` -> `pnpm --filter api test`; `pytest tests/test_x.py -q` -> `pytest`."""
    kept: list[str] = []
    for word in words:
        if kept and (word in _CASE_FLAGS or word.startswith(("-run=", "--run=", "-k="))):
            break
        flag_value = bool(kept) and kept[-1].startswith("-") and not kept[-1].startswith("--run")
        if kept and not word.startswith("@") and not flag_value and _FILE_ARG.fullmatch(" " + word):
            break  # a path names one file or folder (`@scope/name` is a package)
        kept.append("<id>" if re.fullmatch(r"\d{3,}", word) else word)  # a run or PR number
    while len(kept) > 1 and _QUIET_FLAGS.match(kept[-1]):
        kept.pop()
    return " ".join(w for w in kept if not _QUIET_FLAGS.match(w) or w is kept[0])


def _commands(calls: Sequence[ToolCall], home: str) -> list[Candidate]:
    """One memory for how a change is checked here (every check that passed: tests, lint,
    type-check, format, build, chained runs), and one per other family of commands (CI runs,
    the dev server, ...): the next session needs the family, not each variant on its own."""
    seen: dict[str, tuple[Command, list[int]]] = {}
    for call in calls:
        if call.name != "Bash" or not call.command or call.ok is not True:
            continue
        for command in development_commands(call.command, home):
            if command.text in seen:
                earlier, lines = seen[command.text]
                lines.append(call.line)
                if command.example and len(command.example) <= MAX_EXAMPLE_CHARS:
                    # Why the last: the form that worked at the end is usually the one to keep.
                    seen[command.text] = (replace(earlier, example=command.example), lines)
            else:
                seen[command.text] = (command, [call.line])
    ranked = sorted(seen.values(), key=lambda item: (-len(item[1]), item[1][0]))[:MAX_COMMANDS]
    checks = [entry for entry in ranked if entry[0].kind in _CHECK_KINDS]
    found = _checks(checks, _chains(calls, home))
    for kind in dict.fromkeys(command.kind for command, _ in ranked):
        if kind not in _CHECK_KINDS:
            family = [entry for entry in ranked if entry[0].kind == kind]
            found.append(_family(family, f"{_PHRASES[kind]} {_listed(family)}."))
    return found


_CHECK_KINDS = ("format", "lint", "type-check", "build", "tests")
MAX_EXAMPLES = 3


def _listed(family: Sequence[tuple[Command, list[int]]]) -> str:
    names = [f"`{command.text}`" for command, _ in family]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _family(
    family: Sequence[tuple[Command, list[int]]], headline: str, subject: str = ""
) -> Candidate:
    """One memory for commands that do one job: the headline, then the one-case forms."""
    examples = [
        command.example
        for command, _ in family
        if command.example and len(command.example) <= MAX_EXAMPLE_CHARS
    ][:MAX_EXAMPLES]
    text = headline
    if examples:
        text += "\n\nOne file or case: " + "; ".join(f"`{e}`" for e in examples) + "."
    lines = sorted(line for _, each in family for line in each)
    first = family[0][0]
    runs = sum(len(each) for _, each in family)
    return Candidate(
        text,
        "procedural",
        0.85 if runs > 1 else 0.75,
        SOURCE,
        subject or f"command:{first.kind}:{first.anchor}",
        first.example or first.text,
        origin="agent",
        line=lines[0],
        last_line=lines[-1],
        commands=tuple(dict.fromkeys(command.anchor for command, _ in family)),
    )


def _checks(
    checks: list[tuple[Command, list[int]]], chains: list[tuple[list[Command], list[int]]]
) -> list[Candidate]:
    """The checks that passed in the session as one memory: the chained runs first, then the
    most run command of each kind (format, lint, type-check, build, tests), then its other
    forms. A single command keeps its own phrase ("Run the tests with `X`.")."""
    chained = {command.text for commands, _ in chains for command in commands}
    rest = [entry for entry in checks if entry[0].text not in chained]
    if not chains and len(rest) == 1:
        command = rest[0][0]
        return [_family(rest, f"{_PHRASES[command.kind]} `{command.text}`.")]
    if not chains and not rest:
        return []
    # Why not a kind a chain runs: `npx eslint` next to `fmt && lint` is another form of it.
    first: dict[str, tuple[Command, list[int]]] = {}
    done = {command.kind for commands, _ in chains for command in commands}
    for entry in rest:
        if entry[0].kind not in done:
            first.setdefault(entry[0].kind, entry)
    headline = [f"`{' && '.join(c.text for c in commands)}`" for commands, _ in chains]
    headline += [f"`{first[kind][0].text}`" for kind in _CHECK_KINDS if kind in first]
    text = (
        "Check a change with "
        + (headline[0] if len(headline) == 1 else ", ".join(headline[:-1]) + " and " + headline[-1])
        + "."
    )
    others = [entry for entry in rest if entry is not first.get(entry[0].kind)]
    family = (
        [(c, lines) for commands, lines in chains for c in commands]
        + [first[kind] for kind in _CHECK_KINDS if kind in first]
        + others
    )
    candidate = _family(family, text, "command:checks")
    if others:
        also = ", ".join(f"`{command.text}`" for command, _ in others)
        head, sep, tail = candidate.text.partition("\n\n")
        candidate = replace(
            candidate, text=f"{head}\n\nOther forms that worked: {also}.{sep}{tail}"
        )
    return [candidate]


def _chains(calls: Sequence[ToolCall], home: str) -> list[tuple[list[Command], list[int]]]:
    """Command lines that ran several checks in a row (`fmt && lint && test`) and passed: the
    sequence this project checks a change with (at most two)."""
    found: dict[str, tuple[list[Command], list[int]]] = {}
    for call in calls:
        if call.name != "Bash" or call.ok is not True or "&&" not in call.command:
            continue
        commands = development_commands(call.command, home)
        if len(commands) < 2:
            continue
        chain = " && ".join(c.text for c in commands)
        if chain in found:
            found[chain][1].append(call.line)
        else:
            found[chain] = (commands, [call.line])
    return list(found.values())[:2]


def _gotchas(calls: Sequence[ToolCall], home: str) -> list[Candidate]:
    """A development command that failed, then another form of the same kind that worked."""
    found: list[Candidate] = []
    failed: dict[str, tuple[ToolCall, Command]] = {}
    for call in calls:
        if call.name != "Bash" or not call.command or call.ok is None:
            continue
        command = development_command(call.command, home)
        if command is None:
            continue
        if call.ok is False:
            failed.setdefault(command.kind, (call, command))
            continue
        earlier = failed.pop(command.kind, None)
        if earlier is None or _same_runner(earlier[1], command) is False:
            continue
        bad_call, bad = earlier
        if bad.text == command.text:
            continue  # the same command passing later is the code being fixed, not a gotcha
        # Why not the error text: it is the tool's words, and a memory must carry only
        # words whose origin it records (the agent's, here).
        text = f"`{bad.text}` failed here; `{command.text}` worked instead."
        found.append(
            Candidate(
                text,
                "procedural",
                0.7,
                SOURCE,
                f"gotcha:{command.kind}:{bad.anchor}",
                bad_call.command,
                origin="agent",
                line=bad_call.line,
                last_line=call.result_line or call.line,
                commands=tuple(dict.fromkeys((command.anchor, bad.anchor))),
            )
        )
        if len(found) >= MAX_GOTCHAS:
            break
    return found


def _same_runner(a: Command, b: Command) -> bool:
    return a.text.split()[:1] == b.text.split()[:1] or a.kind == b.kind


# Test files by their naming convention: a rule about tests applies to every file of that kind.
_TEST_FILE_KINDS = (
    (re.compile(r"^test_[^/]+\.py$"), "**/test_*.py"),
    (re.compile(r"^[^/]+(_test|_spec)\.(\w+)$"), "**/*{0}.{1}"),
    (re.compile(r"^[^/]+\.(test|spec)\.(\w+)$"), "**/*.{0}.{1}"),
    (re.compile(r"^[^/]+(Tests?)\.(java|kt|cs|swift|scala)$"), "**/*{0}.{1}"),
)
_CHANGING_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
_ABOUT_TESTS = re.compile(r"\b(?:tests?|specs?|test cases?|testing)\b", re.IGNORECASE)


def test_file_glob(path: str) -> str | None:
    """The glob of test files a path is one of (`src/a_test.go` -> `**/*_test.go`); None for a
    file that is not a test by its name."""
    name = re.split(r"[/\\]", path.strip())[-1]
    for pattern, glob in _TEST_FILE_KINDS:
        match = pattern.match(name)
        if match:
            return glob.format(*match.groups())
    return None


def anchor_test_rules(
    candidates: Sequence[Candidate], calls: Sequence[ToolCall], user_lines: Sequence[int]
) -> list[Candidate]:
    """A user's rule about tests ("the tests should be table driven"), anchored to the kind of
    test file the agent changed next (before the user spoke again), so the action-time hook
    shows it the next time the agent is about to change a test, in any session."""
    found = []
    for candidate in candidates:
        if (
            candidate.origin == "user"
            and not candidate.paths
            and _ABOUT_TESTS.search(candidate.text)
        ):
            end = min((line for line in user_lines if line > candidate.last_line), default=None)
            globs = [
                test_file_glob(call.path)
                for call in calls
                if call.name in _CHANGING_TOOLS
                and call.path
                and call.line > candidate.last_line
                and (end is None or call.line < end)
            ]
            kinds = tuple(dict.fromkeys(glob for glob in globs if glob))
            if kinds:
                candidate = replace(candidate, paths=kinds[:2])
        found.append(candidate)
    return found
