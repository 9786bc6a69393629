"""What a new user meets in the first hour: what reaches the agent is true now, the commands
check what they write, and what they say is exact."""

from __future__ import annotations

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
    from memctl.core.input_limits import InputRefused

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
