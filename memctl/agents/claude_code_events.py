"""What memctl does when a coding agent's hook fires.

SessionStart gets the project's context block, UserPromptSubmit a few memories relevant to the
prompt (never one already shown in this session), PreCompact and SessionEnd hand the session's
transcript to `service.ingest` (in a detached process by default, since SessionEnd hooks get
little time). Per-session bookkeeping lives in `<state>/hooks/sessions/<session>.json`.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from memctl.agents.claude_code import HookPayload
from memctl.agents.ingest import ingest_transcript
from memctl.config import Store, open_store
from memctl.core.errors import MemctlError, StoreNotFound
from memctl.core.hook_blocks import BlockItem, fit_block, is_trivial_prompt
from memctl.service.retrieval.context import context_block
from memctl.store.files import atomic_write
from memctl.store.hook_state import load_session_state, safe_name, save_session_state

LOG_NAME = "hooks.log"
PROMPT_HEADING = "## memctl: memories related to this prompt"


def hook_settings(store: Store) -> dict[str, Any]:
    return store.section("hooks")


def log_path(store: Store) -> Path:
    return store.state_dir / LOG_NAME


def find_hook_store(
    payload_cwd: str, explicit: str | None, env: Mapping[str, str], process_cwd: Path
) -> Store | None:
    """The store for a hook call: --store/MEMCTL_STORE, else the nearest one above the payload's
    `cwd`, CLAUDE_PROJECT_DIR or the process's cwd. None when there is none: the hook does nothing."""
    env = dict(env)
    try:
        if explicit or env.get("MEMCTL_STORE"):
            return open_store(explicit, env=env)
        for place in (payload_cwd, env.get("CLAUDE_PROJECT_DIR", ""), str(process_cwd)):
            if not place:
                continue
            try:
                return open_store(None, cwd=Path(place), env=env)
            except StoreNotFound:
                continue
    except MemctlError:
        return None
    return None


# --- per-session bookkeeping ----------------------------------------------------------------


def _remember_shown(store: Store, session_id: str, ids: tuple[str, ...], reset: bool) -> None:
    state = load_session_state(store, session_id)
    shown = [] if reset else list(state.get("shown") or [])
    shown.extend(i for i in ids if i not in shown)
    state["shown"] = shown
    save_session_state(store, session_id, state)


# --- SessionStart ---------------------------------------------------------------------------


def session_start_context(store: Store, payload: HookPayload) -> str:
    """The context block for a new (or resumed, cleared, compacted) session."""
    budget = int(hook_settings(store).get("session_start_budget", 1500))
    markdown, shown = context_block(store, budget, payload.session_id)
    # Why: after a clear or a compaction the agent lost what we showed, so start the list anew.
    _remember_shown(store, payload.session_id, shown, reset=True)
    return markdown


# --- UserPromptSubmit -----------------------------------------------------------------------


def prompt_context(store: Store, payload: HookPayload) -> str:
    """A few memories relevant to the prompt and not yet shown in this session; "" if none.

    Recall's relevance floor (hooks.prompt_min_relevance, else recall.min_relevance) decides:
    a prompt nothing in the store is about gets nothing rather than the nearest noise.
    """
    settings = hook_settings(store)
    if is_trivial_prompt(payload.prompt, int(settings.get("prompt_min_chars", 12))):
        return ""
    from memctl.service.retrieval.recall import recall

    k = int(settings.get("prompt_k", 3))
    query = payload.prompt.strip()[:2000]
    floor = settings.get("prompt_min_relevance")
    hits = recall(store, query, k=k * 3, min_relevance=None if floor is None else float(floor))
    shown = set(load_session_state(store, payload.session_id).get("shown") or ())
    fresh = [hit for hit in hits if hit.id not in shown]
    items = [BlockItem(h.id, h.title, h.type, h.body) for h in fresh[:k]]
    block = fit_block(PROMPT_HEADING, items, int(settings.get("prompt_budget", 400)))
    if block.shown:
        _remember_shown(store, payload.session_id, block.shown, reset=False)
    return block.markdown


# --- PreCompact and SessionEnd --------------------------------------------------------------


def capture_transcript(
    store: Store,
    payload: HookPayload,
    *,
    final: bool,
    spawn: Callable[[list[str], Path], None] | None = None,
) -> None:
    """Hand the transcript to `ingest_transcript`, in a detached process unless configured off.

    `spawn(argv, cwd)` starts the detached process; None runs the work here and now.
    """
    if not payload.transcript_path:
        raise MemctlError(f"{payload.event} payload has no transcript_path; nothing to capture")
    job = {
        "session_id": payload.session_id,
        "transcript_path": payload.transcript_path,
        "final": final,
        "event": payload.event,
        "queued": time.time(),
    }
    background = bool(hook_settings(store).get("background", True))
    if not background or spawn is None:
        ingest_transcript(store, job["session_id"], Path(job["transcript_path"]), final=final)
        return
    jobs = store.state_dir / "hooks" / "jobs"
    name = f"{time.strftime('%Y%m%dT%H%M%S')}-{safe_name(payload.session_id)[:60]}.json"
    job_path = jobs / name
    atomic_write(job_path, json.dumps(job).encode("utf-8"))
    spawn(
        [
            sys.executable,
            "-m",
            "memctl",
            "--store",
            str(store.root),
            "hook",
            "ingest",
            str(job_path),
        ],
        store.root.parent,
    )


def run_ingest_job(store: Store, job_path: Path) -> None:
    """The detached half of `capture_transcript`: read the job file, ingest, delete it."""
    job = json.loads(job_path.read_text(encoding="utf-8"))
    ingest_transcript(
        store,
        str(job.get("session_id") or ""),
        Path(job["transcript_path"]),
        final=bool(job.get("final")),
    )
    job_path.unlink(missing_ok=True)


def claude_code_handlers(
    store: Store, spawn: Callable[[list[str], Path], None] | None
) -> dict[str, Callable[[HookPayload], str | None]]:
    """Event name -> handler, as `hook_runner.run_hook` takes them."""

    def pre_compact(payload: HookPayload) -> None:
        capture_transcript(store, payload, final=False, spawn=spawn)

    def session_end(payload: HookPayload) -> None:
        capture_transcript(store, payload, final=True, spawn=spawn)

    return {
        "SessionStart": lambda payload: session_start_context(store, payload),
        "UserPromptSubmit": lambda payload: prompt_context(store, payload),
        "PreCompact": pre_compact,
        "SessionEnd": session_end,
    }


def run_claude_code_hook(
    event: str,
    stdin_text: str,
    *,
    explicit_store: str | None,
    env: Mapping[str, str],
    cwd: Path,
    plain: bool = False,
    background: bool = True,
) -> str:
    """Everything `memctl hook claude-code EVENT` prints; "" on any problem. Never raises."""
    from memctl.agents.claude_code import (
        normalize_payload,
        render_additional_context,
        spec_for,
    )
    from memctl.agents.hook_runner import log_hook_error, run_hook, spawn_detached

    store = None
    try:
        spec = spec_for(event)
        try:
            payload_cwd = normalize_payload(stdin_text, spec.event).cwd
        except MemctlError:
            payload_cwd = ""  # run_hook reports the bad input, once a store gives it a log
        store = find_hook_store(payload_cwd, explicit_store, env, cwd)
        if store is None:
            return ""
        log = log_path(store)
        spawn = (lambda argv, where: spawn_detached(argv, where, log)) if background else None
        budget = float((hook_settings(store).get("budgets") or {}).get(spec.slug, spec.budget_s))
        return run_hook(
            spec.event,
            stdin_text,
            claude_code_handlers(store, spawn),
            time_budget_s=min(budget, spec.timeout - 1),
            log_path=log,
            render=lambda name, text: render_additional_context(name, text, plain=plain),
        )
    except Exception as exc:  # noqa: BLE001 - an unknown event or a broken config: still exit 0
        if store is not None:
            log_hook_error(log_path(store), event, "", f"hook not run: {exc}")
        return ""
