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
from collections.abc import Callable
from pathlib import Path

from memctl.agents.claude_code import HookPayload
from memctl.agents.hook_runner import log_hook_error
from memctl.agents.ingest import hook_transcript, ingest_transcript
from memctl.config import Environment, Store, open_store, open_user_store
from memctl.core.errors import MemctlError, StoreNotFound, UsageError
from memctl.core.language.tokens import estimate_tokens
from memctl.core.recall.hook_blocks import BlockItem, fit_block, is_trivial_prompt
from memctl.service.after_reply import later
from memctl.service.privacy import shares_private
from memctl.service.provenance import gates_for, injectable
from memctl.service.retrieval.context import ContextShape, context_block
from memctl.service.retrieval.prompt_selection import rare_term_hits
from memctl.store.files import atomic_write
from memctl.store.forget_journal import journal_path
from memctl.store.hook_state import load_session_state, remember_shown, safe_name

LOG_NAME = "hooks.log"
PROMPT_HEADING = "## Related to this prompt"


def log_path(store: Store) -> Path:
    return store.state_dir / LOG_NAME


def find_hook_store(
    payload_cwd: str, explicit: str | None, env: Environment, process_cwd: Path
) -> Store | None:
    """The store for a hook call: --store/MEMCTL_STORE, else the nearest one above the payload's
    `cwd`, CLAUDE_PROJECT_DIR or the process's cwd. None when there is none: the hook does nothing."""
    try:
        if explicit or env.store:
            return open_store(explicit, env=env)
        for place in (payload_cwd, env.claude_project_dir or "", str(process_cwd)):
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


# --- SessionStart ---------------------------------------------------------------------------


def session_start_context(
    store: Store, payload: HookPayload, user_store: Store | None = None
) -> str:
    """The context block for a new (or resumed, cleared, compacted) session: the project's
    whole memory when it fits hooks.always_budget (as an agent file is loaded whole), else its
    `apply: always` rules and the context block."""
    from memctl.agents.action_events import always_block, one_fence, record, whole_store_block

    budget = store.settings.hooks.session_start_budget
    always_budget = min(budget, store.settings.hooks.always_budget)
    whole = whole_store_block(store, user_store, always_budget)
    if whole is not None:
        markdown, shown = whole
        markdown = one_fence(markdown)
    else:
        rules, rule_ids = always_block(store, user_store, always_budget)
        markdown, shown = context_block(
            store,
            budget - estimate_tokens(rules),
            payload.session_id,
            user_store=user_store,
            shape=ContextShape(store.settings.hooks.session_start_episodes, compact=True),
        )
        shown = rule_ids + tuple(i for i in shown if i not in rule_ids)
        markdown = one_fence(rules, markdown)
    # Why: after a clear or a compaction the agent lost what we showed, so start the list anew.
    remember_shown(store, payload.session_id, shown, reset=True)
    record(store, payload, shown, markdown)
    return markdown


# --- UserPromptSubmit -----------------------------------------------------------------------


def prompt_context(store: Store, payload: HookPayload, user_store: Store | None = None) -> str:
    """A few memories relevant to the prompt and not yet shown in this session; "" if none.

    A memory is injected when it clears the hook's relevance floor (hooks.prompt_min_relevance)
    and shares with the prompt a word that is rare in its store (hooks.prompt_min_rarity) or
    clearly answers it (hooks.prompt_sure_relevance), in
    the project store and the user store alike: a prompt nothing in the store is about gets
    nothing rather than the nearest noise (docs/prompt-hook-selection.md).
    """
    settings = store.settings.hooks
    if is_trivial_prompt(payload.prompt, settings.prompt_min_chars):
        return ""
    from memctl.service.retrieval.use_case import PROMPT, RecallRequest, recall

    k = settings.prompt_k
    stores = [("project", store)] + ([("user", user_store)] if user_store is not None else [])
    request = RecallRequest(
        store=store,
        query=payload.prompt.strip()[:2000],
        k=k * 3,
        include_private=shares_private(store),
        stores=stores,
        purpose=PROMPT,
    )
    hits = recall(request).hits
    from memctl.agents.action_events import not_automatic, record

    shown = set(load_session_state(store, payload.session_id).get("shown") or ())
    shown |= not_automatic(store, user_store)
    named = files_named(store, stores, request.query, frozenset(shown))
    shown |= {item.id for item in named}
    hits = rare_term_hits(
        task_hits((hit for hit in hits if hit.id not in shown), request.query, settings),
        request.query,
        dict(stores),
        settings.prompt_min_rarity,
        settings.prompt_sure_relevance,
    )
    gates = gates_for({"project": store, "user": user_store})
    fresh = injectable(hits, gates)
    items = named + [
        BlockItem(h.id, h.title, h.type, h.body, origin, h.date or "") for h, origin in fresh[:k]
    ]
    block = fit_block(PROMPT_HEADING, items, settings.prompt_budget)
    if block.shown:
        # Why after the reply: the agent waits for the block, not for this bookkeeping (the
        # resident server writes it before it takes the next request; a one-shot process now).
        later(lambda: _note_shown(store, payload, block.shown))
        later(lambda: record(store, payload, block.shown, block.markdown))
    return block.markdown


def files_named(
    store: Store, stores: list[tuple[str, Store]], prompt: str, shown: frozenset[str]
) -> list[BlockItem]:
    """The memories for the files a prompt names (`fix ListIssues in pkg/github/issues.go`):
    those anchored to them and those whose text names them or their folders, as the action-time
    hook would give them for those files; at most hooks.prompt_named_k, none already shown."""
    from memctl.core.recall.named_paths import paths_in
    from memctl.service.retrieval.action import ActionRequest, action_recall

    settings = store.settings.hooks
    files = paths_in(prompt) if settings.prompt_named_k > 0 else ()
    if not files:
        return []
    result = action_recall(
        stores,
        ActionRequest(
            paths=files,
            exclude=shown,
            budget=settings.prompt_budget,
            named=settings.prompt_named_k,
            named_share=settings.action_named_share,
            matches=False,
            include_private=shares_private(store),
        ),
    )
    return [BlockItem(i.id, i.title, i.type, i.body, i.origin) for i in result.items][
        : settings.prompt_named_k
    ]


def task_hits(hits, prompt: str, settings) -> list:
    """Recall's hits for a prompt, episodes last: a task prompt needs the project's rules and
    facts, not what happened once; an episode stays only when it clearly answers the prompt
    (hooks.prompt_sure_relevance) or the prompt asks about the past ("last time", "yesterday",
    "上次")."""
    from memctl.core.recall.hook_blocks import asks_about_past

    hits = list(hits)
    if asks_about_past(prompt):
        return hits
    durable = [hit for hit in hits if hit.type != "episodic"]
    sure = settings.prompt_sure_relevance
    return durable + [
        hit for hit in hits if hit.type == "episodic" and (hit.relevance or 0.0) >= sure
    ]


def _note_shown(store: Store, payload: HookPayload, ids: tuple[str, ...]) -> None:
    """Add `ids` to the session's shown list; a failure is logged, never the prompt's problem
    (at worst a memory is shown again)."""
    try:
        remember_shown(store, payload.session_id, ids, reset=False)
    except OSError as error:
        log_hook_error(
            log_path(store), payload.event, payload.session_id, f"shown list not saved: {error}"
        )


# --- PreCompact and SessionEnd --------------------------------------------------------------


def capture_transcript(
    store: Store,
    payload: HookPayload,
    *,
    final: bool,
    spawn: Callable[[list[str], Path], None] | None = None,
    user_store: Store | None = None,
) -> None:
    """Hand the transcript to `ingest_transcript`, in a detached process unless configured off.

    `spawn(argv, cwd)` starts the detached process; None runs the work here and now.
    """
    if not payload.transcript_path:
        raise MemctlError(f"{payload.event} payload has no transcript_path; nothing to capture")
    hook_transcript(store, payload.transcript_path)
    job = {
        "session_id": payload.session_id,
        "transcript_path": payload.transcript_path,
        "final": final,
        "event": payload.event,
        "queued": time.time(),
        "user_store": str(user_store.root) if user_store is not None else None,
    }
    jobs = jobs_dir(store)
    name = f"{time.strftime('%Y%m%dT%H%M%S')}-{safe_name(payload.session_id)[:60]}.json"
    job_path = jobs / name
    # Why the job file even in the foreground: work that outruns the hook's budget stays
    # queued (a later hook finishes it, `memctl hooks status` shows it) instead of vanishing.
    atomic_write(job_path, json.dumps(job).encode("utf-8"))
    background = store.settings.hooks.background
    if not background or spawn is None:
        run_ingest_job(store, job_path)
        return
    spawn(_ingest_argv(store, job_path), store.root.parent)


def _ingest_argv(store: Store, job_path: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "memctl",
        "--store",
        str(store.root),
        "hook",
        "ingest",
        str(job_path),
    ]


# A queued job older than this was abandoned (its process killed, or the hook out of time).
ABANDONED_JOB_SECONDS = 300.0


def pending_ingests(store: Store) -> list[dict]:
    """The transcript ingests queued and not finished, oldest first: `state` "queued" (a job
    file waiting or running) or "failed" (kept as *.failed, its error in hooks.log)."""
    try:
        paths = sorted(jobs_dir(store).glob("*.json")) + sorted(jobs_dir(store).glob("*.failed"))
    except OSError:
        return []
    found = []
    for path in paths:
        failed = path.suffix == ".failed"
        if path.is_symlink() or not path.is_file() or (not failed and not is_job_file(store, path)):
            continue
        try:
            job = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            job = {}
        job = job if isinstance(job, dict) else {}
        found.append(
            {
                "job": str(path),
                "session_id": str(job.get("session_id") or ""),
                "event": str(job.get("event") or ""),
                "queued": float(job.get("queued") or path.stat().st_mtime),
                "state": "failed" if failed else "queued",
            }
        )
    return sorted(found, key=lambda entry: entry["queued"])


def resume_abandoned_ingests(
    store: Store, spawn: Callable[[list[str], Path], None] | None, now: float | None = None
) -> int:
    """Start again, detached, each queued ingest abandoned for ABANDONED_JOB_SECONDS; how many.
    Ingest is idempotent (it takes only the turns not yet taken), so a job that was merely
    slow and runs twice adds nothing twice."""
    if spawn is None:
        return 0
    now = time.time() if now is None else now
    started = 0
    for entry in pending_ingests(store):
        if entry["state"] != "queued" or now - entry["queued"] < ABANDONED_JOB_SECONDS:
            continue
        job_path = Path(entry["job"])
        try:
            job = json.loads(job_path.read_text(encoding="utf-8"))
            job["queued"] = now  # Why: not started again by every hook while it runs
            atomic_write(job_path, json.dumps(job).encode("utf-8"))
        except (OSError, ValueError):
            continue
        spawn(_ingest_argv(store, job_path), store.root.parent)
        started += 1
    return started


def jobs_dir(store: Store) -> Path:
    return store.state_dir / "hooks" / "jobs"


def is_job_file(store: Store, job_path: Path) -> bool:
    """A job a hook queued for this store: a regular `*.json` file directly in its jobs folder.
    Anything else is not memctl's to rename or delete."""
    try:
        inside = job_path.resolve(strict=True).parent == jobs_dir(store).resolve(strict=True)
    except (OSError, RuntimeError):
        return False
    return (
        inside and job_path.suffix == ".json" and job_path.is_file() and not job_path.is_symlink()
    )


def run_ingest_job(store: Store, job_path: Path) -> None:
    """The detached half of `capture_transcript`: read the job file, ingest, delete it."""
    if not is_job_file(store, job_path):
        raise UsageError(
            f"{job_path}: not a job file of this store (those are in {jobs_dir(store)}); "
            "left as it is"
        )
    job = json.loads(job_path.read_text(encoding="utf-8"))
    # Why: the job names the user store the hook saw (none after --store-only), so the detached
    # process writes where the hook would have.
    user_store = open_user_store(besides=store) if job.get("user_store") else None
    ingest_transcript(
        store,
        str(job.get("session_id") or ""),
        hook_transcript(store, str(job["transcript_path"])),
        final=bool(job.get("final")),
        user_store=user_store,
    )
    job_path.unlink(missing_ok=True)


def finish_interrupted_forgets(*stores: Store | None) -> None:
    """Finish a forget killed midway before anything is read, so that what it was removing
    (a memory, or a summary derived from it) never reaches the agent's prompt."""
    for store in stores:
        if store is not None and journal_path(store.state_dir).is_file():
            from memctl.service.memories.forgetting import resume_forget

            resume_forget(store)


def claude_code_handlers(
    store: Store,
    spawn: Callable[[list[str], Path], None] | None,
    user_store: Store | None = None,
) -> dict[str, Callable[[HookPayload], str | None]]:
    """Event name -> handler, as `hook_runner.run_hook` takes them. With `user_store`, the
    context hooks read it too and captured transcripts route what is about the person there."""

    def pre_compact(payload: HookPayload) -> None:
        capture_transcript(store, payload, final=False, spawn=spawn, user_store=user_store)

    def session_end(payload: HookPayload) -> None:
        capture_transcript(store, payload, final=True, spawn=spawn, user_store=user_store)

    def session_start(payload: HookPayload) -> str:
        finish_interrupted_forgets(store, user_store)
        later(lambda: resume_abandoned_ingests(store, spawn))
        return session_start_context(store, payload, user_store)

    def prompt(payload: HookPayload) -> str:
        finish_interrupted_forgets(store, user_store)
        return prompt_context(store, payload, user_store)

    def pre_tool_use(payload: HookPayload) -> str:
        from memctl.agents.action_events import action_context

        return action_context(store, payload, user_store)

    def stop(payload: HookPayload) -> str | None:
        from memctl.agents.action_events import note_reply

        note_reply(store, payload)
        return ask_agent_to_record(store, payload)

    return {
        "SessionStart": session_start,
        "UserPromptSubmit": prompt,
        "PreCompact": pre_compact,
        "SessionEnd": session_end,
        "PreToolUse": pre_tool_use,
        "Stop": stop,
    }


# --- Stop: the session's own agent as the extractor ------------------------------------------

RECORD_ASK = """memctl (this project's memory) asks once, before you stop: record what this \
session taught that a later session will need, so the user never has to say it twice. Use the \
memctl MCP tool `add` (one memory per call; if you do not have it, run `memctl add --type TYPE \
--agent claude-code "TEXT"`). Keep only:
- corrections the user made and standing requests ("never ...", "use X, not Y"): type preference \
or procedural, in the user's terms;
- commands that worked for this project (tests, build, lint, type-check): type procedural, the \
exact command in backticks;
- gotchas: what failed, then what worked, and where (file or command);
- decisions: the option chosen and why: type semantic.
Each memory is one standalone sentence: name what "it" refers to, write dates instead of \
"yesterday", no narration of what you did, nothing only about this one task, no secrets, \
nothing already in memory. If nothing qualifies, record nothing. Then stop."""


def ask_agent_to_record(store: Store, payload: HookPayload) -> str | None:
    """Claude Code's Stop response asking the agent to record what is worth keeping, or None.

    Only with no LLM configured (with one, ingest extracts through it), never while the agent
    is already continuing because of a Stop hook (`stop_hook_active`), at most once per session,
    and only when the session did something worth keeping (core.worth_keeping)."""
    if payload.raw.get("stop_hook_active") or not payload.transcript_path:
        return None
    if not store.settings.hooks.ask_agent_to_record:
        return None
    from memctl.integrations.llm import llm_settings

    if llm_settings(store) is not None:
        return None
    from memctl.store.hook_state import save_session_state

    state = load_session_state(store, payload.session_id)
    if state.get("asked_to_record"):
        return None
    try:
        transcript = hook_transcript(store, payload.transcript_path)
    except MemctlError:
        return None  # not a transcript memctl may read: nothing to judge it by
    if not session_worth_keeping(transcript, store.settings.limits.max_input_bytes):
        return None
    state["asked_to_record"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    save_session_state(store, payload.session_id, state)
    return json.dumps({"decision": "block", "reason": RECORD_ASK}, ensure_ascii=False)


def session_worth_keeping(transcript: Path, max_bytes: int) -> bool:
    """The session said or did something a later one needs: a user turn that states a rule
    or correction, a development command that succeeded, or a file the agent changed."""
    from memctl.agents.ingest import read_transcript, read_transcript_tools
    from memctl.core.learning.extract_commands import development_command
    from memctl.core.learning.extract_rules import extract_candidates

    try:
        turns = read_transcript(transcript, max_bytes)
    except (OSError, MemctlError):
        return False
    if extract_candidates([t for t in turns if t.role == "user"]):
        return True
    _, calls = read_transcript_tools(transcript, max_bytes)
    changing = {"Edit", "Write", "MultiEdit", "NotebookEdit"}
    return any(
        call.ok
        and (call.name in changing or (call.name == "Bash" and development_command(call.command)))
        for call in calls
    )


def render_hook_output(event: str, text: str, *, plain: bool = False) -> str:
    """What a hook prints: Stop's response as memctl wrote it (a JSON decision), the context
    events' text as additional context (agents.claude_code.render_additional_context)."""
    from memctl.agents.claude_code import canonical_event, render_additional_context

    if canonical_event(event) == "Stop":
        return text if text.strip().startswith("{") else ""
    return render_additional_context(event, text, plain=plain)


def run_claude_code_hook(
    event: str,
    stdin_text: str,
    *,
    explicit_store: str | None,
    env: Environment,
    cwd: Path,
    plain: bool = False,
    background: bool = True,
    store_only: bool = False,
    store: Store | None = None,
) -> str:
    """Everything `memctl hook claude-code EVENT` prints; "" on any problem. Never raises.

    `store_only`: leave the user store out, for reading and for writing. `store`: the store
    already found and open (the engine's), instead of finding it again."""
    from memctl.agents.claude_code import normalize_payload, spec_for
    from memctl.agents.hook_runner import log_hook_error, run_hook, spawn_detached

    given, store = store, None
    try:
        spec = spec_for(event)
        try:
            payload_cwd = normalize_payload(stdin_text, spec.event).cwd
        except MemctlError:
            payload_cwd = ""  # run_hook reports the bad input, once a store gives it a log
        store = given or find_hook_store(payload_cwd, explicit_store, env, cwd)
        if store is None:
            return ""
        log = log_path(store)
        spawn = (lambda argv, where: spawn_detached(argv, where, log)) if background else None
        budget = store.settings.hooks.budgets.get(spec.slug, spec.budget_s)
        user_store = None if store_only else open_user_store(env, besides=store)
        return run_hook(
            spec.event,
            stdin_text,
            claude_code_handlers(store, spawn, user_store),
            time_budget_s=env.hook_budget or min(budget, spec.timeout - 1),
            log_path=log,
            render=lambda name, text: render_hook_output(name, text, plain=plain),
        )
    except Exception as exc:  # noqa: BLE001 - an unknown event or a broken config: still exit 0
        if store is not None:
            log_hook_error(log_path(store), event, "", f"hook not run: {exc}")
        return ""
