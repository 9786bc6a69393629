"""Hostile stores and privacy, case by case: what a teammate's branch can hold never
takes the store down, writes outside it, reaches the terminal raw, or leaks a private memory."""

from __future__ import annotations

import io
import json
import os
import threading
from pathlib import Path

import pytest
from rich.text import Text

from memctl import service
from memctl.cli import output
from memctl.config import InvalidConfig, read_config
from memctl.core.errors import MemoryNotFound, OutsideStore
from memctl.core.files.frontmatter import parse_memory
from memctl.core.files.lenient import lenient_warnings
from memctl.core.files.memory import new_id
from memctl.core.trust.terminal import printable
from memctl.store import files

OSC52 = "\x1b]52;c;aGVsbG8=\x07"


# --- 1. nothing from a file is read as markup or reaches the terminal raw -----------------------


@pytest.mark.parametrize(
    "text",
    [f"a{OSC52}b", "a\x1b[2J\x1b[31mb", "a\x9b2Jb", "a\x1bP1$r\x1b\\b", "a\x07\x08b"],
)
def test_printable_drops_escape_sequences_and_control_characters(text):
    assert printable(text) == "ab"


def test_printable_keeps_newlines_tabs_and_every_script():
    text = "数据库\tdeploy\nnext — ok ✓"
    assert printable(text) == text
    assert printable("over\rwrite") == "over\nwrite"


def _capture(monkeypatch) -> io.StringIO:
    buffer = io.StringIO()
    console = output.SafeConsole(file=buffer, width=200, markup=False, color_system=None)
    monkeypatch.setattr(output, "stdout", console)
    return buffer


def test_console_prints_user_markup_and_escapes_as_plain_text(monkeypatch):
    buffer = _capture(monkeypatch)
    output.stdout.print(f"[/bold] see [/secret/notes] [link=https://x]y[/link] {OSC52}\x1b[2J")
    output.stdout.print(Text(f"title {OSC52} [/x]"))
    shown = buffer.getvalue()
    assert "[/bold] see [/secret/notes] [link=https://x]y[/link]" in shown
    assert "title 52;c;aGVsbG8= [/x]" in shown  # rich drops the BEL first: the payload shows
    assert not any(c in shown for c in "\x1b\x07\x9b")


def test_problems_with_markup_in_them_are_printed_not_parsed(monkeypatch, capsys):
    buffer = io.StringIO()
    monkeypatch.setattr(output, "stderr", output.SafeConsole(file=buffer, width=300))
    output.warn_problems(
        [{"path": "a[/bold].md", "line": 3, "problem": f"'type' is '[/x]'{OSC52}"}]
    )
    assert buffer.getvalue().strip() == "a[/bold].md:3: 'type' is '[/x]'"


def test_json_output_escapes_c1_controls(capsys):
    output.print_json({"body": f"x{OSC52}\x9b2J"})
    shown = capsys.readouterr().out
    assert not any(c in shown for c in "\x1b\x07\x9b")
    assert json.loads(shown)["body"] == f"x{OSC52}\x9b2J"  # the same string reaches a reader


# --- 1. bad folders and names are left out, once each -----------------------------------------


def test_unreadable_folder_and_non_utf8_name_are_left_out_and_reported(store, monkeypatch):
    semantic = store.root / "semantic"
    (semantic / "locked").mkdir(parents=True)
    (semantic / "locked" / "in.md").write_text("---\nid: locked1\n---\nx\n")
    (semantic / "good.md").write_text("---\nid: good1\n---\nDeploys use make release.\n")
    (semantic / os.fsdecode(b"bad-\xff.md")).write_text("---\nid: bad1\n---\nx\n")
    real = os.scandir

    def scandir(path="."):
        if os.fspath(path).endswith("/locked"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    files.drain_scan_problems()
    found = files.scan_files(store.root)
    assert sorted(found) == ["semantic/good.md"]
    problems = files.drain_scan_problems()
    said = sorted(p["problem"] for p in problems)
    assert said == ["folder left out: Permission denied", "left out: the name is not valid UTF-8"]
    assert all(p["path"].isprintable() for p in problems)
    assert files.drain_scan_problems() == []  # reported once


@pytest.mark.parametrize(
    ("front", "kept"),
    [
        ("blob: !!binary aGVsbG8=", "aGVsbG8="),
        ("items: !!set {b, a}", ["a", "b"]),
        ("base: &b {x: 1}\nother:\n  <<: *b\n  y: 2", {"x": 1, "y": 2}),
    ],
)
def test_safe_yaml_tags_become_plain_data_that_json_can_hold(front, kept):
    memory = parse_memory("m.md", f"---\nid: m1\n{front}\n---\nbody\n".encode(), "m1", "semantic")
    key = "other" if "<<" in front else front.split(":")[0]
    assert memory.extra[key] == kept
    json.dumps(memory.extra)


# --- 2. one bounded YAML loader; a config that is not a file is an error ----------------------


def test_config_fifo_is_an_error_naming_it(store):
    config = store.root / "config.yaml"
    config.unlink()
    os.mkfifo(config)
    with pytest.raises(InvalidConfig, match="not a regular file"):
        read_config(store.root)


def test_config_alias_bomb_is_refused_with_its_line(store):
    from benchmarks.hardening import ALIAS_BOMB

    (store.root / "config.yaml").write_text(ALIAS_BOMB + "\n")
    with pytest.raises(InvalidConfig, match="aliases") as caught:
        read_config(store.root)
    assert caught.value.line > 1


# --- 3. writes never follow a symlink out of the store -----------------------------------------


def test_a_write_through_a_symlinked_type_folder_is_refused(store, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (store.root / "knowledge").symlink_to(outside)
    with pytest.raises(OutsideStore, match="outside the store"):
        files.atomic_write(store.root / "knowledge" / "k.md", b"x")
    with pytest.raises(OutsideStore):
        files.atomic_write(store.root / "knowledge" / "deeper" / "k.md", b"x")
    assert list(outside.iterdir()) == []


def test_a_symlink_inside_the_store_and_a_store_under_a_link_still_work(tmp_path):
    real = tmp_path / "real-project"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    store = service.init_store(tmp_path / "link")
    (store.root / "semantic").mkdir(exist_ok=True)
    (store.root / "alias").symlink_to(store.root / "semantic")
    files.atomic_write(store.root / "alias" / "a.md", b"x")
    files.atomic_write(store.root / "procedural" / "b.md", b"y")
    assert (real / ".memory/semantic/a.md").read_bytes() == b"x"


# --- 6. nothing acknowledged is lost -------------------------------------------------------------


def test_ids_made_in_one_process_never_repeat_and_stay_sorted():
    ids = [new_id() for _ in range(20_000)]
    assert len(set(ids)) == len(ids)
    assert ids == sorted(ids)
    assert {len(i) for i in ids} == {12}


def test_compare_and_swap_refuses_a_file_changed_since_it_was_read(tmp_path):
    path = tmp_path / ".memory" / "semantic" / "m.md"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"hand edit\n")
    assert not files.replace_if_unchanged(path, b"merged\n", expected=b"what memctl read\n")
    assert path.read_bytes() == b"hand edit\n"
    assert files.replace_if_unchanged(path, b"merged\n", expected=b"hand edit\n")
    assert path.read_bytes() == b"merged\n"
    assert [p.name for p in path.parent.iterdir()] == ["m.md"]  # no temp file left


def test_merges_racing_hand_edits_lose_no_hand_edit(store, fake_embedder):
    """Threads merge into one memory while another saves hand edits to it, as an editor
    does (its buffer, atomic rename, no lock); no merge ever writes over a save, so the last
    save (which holds every edit) is in the file."""
    from memctl.service.memories.add import rewrite_memory

    added = service.add_memory(store, "The billing service retries failed charges.", sync=False)
    relpath = added.path.relative_to(store.root).as_posix()
    edits, merges = 30, 30

    def hand_edits() -> None:
        # An editor holds the file in its buffer and saves the whole buffer each time (it does
        # not read the file again between saves, so memctl's merges in between are saved over).
        buffer = added.path.read_text(encoding="utf-8").rstrip("\n")
        for n in range(edits):
            buffer += f"\nhand edit {n:03d}"
            tmp = added.path.with_name(".hand.tmp")
            tmp.write_text(buffer + "\n", encoding="utf-8")
            os.replace(tmp, added.path)

    def merge(n: int) -> None:
        def change(current):
            current.extra["mentions"] = int(current.extra.get("mentions", 0)) + 1
            return current, "merged"

        try:
            rewrite_memory(store, added.memory.id, relpath, change)
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            failures.append(exc)

    failures: list[Exception] = []
    threads = [threading.Thread(target=hand_edits)]
    threads += [threading.Thread(target=merge, args=(n,)) for n in range(merges)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    final = added.path.read_text(encoding="utf-8")
    assert [n for n in range(edits) if f"hand edit {n:03d}" not in final] == []
    assert failures == []
    assert "mentions:" in final  # merges landed too (a lock-less editor may save over some)


# --- 8. lenient values get a warning naming the field --------------------------------------------


def test_each_lenient_value_is_named_with_its_line():
    block = (
        "id: 12345\ntitle: One\ntitle: Two\ncreated: yesterday\nexpires: garbage\n"
        'pinned: "false"\nrelations:\n  - {type: related, target: semantic/x.md}\n'
        "updated: 2999-01-01"
    )
    memory = parse_memory("m.md", f"---\n{block}\n---\nbody\n".encode(), "d", "semantic")
    said = dict(memory.warnings)
    assert said[2].startswith("'id' is the number 12345")
    assert said[4].startswith("'title' is given 2 times")
    assert said[5].startswith("'created' is 'yesterday'")
    assert said[6].startswith("'expires' is 'garbage'")
    assert said[7].startswith("'pinned' is the text 'false' (read as false)")
    assert "is a path" in said[8]
    assert "in the future" in said[10]
    assert memory.pinned is False


def test_a_clean_front_matter_has_no_warning():
    data = {"id": "m1", "created": "2025-01-01", "pinned": True, "relations": []}
    assert lenient_warnings(data, "id: m1\ncreated: 2025-01-01\npinned: true") == []


# --- 4. private stays private --------------------------------------------------------------------


def test_decay_archives_a_private_memory_under_the_ignored_private_tree(store):
    from memctl.service.lifecycle.decaying import archived_path

    assert archived_path("semantic/a.md", private=True) == "archive/private/semantic/a.md"
    assert archived_path("private/semantic/a.md", private=True) == "archive/private/semantic/a.md"
    assert archived_path("semantic/a.md", private=False) == "archive/semantic/a.md"
    assert "private/" in (store.root / ".gitignore").read_text().split()


def test_forget_removes_the_text_from_sessions_and_task_but_not_task_keys(store, fake_embedder):
    from memctl.service.lifecycle.session import add_turn
    from memctl.service.lifecycle.task import begin_task, note_task
    from memctl.service.memories.forgetting import forget_memories, plan_forget
    from memctl.store.task_state import read_task

    add_turn(store, "s1", "user", "My quokkazebra PIN is on the fridge note.", sync=False)
    add_turn(store, "s1", "assistant", "Noted, I will remember.", sync=False)
    begin_task(store, "Tidy the flat", plan=["kitchen"])
    note_task(store, "where", "the quokkazebra PIN note is on the fridge")
    note_task(store, "goal", "keep this note")
    added = service.add_memory(store, "My quokkazebra PIN is on the fridge note.", sync=False)
    forget_memories(store, [], plan_forget(store, [added.memory.id]), query="quokkazebra")
    left = [p for p in store.root.rglob("*") if p.is_file() and b"quokkazebra" in p.read_bytes()]
    assert left == []
    task = read_task(store.state_dir)
    assert (
        task is not None
        and task.goal == "Tidy the flat"
        and task.notes == {"goal": "keep this note"}
    )
    with pytest.raises(MemoryNotFound):
        plan_forget(store, ["goal"])  # a task key is not a memory: nothing is forgotten


def test_pre_commit_refuses_private_memories_wherever_they_are_staged(store):
    from memctl.agents.precommit import check_memory_bytes, memory_relpath

    private = b"---\nid: p1\nscope: private\n---\nMy diary.\n"
    (found,) = check_memory_bytes("semantic/p.md", "semantic/p.md", private, store)
    assert "private memory staged" in found.problem and not found.warning
    lenient = b'---\nid: p2\npinned: "false"\n---\nFine.\n'
    (warned,) = check_memory_bytes("semantic/q.md", "semantic/q.md", lenient, store)
    assert warned.warning and "'pinned'" in warned.problem
    repo = store.root.parent
    assert memory_relpath(".memory/archive/private/semantic/a.md", repo, store) is not None


def test_export_names_the_files_it_could_not_read(store, write_file):
    from memctl.service.memories.exchange import export_memories

    write_file("semantic/good.md", "---\nid: good1\n---\nDeploys use make release.\n")
    write_file("semantic/broken.md", "---\nid: [broken\n---\nx\n")
    result = export_memories(store, "jsonl", project_root=store.root.parent, output="-")
    assert result.exported == 1
    assert [Path(p["path"]).name for p in result.problems] == ["broken.md"]


def test_an_index_path_that_is_a_file_is_moved_aside_and_rebuilt(store, write_file, fake_embedder):
    write_file("semantic/good.md", "---\nid: good1\n---\nDeploys use make release.\n")
    service.sync_index(store)
    import shutil

    shutil.rmtree(store.index_dir)
    store.index_dir.write_text("a stray file\n")
    report = service.sync_index(store)
    assert report.added == 1
    assert store.index_dir.is_dir()
    assert (store.root / ".index.not-a-folder").read_text() == "a stray file\n"


def test_hook_ingest_takes_only_job_files_of_its_store(store, tmp_path):
    from memctl.agents.claude_code_events import is_job_file, jobs_dir

    victim = tmp_path / "notes.json"
    victim.write_text("{}")
    job = jobs_dir(store) / "20260101T000000-s1.json"
    job.parent.mkdir(parents=True)
    job.write_text("{}")
    assert is_job_file(store, job)
    assert not is_job_file(store, victim)
    assert not is_job_file(store, jobs_dir(store) / ".." / "jobs" / "missing.json")
