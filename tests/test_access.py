import multiprocessing
from datetime import datetime, timedelta, timezone

import pytest

from memctl.core.errors import InvalidMemoryFile
from memctl.store.access import AccessStat, drop_access, load_access, record_access

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=timezone.utc)


def test_nothing_recorded_means_no_statistics(tmp_path):
    assert load_access(tmp_path / ".state") == {}


def test_record_counts_accesses_and_keeps_the_last_time(tmp_path):
    state = tmp_path / ".state"
    record_access(state, ["a", "b"], NOW)
    record_access(state, ["a"], NOW + timedelta(hours=3))
    stats = load_access(state)
    assert stats["a"] == AccessStat(count=2, last_access=NOW + timedelta(hours=3))
    assert stats["b"] == AccessStat(count=1, last_access=NOW)


def test_one_recall_returning_an_id_twice_counts_once(tmp_path):
    record_access(tmp_path, ["a", "a"], NOW)
    assert load_access(tmp_path)["a"].count == 1


def test_drop_forgets_only_the_given_memories(tmp_path):
    record_access(tmp_path, ["a", "b", "c"], NOW)
    drop_access(tmp_path, ["b", "missing"])
    assert sorted(load_access(tmp_path)) == ["a", "c"]
    drop_access(tmp_path / "never-created", ["a"])  # nothing recorded there: nothing to do


def test_statistics_live_only_in_the_state_area(tmp_path):
    store = tmp_path / ".memory"
    store.mkdir()
    note = store / "note-abc.md"
    note.write_text("---\nid: abc\n---\nbody\n", encoding="utf-8")
    before = note.stat().st_mtime_ns
    record_access(store / ".state", ["abc"], NOW)
    drop_access(store / ".state", ["abc"])
    record_access(store / ".state", ["abc"], NOW)
    assert note.stat().st_mtime_ns == before
    assert sorted(p.name for p in store.iterdir()) == [".state", "note-abc.md"]
    assert sorted(p.name for p in (store / ".state").iterdir()) == ["access.json", "access.lock"]


def _hammer(state_dir, rounds):
    for _ in range(rounds):
        record_access(state_dir, ["shared", "other"], datetime.now(timezone.utc))


@pytest.mark.slow
def test_concurrent_processes_lose_no_counts(tmp_path):
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_hammer, args=(tmp_path, 25)) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert all(worker.exitcode == 0 for worker in workers)
    stats = load_access(tmp_path)
    assert stats["shared"].count == 100
    assert stats["other"].count == 100


def test_broken_statistics_file_is_reported_with_its_path(tmp_path):
    (tmp_path / "access.json").write_text('{"version": 1,\n "items": {oops}}', encoding="utf-8")
    with pytest.raises(InvalidMemoryFile) as info:
        load_access(tmp_path)
    assert info.value.path.endswith("access.json")
    assert info.value.line == 2
    with pytest.raises(InvalidMemoryFile):
        record_access(tmp_path, ["a"], NOW)
