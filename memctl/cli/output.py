"""Rendering and the one error handler: data to stdout, progress and warnings to stderr."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any

import typer
from rich.console import Console

from memctl.core.errors import MemctlError

stdout = Console(highlight=False, soft_wrap=True)
stderr = Console(stderr=True, highlight=False, soft_wrap=True)


def fit_consoles(stdout_size: tuple[int, int] | None, stderr_size: tuple[int, int] | None) -> None:
    """Build both consoles anew for the present sys.stdout/sys.stderr, at these (width, height);
    None detects them as usual. The resident server does this around each client's command, so
    tables, colours and wrapping follow the client's terminal (see memctl.cli.resident)."""
    for console, size, is_stderr in ((stdout, stdout_size, False), (stderr, stderr_size, True)):
        width, height = size if size else (None, None)
        Console.__init__(
            console, stderr=is_stderr, highlight=False, soft_wrap=True, width=width, height=height
        )


def print_json(data: Any) -> None:
    sys.stdout.write(
        json.dumps(data, ensure_ascii=False, indent=2, sort_keys=False, default=str) + "\n"
    )


def warn_problems(problems: list[dict]) -> None:
    for problem in problems:
        stderr.print(
            f"[yellow]{problem['path']}:{problem['line']}: {problem['problem']}[/]", markup=True
        )


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
        except MemctlError as error:
            raise fail(error, bool(kwargs.get("as_json"))) from None
        except (typer.Exit, typer.Abort, KeyboardInterrupt):
            raise
        except Exception as error:  # noqa: BLE001 - the one place that turns these into a sentence
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
