"""Claude Code hooks: merge memctl's hooks into settings.json, read hook input, write hook output.

The format follows the Claude Code hooks reference (see docs/claude-code-hooks.md): settings hold
`hooks -> EventName -> [{matcher?, hooks: [{type: "command", command, timeout}]}]`, every hook gets
one JSON object on stdin, and SessionStart / UserPromptSubmit hooks add context by printing
`{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}` and exiting 0.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memctl.core.errors import InvalidMemoryFile, MemctlError, UsageError
from memctl.store.files import atomic_write


@dataclass(frozen=True)
class HookSpec:
    """One Claude Code event memctl hooks into."""

    event: str  # Claude Code's name for the event
    slug: str  # the word after `memctl hook claude-code`
    timeout: int  # seconds Claude Code waits before cancelling the command
    budget_s: float  # memctl's own limit, safely inside `timeout`, after which it prints nothing
    matcher: str | None = None  # tool events: which tools' calls run the hook


ACTION_TOOLS = "Read|Edit|Write|MultiEdit|Bash"

# SessionEnd hooks share a 1.5 s default budget unless a hook sets `timeout` (raised up to 60 s),
# so every entry carries an explicit timeout.
HOOK_SPECS: tuple[HookSpec, ...] = (
    HookSpec("SessionStart", "session-start", timeout=15, budget_s=10.0),
    HookSpec("UserPromptSubmit", "user-prompt-submit", timeout=10, budget_s=6.0),
    HookSpec("PreCompact", "pre-compact", timeout=60, budget_s=50.0),
    HookSpec("SessionEnd", "session-end", timeout=30, budget_s=25.0),
    # Action time: Claude Code (2.1.x) adds a PreToolUse hook's hookSpecificOutput
    # .additionalContext before the tool runs. Stop only records which memories the reply used.
    HookSpec("PreToolUse", "pre-tool-use", timeout=10, budget_s=3.0, matcher=ACTION_TOOLS),
    HookSpec("Stop", "stop", timeout=10, budget_s=5.0),
)
CONTEXT_EVENTS = frozenset({"SessionStart", "UserPromptSubmit", "PreToolUse"})
# Events whose plain stdout Claude Code adds as context; the others need the JSON form.
PLAIN_CONTEXT_EVENTS = frozenset({"SessionStart", "UserPromptSubmit"})

_OURS = re.compile(r"memctl\S*\s+hook\s+claude-code(?:\s|$)")
_EVENT_KEY = re.compile(r"[^a-z]")


def canonical_event(name: str) -> str:
    """'session-start', 'session_start', 'SessionStart' -> 'SessionStart'; others pass through."""
    key = _EVENT_KEY.sub("", name.lower())
    for spec in HOOK_SPECS:
        if _EVENT_KEY.sub("", spec.event.lower()) == key:
            return spec.event
    return name


def spec_for(event: str) -> HookSpec:
    canonical = canonical_event(event)
    for spec in HOOK_SPECS:
        if spec.event == canonical:
            return spec
    names = ", ".join(spec.slug for spec in HOOK_SPECS)
    raise UsageError(f"Unknown Claude Code hook event '{event}'. Expected one of: {names}.")


# What committed settings run: $MEMCTL_BIN when set, else the memctl on PATH. Why not this
# machine's absolute path: the file is shared through git, and a teammate's clone has its own.
PORTABLE_PREFIX = '"${MEMCTL_BIN:-memctl}"'


def hook_command(spec: HookSpec, command_prefix: str = "memctl", store_only: bool = False) -> str:
    """The command Claude Code runs; `store_only` keeps the user store out of this project."""
    return f"{command_prefix} hook claude-code {spec.slug}" + (
        " --store-only" if store_only else ""
    )


def is_memctl_command(command: Any) -> bool:
    return isinstance(command, str) and bool(_OURS.search(command))


def settings_path_for(scope: str, project_root: Path, home: Path) -> Path:
    """Where Claude Code reads settings: user, project (committed) or local (git-ignored)."""
    paths = {
        "user": home / ".claude" / "settings.json",
        "project": project_root / ".claude" / "settings.json",
        "local": project_root / ".claude" / "settings.local.json",
    }
    if scope not in paths:
        raise UsageError(f"Unknown settings scope '{scope}'. Expected user, project or local.")
    return paths[scope]


# --- settings.json --------------------------------------------------------------------------


def _line_of_key(text: str, key: str) -> int:
    match = re.search(r'"' + re.escape(key) + r'"\s*:', text)
    return text.count("\n", 0, match.start()) + 1 if match else 1


def load_settings(path: Path) -> tuple[dict[str, Any], str]:
    """Parsed settings and their text; a missing or blank file is `{}`. Broken JSON is refused."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}, ""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InvalidMemoryFile(path, line, "not valid UTF-8; memctl leaves it untouched") from None
    if not text.strip():
        return {}, text
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidMemoryFile(
            path,
            exc.lineno,
            f"not valid JSON ({exc.msg} at column {exc.colno}); "
            "fix it first, memctl leaves it untouched",
        ) from None
    if not isinstance(data, dict):
        raise InvalidMemoryFile(path, 1, "settings must be a JSON object; memctl leaves it as is")
    hooks = data.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise InvalidMemoryFile(path, _line_of_key(text, "hooks"), '"hooks" must be an object')
    for event, groups in (hooks or {}).items():
        if not isinstance(groups, list):
            line = _line_of_key(text, event)
            raise InvalidMemoryFile(path, line, f'"hooks.{event}" must be a list')
    return data, text


def _write_settings(path: Path, data: dict[str, Any]) -> None:
    target = path.resolve() if path.is_symlink() else path  # keep a dotfile manager's symlink
    atomic_write(target, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))


def _our_entries(groups: list[Any]) -> list[tuple[dict, dict]]:
    """(group, hook) pairs for memctl's hooks in one event's list; other shapes are left alone."""
    found = []
    for group in groups:
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            for hook in group["hooks"]:
                if isinstance(hook, dict) and is_memctl_command(hook.get("command")):
                    found.append((group, hook))
    return found


def _drop_hook(groups: list[Any], group: dict, hook: dict) -> None:
    group["hooks"] = [h for h in group["hooks"] if h is not hook]
    if not group["hooks"]:
        groups[:] = [g for g in groups if g is not group]


@dataclass
class InstallResult:
    path: Path
    created: bool = False  # the settings file did not exist before
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated)


@dataclass
class UninstallResult:
    path: Path
    removed: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.removed)


@dataclass
class HooksStatus:
    path: Path
    exists: bool
    installed: dict[str, str] = field(default_factory=dict)  # event -> our command
    missing: list[str] = field(default_factory=list)
    other_hooks: int = 0  # hooks that are not memctl's
    plugin_enabled: bool = False  # enabledPlugins turns on memctl's plugin (the same hooks)

    @property
    def complete(self) -> bool:
        return not self.missing


def install_hooks(
    settings_path: Path, command_prefix: str = "memctl", store_only: bool = False
) -> InstallResult:
    """Add or refresh memctl's hooks; every other key and hook in the file stays as it was."""
    data, _ = load_settings(settings_path)
    result = InstallResult(path=settings_path, created=not settings_path.exists())
    hooks = data["hooks"] = data.get("hooks") or {}
    for spec in HOOK_SPECS:
        command = hook_command(spec, command_prefix, store_only)
        wanted = {"type": "command", "command": command, "timeout": spec.timeout}
        groups = hooks.setdefault(spec.event, [])
        ours = _our_entries(groups)
        if not ours:
            groups.append(
                {"matcher": spec.matcher, "hooks": [wanted]}
                if spec.matcher
                else {"hooks": [wanted]}
            )
            result.added.append(spec.event)
            continue
        (group, first), duplicates = ours[0], ours[1:]
        stale_matcher = bool(spec.matcher) and group.get("matcher") != spec.matcher
        if (
            any(first.get(key) != value for key, value in wanted.items())
            or duplicates
            or stale_matcher
        ):
            first.update(wanted)  # keys the user added to our entry (e.g. statusMessage) stay
            if spec.matcher and len(group["hooks"]) == 1:
                group["matcher"] = spec.matcher
            for group, hook in duplicates:
                _drop_hook(groups, group, hook)
            result.updated.append(spec.event)
        else:
            result.unchanged.append(spec.event)
    if result.changed:
        _write_settings(settings_path, data)
    return result


def uninstall_hooks(settings_path: Path) -> UninstallResult:
    """Remove memctl's hooks only; a group, event or `hooks` is dropped only if we emptied it."""
    data, _ = load_settings(settings_path)
    result = UninstallResult(path=settings_path)
    hooks = data.get("hooks")
    if not hooks:
        return result
    for event in list(hooks):
        groups = hooks[event]
        ours = _our_entries(groups)
        for group, hook in ours:
            _drop_hook(groups, group, hook)
        if ours:
            result.removed.append(event)
            if not groups:
                del hooks[event]
    if result.removed:
        if not hooks:
            del data["hooks"]
        _write_settings(settings_path, data)
    return result


PLUGIN_PREFIX = "memctl@"  # enabledPlugins keys are plugin@marketplace


def hooks_status(settings_path: Path) -> HooksStatus:
    data, _ = load_settings(settings_path)
    status = HooksStatus(path=settings_path, exists=settings_path.exists())
    hooks = data.get("hooks") or {}
    for spec in HOOK_SPECS:
        ours = _our_entries(hooks.get(spec.event, []))
        if ours:
            status.installed[spec.event] = ours[0][1]["command"]
        else:
            status.missing.append(spec.event)
    for groups in hooks.values():
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                status.other_hooks += sum(
                    1
                    for h in group["hooks"]
                    if not (isinstance(h, dict) and is_memctl_command(h.get("command")))
                )
    plugins = data.get("enabledPlugins")
    if isinstance(plugins, dict):
        status.plugin_enabled = any(
            str(key).startswith(PLUGIN_PREFIX) and on is True for key, on in plugins.items()
        )
    return status


# --- a dry call of an installed hook --------------------------------------------------------

# Set for a dry call: `memctl hook claude-code EVENT` exits 0 at once, having done nothing.
CHECK_ENV = "MEMCTL_HOOK_CHECK"


@dataclass(frozen=True)
class DryCall:
    exit_code: int | None  # None: it did not finish in time
    problem: str = ""  # "" when it ran

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


def dry_call(command: str, timeout: float, env: dict[str, str]) -> DryCall:
    """Run an installed hook's command through the shell, as Claude Code does, told to exit at
    once: proves the command is found and memctl starts (a bare `memctl` not on PATH: 127)."""
    import subprocess

    try:
        done = subprocess.run(
            ["/bin/sh", "-c", command],
            env={**env, CHECK_ENV: "1", "MEMCTL_NO_SERVER": "1"},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return DryCall(None, f"no answer within {timeout:g} s")
    except OSError as exc:
        return DryCall(None, f"cannot run /bin/sh: {exc.strerror or exc}")
    if done.returncode == 0:
        return DryCall(0)
    said = done.stderr.decode("utf-8", "replace").strip().splitlines()
    reason = {127: "command not found", 126: "not executable"}.get(done.returncode, "failed")
    detail = f": {said[-1][:200]}" if said else ""
    return DryCall(done.returncode, f"exit {done.returncode} ({reason}){detail}")


# --- hook input and output ------------------------------------------------------------------


class InvalidHookInput(MemctlError):
    kind = "invalid_hook_input"


@dataclass(frozen=True)
class HookPayload:
    """The JSON Claude Code writes on a hook's stdin, with the fields memctl uses pulled out."""

    event: str
    session_id: str = ""
    cwd: str = ""
    transcript_path: str = ""
    permission_mode: str = ""
    prompt: str = ""  # UserPromptSubmit
    source: str = ""  # SessionStart: startup | resume | clear | compact
    trigger: str = ""  # PreCompact: manual | auto
    custom_instructions: str = ""  # PreCompact, manual only
    reason: str = ""  # SessionEnd: clear | resume | logout | prompt_input_exit | ...
    raw: dict[str, Any] = field(default_factory=dict, compare=False)


_TEXT_FIELDS = (
    "session_id",
    "cwd",
    "transcript_path",
    "permission_mode",
    "prompt",
    "source",
    "trigger",
    "custom_instructions",
    "reason",
)


def normalize_payload(raw: str, event: str | None = None) -> HookPayload:
    """Read hook stdin. `event` (the command's) wins over the payload's `hook_event_name`."""
    data: Any = {}
    if raw.strip():
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InvalidHookInput(
                f"hook input is not JSON: {exc.msg} (line {exc.lineno})"
            ) from None
    if not isinstance(data, dict):
        raise InvalidHookInput("hook input must be a JSON object")
    name = data.get("hook_event_name") if isinstance(data.get("hook_event_name"), str) else None
    fields = {key: data[key] for key in _TEXT_FIELDS if isinstance(data.get(key), str)}
    # Why the command's event first: it is what the user installed; the payload's name is data
    # anyone who can write to the hook's stdin chooses (a Stop payload must not run SessionEnd).
    return HookPayload(event=canonical_event(event or name or ""), raw=data, **fields)


def render_additional_context(event: str, text: str, *, plain: bool = False) -> str:
    """Stdout that hands `text` to Claude as extra context; "" where the event cannot add any.

    JSON goes in as a quiet system reminder; `plain=True` prints the text itself, which Claude
    Code also adds as context for these two events but shows as hook output in the transcript.
    """
    event = canonical_event(event)
    if event not in CONTEXT_EVENTS or not text.strip():
        return ""
    if plain and event in PLAIN_CONTEXT_EVENTS:
        return text
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}},
        ensure_ascii=False,
    )
