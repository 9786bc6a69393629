"""`memctl --help` from a cache: the text typer printed last time, for the same code and terminal.

Building the full typer app to print the top-level help costs a fresh process ~0.3 s (every
command module, typer's parameter machinery). The text only changes when the code does, so the
first `--help` stores what it printed under the user's cache folder, and later ones print that
text without importing typer. The entry is used only when everything the text depends on is
the same: memctl's code (server.identity, which also covers the Python installation), typer's
installed files, the program name click derives from argv[0], the command line and the width
click wraps to. Anything else (another terminal width, an upgrade, an edited source file) is a
miss: typer prints the help as always and the entry is replaced.

The environment is passed in by the caller (memctl.cli.app) as a mapping, as for the server's
location: XDG_CACHE_HOME (else ~/.cache) names the folder, COLUMNS/LINES the width.
"""

from __future__ import annotations

import os
import sys
import zlib

from memctl.server.identity import code_identity

TYPE_CHECKING = False  # Why not typing.TYPE_CHECKING: `import typing` alone costs ~5 ms
if TYPE_CHECKING:
    from collections.abc import Mapping

CACHE_SUBDIR = "memctl"
# Groups whose subcommands have their own help (`memctl hook claude-code --help`); for any other
# command only `memctl COMMAND --help` is cached. A group missing here is only a cache miss.
GROUPS = frozenset({"hook", "hooks", "session", "task", "server"})
HELP_FLAG = "--help"


def is_help_request(argv: list[str], commands: Mapping[str, str]) -> bool:
    """`memctl --help`, `memctl COMMAND --help` or `memctl GROUP SUBCOMMAND --help`: nothing
    but command words before a final --help."""
    if not argv or argv[-1] != HELP_FLAG:
        return False
    words = argv[:-1]
    if not words:
        return True
    if words[0] not in commands:
        return False
    if len(words) == 1:
        return True
    return len(words) == 2 and words[0] in GROUPS and words[1].replace("-", "_").isidentifier()


def help_width(env: Mapping[str, str]) -> int:
    """The width click's HelpFormatter wraps to: shutil.get_terminal_size()'s columns (COLUMNS,
    else the terminal of sys.__stdout__, else 80), at most 80, minus 2, at least 50."""
    try:
        columns = int(env.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    try:
        lines = int(env.get("LINES", ""))
    except ValueError:
        lines = 0
    if columns <= 0 or lines <= 0:
        try:
            size = os.get_terminal_size(sys.__stdout__.fileno())  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            size = os.terminal_size((80, 24))
        if columns <= 0:
            columns = size.columns or 80
    return max(min(columns, 80) - 2, 50)


def typer_stamp() -> str:
    """Typer's installed __init__.py (path, mtime, size), found without importing typer: an
    upgrade of typer may print help differently."""
    for folder in sys.path:
        path = os.path.join(folder or os.curdir, "typer", "__init__.py")
        try:
            info = os.stat(path)
        except OSError:
            continue
        return f"{os.path.abspath(path)}:{info.st_mtime_ns}:{info.st_size}"
    return "typer:none"


class HelpEntry:
    """Where the help text for one command line lives, and what it must have been made from."""

    def __init__(self, argv: list[str], env: Mapping[str, str], identity: str | None = None):
        main = sys.modules.get("__main__")
        situation = "\0".join(
            [
                sys.argv[0] if sys.argv else "",
                str(getattr(main, "__package__", None)),
                str(help_width(env)),
                *argv,
            ]
        )
        code = identity if identity is not None else code_identity()
        # Why the whole key in the file: the name is a 32-bit hash, the first line is checked.
        self.key = f"{code}\0{typer_stamp()}\0{situation}".replace("\n", " ")
        name = f"help-{zlib.crc32(situation.encode('utf-8', 'surrogateescape')):08x}.txt"
        self.path = os.path.join(cache_dir(env), name)

    def read(self) -> str | None:
        """The cached text, or None when there is none for exactly this key."""
        try:
            with open(self.path, encoding="utf-8", newline="") as handle:
                key, _, text = handle.read().partition("\n")
        except (OSError, ValueError):
            return None
        return text if key == self.key else None

    def write(self, text: str) -> None:
        """Store `text` for this key (atomically); a cache folder we cannot write is no error."""
        temporary = f"{self.path}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
            with open(temporary, "w", encoding="utf-8", newline="") as handle:
                handle.write(f"{self.key}\n{text}")
            os.replace(temporary, self.path)
        except (OSError, ValueError):
            try:
                os.unlink(temporary)
            except OSError:
                pass


def cache_dir(env: Mapping[str, str]) -> str:
    """$XDG_CACHE_HOME/memctl, else ~/.cache/memctl."""
    base = env.get("XDG_CACHE_HOME", "")
    if not base or not os.path.isabs(base):
        base = os.path.join(env.get("HOME") or os.path.expanduser("~"), ".cache")
    return os.path.join(base, CACHE_SUBDIR)
