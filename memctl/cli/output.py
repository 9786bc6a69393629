"""Rendering and the one error handler: data to stdout, progress and warnings to stderr."""

from __future__ import annotations

import functools
import json
import re
import sys
from collections.abc import Callable
from typing import Any

import typer
from rich.console import Console
from rich.segment import Segment
from rich.text import Text

from memctl.core.errors import MemctlError
from memctl.core.trust.terminal import printable


class SafeConsole(Console):
    """A rich Console for text that came from files: markup is off unless a call asks for it
    (with every user value escaped), and each segment it writes loses escape sequences and
    control characters (see core.trust.terminal), whatever path the text took to get here."""

    def render_str(self, text: str, **kwargs):
        # Why here too: rich drops BEL and CR from a Text as it builds it, which would leave
        # an OSC sequence without its end for _render_buffer to find.
        return super().render_str(printable(text), **kwargs)

    def _render_buffer(self, buffer):
        return super()._render_buffer(
            segment if segment.control else Segment(printable(segment.text), segment.style)
            for segment in buffer
        )


stdout = SafeConsole(highlight=False, soft_wrap=True, markup=False)
stderr = SafeConsole(stderr=True, highlight=False, soft_wrap=True, markup=False)


def fit_consoles(stdout_size: tuple[int, int] | None, stderr_size: tuple[int, int] | None) -> None:
    """Build both consoles anew for the present sys.stdout/sys.stderr, at these (width, height);
    None detects them as usual. The resident server does this around each client's command, so
    tables, colours and wrapping follow the client's terminal (see memctl.cli.resident)."""
    for console, size, is_stderr in ((stdout, stdout_size, False), (stderr, stderr_size, True)):
        width, height = size if size else (None, None)
        Console.__init__(
            console,
            stderr=is_stderr,
            highlight=False,
            soft_wrap=True,
            markup=False,
            width=width,
            height=height,
        )


_C1 = re.compile(r"[\x7f-\x9f]")


def print_json(data: Any) -> None:
    """JSON on stdout. json.dumps escapes C0 controls (ESC too); the C1 ones (an 8-bit CSI)
    are escaped here, so the same strings reach a reader and nothing reaches the terminal."""
    text = json.dumps(data, ensure_ascii=False, indent=2, sort_keys=False, default=str)
    sys.stdout.write(_C1.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n")


def write_text(text: str) -> None:
    """Plain text from memories (context, an export to stdout) without escape sequences."""
    sys.stdout.write(printable(text))


def warn_problems(problems: list[dict]) -> None:
    """Each problem once, as `path:line: what is wrong` (user text: never markup)."""
    for problem in problems:
        line = f":{problem['line']}" if problem.get("line") else ""
        said = printable(f"{problem['path']}{line}: {problem['problem']}")
        stderr.print(Text(said, style="yellow"))


def fail(error: MemctlError, as_json: bool) -> typer.Exit:
    if as_json:
        print_json({"error": {"kind": error.kind, "message": str(error)}})
    else:
        stderr.print(f"Error: {error}", markup=False)
    return typer.Exit(code=error.exit_code)


def handles_errors(command: Callable) -> Callable:
    """Translate library errors into one clear sentence (or JSON) and the right exit code;
    anything unexpected too (see unexpected_error), with the traceback only under MEMCTL_DEBUG=1."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        finally:
            _report_scan_problems()

    return _translating_errors(wrapper)


def _report_scan_problems() -> None:
    from memctl.store.files import drain_scan_problems

    warn_problems(drain_scan_problems())


def _translating_errors(command: Callable) -> Callable:
    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except MemctlError as error:
            raise fail(error, bool(kwargs.get("as_json"))) from None
        except (typer.Exit, typer.Abort, KeyboardInterrupt):
            raise
        except Exception as error:  # noqa: BLE001 - the one place that turns these into a sentence
            from memctl.store.disk_limits import as_storage_full

            full = as_storage_full(error)
            if full is not None:
                raise fail(full, bool(kwargs.get("as_json"))) from None
            raise typer.Exit(unexpected_error(error, bool(kwargs.get("as_json")))) from None

    return wrapper


def unexpected_error(error: BaseException, as_json: bool) -> int:
    """Report an error memctl did not expect in one sentence on stderr (or as JSON on stdout);
    the traceback goes to stderr only under MEMCTL_DEBUG=1. The exit code: 1."""
    from memctl.config import read_environment

    if read_environment().debug:
        import traceback

        traceback.print_exception(error, file=sys.stderr)
    detail = " ".join(str(error).split())[:300] or "no details"
    message = (
        f"memctl failed unexpectedly ({type(error).__name__}: {detail}); "
        "run again with MEMCTL_DEBUG=1 for the traceback"
    )
    if as_json:
        print_json({"error": {"kind": "unexpected", "message": message}})
    else:
        stderr.print(f"Error: {message}.", markup=False)
    return 1
