"""Run one agent hook so that it can never break the agent.

Whatever happens inside (bad input, a missing store, a crash, a slow model), the hook's caller
gets a string and exit code 0: the handler's output when it finished in time, "" otherwise. What
went wrong goes to a log file in the store's state area (`.memory/.state/hooks.log`).
"""

from __future__ import annotations

import subprocess
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from memctl.agents.claude_code import canonical_event, normalize_payload
from memctl.core.language.text import clip

LOG_MAX_BYTES = 512 * 1024
CLIP_MARKER = "\n[... clipped by memctl]"

Handler = Callable[[Any], "str | None"]


def clip_text(text: str, max_chars: int) -> str:
    """At most `max_chars` characters, cut at a line end where possible, marked when cut."""
    return clip(text, max_chars, marker=CLIP_MARKER, keep_lines=True)


def log_hook_error(
    log_path: Path | None, event: str, session_id: str, message: str, details: str = ""
) -> None:
    """Append one entry to the hook log, keeping one older file; never raises."""
    if log_path is None:
        return
    try:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        if log_path.exists() and log_path.stat().st_size > LOG_MAX_BYTES:
            log_path.replace(log_path.with_name(log_path.name + ".1"))
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        entry = f"{stamp} {event or '?'} session={session_id or '-'}: {message}\n"
        if details:
            entry += "".join(f"    {line}\n" for line in details.rstrip().splitlines())
        with open(log_path, "a", encoding="utf-8") as handle:
            handle.write(entry)
    except Exception:  # noqa: BLE001 - the log is best effort; the hook must still exit cleanly
        pass


def _run_with_budget(handler: Handler, payload: Any, budget_s: float) -> tuple[str, Any]:
    """('ok', output) | ('error', formatted traceback) | ('timeout', None)."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["ok"] = handler(payload)
        except BaseException:  # noqa: BLE001 - SystemExit/KeyboardInterrupt in a handler count too
            box["error"] = traceback.format_exc()

    # A daemon thread: if it overruns, the process can still print "" and exit; the abandoned
    # work dies with the process (store writes are atomic, so nothing is left half-written).
    worker = threading.Thread(target=work, name="memctl-hook", daemon=True)
    worker.start()
    worker.join(max(budget_s, 0.0))
    if worker.is_alive():
        return "timeout", None
    if "error" in box:
        return "error", box["error"]
    return "ok", box.get("ok")


def run_hook(
    event: str,
    stdin_text: str,
    handlers: Mapping[str, Handler],
    *,
    time_budget_s: float,
    log_path: Path | None,
    max_chars: int = 8000,
    render: Callable[[str, str], str] | None = None,
) -> str:
    """The text to print for one hook call; "" on any problem, which is logged. Never raises.

    `handlers` maps event names (any spelling `canonical_event` accepts) to callables taking a
    HookPayload and returning text or None. The handler's text is clipped to `max_chars`, then
    passed through `render(event, text)` (e.g. `render_additional_context`) when given.
    """
    session_id = ""
    try:
        payload = normalize_payload(stdin_text, event)
        session_id = payload.session_id
        event = payload.event
        table = {canonical_event(name): handler for name, handler in handlers.items()}
        handler = table.get(event)
        if handler is None:
            return ""
        outcome, value = _run_with_budget(handler, payload, time_budget_s)
        if outcome == "timeout":
            log_hook_error(
                log_path,
                event,
                session_id,
                f"gave up after {time_budget_s:g}s time budget; printed nothing",
            )
            return ""
        if outcome == "error":
            log_hook_error(log_path, event, session_id, "handler failed; printed nothing", value)
            return ""
        if value is None:
            return ""
        text = clip_text(str(value), max_chars)
        return render(event, text) if render else text
    except Exception:  # noqa: BLE001 - bad input or a broken renderer must not reach the agent
        log_hook_error(
            log_path, event, session_id, "hook failed; printed nothing", traceback.format_exc()
        )
        return ""


def spawn_detached(argv: list[str], cwd: Path, log_path: Path | None) -> None:
    """Start `argv` in its own session so it outlives the hook (and the agent's kill of it).

    Its stdout and stderr go to `log_path`, so a crash in the background is not lost.
    """
    output: int | IO[bytes] = subprocess.DEVNULL
    handle = None
    if log_path is not None:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(log_path, "ab")  # noqa: SIM115 - handed to the child, closed below
        output = handle
    try:
        subprocess.Popen(
            argv,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
            start_new_session=True,
            close_fds=True,
        )
    finally:
        if handle is not None:
            handle.close()
