"""`memctl forget` means gone: no file under .memory/ keeps the forgotten text afterwards."""

from __future__ import annotations

import json
import subprocess

import pytest
from typer.testing import CliRunner

from memctl import service
from memctl.cli.app import app
from memctl.core.errors import MemoryNotFound
from memctl.service.lifecycle.decaying import append_log
from memctl.service.memories.forgetting import forget_memories
from memctl.store.purge import index_terms, raw_texts

pytestmark = pytest.mark.usefixtures("fake_embedder")

MARKER = "zebraquokka"  # one token the full-text tokenizer keeps whole
SECRET_ID = "secret0mem01"
OTHERS = {
    "note0gardens": "Tomatoes in the back garden need watering every evening in July.",
    "note0deploys": "Production deploys go through make release, never by hand.",
    "note0lunches": "The team orders sushi for lunch on Thursdays.",
    "note0backups": "Database backups run nightly at 02:00 UTC to the cold bucket.",
    "note0oncalls": "The on-call rotation hands over every Monday at ten.",
}
runner = CliRunner()


def memory_file(memory_id: str, title: str, body: str, created: str = "2025-03-01") -> str:
    return f"---\nid: {memory_id}\ntitle: {title}\ncreated: {created}\n---\n{body}\n"


@pytest.fixture
def filled(store, write_file):
    """The secret memory (indexed twice, also archived, recalled, logged) among ordinary ones."""
    for memory_id, body in OTHERS.items():
        write_file(f"semantic/{memory_id}.md", memory_file(memory_id, body[:30], body))
    secret = f"semantic/deploy-password-{SECRET_ID}.md"
    write_file(
        secret, memory_file(SECRET_ID, f"Deploy password {MARKER}", f"The password is {MARKER}.")
    )
    service.sync_index(store)
    # An edit leaves the old row behind a deletion vector: that copy must go too.
    write_file(
        secret, memory_file(SECRET_ID, f"Deploy password {MARKER}", f"It is {MARKER}, rotated.")
    )
    write_file(
        f"archive/semantic/deploy-password-{SECRET_ID}.md",
        memory_file(SECRET_ID, f"Old deploy password {MARKER}", f"Was {MARKER}-1."),
    )
    hits = service.recall(
        service.RecallRequest(store, f"{MARKER} password", k=2, include_archived=True)
    ).hits
    assert SECRET_ID in [hit.id for hit in hits]
    append_log(
        store, {"action": "archive", "id": SECRET_ID, "title": f"Old deploy password {MARKER}"}
    )
    session = store.state_dir / "hooks" / "sessions" / "s1.json"
    session.parent.mkdir(parents=True)
    session.write_text(json.dumps({"shown": [SECRET_ID, "note0deploys"]}))
    return store


def store_tables(store):
    return sorted(store.index_dir.glob("*.lance"))


def test_forgotten_text_is_in_no_file_under_the_store(filled):
    store = filled
    tables = store_tables(store)
    assert [t.name for t in tables] == ["archive.lance", "memories.lance"]
    assert all(any(MARKER in text for text in raw_texts(t)) for t in tables)

    [result] = forget_memories(store, [SECRET_ID])

    assert len(result.removed) == 2  # the memory and its archived copy
    for table in store_tables(store):
        assert not [text for text in raw_texts(table) if MARKER in text or SECRET_ID in text]
        assert not [term for term in index_terms(table) if MARKER in term]
    leftovers = [
        path
        for path in store.root.rglob("*")
        if path.is_file()
        and (MARKER.encode() in path.read_bytes() or SECRET_ID.encode() in path.read_bytes())
    ]
    assert leftovers == []
    session = json.loads((store.state_dir / "hooks" / "sessions" / "s1.json").read_text())
    assert session["shown"] == ["note0deploys"]

    for memory_id, body in OTHERS.items():
        assert service.recall(service.RecallRequest(store, body, k=1)).hits[0].id == memory_id
    assert [
        h.id
        for h in service.recall(
            service.RecallRequest(store, MARKER, k=5, mode="bm25", include_archived=True)
        ).hits
    ] == []


def test_forgetting_the_last_memory_of_a_table_leaves_no_table(store, write_file):
    write_file(
        f"semantic/{SECRET_ID}.md", memory_file(SECRET_ID, "Only one", f"Alone with {MARKER}.")
    )
    service.sync_index(store)
    forget_memories(store, [SECRET_ID])
    assert not any(MARKER.encode() in p.read_bytes() for p in store.root.rglob("*") if p.is_file())
    assert service.recall(service.RecallRequest(store, MARKER, k=1)).hits == []
    write_file("semantic/later.md", memory_file("later0000001", "Later", "A later note on kites."))
    assert service.recall(service.RecallRequest(store, "kites", k=1)).hits[0].id == "later0000001"


def test_unknown_id_removes_nothing(filled):
    before = sorted(p for p in filled.root.rglob("*.md"))
    with pytest.raises(MemoryNotFound):
        forget_memories(filled, [SECRET_ID, "nosuchmemory"])
    assert sorted(p for p in filled.root.rglob("*.md")) == before


@pytest.fixture
def project(filled, monkeypatch):
    monkeypatch.chdir(filled.root.parent)
    monkeypatch.delenv("MEMCTL_STORE", raising=False)
    return filled


def invoke(*args: str):
    return runner.invoke(app, list(args))


def test_cli_forget_unknown_id_exits_1(project):
    result = invoke("forget", "nosuchmemory")
    assert result.exit_code == 1
    assert "nosuchmemory" in result.output


def test_cli_forget_query_needs_yes_without_a_terminal(project):
    result = invoke("forget", "--query", MARKER.upper())
    assert result.exit_code == 2
    assert "--yes" in result.output
    assert (project.root / f"semantic/deploy-password-{SECRET_ID}.md").exists()


def test_cli_forget_query_with_yes_forgets_every_match(project, write_file):
    write_file("semantic/second.md", memory_file("second0mem01", "Also secret", f"Copy: {MARKER}."))
    result = invoke("forget", "--query", MARKER.upper(), "--yes", "--json")
    assert result.exit_code == 0, result.output
    assert sorted(r["id"] for r in json.loads(result.stdout)) == ["second0mem01", SECRET_ID]
    listed = json.loads(invoke("list", "--include-archived", "--json").stdout)
    assert sorted(m["id"] for m in listed) == sorted(OTHERS)
    assert invoke("forget", "--query", MARKER, "--yes").exit_code == 1  # nothing matches now


def git(cwd, *args):
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def test_cli_says_when_git_history_still_holds_the_file(project, write_file):
    write_file(
        "semantic/uncommitted.md", memory_file("uncommitted1", "Not in git", "Fresh note on kites.")
    )
    repo = project.root.parent
    git(repo, "init", "-q")
    git(repo, "add", f".memory/semantic/deploy-password-{SECRET_ID}.md")
    git(repo, "commit", "-q", "-m", "a memory")

    committed = invoke("forget", SECRET_ID)
    assert committed.exit_code == 0, committed.output
    assert "git history still holds" in committed.stdout
    assert "Forgetting for real" in committed.stdout

    fresh = invoke("forget", "uncommitted1")
    assert fresh.exit_code == 0
    assert "git history" not in fresh.stdout
