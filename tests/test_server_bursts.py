"""Adds that wait together in the resident server run as one burst (memctl.cli.resident): each
client gets what its add alone would have printed, duplicates within the burst are merged, and
everything written is indexed before the next command. In-process, on real stores and LanceDB,
with the recording embedder; test_server_answers runs concurrent adds through a real server."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from memctl import service
from memctl.cli.resident import ResidentCommands
from memctl.config import open_store
from memctl.store.index import Manifest

DEPLOY = "Deploys go out with make release, then argo promotes them to production"
ADDS = [
    ["add", DEPLOY],
    ["add", DEPLOY, "--json"],  # the same text again: merged into the one just written
    ["add", "ok thanks"],  # short, but asked for by a person: kept
    ["add", "The CI deploy key is AKIAIOSFODNN7EXAMPLE, rotate it monthly with the ops team"],
    ["add", "Release notes are drafted in docs/releases", "--importance", "2"],  # usage error
    ["add", "We met the vendor on Tuesday about the invoice export", "--type", "episodic"],
    ["add", "Use pnpm, never npm, for the frontend packages", "--json", "--tag", "frontend"],
    ["add", "Use pnpm, never npm, for the frontend packages and the docs site"],
]
SEEDS = [
    "The staging cluster is reset every Sunday night at 02:00 UTC",
    "Database migrations run with alembic upgrade head before each deploy",
]
ID = re.compile(r"\b[0-9a-hjkmnp-tv-z]{12}\b")


@pytest.fixture
def runner(fake_embedder) -> ResidentCommands:
    runner = ResidentCommands()
    runner.prepare()
    return runner


def seeded(folder: Path) -> Path:
    store = service.init_store(folder)
    for text in SEEDS:
        service.add_memory(store, text)
    return folder


def request(project: Path, argv: list[str]) -> dict:
    return {"argv": argv, "cwd": str(project), "env": {**os.environ, "MEMCTL_NO_SERVER": "1"}}


def normalized(project: Path, answers) -> list[tuple[int, list[tuple[int, str]]]]:
    """The answers with the project folder and each memory id (by first appearance) named alike."""
    names: dict[str, str] = {}

    def rename(match: re.Match) -> str:
        return names.setdefault(match.group(0), f"<id{len(names)}>")

    return [
        (code, [(n, ID.sub(rename, data.decode().replace(str(project), "<p>"))) for n, data in out])
        for code, out in answers
    ]


def memory_files(project: Path) -> dict[str, str]:
    root = project / ".memory"
    return {
        path.relative_to(root).as_posix(): path.read_text()
        for path in root.rglob("*.md")
        if path.parent != root
    }


def test_a_burst_answers_each_add_as_it_alone_would_and_indexes_all(runner, tmp_path):
    alone_project, burst_project = seeded(tmp_path / "alone"), seeded(tmp_path / "burst")
    alone = []
    for argv in ADDS:
        alone.append(runner.run(request(alone_project, argv), b"", None))
        assert runner.after_reply() == []
    burst = runner.run_burst([(request(burst_project, argv), b"") for argv in ADDS], None)

    assert normalized(burst_project, burst) == normalized(alone_project, alone)
    assert [code for code, _ in burst] == [0, 0, 0, 0, 2, 0, 0, 0]
    files = memory_files(burst_project)
    assert len(files) == len(memory_files(alone_project))
    assert sum(DEPLOY in text for text in files.values()) == 1, "the same text stored once"
    assert any("[REDACTED_AWS_KEY]" in text for text in files.values())
    assert not any("AKIAIOSFODNN7EXAMPLE" in text for text in files.values())

    store = open_store(burst_project / ".memory")
    indexed = Manifest.load(store.index_dir).files
    assert not set(files) <= set(indexed), "the burst answered before indexing"
    assert runner.after_reply() == []
    assert set(files) <= set(Manifest.load(store.index_dir).files)
    assert service.sync_index(store).added == 0  # nothing was left for a full sync to find


def test_a_burst_over_two_stores_writes_each_add_to_its_own(runner, tmp_path):
    first, second = seeded(tmp_path / "first"), seeded(tmp_path / "second")
    answers = runner.run_burst(
        [
            (request(first, ["add", DEPLOY]), b""),
            (request(second, ["add", DEPLOY]), b""),
            (request(first, ["add", "-"]), b"On-call swaps are posted in the oncall channel"),
        ],
        None,
    )
    assert [code for code, _ in answers] == [0, 0, 0]
    assert runner.after_reply() == []
    for project, count in ((first, 4), (second, 3)):
        files = memory_files(project)
        assert len(files) == count
        assert sum(DEPLOY in text for text in files.values()) == 1
        for _, out in answers:
            written = out[0][1].decode().split()[-1]
            if written.startswith(str(project)):
                assert Path(written).is_file()
    assert "oncall channel" in "".join(memory_files(first).values())
