"""The `memctl` command: a thin face over memctl.service.

Each command lives in a module of memctl.cli.commands. `memctl recall ...` imports and builds
only the recall module: building every command costs a fresh process ~0.2 s (typer builds each
parameter's validator, and the modules import the write path, redaction and hooks).
`--help`, a bad command name and `app` itself (used by tests) get every command.

Before any of that, the hot commands (`recall`, `add`, `context`, `index`, `hook claude-code`,
`list`, `stats`) are offered to the user's engine (memctl.server.client): when it answers, typer, rich
and the index are never imported. This module imports nothing heavy at the top for that reason.
"""

from __future__ import annotations

import sys

from memctl.cli import help_cache

TYPE_CHECKING = False  # Why not typing.TYPE_CHECKING: `import typing` costs the client ~5 ms
if TYPE_CHECKING:
    import typer

HELP = (
    "Local-first memory for AI agents. Memories are Markdown files under .memory/; "
    "the search index beside them is a cache.\n\n"
    "Start with: memctl init, memctl add TEXT, memctl recall QUERY."
)

# Module of memctl.cli.commands -> the command names it registers, in the order --help lists them.
COMMANDS = {
    "init": ["init"],
    "add": ["add"],
    "recall": ["recall"],
    "anchors": ["stale"],
    "browse": ["list", "show", "edit"],
    "index": ["index"],
    "forget": ["forget"],
    "review": ["review", "approve"],
    "session": ["session"],
    "task": ["task"],
    "compact": ["compact"],
    "context": ["context"],
    # coding-agent integration
    "hooks": ["hooks"],
    "hook": ["hook"],
    "watch": ["watch"],
    "mcp": ["mcp"],
    "exchange": ["export", "import"],
    # forgetting as a feature (forget itself is above)
    "decay": ["decay", "restore"],
    "stats": ["stats"],
    # conversations -> durable memories
    "extract": ["extract"],
    # the resident server
    "serve": ["serve", "server"],
}
MODULE_OF = {name: module for module, names in COMMANDS.items() for name in names}
GLOBAL_OPTIONS_WITH_VALUE = ("--store", "-s")


def build_app(modules: list[str] | None = None) -> typer.Typer:
    """The typer app with the commands of these modules (all by default)."""
    import importlib

    import typer

    from memctl.cli import help_labels, plain_params
    from memctl.cli.state import main_options

    plain_params.install()
    help_labels.install()

    app = typer.Typer(
        name="memctl",
        help=HELP,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    for module in COMMANDS if modules is None else modules:
        importlib.import_module(f"memctl.cli.commands.{module}").register(app)
    app.callback()(main_options)
    return app


def command_name(args: list[str]) -> str | None:
    """The command word of a command line: the first argument that is not a global option."""
    position = 0
    while position < len(args):
        arg = args[position]
        if arg in GLOBAL_OPTIONS_WITH_VALUE:
            position += 2
        elif arg.startswith("-"):
            position += 1
        else:
            return arg
    return None


# Commands on the hot path of agent hooks. Once their output is out, the process ends at once:
# the interpreter's teardown (lance's and onnxruntime's native runtimes, thousands of module
# objects) costs a fresh `memctl recall` 0.2-0.3 s and does nothing a finished read needs.
QUICK_EXIT_COMMANDS = frozenset({"recall", "context", "hook", "add"})


# Commands the resident server may answer (memctl.server.client decides the details).
SERVED_COMMANDS = frozenset({"recall", "add", "context", "index", "hook", "list", "stats"})


def main() -> None:
    """The `memctl` command. Ctrl-C (SIGINT) ends any command with one line and exit 130, not
    a traceback (unless MEMCTL_DEBUG is set)."""
    try:
        _main()
    except KeyboardInterrupt:
        import os

        if os.environ.get("MEMCTL_DEBUG"):
            raise
        sys.stderr.write("\nInterrupted.\n")
        sys.exit(130)


def _main() -> None:
    _refuse_undecodable_arguments(sys.argv[1:])
    if sys.argv[1:] == ["--version"]:  # Why first: nothing else to load for it
        from memctl.cli.version import version_line

        sys.stdout.write(version_line() + "\n")
        _quick_exit(0)
    name = command_name(sys.argv[1:])
    if help_cache.is_help_request(sys.argv[1:], MODULE_OF):
        _print_help(name)
    if name == "server":  # Why: `server status` answers without typer and rich (~0.3 s)
        from memctl.server.control import fast_status

        answered = fast_status(sys.argv[1:])
        if answered is not None:
            _quick_exit(answered)
    if name in SERVED_COMMANDS:
        from memctl.server.client import run_via_server

        served = run_via_server(sys.argv[1:])
        if served is not None:
            _quick_exit(served)
    try:
        app = build_app([MODULE_OF[name]] if name in MODULE_OF else None)
        if name not in QUICK_EXIT_COMMANDS:
            app()
            return
        try:
            app()
            code = 0
        except SystemExit as exc:
            code = exit_code(exc)
    except (SystemExit, KeyboardInterrupt):
        raise
    except Exception as error:  # noqa: BLE001 - what no command's handler caught (see cli.output)
        from memctl.cli.output import unexpected_error

        sys.exit(unexpected_error(error, "--json" in sys.argv[1:]))
    _quick_exit(code)


def _refuse_undecodable_arguments(args: list[str]) -> None:
    """An argument that is not UTF-8 (a Latin-1 byte) reaches Python as a lone surrogate and
    would crash whatever encodes it later: refuse it here, naming it, for every command."""
    from memctl.core.files.input_limits import invalid_utf8

    for number, arg in enumerate(args, start=1):
        bad = invalid_utf8(arg)
        if bad:
            shown = arg.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            sys.stderr.write(
                f"Error: argument {number} ({shown[:60]}) is not valid UTF-8 ({bad}); "
                "convert it to UTF-8 first.\n"
            )
            sys.exit(1)


def _print_help(name: str | None) -> None:
    """`--help` from the cache (see cli.help_cache), else as typer prints it, then cached."""
    import os

    entry = help_cache.HelpEntry(sys.argv[1:], os.environ)
    text = entry.read()
    if text is None:
        import io

        app = build_app([MODULE_OF[name]] if name in MODULE_OF else None)
        real, captured = sys.stdout, io.StringIO()
        sys.stdout = captured
        try:
            app()
            code = 0
        except SystemExit as exc:
            code = exit_code(exc)
        finally:
            sys.stdout = real
        text = captured.getvalue()
        if code != 0:
            sys.stdout.write(text)
            _quick_exit(code)
        entry.write(text)
    sys.stdout.write(text)
    _quick_exit(0)


def exit_code(exc: SystemExit) -> int:
    if exc.code is None or isinstance(exc.code, int):
        return exc.code or 0
    print(exc.code, file=sys.stderr)  # what the interpreter does with sys.exit("message")
    return 1


def _quick_exit(code: int) -> None:
    """Run the atexit handlers and flush the streams, then leave without the interpreter's teardown."""
    import atexit
    import os

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: the reader is gone, nothing left to say
            code = code or 1
    os._exit(code)


def __getattr__(attribute: str):
    if attribute == "app":  # Why: built on first use, so `memctl recall` does not build it
        globals()["app"] = build_app()
        return globals()["app"]
    raise AttributeError(attribute)
