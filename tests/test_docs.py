"""Documentation that cannot drift from the code: command help, README's command table, the
config template."""

from __future__ import annotations

import re
from pathlib import Path

import typer
import yaml

from memctl.cli.app import app
from memctl.config import DEFAULTS, deep_merge

REPO = Path(__file__).resolve().parents[1]


def command_tree(command=None, prefix: tuple[str, ...] = ()):
    """(path, click command) for every registered command, group and subcommand."""
    command = command or typer.main.get_command(app)
    for name, sub in getattr(command, "commands", {}).items():
        yield prefix + (name,), sub
        yield from command_tree(sub, prefix + (name,))


def readme_section(title: str) -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    assert match, f"README.md has no '## {title}' section"
    return match.group(1)


def test_every_command_and_group_has_help_text():
    tree = list(command_tree())
    assert {"add", "recall", "session", "hooks"} <= {path[0] for path, _ in tree}
    missing = [" ".join(path) for path, command in tree if not (command.help or "").strip()]
    assert missing == []


def test_every_top_level_command_is_in_the_readme_commands_table():
    section = readme_section("Commands")
    names = [path[0] for path, _ in command_tree() if len(path) == 1]
    missing = [name for name in names if not re.search(rf"`memctl {re.escape(name)}\b", section)]
    assert missing == []


def test_the_config_template_documents_every_section_and_changes_no_default():
    template = yaml.safe_load((REPO / "templates" / "config.yaml").read_text(encoding="utf-8"))
    assert set(template) == set(DEFAULTS)
    assert deep_merge(DEFAULTS, template) == DEFAULTS


def test_ci_runs_the_readme_test_command_exactly():
    blocks = re.findall(r"```bash\n(.*?)\n```", readme_section("Quickstart"), re.DOTALL)
    test_command = next(block for block in blocks if "pytest" in block)
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert test_command in ci
