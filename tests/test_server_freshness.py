"""The server's file watch vouches for its index only when no file changed, and then syncs only
the files that did: real watchdog events on a real store, in-process."""

from __future__ import annotations

import logging
import shutil
import threading

import pytest

from memctl import service
from memctl.config import open_store
from memctl.server.freshness import StoreWatch
from memctl.service.retrieval import indexing

pytestmark = pytest.mark.model  # syncs embed with the bundled model


@pytest.fixture
def watched(tmp_path, monkeypatch):
    store = service.init_store(tmp_path / "project")
    service.add_memory(store, "We deploy with make release, then promote the rollout")
    service.add_memory(store, "Use pnpm, never npm, for the frontend packages")
    scans: list[bool] = []
    real_scan = indexing.scan_files

    def counting_scan(root, include_archived=True):
        scans.append(include_archived)
        return real_scan(root, include_archived)

    monkeypatch.setattr(indexing, "scan_files", counting_scan)
    lock = threading.Lock()

    def sync() -> None:
        with lock:
            service.sync_index(open_store(store.root))

    watch = StoreWatch(store.root, sync, logging.getLogger("test"))
    watch.start()
    assert watch.alive
    yield store, watch, scans, lock
    watch.stop()


def test_an_unchanged_store_is_vouched_for_and_a_change_is_seen_at_once(watched):
    store, watch, scans, lock = watched
    with lock:
        assert not watch.vouches(store.root, False)  # no sync seen yet
        service.sync_index(store)
        assert watch.vouches(store.root, False)
        scans.clear()
        report = service.sync_index(store)
        assert scans == [] and report.unchanged == 2  # answered from the stamp, no stat calls

        (store.root / "semantic" / "hand.md").write_text("The okapi cache is warmed at boot\n")
        assert not watch.vouches(store.root, False)  # no sleep: the barrier saw the write
        report = service.sync_index(store)
        assert (report.added, scans) == (1, [])  # only the changed file was stat'ed
        assert watch.vouches(store.root, False)
        hits = service.recall(service.RecallRequest(store, "okapi cache", k=1)).hits
        assert hits[0].title.startswith("The okapi cache")


def test_a_barrier_planted_as_a_read_starts_covers_the_changes_before_it(watched):
    """The server plants a read's barrier as the command starts (daemon, reads_first): its
    first freshness check waits for that one, and sees every change made before it."""
    store, watch, scans, lock = watched
    with lock:
        service.sync_index(store)
        (store.root / "semantic" / "early.md").write_text("The lynx export runs at dawn\n")
        watch.plant_barrier()
        assert not watch.vouches(store.root, False)  # the change came before the barrier
        assert service.sync_index(store).added == 1
        assert watch.vouches(store.root, False)

        watch.plant_barrier()
        watch.forget_planted()  # the command ended without asking: the next one plants anew
        (store.root / "semantic" / "late.md").write_text("The heron backup runs at noon\n")
        assert not watch.vouches(store.root, False)
        assert service.sync_index(store).added == 1


def test_targeted_syncs_leave_the_index_a_full_scan_agrees_with(watched):
    store, watch, scans, lock = watched
    semantic = store.root / "semantic"
    with lock:
        service.sync_index(store)
        (semantic / "a.md").write_text("The tapir queue drains hourly\n")
        (semantic / "b.md").write_text("The zebra job runs nightly\n")
        service.sync_index(store)
        (semantic / "a.md").write_text("The tapir queue drains every ten minutes\n")
        (semantic / "b.md").rename(semantic / "c.md")
        (semantic / "broken.md").write_text("---\ntitle: [unclosed\n---\nbody\n")
        scans.clear()
        report = service.sync_index(store)
        assert scans == []
        assert len(report.problems) == 1 and "broken.md" in report.problems[0]["path"]

        moved_in = store.root.parent / "incoming"
        moved_in.mkdir()
        (moved_in / "d.md").write_text("The ibis report is mailed on Mondays\n")
        shutil.move(str(moved_in), str(store.root / "imported"))
        report = service.sync_index(store)
        assert scans == [False] and report.added == 1  # a folder moved in: a full scan

    indexing.set_freshness_guard(None)  # now as a process without a watch sees it
    full = service.sync_index(store)
    assert (full.added, full.updated, full.removed) == (0, 0, 0)
    assert full.unchanged == 5 and len(full.problems) == 1
    indexing.set_freshness_guard(watch)
