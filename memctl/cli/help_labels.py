"""Help text in the words a shell user expects: `--limit INTEGER`, `Usage: memctl recall QUERY`.

typer 0.29 labels values with Python annotations (`--limit <int>`, `--tag <list[str]>`,
`QUERY <str>`) and wraps a required argument in braces in the usage line (`{QUERY}`), which
reads like a placeholder left unfilled. `install()` relabels them: TEXT, INTEGER, NUMBER, PATH
(a repeatable option says so in its help), no type after an argument's name, `QUERY` /
`[QUERY]` in the usage line. A typer without these methods is left alone.
"""

from __future__ import annotations

import re
from typing import Any

_WORDS = {"str": "TEXT", "int": "INTEGER", "float": "NUMBER", "Path": "PATH", "datetime": "TIME"}
_LIST = re.compile(r"list\[(.*)\]")
_installed = False


def plain_label(label: str | None) -> str | None:
    """`<int>` -> INTEGER, `<list[str]>` -> TEXT, `<a|b>` -> a|b."""
    if not label:
        return label
    inner = label.removeprefix("<").removesuffix(">")
    listed = _LIST.fullmatch(inner)
    if listed:
        inner = listed.group(1)
    return " ".join(_WORDS.get(word, word) for word in inner.split(" "))


def install() -> None:
    global _installed
    if _installed:
        return
    _installed = True
    try:
        from typer.core import TyperArgument, TyperOption
    except ImportError:
        return
    option_type = getattr(TyperOption, "display_type", None)
    if option_type is not None:

        def display_type(self: Any, ctx: Any) -> Any:
            return plain_label(option_type(self, ctx))

        TyperOption.display_type = display_type  # type: ignore[method-assign]
    if hasattr(TyperArgument, "display_type_rich"):
        TyperArgument.display_type_rich = lambda self, ctx: None  # type: ignore[method-assign]
    if hasattr(TyperArgument, "_usage_display_name"):

        def usage_name(self: Any) -> str:
            name = self.display_name_raw if self.required else f"[{self.display_name_raw}]"
            return name + ("..." if self.nargs != 1 else "")

        TyperArgument._usage_display_name = usage_name  # type: ignore[method-assign]
