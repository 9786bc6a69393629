"""What a new user meets in the first hour: what reaches the agent is true now, the commands
check what they write, and what they say is exact."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from memctl import service
from memctl.agents.claude_code import HookPayload
from memctl.agents.claude_code_events import prompt_context
from memctl.cli.app import app

runner = CliRunner()

REPLACED = """---
id: 1m8j0rskz6kt
title: We deploy with make ship now
type: procedural
tags:
- deploy
importance: 0.5
confidence: 0.8
source: corrected_memory
scope: project
created: '2026-11-28T21:25:22Z'
updated: '2026-11-28T21:25:23Z'
version: 2
subject: fact:deploy
commands:
- make ship
---

We deploy with make ship now, then watch the rollout dashboard.

## History

- 2026-11-28T21:25:23Z replaced (confidence 0.80, source explicit_user_input): We deploy with make release, then promote the rollout
"""


def cli(store, *args: str):
    return runner.invoke(app, ["--store", str(store.root), *args])


def test_a_replaced_value_never_reaches_the_agent_but_show_keeps_it(
    store, write_file, fake_embedder
):
    write_file("procedural/deploy-1m8j0rskz6kt.md", REPLACED)
    service.sync_index(store)
    prompt = prompt_context(
        store,
        HookPayload(event="UserPromptSubmit", session_id="s1", prompt="how do we deploy with make"),
    )
    context = cli(store, "context", "how do we deploy with make")
    assert "make ship" in prompt and "make ship" in context.stdout
    for shown in (prompt, context.stdout):
        assert "make release" not in shown and "History" not in shown and "replaced" not in shown

    from memctl.service.retrieval.action import ActionRequest, action_recall

    acted = action_recall([("project", store)], ActionRequest(commands=("make ship",), budget=2000))
    assert acted.items and all("make release" not in item.body for item in acted.items)
    assert "make release" in cli(store, "show", "1m8j0rskz6kt").stdout


def test_add_keeps_a_short_rule_a_person_asks_for(store, fake_embedder):
    for rule in ("Use pnpm", "Node 20 only", "No ORMs.", "ok thanks"):
        added = cli(store, "add", rule, "--no-dedup")
        assert added.exit_code == 0, added.output
        assert added.stdout.startswith("Added ")
    listed = cli(store, "list").stdout
    assert "Use pnpm" in listed and "No ORMs." in listed and "4 memories" in listed


def test_add_says_when_it_made_a_rule_apply_always(store, fake_embedder):
    said = cli(store, "add", "Before committing, always run make fmt").stdout
    assert "Applies always" in said and "--apply auto" in said
    chosen = cli(store, "add", "Before pushing, always run make lint", "--apply", "always")
    assert "Applies always" not in chosen.stdout  # the person chose it: nothing to explain
    plain = cli(store, "add", "The billing service is written in Go").stdout
    assert "Applies always" not in plain


def test_a_long_word_is_not_copied_into_a_derived_field(store, fake_embedder):
    from memctl.config import with_overrides

    small = with_overrides(store, {"limits": {"max_file_bytes": 65536}})
    text = "Set the flag " + "x" * 40_000 + " now"
    added = service.add_memory(small, text, type="semantic")
    size = added.path.stat().st_size
    assert size < 65536 and size < 2 * 40_000
    listing = service.list_memories(small)
    assert [m.id for _, m in listing.memories] == [added.memory.id] and not listing.problems


def test_a_file_over_the_limit_is_refused_before_anything_is_written(store, fake_embedder):
    from memctl.config import with_overrides
    from memctl.core.files.input_limits import InputRefused

    small = with_overrides(store, {"limits": {"max_file_bytes": 16384}})
    tags = [f"tag-{n}-" + "t" * 90 for n in range(100)]  # 10 KB of tags beside 8 KB of text
    before = sorted(p.name for p in store.root.rglob("*.md"))
    try:
        service.add_memory(small, "The release notes. " * 420, tags=tags, dedup=False)
    except InputRefused as refused:
        assert "limits.max_file_bytes" in str(refused) and "Nothing was written" in str(refused)
    else:
        raise AssertionError("a file over limits.max_file_bytes was written")
    assert sorted(p.name for p in store.root.rglob("*.md")) == before


def test_a_cut_title_is_stored_without_an_ellipsis_and_recall_says_it_once(store, fake_embedder):
    text = (
        "Kubernetes rollouts are promoted with kubectl argo rollouts promote api after the "
        "canary dashboards stay green for ten minutes"
    )
    added = service.add_memory(store, text)
    raw = added.path.read_text(encoding="utf-8")
    title = added.memory.title
    assert "…" not in raw and text.startswith(title) and len(title) <= 80
    shown = cli(store, "recall", "kubernetes rollouts canary").stdout
    assert " ".join(shown.split()).count("promote api") == 1, shown


GOOD = """---
id: 1m8k00000edt
title: The staging database listens on port 5433
type: semantic
---

The staging database listens on port 5433.
"""
BROKEN = GOOD.replace("title: The staging", "title: [The staging")


def editor(tmp_path, monkeypatch, *saves: str):
    """$EDITOR as a script that saves `saves[n]` on its n-th run and keeps what it was shown."""
    script = tmp_path / "editor.py"
    script.write_text(
        "import pathlib, sys\n"
        f"saves = {list(saves)!r}\n"
        f"log = pathlib.Path({str(tmp_path / 'shown')!r})\n"
        "runs = len(list(log.parent.glob('shown-*')))\n"
        "target = pathlib.Path(sys.argv[1])\n"
        "pathlib.Path(f'{log}-{runs}').write_text(target.read_text())\n"
        "target.write_text(saves[min(runs, len(saves) - 1)])\n"
    )
    import sys

    monkeypatch.setenv("VISUAL", f"{sys.executable} {script}")
    return lambda run: (tmp_path / f"shown-{run}").read_text()


def test_edit_keeps_the_old_file_when_the_save_is_broken_and_no_terminal(
    store, write_file, tmp_path, monkeypatch
):
    path = write_file("semantic/staging-1m8k00000edt.md", GOOD)
    editor(tmp_path, monkeypatch, BROKEN)
    edited = cli(store, "edit", "1m8k00000edt")
    assert edited.exit_code == 1
    assert "Not saved" in edited.stderr and "broken YAML" in edited.stderr
    assert path.read_text() == GOOD  # the memory is still there, whole
    kept = store.state_dir / "edits" / "1m8k00000edt.md"
    assert kept.read_text() == BROKEN  # and the person's edit is not lost


def test_edit_reopens_the_editor_with_the_problem_on_top(store, write_file, tmp_path, monkeypatch):
    from memctl.cli.commands import browse

    path = write_file("semantic/staging-1m8k00000edt.md", GOOD)
    fixed = GOOD.replace("5433", "5434")
    shown = editor(tmp_path, monkeypatch, BROKEN, fixed)
    monkeypatch.setattr(browse, "has_terminal", lambda: True)
    edited = cli(store, "edit", "1m8k00000edt")
    assert edited.exit_code == 0, edited.output
    assert shown(1).startswith("# memctl: NOT SAVED: line 4: broken YAML")
    assert shown(1).split("\n", 2)[2] == BROKEN
    assert path.read_text() == fixed and "Saved" in edited.stdout


def test_edit_opens_a_broken_file_so_it_can_be_fixed(store, write_file, tmp_path, monkeypatch):
    path = write_file("semantic/staging-1m8k00000edt.md", BROKEN)
    editor(tmp_path, monkeypatch, GOOD)
    edited = cli(store, "edit", "1m8k00000edt")
    assert edited.exit_code == 0, edited.output
    assert path.read_text() == GOOD
    assert "1m8k00000edt" in cli(store, "list").stdout


def test_edit_refuses_a_save_over_the_file_limit(store, write_file, tmp_path, monkeypatch):
    path = write_file("semantic/staging-1m8k00000edt.md", GOOD)
    config = store.config_path.read_text()
    store.config_path.write_text(config.replace("max_file_bytes: 2097152", "max_file_bytes: 4096"))
    editor(tmp_path, monkeypatch, GOOD + "more words " * 500)
    edited = cli(store, "edit", "1m8k00000edt")
    assert edited.exit_code == 1 and "limits.max_file_bytes" in edited.stderr
    assert path.read_text() == GOOD


def test_init_refuses_a_store_nested_in_a_project_that_has_one(tmp_path, monkeypatch):
    service.init_store(tmp_path)
    inner = tmp_path / "src"
    inner.mkdir()
    monkeypatch.chdir(inner)
    refused = runner.invoke(app, ["init"])
    assert refused.exit_code == 2
    assert str(tmp_path / ".memory") in refused.stderr and "--nested" in refused.stderr
    assert not (inner / ".memory").exists()
    assert runner.invoke(app, ["init", str(inner / "pkg")]).exit_code == 2  # DIR the same
    made = runner.invoke(app, ["init", "--nested"])
    assert made.exit_code == 0, made.output
    assert (inner / ".memory" / "config.yaml").is_file()


def episode(memory_id: str, created: str, importance: float, updated: str = "") -> str:
    when = f"updated: '{updated}'\n" if updated else ""
    return (
        f"---\nid: {memory_id}\ntitle: Chatted about lunch options\ntype: episodic\n"
        f"importance: {importance}\ncreated: '{created}'\n{when}---\n\nWe chatted about lunch.\n"
    )


def decisions(store, now=None) -> dict[str, str]:
    from memctl.service.lifecycle.decaying import plan

    return {d.id: f"{d.action} ({d.reason})" for d in plan(store, now).decisions}


def test_decay_archives_old_chatter_in_a_store_in_daily_use(store, write_file, fake_embedder):
    write_file(
        "episodic/lunch-1m8k00000ep1.md", episode("1m8k00000ep1", "2023-01-05T10:00:00Z", 0.05)
    )
    today = service.add_memory(store, "We deploy with make release, then promote the rollout")
    service.recall(service.RecallRequest(store, "how do we deploy", k=1))  # in use today
    shown = decisions(store)
    assert shown["1m8k00000ep1"] == "archive (score)"
    assert shown[today.memory.id] == "keep (min_age)"


def test_decay_archives_nothing_in_a_store_nobody_opened_for_a_year(store, write_file):
    from datetime import datetime, timedelta, timezone

    last_used = datetime.now(timezone.utc) - timedelta(days=365)
    for n in range(6):  # a month of notes, the newest on the last day anyone used the store
        created = (last_used - timedelta(days=5 * n)).strftime("%Y-%m-%dT%H:%M:%SZ")
        write_file(f"episodic/note-1m8k00000en{n}.md", episode(f"1m8k00000en{n}", created, 0.3))
    assert all(d.startswith("keep") for d in decisions(store).values())


def test_notes_imported_today_with_old_dates_are_not_archived(store, tmp_path, fake_embedder):
    import json

    notes = tmp_path / "old-notes.jsonl"
    lines = [
        {
            "body": f"Release {n} shipped the new billing export format",
            "created": "2023-02-01T09:00:00Z",
        }
        for n in range(5)
    ]
    notes.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    assert cli(store, "import", str(notes)).exit_code == 0
    assert all(d == "keep (min_age)" for d in decisions(store).values())


def test_decay_takes_dry_run_as_compact_and_extract_do(store, write_file):
    write_file(
        "episodic/lunch-1m8k00000ep1.md", episode("1m8k00000ep1", "2023-01-05T10:00:00Z", 0.05)
    )
    before = sorted(p.relative_to(store.root) for p in store.root.rglob("*.md"))
    shown = cli(store, "decay", "--dry-run")
    assert shown.exit_code == 0, shown.output
    assert sorted(p.relative_to(store.root) for p in store.root.rglob("*.md")) == before
    assert cli(store, "decay", "--dry-run", "--apply").exit_code == 2


def test_a_renamed_file_keeps_its_anchors_before_anyone_runs_index(tmp_path, fake_embedder):
    import json
    import subprocess

    from memctl.service.retrieval.action import ActionRequest, action_recall

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    git("config", "user.email", "dev@example.com")
    git("config", "user.name", "Dev")
    (tmp_path / "billing.py").write_text("def invoice_total(lines):\n    return sum(lines)\n")
    git("add", "billing.py")
    git("commit", "-qm", "billing")
    store = service.init_store(tmp_path)
    service.add_memory(
        store,
        "Totals are summed in cents, never floats",
        extra={"paths": ["billing.py"]},
        sync=False,
    )
    assert json.loads(cli(store, "stale", "--json").stdout) == []
    git("mv", "billing.py", "invoicing.py")
    git("commit", "-qm", "rename")

    stale = cli(store, "stale", "--json")
    assert stale.exit_code == 0 and json.loads(stale.stdout) == [], stale.stdout
    acted = action_recall(
        [("project", store)],
        ActionRequest(paths=(str(tmp_path / "invoicing.py"),), budget=2000, matches=False),
    )
    assert [item.stale for item in acted.items] == [""]
    assert "cents" in acted.items[0].body and not acted.stale
    git("mv", "invoicing.py", "charges.py")  # staged, not committed yet: followed as well
    assert json.loads(cli(store, "stale", "--json").stdout) == []


def test_forget_says_only_what_is_true_and_refuses_what_is_not_a_memory(store, fake_embedder):
    added = service.add_memory(
        store, "Never edit billing.py by hand", extra={"paths": ["billing.py"]}, sync=False
    )
    cli(store, "stale")  # builds the anchor table, which names the memory
    table = store.state_dir / "anchor_table.json"
    assert added.memory.id in table.read_text()
    forgot = cli(store, "forget", added.memory.id)
    assert forgot.exit_code == 0 and f"Forgot {added.memory.id}" in forgot.stdout
    assert "anchor_table" not in forgot.stderr and added.memory.id not in table.read_text()

    again = cli(store, "forget", added.memory.id)
    assert again.exit_code != 0 and "No memory" in again.stderr and "Forgot" not in again.stdout

    state = sorted(p.name for p in store.state_dir.rglob("*"))
    refused = cli(store, "forget", ".state")
    assert refused.exit_code == 2 and "not a memory id" in refused.stderr
    assert (
        "Forgot" not in refused.stdout
        and sorted(p.name for p in store.state_dir.rglob("*")) == state
    )


CLAUDE_MD = """# CLAUDE.md

This file provides guidance to Claude Code (claude.ai/code) when working with code in this repository.

## Commands

- Build with `make build`

## Don'ts

- Don't edit generated files under gen/

## Architecture

The API server lives in server/ and talks to Postgres through sqlc-generated queries.
"""


def test_importing_claude_md_gives_titles_that_say_something(store, tmp_path, fake_embedder):
    source = tmp_path / "CLAUDE.md"
    source.write_text(CLAUDE_MD)
    assert cli(store, "import", str(source)).exit_code == 0
    memories = [m for _, m in service.list_memories(store).memories]
    titles = {m.title: m.tags for m in memories}
    assert "CLAUDE.md" not in titles and "Architecture" not in titles
    assert not any("guidance to Claude Code" in m.body for m in memories)
    assert titles["Don't edit generated files under gen/"] == ["donts"]
    assert any(t.startswith("The API server lives in server/") for t in titles)


def test_context_opens_with_the_rules_and_does_not_call_recent_notes_relevant(
    store, write_file, fake_embedder
):
    assert cli(store, "add", "Before committing, always run make fmt").exit_code == 0
    empty = cli(store, "context").stdout
    assert "## Rules for every task here" in empty and "make fmt" in empty
    assert "holds 1 memory," in empty

    write_file(
        "episodic/lunch-1m8k00000ep1.md",
        episode("1m8k00000ep1", "2026-11-20T10:00:00Z", 0.3),
    )
    asked = cli(store, "context", "how do we rotate the signing keys")
    assert asked.exit_code == 0, asked.output
    assert "We chatted about lunch" in asked.stdout  # the latest session, shown as such
    assert "Relevant memories" not in asked.stdout and "## Recent sessions" in asked.stdout
    assert json.loads(cli(store, "context", "--json").stdout)["rules"]


def test_an_old_config_key_warns_on_every_command_in_one_process(store):
    """The resident engine runs every command in one process: each must still warn."""
    config = store.config_path.read_text()
    store.config_path.write_text(config + "\ncontext:\n  min_similarity: 0.4\n")
    for command in (["list"], ["stats"], ["context"], ["list"]):
        ran = cli(store, *command)
        assert "'context.min_similarity' was replaced" in ran.stderr, command


def test_a_hook_on_a_slow_machine_answers_within_memctl_hook_budget(
    store, fake_embedder, monkeypatch
):
    """Under load the first hook of a process can take longer than its few seconds; with
    MEMCTL_HOOK_BUDGET (which the test suite sets) it still answers instead of printing nothing."""
    import time

    from memctl.service.retrieval import action

    (store.root.parent / "billing.py").write_text("x = 1\n")
    service.add_memory(
        store, "Never edit billing.py by hand", extra={"paths": ["billing.py"]}, sync=False
    )
    real_tree = action.code_tree

    def loaded_machine(*args, **kwargs):
        time.sleep(3.5)  # longer than the PreToolUse hook's own 3 s
        return real_tree(*args, **kwargs)

    monkeypatch.setattr(action, "code_tree", loaded_machine)
    payload = {
        "hook_event_name": "PreToolUse",
        "session_id": "s1",
        "cwd": str(store.root.parent),
        "tool_name": "Read",
        "tool_input": {"file_path": str(store.root.parent / "billing.py")},
    }
    ran = runner.invoke(
        app,
        ["--store", str(store.root), "hook", "claude-code", "pre-tool-use"],
        input=json.dumps(payload),
    )
    assert ran.exit_code == 0 and "Never edit billing.py" in ran.stdout, ran.output


def test_an_edit_through_memctl_keeps_a_memory_the_users_own(
    store, tmp_path, monkeypatch, fake_embedder
):
    """`memctl edit` is the person writing on this machine: the saved text stays trusted, as an
    `add` is, and a rule in it still reaches the agent."""
    from memctl.service.provenance import gate_for

    added = service.add_memory(store, "Always run make check before pushing to main")
    edited_text = added.path.read_text().replace("make check", "make verify")
    editor(tmp_path, monkeypatch, edited_text)
    assert cli(store, "edit", added.memory.id).exit_code == 0
    _, memory = service.get_memory(store, added.memory.id)
    assert "make verify" in memory.body
    gate = gate_for(store)
    assert gate.origin(memory) == "user" and not gate.quarantined(memory)
