"""Documentation that cannot drift from the code: command help and docs/cli.md, the config
reference, the README's commands and links."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import typer
import yaml
from typer.testing import CliRunner

from memctl.cli import docgen
from memctl.cli.app import app
from memctl.config import DEFAULTS, deep_merge

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
PAGES = [
    REPO / "README.md",
    REPO / "CHANGELOG.md",
    REPO / "benchmarks" / "RESULTS.md",
    *sorted((REPO / "docs").glob("*.md")),
]


def command_tree(command=None, prefix: tuple[str, ...] = ()):
    """(path, click command) for every registered command, group and subcommand."""
    command = command or typer.main.get_command(app)
    for name, sub in getattr(command, "commands", {}).items():
        yield prefix + (name,), sub
        yield from command_tree(sub, prefix + (name,))


def readme_section(title: str) -> str:
    match = re.search(
        rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", README, re.MULTILINE | re.DOTALL
    )
    assert match, f"README.md has no '## {title}' section"
    return match.group(1)


def bash_blocks(text: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)\n```", text, re.DOTALL)


def test_every_command_and_group_has_help_text():
    tree = list(command_tree())
    assert {"add", "recall", "session", "hooks"} <= {path[0] for path, _ in tree}
    missing = [" ".join(path) for path, command in tree if not (command.help or "").strip()]
    assert missing == []


def test_docs_cli_md_is_what_the_help_says_now():
    current = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    assert current == docgen.render(), f"docs/cli.md is out of date: run `{docgen.REGENERATE}`"


def test_every_command_and_subcommand_has_a_section_in_docs_cli_md():
    text = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    sections = set(re.findall(r"^## (memctl.*)$", text, re.MULTILINE))
    names = [" ".join(("memctl", *path)) for path, _ in command_tree()]
    assert "memctl hook claude-code" in names and "memctl session add" in names
    assert [name for name in names if name not in sections] == []


def test_docgen_renders_the_same_text_at_any_terminal_width(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    wide = docgen.render()
    monkeypatch.setenv("COLUMNS", "40")
    assert docgen.render() == wide


def test_the_config_template_documents_every_section_and_changes_no_default():
    template = yaml.safe_load((REPO / "templates" / "config.yaml").read_text(encoding="utf-8"))
    assert set(template) == set(DEFAULTS)
    assert deep_merge(DEFAULTS, template) == DEFAULTS


def test_the_configuration_reference_names_every_key_under_its_section():
    text = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    sections = dict(re.findall(r"^### `(\w+)`\n(.*?)(?=^#{2,3} |\Z)", text, re.M | re.S))
    assert set(sections) == set(DEFAULTS)
    hidden = {("llm", "api_key"), ("llm", "mock_response")}  # never written in config.yaml
    missing = [
        f"{section}.{key}"
        for section, keys in DEFAULTS.items()
        for key in keys
        if (section, key) not in hidden and f"`{key}`" not in sections[section]
    ]
    assert missing == []


def test_ci_runs_the_readme_test_command_exactly():
    test_command = next(
        block for block in bash_blocks(readme_section("Quickstart")) if "pytest" in block
    )
    assert test_command == "pip install -e '.[test]' && pytest"
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert test_command in ci


def test_the_readme_first_command_asks_the_bundled_example_store():
    first = bash_blocks(readme_section("Quickstart"))[0]
    assert first == 'pip install -e . && memctl --store .memory.example recall "how do we deploy"'
    assert (REPO / ".memory.example" / "config.yaml").is_file()


def test_the_readme_is_short():
    assert len(README.splitlines()) <= 300


@pytest.mark.usefixtures("fake_embedder")
def test_the_readme_examples_in_your_own_project_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MEMCTL_STORE", raising=False)
    block = next(b for b in bash_blocks(readme_section("Quickstart")) if "memctl init" in b)
    runner, outputs = CliRunner(), {}
    for line in block.splitlines():
        args = shlex.split(line, comments=True)
        assert args[0] == "memctl"
        result = runner.invoke(app, args[1:])
        assert result.exit_code == 0, f"{line}\n{result.output}"
        outputs[" ".join(args[1:])] = result.output
    assert "TW-E4012" in outputs["recall TW-E4012"]  # found by its exact identifier


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_leads_to_a_file_and_heading_that_exist(page):
    text = page.read_text(encoding="utf-8")
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(target)
        elif anchor and linked.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", linked.read_text(encoding="utf-8"), re.M)
            if anchor not in {_anchor(h) for h in headings}:
                broken.append(target)
    assert broken == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_page_is_named_after_a_development_round(page):
    text = page.read_text(encoding="utf-8")
    rounds = re.findall(r"\b(?:sessions? \d+|issue \d+|round \d+|iteration \d+)\b", text, re.I)
    assert rounds == []


# Why: the PyPI package named `memctl` is another project (a different memory tool with its own
# `memctl` command), so "pip install memctl" installs something else, and the plugin would run it.
PYPI_NAME = re.compile(r"\bpipx? install (?:-\S+ )*['\"]?memctl\b")
USER_FACING = [
    *(page for page in PAGES if page.name != "CHANGELOG.md"),  # a release's record stays as it was
    *sorted(p for p in (REPO / "plugin").rglob("*") if p.is_file()),
    *sorted((REPO / "memctl" / "templates").rglob("*.yaml")),
    *sorted((REPO / "memctl").rglob("*.py")),
]


@pytest.mark.parametrize("path", USER_FACING, ids=lambda p: str(p.relative_to(REPO)))
def test_nothing_tells_a_user_to_install_memctl_by_its_pypi_name(path):
    assert PYPI_NAME.findall(path.read_text(encoding="utf-8")) == []


def test_every_command_on_the_first_help_page_shows_an_example():
    """`memctl --help` lists these; each one's own --help shows how it is typed."""
    top = typer.main.get_command(app).commands
    shown = {name: command for name, command in top.items() if not command.hidden}
    lacking = [name for name, command in shown.items() if "Example" not in (command.help or "")]
    assert lacking == []


def test_every_page_a_message_points_to_exists_with_its_section():
    """Errors and notes name a docs page (and a section): a newcomer must find them there."""
    code = "\n".join(p.read_text(encoding="utf-8") for p in sorted((REPO / "memctl").rglob("*.py")))
    assert not re.search(r"\bsee README\b|README\.md, section", code)  # the README is a summary
    named = re.findall(r"(docs/[\w-]+\.md)(?:, section \"([^\"]+)\")?", code)
    assert named
    for page, section in named:
        assert (REPO / page).is_file(), page
        if section:
            assert f"\n## {section}\n" in (REPO / page).read_text(encoding="utf-8"), (page, section)


def test_the_hook_count_the_docs_give_is_memctls():
    from memctl.agents.claude_code import HOOK_SPECS

    words = {4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight"}
    stated = set()
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        stated |= set(re.findall(r"\b(four|five|six|seven|eight) (?:memctl )?hooks\b", text))
        stated |= set(re.findall(r"\bthe same (four|five|six|seven|eight) memctl installs\b", text))
    assert stated <= {words[len(HOOK_SPECS)]}
