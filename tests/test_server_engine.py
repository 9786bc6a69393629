"""One engine serves every store of a user, and keeps them apart: interleaved requests for
several stores each get their own store's answer, writes land in the store they name, and an
engine over its memory budget sheds what it keeps yet answers the same. Real engine processes
on real stores in tmp dirs, the bundled model; no timed assertion."""

from __future__ import annotations

import json
import random
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from server_support import (
    engine_home,  # noqa: F401 - this module's own engine folder
    memctl,
    running_pid,
    server_processes,
    start_server,
    status,
    stop_everything,
)

from memctl import service

pytestmark = [pytest.mark.resident_server, pytest.mark.model, pytest.mark.slow]

# Each store knows the same kinds of things, told differently: a query about deploys finds a
# deploy note in every store, so only the right store's note is a right answer.
STORES = {
    "red": ["We deploy the red app with make ship-red", "The red team's database is postgres"],
    "green": ["We deploy the green app with helm upgrade", "The green team's database is mysql"],
    "blue": ["We deploy the blue app with terraform", "The blue team's database is sqlite"],
}
QUERIES = ["how do we deploy", "which database do we use"]


@pytest.fixture
def projects(tmp_path) -> dict[str, Path]:
    made = {}
    for name, notes in STORES.items():
        store = service.init_store(tmp_path / name)
        for text in notes:
            service.add_memory(store, text)
        made[name] = tmp_path / name
    yield made
    stop_everything()


def belongs(answer: list[dict], project: Path, name: str) -> bool:
    """Every hit is a file of this project's store, about this store."""
    store = str(project / ".memory") + "/"
    return bool(answer) and all(
        hit["path"].startswith(store) and name in hit["body"] for hit in answer
    )


def test_interleaved_requests_for_several_stores_are_each_answered_from_their_own(
    projects, tmp_path
):
    start_server(None, tmp_path / "serve.log")
    jobs = [
        (name, kind, n)
        for name in projects
        for kind in ("recall", "recall", "add", "hook")
        for n in range(2)
    ]
    random.Random(7).shuffle(jobs)  # interleaved: no two neighbours need be of one store

    def run(job: tuple[str, str, int]):
        name, kind, n = job
        project = projects[name]
        if kind == "recall":
            return memctl("recall", QUERIES[n], "--json", "-k", "3", cwd=project)
        if kind == "add":
            text = f"The {name} on-call rota number {n} is posted every Monday"
            return memctl("add", text, "--json", "--no-dedup", cwd=project)
        payload = {"session_id": f"{name}-{n}", "cwd": str(project), "prompt": QUERIES[n]}
        return memctl(
            "hook",
            "claude-code",
            "user-prompt-submit",
            cwd=tmp_path,  # the payload's cwd names the store, as Claude Code sends it
            stdin=json.dumps(payload).encode(),
        )

    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(pool.map(run, jobs))

    for (name, kind, _n), answer in zip(jobs, answers, strict=True):
        assert answer.returncode == 0, (name, kind, answer.stderr)
        project = projects[name]
        if kind == "recall":
            assert belongs(json.loads(answer.stdout), project, name), (name, answer.stdout)
        elif kind == "add":
            written = Path(json.loads(answer.stdout)["path"])
            assert written.is_relative_to(project / ".memory") and name in written.read_text()
        else:
            context = json.loads(answer.stdout)["hookSpecificOutput"]["additionalContext"]
            others = [other for other in projects if other != name]
            assert name in context and not any(f"the {o} " in context for o in others)

    engine = status()
    assert engine["running"] and len(server_processes()) == 1  # one engine for all
    opened = {entry["store"]: entry["requests"] for entry in engine["stores"]}
    assert set(opened) == {str(p / ".memory") for p in projects.values()}
    assert sum(opened.values()) == len(jobs)
    for name in projects:  # each add is found in its store, and only there
        for other, other_project in projects.items():
            found = memctl("recall", f"{name} on-call rota", "--json", cwd=other_project)
            assert belongs(json.loads(found.stdout), other_project, other)


def test_an_engine_over_its_memory_budget_sheds_its_caches_and_answers_the_same(
    projects, tmp_path, monkeypatch
):
    expected = {
        name: memctl("recall", "how do we deploy", "--json", cwd=p, server=False).stdout
        for name, p in projects.items()
    }
    monkeypatch.setenv("MEMCTL_ENGINE_MEMORY_MB", "1")  # below any engine: always over
    start_server(None, tmp_path / "serve.log")
    pid = running_pid()
    for _ in range(2):
        for name, project in projects.items():
            warm = memctl("recall", "how do we deploy", "--json", cwd=project)
            assert warm.stdout == expected[name]
    log = (tmp_path / "serve.log").read_text()
    assert "over the memory budget" in log and "shed to" in log
    assert ": memory over budget" not in log  # stores in use are not closed (no thrashing)
    assert running_pid() == pid  # no smaller engine to restart into: it stays
    assert len(status()["stores"]) == len(projects)
