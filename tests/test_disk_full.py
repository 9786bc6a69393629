"""A full disk or a file-size limit: one clear line naming the limit (never "failed
unexpectedly", never an unrelated database error), and `add` reports success exactly when the
memory file was written. Real `memctl add` processes under RLIMIT_FSIZE, and on a small tmpfs
filled up (where this machine lets a test mount one)."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIRST = "We deploy with make release, then promote the rollout"
TEXT = "The staging database is refreshed from production every Sunday night"

pytestmark = [pytest.mark.slow, pytest.mark.model]


def memctl(store: Path, *args: str, file_size: int | None = None) -> subprocess.CompletedProcess:
    def limit() -> None:
        if file_size is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))

    env = {**os.environ, "PYTHONPATH": str(REPO), "MEMCTL_NO_SERVER": "1"}
    return subprocess.run(
        [sys.executable, "-m", "memctl", "--store", str(store), *args],
        env=env,
        capture_output=True,
        check=False,
        preexec_fn=limit,
        cwd=store.parent,
    )


def new_store(folder: Path) -> Path:
    from memctl import service

    store = service.init_store(folder)
    first = memctl(store.root, "add", FIRST)
    assert first.returncode == 0, first.stderr
    return store.root


def landed(store: Path) -> bool:
    return any(TEXT in p.read_text() for p in store.rglob("*.md"))


def check_outcome(store: Path, done: subprocess.CompletedProcess, limit_words: str) -> None:
    err = done.stderr.decode()
    assert "failed unexpectedly" not in err and "Traceback" not in err, err
    assert "cannot rollback" not in err, err
    assert (done.returncode == 0) is landed(store), (done.returncode, err)
    if done.returncode != 0:
        [line] = [line for line in err.splitlines() if line.startswith("Error:")]
        assert limit_words in line, line
    assert any(FIRST in p.read_text() for p in store.rglob("*.md"))  # nothing else lost
    listed = memctl(store, "list")
    assert listed.returncode == 0 and FIRST[:20] in listed.stdout.decode()


@pytest.mark.parametrize("kilobytes", [0, 1, 3, 8, 24])
def test_the_file_size_limit_is_named_and_success_means_written(tmp_path, kilobytes):
    store = new_store(tmp_path / "project")

    done = memctl(store, "add", TEXT, file_size=kilobytes * 1024)

    check_outcome(store, done, "file-size limit")
    if done.returncode == 0 and b"not indexed" in done.stderr:
        caught_up = memctl(store, "recall", "staging database refresh", "--json")
        assert caught_up.returncode == 0 and b"Sunday" in caught_up.stdout


@pytest.fixture
def small_disk():
    """A 3 MB tmpfs, or a skip saying why there is none."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root and mount")
    folder = Path(tempfile.mkdtemp(prefix="memctl-full-"))
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(folder)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        folder.rmdir()
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    yield folder
    subprocess.run(["umount", str(folder)], check=False)
    folder.rmdir()


def fill(disk: Path, leave_bytes: int) -> None:
    """Fill the disk up to `leave_bytes` free."""
    info = os.statvfs(disk)
    free = info.f_bavail * info.f_frsize
    with open(disk / "filler", "ab") as filler:
        filler.write(b"\0" * max(0, free - leave_bytes))


@pytest.mark.parametrize("kilobytes", [0, 4, 16, 48])
def test_a_full_disk_is_named_and_success_means_written(small_disk, kilobytes):
    project = small_disk / f"project{kilobytes}"
    store = new_store(project)
    fill(small_disk, kilobytes * 1024)

    done = memctl(store, "add", TEXT)

    check_outcome(store, done, "no space left")
    (small_disk / "filler").unlink()
