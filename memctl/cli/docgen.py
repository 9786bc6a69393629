"""docs/cli.md from each command's `--help`, so the reference cannot drift from the code.

Run `python -m memctl.cli.docgen docs/cli.md` after changing a command, a flag or a help text;
tests/test_docs.py fails while the file differs from what this prints. The help is rendered by
click itself at a fixed width with no colour, so the text is the same on every machine and terminal.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer

from memctl.cli.app import build_app

WIDTH = 80
REGENERATE = "python -m memctl.cli.docgen docs/cli.md"

HEADER = """# Command reference

Every `memctl` command and subcommand, with the help it prints (`memctl hook ...`, which
`memctl --help` does not list, is what installed hooks and the Claude Code plugin run). This
page is generated from the code: do not edit it by hand. After changing a command, regenerate
it with

```bash
REGENERATE
```

(`tests/test_docs.py` fails while it is out of date.)

Conventions that hold for every command:

- The global options shown under `memctl` come before the command name:
  `memctl --store PATH recall QUERY`. Without `--store` (or `MEMCTL_STORE`) the store is the
  nearest `.memory/` upward from the working directory.
- Read commands take `--json`. Data goes to stdout; progress and warnings to stderr.
- An error is one sentence on stderr (`{"error": {"kind": ..., "message": ...}}` with `--json`).
  Exit codes: 0 success, 1 a runtime error, 2 a usage error, 3 when `add` refuses low-value text
  (`--force` stores it anyway). `MEMCTL_DEBUG=1` adds the traceback of an unexpected error.
""".replace("REGENERATE", REGENERATE, 1)


# Why Any: typer ships its own copy of click (typer._click), whose classes are private.
def walk(command: Any, context: Any) -> Iterator[tuple[Any, Any]]:
    """This command and every subcommand below it, depth first, in the order --help lists them."""
    yield command, context
    if hasattr(command, "list_commands"):
        for name in command.list_commands(context):
            sub = command.get_command(context, name)
            if sub is None:  # Why hidden ones too: `memctl hook ...` is what hooks and plugins run
                continue
            yield from walk(sub, _context(sub, name, context))


def _context(command: Any, name: str, parent: Any) -> Any:
    return command.context_class(
        command, info_name=name, parent=parent, terminal_width=WIDTH, max_content_width=WIDTH
    )


def render() -> str:
    """The whole of docs/cli.md."""
    root = typer.main.get_command(build_app())
    sections = [HEADER]
    for command, context in walk(root, _context(root, "memctl", None)):
        title = context.command_path
        sections.append(f"## {title}\n\n```text\n{command.get_help(context).rstrip()}\n```\n")
    return "\n".join(sections)


def main(argv: list[str]) -> int:
    text = render()
    if not argv:
        sys.stdout.write(text)
        return 0
    Path(argv[0]).write_text(text, encoding="utf-8")
    print(f"Wrote {argv[0]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
