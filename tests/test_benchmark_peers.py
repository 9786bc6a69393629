"""benchmarks.peers' own plumbing: what a peer is handed, how its answer is read back and scored.
No peer installed, no model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.peers.exchange import export_store, ids_from_stems, write_request
from benchmarks.peers.run import compare, paired, peer_pythons
from benchmarks.project_tasks.data_files import Dataset

MEMORIES = [
    {
        "id": "ghmcp-018",
        "project": "ghmcp",
        "text": "Run `script/generate-docs` after changing a tool.",
    },
    {
        "id": "ghmcp-019",
        "project": "ghmcp",
        "text": "Update the toolsnaps:\n\n  UPDATE_TOOLSNAPS=true go test ./...",
    },
    {"id": "ghmcp-020", "project": "ghmcp", "text": "Use table-driven tests."},
]


def test_export_writes_one_neutral_note_per_memory_holding_its_text(tmp_path: Path) -> None:
    store = export_store(tmp_path, "ghmcp", MEMORIES)

    files = sorted(p.name for p in store.notes.iterdir())
    assert files == ["m001.md", "m002.md", "m003.md"]
    assert (store.notes / "m002.md").read_text(encoding="utf-8") == MEMORIES[1]["text"] + "\n"
    # Why: the note's title comes from its file name; memctl's id would leak the project name.
    assert not any("ghmcp" in name for name in files)
    assert dict(store.id_of) == {"m001": "ghmcp-018", "m002": "ghmcp-019", "m003": "ghmcp-020"}


def test_request_names_the_notes_folder_and_every_query(tmp_path: Path) -> None:
    store = export_store(tmp_path, "ghmcp", MEMORIES)
    write_request(tmp_path / "request.json", store, [{"id": "t1", "text": "add a tool"}], 5)

    request = json.loads((tmp_path / "request.json").read_text(encoding="utf-8"))
    assert request == {
        "store": "ghmcp",
        "notes": str(store.notes),
        "k": 5,
        "queries": [{"id": "t1", "text": "add a tool"}],
    }


def test_ranked_files_map_back_to_ids_in_order_once_each_and_strangers_are_dropped() -> None:
    id_of = {"m001": "a", "m002": "b", "m003": "c"}

    ranked = ["m003", "notes/m001.md", "m003.md", "folder", "m999"]

    assert ids_from_stems(ranked, id_of) == ["c", "a"]


def test_paired_difference_counts_wins_losses_and_ties_over_tasks_where_it_applies() -> None:
    peer = {"t1": {"x": 1.0}, "t2": {"x": 0.0}, "t3": {"x": 0.5}, "t4": {"x": None}}
    base = {"t1": {"x": 0.0}, "t2": {"x": 1.0}, "t3": {"x": 0.5}, "t4": {"x": None}}

    figure = paired(peer, base, "x")

    assert figure is not None
    assert (figure["tasks"], figure["peer_wins"], figure["peer_losses"], figure["ties"]) == (
        3,
        1,
        1,
        1,
    )
    assert figure["difference"] == 0.0
    low, high = figure["interval95"]
    assert low < 0 < high


def test_compare_scores_every_system_with_project_tasks_metrics() -> None:
    tasks = [
        {
            "id": "ghmcp-t01",
            "project": "ghmcp",
            "split": "dev",
            "prompt": "add a tool",
            "labels": {"ghmcp-018": {"grade": 2, "need": "docs"}, "ghmcp-020": {"grade": 1}},
        },
        {"id": "ghmcp-t02", "project": "ghmcp", "split": "dev", "prompt": "fix ci", "labels": {}},
    ]
    data = Dataset([{"key": "ghmcp", "split": "dev"}], MEMORIES, tasks)
    rankings = {
        "hybrid": {"ghmcp-t01": ["ghmcp-019"], "ghmcp-t02": []},
        "bm25": {"ghmcp-t01": [], "ghmcp-t02": []},
        "vector": {"ghmcp-t01": ["ghmcp-018"], "ghmcp-t02": ["ghmcp-019"]},
        "peer": {"ghmcp-t01": ["ghmcp-020", "ghmcp-018"], "ghmcp-t02": ["ghmcp-019"]},
    }

    result = compare(data, tasks, rankings, ["peer"])

    systems = result["dev"]["systems"]
    assert systems["peer"]["essential_recall@5"] == 1.0
    assert systems["hybrid"]["essential_recall@5"] == 0.0
    assert systems["peer"]["any_relevant"] == 1.0
    assert systems["peer"]["false_injection"] == 1.0
    versus = result["dev"]["peer_minus_memctl"]["peer"]["hybrid"]["essential_recall@5"]
    assert (versus["tasks"], versus["peer_wins"], versus["difference"]) == (1, 1, 1.0)


def test_each_peer_interpreter_comes_from_its_flag_or_variable_and_a_missing_one_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("")
    for name in (
        "MEMCTL_PEER_PYTHON",
        "MEMCTL_PEER_PYTHON_BASIC_MEMORY",
        "MEMCTL_PEER_PYTHON_MEMPALACE",
    ):
        monkeypatch.delenv(name, raising=False)

    with pytest.raises(SystemExit, match="MEMCTL_PEER_PYTHON_BASIC_MEMORY"):
        peer_pythons(["basic-memory"], [])
    with pytest.raises(SystemExit, match="no such interpreter"):
        peer_pythons(["basic-memory"], [str(tmp_path / "nope" / "python")])
    with pytest.raises(SystemExit, match="NAME=PATH"):
        peer_pythons(["basic-memory", "mempalace"], [str(python)])

    assert peer_pythons(["basic-memory"], [str(python)]) == {"basic-memory": python}
    monkeypatch.setenv("MEMCTL_PEER_PYTHON_MEMPALACE", str(python))
    assert peer_pythons(["basic-memory", "mempalace"], [f"basic-memory={python}"]) == {
        "basic-memory": python,
        "mempalace": python,
    }
