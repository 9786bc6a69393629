"""The benchmark of learning from real sessions: labels, judge, corpus integrity, and one run.

The end-to-end test plays a tiny synthetic project of two sessions through the real SessionEnd
ingest (a child process) and the real hook replay, with labels written for it here.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from benchmarks.sessions import corpus, judge, labels, transcript
from benchmarks.sessions.run import main as run_benchmark

CWD = "/home/dev/widget"


def _line(record: dict) -> str:
    base = {"sessionId": "S", "cwd": CWD, "isSidechain": False, "userType": "external"}
    return json.dumps({**base, **record})


def _prompt(text: str, when: str) -> str:
    return _line({"type": "user", "timestamp": when, "message": {"role": "user", "content": text}})


def _reply(text: str, when: str) -> str:
    return _line(
        {
            "type": "assistant",
            "timestamp": when,
            "message": {"role": "assistant", "content": [{"type": "text", "text": text}]},
        }
    )


def _bash(command: str, tool_id: str, when: str) -> list[str]:
    call = {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": command}}
    result = {"type": "tool_result", "tool_use_id": tool_id, "content": "ok: 12 passed"}
    return [
        _line({"type": "assistant", "timestamp": when, "message": {"content": [call]}}),
        _line({"type": "user", "timestamp": when, "message": {"content": [result]}}),
    ]


def _session(lines: list[str], session_id: str) -> bytes:
    return (
        "\n".join(lines).replace('"sessionId": "S"', f'"sessionId": "{session_id}"') + "\n"
    ).encode()


FIRST = _session(
    [
        _prompt("add a --json flag to the export command", "2026-01-05T10:00:00Z"),
        _reply("I added the flag in export.py.", "2026-01-05T10:00:05Z"),
        *_bash("make check", "t1", "2026-01-05T10:00:10Z"),
        _prompt(
            "no, never use pip here. we always install with `uv sync` and run the tests with "
            "`make check` before committing.",
            "2026-01-05T10:01:00Z",
        ),
        _reply("Understood: uv sync, then make check.", "2026-01-05T10:01:05Z"),
    ],
    "11111111-aaaa",
)
SECOND = _session(
    [
        _prompt("rename the export command to dump", "2026-01-06T09:00:00Z"),
        _reply("Renamed it.", "2026-01-06T09:00:05Z"),
        _prompt("remember: install with uv sync, not pip", "2026-01-06T09:01:00Z"),
    ],
    "22222222-bbbb",
)


def _write_project(tmp_path: Path) -> tuple[Path, Path, Path]:
    cache = tmp_path / "cache"
    entries = []
    for name, raw, started in (
        ("2026-01-05-11111111", FIRST, "2026-01-05T10:00:00Z"),
        ("2026-01-06-22222222", SECOND, "2026-01-06T09:00:00Z"),
    ):
        (cache / "widget").mkdir(parents=True, exist_ok=True)
        (cache / "widget" / f"{name}.jsonl").write_bytes(raw)
        entries.append(
            {
                "id": f"widget/{name}",
                "project": "widget",
                "half": "dev",
                "repository": "example/widget",
                "ref": "refs/heads/main",
                "commit": "0" * 40,
                "path": f"sessions/{name}.jsonl",
                "git_blob": "0" * 40,
                "license": "none",
                "committed": False,
                "sha256": hashlib.sha256(raw).hexdigest(),
                "bytes": len(raw),
                "session_id": name,
                "started": started,
                "lines": raw.count(b"\n"),
            }
        )
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"sessions": entries}), encoding="utf-8")
    label_dir = tmp_path / "labels"
    label_dir.mkdir()
    item = {
        "id": "w1",
        "kind": "correction",
        "statement": "Install with uv sync, never pip.",
        "lines": [5],
        "yes": [["uv sync"], ["pip"]],
        "partly": [["uv sync"]],
    }
    wrong = {
        "id": "w2",
        "kind": "fact",
        "status": "refuted",
        "statement": "(refuted) Dependencies are installed with pip.",
        "lines": [5],
        "yes": [["install with pip", "pip install"]],
    }
    (label_dir / "widget.json").write_text(
        json.dumps(
            {
                "project": "widget",
                "sessions": {"2026-01-05-11111111": [item, wrong], "2026-01-06-22222222": []},
                "repeats": [
                    {"item": "w1", "session": "2026-01-06-22222222", "line": 3, "said": "uv sync"}
                ],
            }
        ),
        encoding="utf-8",
    )
    return cache, manifest, label_dir


# --- labels and judge (pure) --------------------------------------------------------------------


def test_a_check_needs_every_group_and_refuted_claims_make_a_memory_wrong():
    item = labels.Item(
        "p/a", "p/s", "command", "", (1,), (("make check",), ("uv", "pip")), (("make",),)
    )
    refuted = labels.Item("p/b", "p/s", "fact", "", (1,), (("tests are green",),), (), "refuted")
    assert labels.grade("Run `make check` after uv sync.", item) == "yes"
    assert labels.grade("Run make check.", item) == "partly"
    assert labels.grade("Nothing related.", item) == "no"
    both = judge.judge_memory("Run make check with uv. The tests are green.", [item, refuted])
    assert both.verdict == "wrong"  # a memory that carries a refuted claim misleads
    assert judge.judge_memory("Run make check with uv.", [item, refuted]).verdict == "useful"
    assert judge.judge_memory("The weather is nice.", [item, refuted]).verdict == "noise"


def test_narration_is_counted_per_sentence_after_speaker_labels():
    said = judge.sentences(
        "## Summary\nAssistant: Let me check the tests. The suite uses make check.\n- Done."
    )
    assert said == ["Let me check the tests.", "The suite uses make check.", "Done."]
    assert [judge.is_narration(s) for s in said] == [True, False, True]


def test_only_what_a_person_typed_is_a_prompt(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(
        FIRST
        + _line(
            {"type": "user", "message": {"content": "<command-name>/clear</command-name>"}}
        ).encode()
        + b"\n"
    )
    prompts = [e for e in transcript.events(path) if e.kind == "prompt"]
    assert [e.line for e in prompts] == [1, 5]
    tools = [e for e in transcript.events(path) if e.kind == "tool"]
    assert tools[0].tool == "Bash" and tools[0].tool_input == {"command": "make check"}


def test_every_committed_transcript_matches_the_manifest(tmp_path, monkeypatch):
    monkeypatch.setenv(corpus.CACHE_ENV, str(tmp_path))
    committed = [s for s in corpus.load_sessions() if s.committed]
    assert len(committed) >= 30
    for session in committed:
        path = corpus.transcript_path(session)
        assert corpus.digest(path.read_bytes()) == session.sha256


def test_a_session_kept_out_of_the_repository_says_how_to_fetch_it(tmp_path, monkeypatch):
    monkeypatch.setenv(corpus.CACHE_ENV, str(tmp_path))
    outside = next(s for s in corpus.load_sessions() if not s.committed)
    with pytest.raises(corpus.CorpusError, match="benchmarks.sessions.fetch"):
        corpus.transcript_path(outside)


def test_labels_cite_lines_inside_their_transcripts():
    sessions = {s.id: s for s in corpus.load_sessions()}
    items, repeats = labels.load_labels()
    assert {i.session for i in items} <= set(sessions)
    for item in items:
        assert all(0 < line <= sessions[item.session].lines for line in item.lines), item.id
    known = {i.id: i for i in items}
    for repeat in repeats:
        earlier = sessions[known[repeat.item].session]
        later = sessions[repeat.session]
        assert earlier.project == later.project and earlier.started < later.started
        assert 0 < repeat.line <= later.lines


# --- one run, end to end ------------------------------------------------------------------------


@pytest.mark.model
@pytest.mark.slow
def test_the_scorer_runs_a_tiny_project_through_the_real_hooks(tmp_path, monkeypatch):
    cache, manifest, label_dir = _write_project(tmp_path)
    monkeypatch.setenv(corpus.CACHE_ENV, str(cache))
    out = tmp_path / "report.json"
    code = run_benchmark(
        [
            "--half", "dev",
            "--manifest", str(manifest),
            "--labels", str(label_dir),
            "--workdir", str(tmp_path / "work"),
            "--json", str(out),
        ]
    )  # fmt: skip
    assert code == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    sessions = report["sessions"]
    assert [s["id"] for s in sessions] == [
        "widget/2026-01-05-11111111",
        "widget/2026-01-06-22222222",
    ]
    assert all(s["ingest"]["outcome"] == "ok" and s["ingest"]["peak_rss_mb"] > 0 for s in sessions)
    assert set(sessions[0]["grades"]) == {"widget/w1"}  # the refuted item is not recalled
    verdicts = {m["verdict"] for s in sessions for m in s["memories"]}
    assert verdicts <= {"useful", "partly", "noise", "wrong"}
    summary = report["summaries"]["dev"]
    assert summary["items"] == 1 and summary["memories"] == sum(
        len(s["memories"]) for s in sessions
    )
    assert summary["repeats"] == 1
    assert report["repeats"][0]["grade"] in {"yes", "partly", "no"}
