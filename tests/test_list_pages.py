"""`memctl list --limit N` pages the newest memories first, in exactly the order the full
listing gives reversed, whatever the files look like, reading only the files it shows."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from memctl import service
from memctl.cli.app import app
from memctl.service.memories import lookup


def write(store, name: str, front: str, body: str) -> None:
    folder = store.root / "semantic"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(f"---\n{front}---\n\n{body}\n")


@pytest.fixture
def mixed(store, fake_embedder):
    """Memories written by memctl, and hand-written ones its quick key cannot read."""
    for n in range(12):
        write(
            store,
            f"m{n:02}.md",
            f"id: m{n:02}\ntype: {'semantic' if n % 3 else 'procedural'}\n"
            f"created: '2026-01-{n + 1:02}T10:00:00Z'\n",
            f"memory number {n}",
        )
    # A date YAML reads as a timestamp, and a file with no front matter at all.
    write(store, "hand.md", "id: hand\ncreated: 2026-01-05 12:00:00\n", "written by hand")
    (store.root / "semantic" / "bare.md").write_text("just a line, no front matter\n")
    write(store, "same.md", "id: m05b\ncreated: '2026-01-06T10:00:00Z'\n", "a tie on created")
    return store


def test_a_page_is_the_full_listing_reversed(mixed):
    everything = [memory.id for _, memory in lookup.list_memories(mixed).memories]
    newest = list(reversed(everything))
    for limit, offset in ((1, 0), (5, 0), (5, 5), (4, 13), (50, 0)):
        page = lookup.list_memories(mixed, limit=limit, offset=offset)
        assert [m.id for _, m in page.memories] == newest[offset : offset + limit]
    kinds = lookup.list_memories(mixed, types=["procedural"], limit=2)
    assert [m.id for _, m in kinds.memories] == ["m09", "m06"]


def test_a_page_reads_only_the_files_it_shows(mixed, monkeypatch):
    from memctl.store import parsed_memories

    parsed: list[str] = []

    original = parsed_memories.read_memory_kept

    def counting(root, relpath, max_bytes, shared=False):
        parsed.append(relpath)
        return original(root, relpath, max_bytes, shared=shared)

    monkeypatch.setattr(parsed_memories, "read_memory_kept", counting)
    page = lookup.list_memories(mixed, limit=3)
    assert [m.id for _, m in page.memories] == ["m11", "m10", "m09"]
    # the three shown, and the two files whose key needs their YAML
    assert sorted(parsed) == sorted(
        [
            "semantic/m11.md",
            "semantic/m10.md",
            "semantic/m09.md",
            "semantic/hand.md",
            "semantic/bare.md",
        ]
    )


def test_the_cli_pages_newest_first_with_the_user_store_too(mixed, user_store):
    service.add_memory(user_store, "I prefer short answers in bullet points", sync=False)
    runner = CliRunner()
    shown = runner.invoke(app, ["--store", str(mixed.root), "list", "--limit", "2", "--json"])
    assert shown.exit_code == 0, shown.output
    page = json.loads(shown.stdout)
    assert page[0]["store"] == "user" and page[1]["id"] == "m11"
    only = runner.invoke(app, ["--store", str(mixed.root), "list", "-n", "1", "--store-only"])
    assert "m11" in only.stdout and "1 memory" in only.stdout
    bad = runner.invoke(app, ["--store", str(mixed.root), "list", "--offset", "3"])
    assert bad.exit_code == 2 and "--offset pages with --limit" in bad.output
