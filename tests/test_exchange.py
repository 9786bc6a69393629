"""`memctl export` / `memctl import`: JSONL round trips, agents' files keep what is not ours."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from memctl import service
from memctl.cli.app import app
from memctl.core.errors import InvalidMemoryFile
from memctl.core.files.agent_files import read_instructions, split_mdc
from memctl.core.language.tokens import estimate_tokens
from memctl.service.memories.exchange import ImportRefused, export_memories, import_file

pytestmark = pytest.mark.usefixtures("fake_embedder")

runner = CliRunner()

HAND_WRITTEN = """---
id: db-port
title: Database port
type: semantic
tags: [db, dev]
importance: 0.9
pinned: true
expires: 2031-01-01
relations:
- type: supports
  target: deploy-steps
mentions: 3
---

Postgres listens on **5433** in docker compose.

It used to be 5432.
"""


@pytest.fixture
def filled(store, write_file):
    """A store with memories written both ways: by `add_memory` and by hand."""
    write_file("semantic/database-port.md", HAND_WRITTEN)
    service.add_memory(
        store,
        "We deploy with make release from the main branch",
        type="procedural",
        tags=["deploy"],
        sync=False,
    )
    service.add_memory(
        store, "Prefer small pull requests with one topic each", type="preference", sync=False
    )
    service.add_memory(
        store, "My personal access notes live in the team vault", private=True, sync=False
    )
    return store


def comparable(store) -> dict[str, tuple]:
    return {
        m.id: (
            m.display_title,
            m.type,
            sorted(m.tags),
            m.body.strip(),
            m.importance,
            m.pinned,
            m.scope,
            m.expires,
            m.relations,
            m.extra.get("mentions"),
        )
        for _, m in service.list_memories(store).memories
    }


def times(store) -> dict[str, tuple]:
    return {m.id: (m.created, m.updated) for _, m in service.list_memories(store).memories}


def test_jsonl_round_trip_into_an_empty_store_gives_the_same_memories(filled, tmp_path):
    by_default = export_memories(filled, "jsonl", project_root=tmp_path)
    assert by_default.exported == 3 and "team vault" not in by_default.text  # private stays
    exported = export_memories(filled, "jsonl", project_root=tmp_path, include_private=True)
    assert exported.exported == 4 and exported.text.count("\n") == 4
    dump = tmp_path / "memories.jsonl"
    dump.write_text(exported.text, encoding="utf-8")

    empty = service.init_store(tmp_path / "other")
    result = import_file(empty, dump)
    assert len(result.added) == 4 and result.skipped == []
    assert comparable(empty) == comparable(filled)
    before, after = times(filled), times(empty)
    for memory_id, stamps in before.items():  # a hand-written file without times gets them now
        assert after[memory_id] == stamps or stamps == (None, None)
    assert (
        service.recall(service.RecallRequest(empty, "which port does postgres use", k=1)).hits[0].id
        == "db-port"
    )

    again = import_file(empty, dump)
    assert again.added == [] and {s["reason"] for s in again.skipped} == {"id already in the store"}


def test_a_bad_jsonl_line_imports_nothing_and_names_the_line(store, tmp_path):
    dump = tmp_path / "bad.jsonl"
    dump.write_text(
        '{"id": "a1", "body": "Deploys go through make release"}\n'
        '{"id": "a2", "body": "x", "type": "gossip"}\n'
        "not json\n",
        encoding="utf-8",
    )
    with pytest.raises(ImportRefused) as caught:
        import_file(store, dump)
    message = str(caught.value)
    assert f"{dump}:2: Unknown type 'gossip'" in message and f"{dump}:3: not valid JSON" in message
    assert service.list_memories(store).memories == []


def test_import_checks_every_item_first_and_reports_the_ones_it_skips(store, tmp_path):
    kept = service.add_memory(store, "sounds good", force=True, sync=False)  # forced in once
    exported = export_memories(store, "jsonl", project_root=tmp_path).text
    token = "ghp_Q8vT2mLx9RkP4nWz7YcB3hJd6FsA1gEu5oKi"
    dump = tmp_path / "mixed.jsonl"
    dump.write_text(
        exported
        + "\n".join(
            json.dumps(record)
            for record in [
                {"body": "ok thanks"},
                {"body": f"The CI token is {token}, rotate it every month"},
                {"body": "Releases are tagged from the main branch"},
                {"body": "releases are tagged   from the MAIN branch"},
            ]
        )
        + "\n",
        encoding="utf-8",
    )

    empty = service.init_store(tmp_path / "other")
    result = import_file(empty, dump)
    assert [(s["line"], s["reason"].split(":")[0]) for s in result.skipped] == [
        (2, "refused as low value"),
        (5, "same text as line 4"),
    ]
    bodies = {m.id: m.body.strip() for _, m in service.list_memories(empty).memories}
    assert bodies[kept.memory.id] == "sounds good"  # a restore is stored as it was exported
    assert len(bodies) == 3 and not any(token in body for body in bodies.values())
    assert [r.redacted for r in result.added if "CI token" in r.memory.body] == [
        {"github_token": 1}
    ]

    shown = runner.invoke(app, ["--store", str(empty.root), "import", str(dump)])
    assert shown.exit_code == 0, shown.output
    assert f"Skipped {dump}:2: refused as low value" in shown.output
    assert "Imported 0 new memories" in shown.output


def test_claude_md_export_updates_only_the_managed_section(filled, tmp_path):
    claude_md = tmp_path / "CLAUDE.md"
    mine = "# Project\n\nWritten by hand. Keep me.\n"
    claude_md.write_text(mine, encoding="utf-8")

    export_memories(filled, "claude-md", project_root=tmp_path)
    first = claude_md.read_text(encoding="utf-8")
    assert first.startswith(mine) and "make release" in first and "Postgres listens" in first
    assert "team vault" not in first  # private memories stay out of shared files

    claude_md.write_text(first + "\n## Added later by hand\n\n- keep this too\n", encoding="utf-8")
    service.add_memory(
        filled, "Run the linters with make check before pushing", type="procedural", sync=False
    )
    export_memories(filled, "claude-md", project_root=tmp_path)
    second = claude_md.read_text(encoding="utf-8")
    assert second.startswith(mine) and second.endswith("- keep this too\n")
    assert "make check" in second and second.count("<!-- memctl:begin -->") == 1


def test_budget_keeps_the_most_important_memories(filled, tmp_path):
    only_pinned = export_memories(
        filled, "agents-md", project_root=tmp_path, types=["semantic"], output="-"
    ).text
    budget = estimate_tokens(only_pinned)
    result = export_memories(filled, "agents-md", project_root=tmp_path, budget=budget)
    text = (tmp_path / "AGENTS.md").read_text(encoding="utf-8")
    assert estimate_tokens(text) <= budget
    assert "5433" in text  # pinned, importance 0.9: first in line
    assert result.exported == 1 and result.omitted == 2


def test_unpaired_markers_are_refused_with_their_line(filled, tmp_path):
    (tmp_path / "CLAUDE.md").write_text(
        "# P\n\n<!-- memctl:begin -->\nhalf a section\n", encoding="utf-8"
    )
    with pytest.raises(InvalidMemoryFile) as caught:
        export_memories(filled, "claude-md", project_root=tmp_path)
    assert caught.value.line == 3


def test_cursor_rules_have_front_matter_and_stale_files_go(filled, tmp_path):
    rules = tmp_path / ".cursor" / "rules"
    rules.mkdir(parents=True)
    (rules / "team.mdc").write_text("---\ndescription: ours\nalwaysApply: false\n---\nx\n")
    export_memories(filled, "cursor-rules", project_root=tmp_path)
    procedural = (rules / "memctl-procedural.mdc").read_text(encoding="utf-8")
    front, body, _ = split_mdc(procedural)
    assert front == {"description": front["description"], "globs": "", "alwaysApply": "true"}
    assert "make release" in body

    result = export_memories(filled, "cursor-rules", project_root=tmp_path, types=["semantic"])
    assert sorted(p.name for p in result.removed) == [
        "memctl-preference.mdc",
        "memctl-procedural.mdc",
    ]
    assert sorted(p.name for p in rules.iterdir()) == ["memctl-semantic.mdc", "team.mdc"]


AGENTS_MD = """# Billing service

Handles invoices and settlement for the ledger API.

## Code style preferences

- Prefer dataclasses over dicts for records
- Money is always Decimal, never float;
  round with ROUND_HALF_EVEN

## Commands

1. Run the tests with `make test -j4`
2. Release with `make release` from main

```sh
make release  # - not a bullet
```

<!-- memctl:begin -->
## Project memory (memctl)
- Already in memctl, not imported again
<!-- memctl:end -->
"""


def test_markdown_items_are_one_per_bullet_or_section_typed_by_heading():
    items = read_instructions(AGENTS_MD)
    assert [(i.type, i.line) for i in items] == [
        ("semantic", 3),
        ("preference", 7),
        ("preference", 8),
        ("procedural", 13),
        ("procedural", 14),
    ]
    assert items[0].heading == "Billing service"
    assert items[2].text == "Money is always Decimal, never float;\nround with ROUND_HALF_EVEN"
    assert "make release  # - not a bullet" in items[4].text
    assert not any("Already in memctl" in i.text for i in items)


def test_importing_agents_md_goes_through_the_write_path_once(store, tmp_path):
    source = tmp_path / "AGENTS.md"
    source.write_text(
        AGENTS_MD.replace("never float;", "never float (ask ana@example.com);"), encoding="utf-8"
    )
    result = runner.invoke(app, ["--store", str(store.root), "import", str(source), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert len(report["added"]) == 5
    memories = {m.body.splitlines()[0]: m for _, m in service.list_memories(store).memories}
    money = next(m for line, m in memories.items() if line.startswith("Money"))
    assert "ana@example.com" not in money.body and money.type == "preference"
    assert money.extra["imported_from"] == "AGENTS.md:8" and money.source == "external_data"

    again = json.loads(
        runner.invoke(app, ["--store", str(store.root), "import", str(source), "--json"]).stdout
    )
    assert again["added"] == [] and len(again["skipped"]) == 5


def test_mdc_rules_with_unquoted_globs_import(store, tmp_path):
    rule = tmp_path / "ts.mdc"
    rule.write_text(
        "---\ndescription: TypeScript conventions\nglobs: **/*.ts, **/*.tsx\n"
        "alwaysApply: false\n---\n# TypeScript\n\n- Use strict mode in every package\n"
        "- Prefer discriminated unions over enums\n",
        encoding="utf-8",
    )
    result = import_file(store, rule)
    assert len(result.added) == 2
    memory = result.added[0].memory
    assert (
        memory.extra["globs"] == "**/*.ts, **/*.tsx" and memory.extra["imported_from"] == "ts.mdc:8"
    )
    assert result.added[1].memory.type == "preference"


def test_export_cli_prints_jsonl_and_writes_claude_md(filled, tmp_path, monkeypatch):
    monkeypatch.chdir(filled.root.parent)
    monkeypatch.delenv("MEMCTL_STORE", raising=False)
    printed = runner.invoke(app, ["export"])
    assert printed.exit_code == 0
    assert {json.loads(line)["id"] for line in printed.stdout.splitlines()} >= {"db-port"}
    written = runner.invoke(app, ["export", "--format", "claude-md", "--type", "procedural"])
    assert written.exit_code == 0, written.output
    text = (filled.root.parent / "CLAUDE.md").read_text(encoding="utf-8")
    assert "make release" in text and "5433" not in text
    assert runner.invoke(app, ["export", "--format", "word"]).exit_code == 2


def test_a_hand_written_file_under_private_is_private_whatever_its_front_matter(store, tmp_path):
    home = store.root / "private/semantic/home.md"
    home.parent.mkdir(parents=True)
    home.write_text("---\nid: home1\nscope: project\n---\nMy home address is 12 Elm Street.\n")

    assert "Elm Street" not in export_memories(store, "jsonl", project_root=tmp_path).text
    shared = export_memories(store, "jsonl", project_root=tmp_path, include_private=True)
    assert json.loads(shared.text)["scope"] == "private"
