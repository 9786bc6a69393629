"""Claude Code hooks: settings.json merging, hook input/output format, and the never-fail runner."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from memctl.agents.claude_code import (
    HOOK_SPECS,
    InvalidHookInput,
    hooks_status,
    install_hooks,
    normalize_payload,
    render_additional_context,
    settings_path_for,
    uninstall_hooks,
)
from memctl.agents.hook_runner import clip_text, run_hook
from memctl.core.errors import InvalidMemoryFile

EXISTING = {
    "model": "opus",
    "permissions": {"allow": ["Bash(npm test)"], "deny": ["Read(.env)"]},
    "env": {"FOO": "1"},
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [{"type": "command", "command": "./guard.sh", "timeout": 5}],
            }
        ],
        "SessionStart": [
            {"matcher": "startup", "hooks": [{"type": "command", "command": "echo hello"}]}
        ],
    },
}

# Hook input as the Claude Code hooks reference documents it, one per event memctl handles.
DOCUMENTED_INPUT = {
    "SessionStart": {
        "session_id": "abc123",
        "transcript_path": "/Users/me/.claude/projects/p/00893aaf.jsonl",
        "cwd": "/Users/me/project",
        "hook_event_name": "SessionStart",
        "source": "startup",
        "model": "claude-sonnet-4-5-20250929",
    },
    "UserPromptSubmit": {
        "session_id": "abc123",
        "transcript_path": "/Users/me/.claude/projects/p/00893aaf.jsonl",
        "cwd": "/Users/me/project",
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": "Write a function to calculate the factorial of a number",
    },
    "PreCompact": {
        "session_id": "abc123",
        "transcript_path": "/Users/me/.claude/projects/p/00893aaf.jsonl",
        "cwd": "/Users/me/project",
        "hook_event_name": "PreCompact",
        "trigger": "manual",
        "custom_instructions": "keep the API decisions",
    },
    "SessionEnd": {
        "session_id": "abc123",
        "transcript_path": "/Users/me/.claude/projects/p/00893aaf.jsonl",
        "cwd": "/Users/me/project",
        "hook_event_name": "SessionEnd",
        "reason": "prompt_input_exit",
    },
}


def write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def read_json(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def our_commands(data, event):
    return [
        h["command"]
        for g in data["hooks"].get(event, [])
        for h in g["hooks"]
        if "hook claude-code" in h["command"]
    ]


# --- settings.json ----------------------------------------------------------------------------


def test_install_keeps_existing_keys_and_foreign_hooks(tmp_path):
    settings = tmp_path / ".claude" / "settings.json"
    write_json(settings, EXISTING)

    result = install_hooks(settings)

    data = read_json(settings)
    assert result.added == [spec.event for spec in HOOK_SPECS]
    for key in ("model", "permissions", "env"):
        assert data[key] == EXISTING[key]
    assert data["hooks"]["PreToolUse"][0] == EXISTING["hooks"]["PreToolUse"][0]
    assert data["hooks"]["SessionStart"][0] == EXISTING["hooks"]["SessionStart"][0]
    for spec in HOOK_SPECS:
        assert our_commands(data, spec.event) == [f"memctl hook claude-code {spec.slug}"]
        ours = [
            h for g in data["hooks"][spec.event] for h in g["hooks"] if "memctl" in h["command"]
        ]
        assert ours[0]["type"] == "command"
        assert ours[0]["timeout"] == spec.timeout


def test_install_writes_timeout_for_session_end(tmp_path):
    # Without an explicit timeout SessionEnd hooks get a 1.5 s budget in current Claude Code.
    settings = tmp_path / "settings.json"
    install_hooks(settings)
    [group] = read_json(settings)["hooks"]["SessionEnd"]
    assert group["hooks"][0]["timeout"] >= 10


def test_install_twice_changes_nothing(tmp_path):
    settings = tmp_path / ".claude" / "settings.json"
    write_json(settings, EXISTING)
    install_hooks(settings)
    before = settings.read_bytes()

    second = install_hooks(settings)

    assert not second.changed
    assert second.unchanged == [spec.event for spec in HOOK_SPECS]
    assert settings.read_bytes() == before


def test_install_with_new_prefix_updates_in_place_without_duplicates(tmp_path):
    settings = tmp_path / "settings.json"
    install_hooks(settings)
    data = read_json(settings)
    data["hooks"]["UserPromptSubmit"][0]["hooks"][0]["statusMessage"] = "recalling"
    write_json(settings, data)

    result = install_hooks(settings, command_prefix="/opt/venv/bin/memctl")

    data = read_json(settings)
    assert result.updated == [spec.event for spec in HOOK_SPECS]
    assert our_commands(data, "UserPromptSubmit") == [
        "/opt/venv/bin/memctl hook claude-code user-prompt-submit"
    ]
    assert data["hooks"]["UserPromptSubmit"][0]["hooks"][0]["statusMessage"] == "recalling"


def test_install_removes_duplicate_memctl_entries(tmp_path):
    settings = tmp_path / "settings.json"
    entry = {"type": "command", "command": "memctl hook claude-code session-start", "timeout": 15}
    groups = [{"hooks": [entry]}, {"hooks": [dict(entry)]}]
    write_json(settings, {"hooks": {"SessionStart": groups}})

    install_hooks(settings)

    commands = our_commands(read_json(settings), "SessionStart")
    assert commands == ["memctl hook claude-code session-start"]


def test_install_creates_missing_settings_file(tmp_path):
    settings = settings_path_for("project", tmp_path, tmp_path / "home")
    result = install_hooks(settings)
    assert result.created
    assert settings == tmp_path / ".claude" / "settings.json"
    assert set(read_json(settings)["hooks"]) == {spec.event for spec in HOOK_SPECS}


def test_install_through_symlink_keeps_the_symlink(tmp_path):
    real = tmp_path / "dotfiles" / "claude-settings.json"
    write_json(real, {"model": "opus"})
    link = tmp_path / ".claude" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(real)

    install_hooks(link)

    assert link.is_symlink()
    assert read_json(real)["model"] == "opus"
    assert "SessionStart" in read_json(real)["hooks"]


def test_uninstall_removes_only_ours(tmp_path):
    settings = tmp_path / ".claude" / "settings.json"
    write_json(settings, EXISTING)
    install_hooks(settings)

    result = uninstall_hooks(settings)

    assert sorted(result.removed) == sorted(spec.event for spec in HOOK_SPECS)
    assert read_json(settings) == EXISTING


def test_uninstall_when_only_ours_leaves_other_keys(tmp_path):
    settings = tmp_path / "settings.json"
    write_json(settings, {"model": "opus"})
    install_hooks(settings)

    uninstall_hooks(settings)

    assert read_json(settings) == {"model": "opus"}


def test_uninstall_without_our_hooks_does_not_rewrite(tmp_path):
    settings = tmp_path / "settings.json"
    settings.write_text('{"model":   "opus"}', encoding="utf-8")
    result = uninstall_hooks(settings)
    assert not result.changed
    assert settings.read_text(encoding="utf-8") == '{"model":   "opus"}'


@pytest.mark.parametrize("action", [install_hooks, uninstall_hooks, hooks_status])
def test_invalid_json_is_refused_and_left_untouched(tmp_path, action):
    settings = tmp_path / "settings.json"
    broken = '{\n  "model": "opus",\n  "hooks": {\n    "SessionStart": [,]\n  }\n}\n'
    settings.write_text(broken, encoding="utf-8")

    with pytest.raises(InvalidMemoryFile) as caught:
        action(settings)

    assert caught.value.path == str(settings)
    assert caught.value.line == 4
    assert str(settings) in str(caught.value)
    assert settings.read_text(encoding="utf-8") == broken


def test_hooks_of_wrong_shape_are_refused_with_their_line(tmp_path):
    settings = tmp_path / "settings.json"
    text = '{\n  "model": "opus",\n  "hooks": ["not", "an", "object"]\n}\n'
    settings.write_text(text, encoding="utf-8")

    with pytest.raises(InvalidMemoryFile) as caught:
        install_hooks(settings)

    assert caught.value.line == 3
    assert settings.read_text(encoding="utf-8") == text


def test_status_reports_installed_missing_and_other_hooks(tmp_path):
    settings = tmp_path / "settings.json"
    write_json(settings, EXISTING)
    assert hooks_status(settings).missing == [spec.event for spec in HOOK_SPECS]

    install_hooks(settings)
    status = hooks_status(settings)

    assert status.complete
    assert status.installed["UserPromptSubmit"] == "memctl hook claude-code user-prompt-submit"
    assert status.other_hooks == 2
    assert not hooks_status(tmp_path / "absent.json").exists


# --- hook input and output ------------------------------------------------------------------


@pytest.mark.parametrize("event", sorted(DOCUMENTED_INPUT))
def test_documented_input_normalizes(event):
    doc = DOCUMENTED_INPUT[event]
    payload = normalize_payload(json.dumps(doc))
    assert payload.event == event
    assert payload.session_id == "abc123"
    assert payload.cwd == "/Users/me/project"
    assert payload.transcript_path == doc["transcript_path"]
    for key in ("prompt", "source", "trigger", "custom_instructions", "reason"):
        assert getattr(payload, key) == doc.get(key, "")
    assert payload.raw == doc


def test_payload_event_falls_back_to_the_command_argument():
    assert normalize_payload("", "user-prompt-submit").event == "UserPromptSubmit"
    assert normalize_payload('{"session_id": "x"}', "session-end").event == "SessionEnd"


@pytest.mark.parametrize("raw", ["not json", "[1, 2]", '"text"'])
def test_bad_payload_raises(raw):
    with pytest.raises(InvalidHookInput):
        normalize_payload(raw, "session-start")


@pytest.mark.parametrize("event", ["SessionStart", "UserPromptSubmit"])
def test_context_output_is_the_documented_json(event):
    out = render_additional_context(event, "## Memories\n- use pnpm")
    assert json.loads(out) == {
        "hookSpecificOutput": {
            "hookEventName": event,
            "additionalContext": "## Memories\n- use pnpm",
        }
    }
    assert render_additional_context(event, "plain text", plain=True) == "plain text"


@pytest.mark.parametrize("event", ["PreCompact", "SessionEnd"])
def test_events_without_context_print_nothing(event):
    assert render_additional_context(event, "anything") == ""


def test_empty_context_prints_nothing():
    assert render_additional_context("SessionStart", "  \n") == ""


# --- runner -----------------------------------------------------------------------------------


def test_runner_hands_the_payload_to_the_handler_and_renders(tmp_path):
    seen = []

    def recall(payload):
        seen.append(payload)
        return f"- memory about {payload.prompt}"

    out = run_hook(
        "user-prompt-submit",
        json.dumps(DOCUMENTED_INPUT["UserPromptSubmit"]),
        {"UserPromptSubmit": recall},
        time_budget_s=5,
        log_path=tmp_path / "hooks.log",
        render=render_additional_context,
    )

    assert seen[0].prompt == DOCUMENTED_INPUT["UserPromptSubmit"]["prompt"]
    context = json.loads(out)["hookSpecificOutput"]
    assert context["hookEventName"] == "UserPromptSubmit"
    assert context["additionalContext"] == f"- memory about {seen[0].prompt}"
    assert not (tmp_path / "hooks.log").exists()


def test_runner_swallows_an_exception_and_logs_it(tmp_path):
    log = tmp_path / ".state" / "hooks.log"

    def broken(payload):
        raise RuntimeError("index is corrupt")

    out = run_hook(
        "SessionStart",
        json.dumps(DOCUMENTED_INPUT["SessionStart"]),
        {"SessionStart": broken},
        time_budget_s=5,
        log_path=log,
    )

    assert out == ""
    text = log.read_text(encoding="utf-8")
    assert "SessionStart" in text and "session=abc123" in text
    assert "Traceback" in text and "RuntimeError: index is corrupt" in text


def test_runner_gives_up_after_the_budget(tmp_path):
    log = tmp_path / "hooks.log"
    release = threading.Event()

    def slow(payload):
        release.wait(30)
        return "too late"

    try:
        out = run_hook(
            "UserPromptSubmit",
            json.dumps(DOCUMENTED_INPUT["UserPromptSubmit"]),
            {"UserPromptSubmit": slow},
            time_budget_s=0.2,
            log_path=log,
        )
    finally:
        release.set()

    assert out == ""
    assert "time budget" in log.read_text(encoding="utf-8")


def test_runner_survives_bad_input_and_an_unwritable_log(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x", encoding="utf-8")
    out = run_hook(
        "SessionStart",
        "{oops",
        {"SessionStart": lambda p: "never"},
        time_budget_s=1,
        log_path=blocker / "hooks.log",
    )
    assert out == ""


def test_runner_logs_bad_input(tmp_path):
    log = tmp_path / "hooks.log"
    assert (
        run_hook(
            "SessionStart", "{oops", {"SessionStart": lambda p: "x"}, time_budget_s=1, log_path=log
        )
        == ""
    )
    assert "not JSON" in log.read_text(encoding="utf-8")


def test_runner_ignores_events_without_handler(tmp_path):
    out = run_hook(
        "Stop",
        json.dumps({"hook_event_name": "Stop", "session_id": "s"}),
        {"SessionStart": lambda p: "x"},
        time_budget_s=1,
        log_path=tmp_path / "hooks.log",
    )
    assert out == ""


def test_runner_clips_long_output(tmp_path):
    lines = "\n".join(f"- memory number {i}" for i in range(500))
    out = run_hook(
        "SessionStart",
        "",
        {"SessionStart": lambda p: lines},
        time_budget_s=5,
        log_path=tmp_path / "hooks.log",
        max_chars=300,
    )
    assert len(out) <= 300
    assert out.startswith("- memory number 0\n")
    assert out.endswith("clipped by memctl]")
    body = out.rsplit("\n", 1)[0]
    assert all(line.startswith("- memory number ") for line in body.splitlines())


def test_clip_leaves_short_text_alone():
    assert clip_text("short", 100) == "short"
