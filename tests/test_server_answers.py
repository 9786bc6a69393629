"""The resident server answers exactly as the in-process path does, sees hand edits at once,
and its client imports nothing heavy. Real server processes on real stores in tmp dirs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from server_support import (
    RUNTIME_ENV,
    engine_home,  # noqa: F401 - this module's own engine folder
    memctl,
    memctl_env,
    running_pid,
    start_server,
    status,
    stop_everything,
    wait_for_server,
)

from memctl import service

pytestmark = [pytest.mark.resident_server, pytest.mark.model, pytest.mark.slow]

NOTES = [
    ("We deploy with make release, then promote the rollout with argo", ["deploy"]),
    ("Use pnpm, never npm, for the frontend packages", ["frontend"]),
    ("Database migrations run with alembic upgrade head before each deploy", ["database"]),
    ("The staging cluster is reset every Sunday night at 02:00 UTC", ["staging"]),
    ("Error TW-E4012 means the payment webhook secret rotated; re-sync it from vault", ["ops"]),
    ("Prefer small pull requests with one reviewer from the owning team", ["review"]),
]


def served_project(folder: Path):
    root = folder / "project"
    store = service.init_store(root)
    for text, tags in NOTES:
        service.add_memory(store, text, tags=tags)
    server = start_server(store.root, folder / "serve.log")
    yield root
    stop_everything(store.root)
    server.wait(timeout=60)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """One served store for the tests of this module that leave its server running (each
    compares the warm answer with the in-process one on the store as it is then)."""
    yield from served_project(tmp_path_factory.mktemp("served"))


@pytest.fixture
def own_project(tmp_path, monkeypatch):
    """A served store with an engine of its own, for a test that stops its engine."""
    # Why /tmp and not tmp_path: a socket path must stay under ~107 bytes.
    runtime = tempfile.mkdtemp(prefix="memctl-own-")
    monkeypatch.setenv(RUNTIME_ENV, runtime)
    try:
        yield from served_project(tmp_path)
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


def both_ways(project: Path, *args: str, stdin: bytes | None = None):
    """The same command in-process (MEMCTL_NO_SERVER=1) and through the server."""
    requests_before = status(project / ".memory")["requests"]
    cold = memctl(*args, cwd=project, server=False, stdin=stdin)
    warm = memctl(*args, cwd=project, server=True, stdin=stdin)
    assert status(project / ".memory")["requests"] == requests_before + 1, "the server answered"
    return cold, warm


def assert_same(cold: subprocess.CompletedProcess, warm: subprocess.CompletedProcess) -> None:
    assert warm.returncode == cold.returncode, (cold.stderr, warm.stderr)
    assert warm.stdout == cold.stdout
    assert warm.stderr == cold.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("recall", "how do we ship to production"),
        ("recall", "how do we ship to production", "--json"),
        ("recall", "TW-E4012", "--format", "context"),
        ("recall", "package manager", "-k", "2", "--tag", "frontend"),
        ("context", "database migration", "--budget", "300"),
        ("context", "--json"),
        ("index", "--json"),
        ("recall", "anything", "--format", "yaml"),  # a usage error: same words, same exit code
        ("recall",),  # a missing argument: click's usage message, exit 2
    ],
)
def test_warm_answers_are_byte_identical_to_in_process(project, args):
    if args[0] == "index":
        # Why: each run tidies the table (removes versions older than a few seconds), so what
        # the second run finds to tidy depends on the clock; run both ways on a tidy table.
        memctl("index", cwd=project, server=False)
    cold, warm = both_ways(project, *args)
    if args[0] == "index":
        cold_report, warm_report = json.loads(cold.stdout), json.loads(warm.stdout)
        for report in (cold_report, warm_report):
            for table in report["maintenance"].values():
                table["versions_removed"] = table["bytes_removed"] = 0
        assert cold_report == warm_report
        cold.stdout = warm.stdout = b""
    assert_same(cold, warm)


def test_the_prompt_hook_answers_the_same_json_warm(project):
    def prompt(session: str) -> bytes:
        return json.dumps(
            {
                "session_id": session,
                "transcript_path": str(project / "t.jsonl"),
                "cwd": str(project),
                "hook_event_name": "UserPromptSubmit",
                "prompt": "How do we deploy the release to production?",
            }
        ).encode()

    requests_before = status(project / ".memory")["requests"]
    args = ("hook", "claude-code", "user-prompt-submit")
    # Why two sessions: a session is never shown the same memory twice.
    cold = memctl(*args, cwd=project, server=False, stdin=prompt("cold-session"))
    warm = memctl(*args, cwd=project, server=True, stdin=prompt("warm-session"))
    assert status(project / ".memory")["requests"] == requests_before + 1
    assert_same(cold, warm)
    context = json.loads(warm.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "make release" in context


def test_recall_and_the_hot_hooks_run_as_typed_use_cases_with_the_same_ranking(project):
    """The engine answers recall and the prompt and pre-tool-use hooks by running their
    use-cases (status counts them), not by replaying argv; the ranking is the in-process one."""

    def payload(event: str, session: str, **fields) -> bytes:
        base = {"session_id": session, "cwd": str(project), "hook_event_name": event}
        return json.dumps({**base, **fields}).encode()

    before = status(project / ".memory")["answered_by"]
    question = ("recall", "which package manager for the frontend", "-k", "4", "--json")
    cold, warm = both_ways(project, *question)
    assert_same(cold, warm)
    ranking = [hit["id"] for hit in json.loads(warm.stdout)]
    assert len(ranking) == 4 and ranking == [hit["id"] for hit in json.loads(cold.stdout)]
    answers = {}
    for event, slug, fields in (
        ("UserPromptSubmit", "user-prompt-submit", {"prompt": "Which package manager, npm?"}),
        ("PreToolUse", "pre-tool-use", {"tool_name": "Read", "tool_input": {"file_path": "x"}}),
    ):
        cold = memctl(
            "hook",
            "claude-code",
            slug,
            cwd=project,
            server=False,
            stdin=payload(event, "c", **fields),
        )
        warm = memctl(
            "hook",
            "claude-code",
            slug,
            cwd=project,
            server=True,
            stdin=payload(event, "w", **fields),
        )
        assert_same(cold, warm)
        answers[slug] = warm.stdout
    prompt_context = json.loads(answers["user-prompt-submit"])["hookSpecificOutput"]
    assert "pnpm" in prompt_context["additionalContext"]
    replayed = memctl("recall", "--path", str(project / "x"), "--json", cwd=project, server=True)
    assert replayed.returncode == 0, replayed.stderr
    after = status(project / ".memory")["answered_by"]
    assert after["recall"] == before["recall"] + 1
    assert after["hook"] == before["hook"] + 2
    assert after["argv"] == before["argv"] + 1  # `recall --path` is replayed as a command line


def test_a_config_with_warnings_is_replayed_so_its_warnings_print_as_in_process(project):
    config = project / ".memory" / "config.yaml"
    original = config.read_text()
    config.write_text(original + "recal: {k: 3}\n")  # a typo: a warning on every command
    try:
        before = status(project / ".memory")["answered_by"]
        cold, warm = both_ways(project, "recall", "how do we ship to production")
        assert_same(cold, warm)
        assert b"unknown setting 'recal'" in warm.stderr
        after = status(project / ".memory")["answered_by"]
        assert (after["recall"], after["argv"]) == (before["recall"], before["argv"] + 1)
    finally:
        config.write_text(original)


def test_warm_reads_leave_their_bookkeeping_for_the_next_request(project):
    """What the server writes after its reply (access counts, the prompt hook's shown list) is
    there for the very next command."""
    from memctl.store.access import load_access

    state = project / ".memory" / ".state"
    before = load_access(state)
    warm = memctl("recall", "TW-E4012", "--json", cwd=project, server=True)
    hit = json.loads(warm.stdout)[0]["id"]
    memctl("index", cwd=project, server=True)  # Why: it runs once the recall's upkeep is done
    assert load_access(state)[hit].count == before.get(hit, _NEVER).count + 1

    def prompt() -> bytes:
        return json.dumps(
            {
                "session_id": "bookkeeping-session",
                "cwd": str(project),
                "hook_event_name": "UserPromptSubmit",
                "prompt": "What does error TW-E4012 mean?",
            }
        ).encode()

    args = ("hook", "claude-code", "user-prompt-submit")
    first = memctl(*args, cwd=project, server=True, stdin=prompt())
    assert "TW-E4012" in first.stdout.decode()
    second = memctl(*args, cwd=project, server=True, stdin=prompt())
    assert "TW-E4012" not in second.stdout.decode(), "a session is never shown a memory twice"


class _NEVER:
    count = 0


def test_add_through_the_server_writes_the_file_before_it_answers(project):
    added = memctl(
        "add", "Feature flags live in flags.yaml, reviewed weekly", "--json", cwd=project
    )
    assert added.returncode == 0, added.stderr
    result = json.loads(added.stdout)
    assert (
        Path(result["path"])
        .read_text()
        .endswith("\n\nFeature flags live in flags.yaml, reviewed weekly\n")
    )
    from_stdin = memctl("add", "-", cwd=project, stdin=b"On-call swaps are posted in #oncall")
    assert from_stdin.returncode == 0 and from_stdin.stdout.startswith(b"Added ")
    found = memctl("recall", "where are feature flags", "--json", cwd=project, server=False)
    assert json.loads(found.stdout)[0]["id"] == result["id"]
    refused = both_ways(project, "add", "Release notes live in docs/releases", "--importance", "2")
    assert_same(*refused)
    assert refused[1].returncode == 2


def test_concurrent_adds_all_land_and_one_text_added_twice_at_once_is_stored_once(project):
    """Six clients at once (the server may take them as one burst): every add is on disk when
    its client hears back, and of two clients adding the same text one writes it, the other
    is told it merged into that memory."""
    same = "The nightly warehouse export runs from cron on batch-2 at 03:00 UTC"
    texts = [
        "Grafana dashboards for the checkout service live in the observability repo",
        "The mobile app pins its API version in config/api_version.txt",
        "Feature branches are deleted automatically a week after they merge",
        "Load tests run against the perf cluster, never against staging",
        same,
        same,
    ]
    with ThreadPoolExecutor(max_workers=len(texts)) as pool:
        answers = list(pool.map(lambda t: memctl("add", t, "--json", cwd=project), texts))
    results = []
    for text, answer in zip(texts, answers, strict=True):
        assert answer.returncode == 0, answer.stderr
        result = json.loads(answer.stdout)
        assert text in Path(result["path"]).read_text()
        results.append(result)
    twice = sorted(results[-2:], key=lambda r: r["action"])
    assert [r["action"] for r in twice] == ["created", "merged"]
    assert twice[1]["merged_into"] == twice[0]["id"]
    stored = [p for p in (project / ".memory").rglob("*.md") if same in p.read_text()]
    assert len(stored) == 1
    found = memctl("recall", same, "--json", "-k", "1", cwd=project)
    assert json.loads(found.stdout)[0]["id"] == twice[0]["id"]


def test_a_hand_edit_is_seen_by_the_next_warm_recall(project):
    store = project / ".memory"
    note = store / "semantic" / "zebra-note.md"
    note.write_text("The zebrafish fixture lives in tests/fixtures/zebrafish.json\n")
    found = memctl("recall", "zebrafish fixture", "--json", cwd=project)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)[0]["path"] == str(note)

    note.write_text("The okapi fixture replaced it: tests/fixtures/okapi.json\n")
    found = json.loads(memctl("recall", "okapi fixture", "--json", cwd=project).stdout)
    assert found[0]["path"] == str(note) and "okapi" in found[0]["body"]

    note.unlink()
    found = json.loads(memctl("recall", "okapi fixture", "--json", cwd=project).stdout)
    assert str(note) not in [hit["path"] for hit in found]

    # A folder of memories moved in at once (its files get no event of their own).
    outside = project / "incoming"
    outside.mkdir()
    (outside / "tapir.md").write_text("The tapir queue drains every hour on the hour\n")
    shutil.move(str(outside), str(store / "imported"))
    found = json.loads(memctl("recall", "tapir queue", "--json", cwd=project).stdout)
    assert found[0]["path"] == str(store / "imported" / "tapir.md")
    shutil.rmtree(store / "imported")
    found = json.loads(memctl("recall", "tapir queue", "--json", cwd=project).stdout)
    assert "tapir" not in " ".join(hit["body"] for hit in found)
    assert running_pid(store) is not None  # all of it answered by the one server


def test_the_client_path_imports_nothing_heavy(project):
    code = (
        "import atexit, sys\n"
        "heavy = ('typer', 'click', 'rich', 'yaml', 'lancedb', 'lance', 'pyarrow', 'numpy',\n"
        "         'onnxruntime', 'fastembed', 'tokenizers', 'litellm')\n"
        "atexit.register(lambda: print('LOADED', [m for m in heavy if m in sys.modules]))\n"
        "sys.argv = ['memctl', 'recall', 'how do we deploy', '--json']\n"
        "from memctl.cli.app import main\n"
        "main()\n"
    )
    before = status(project / ".memory")["requests"]
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=project,
        env=memctl_env(True),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert status(project / ".memory")["requests"] == before + 1
    assert json.loads(done.stdout.rsplit("LOADED", 1)[0])[0]["title"].startswith("We deploy")
    assert done.stdout.rsplit("LOADED", 1)[1].strip() == "[]"


def test_status_reports_the_contract_keys_and_stop_stops(own_project):
    project = own_project
    store = project / ".memory"
    memctl("recall", "deploy", cwd=project)  # the engine opens the store
    shown = memctl("server", "status", "--json", cwd=project)
    data = json.loads(shown.stdout)
    assert set(data) == {
        *("running", "pid", "socket", "version", "uptime_s", "requests", "store"),
        *("rss_mb", "memory_budget_mb", "stores", "answered_by"),
    }
    assert data["answered_by"] == {"recall": 1, "hook": 0, "argv": 0}
    assert data["running"] is True and data["store"] == str(store)
    engine_socket = Path(os.environ[RUNTIME_ENV]) / "engine.sock"
    assert data["socket"] == str(engine_socket)
    assert [entry["store"] for entry in data["stores"]] == [str(store)]
    assert data["stores"][0]["requests"] == 1 and 0 < data["rss_mb"]
    stopped = memctl("server", "stop", cwd=project)
    assert stopped.returncode == 0 and f"pid {data['pid']}".encode() in stopped.stdout
    after = json.loads(memctl("server", "status", "--json", cwd=project).stdout)
    assert after["running"] is False and after["pid"] is None
    assert not engine_socket.exists()
    assert not (store / ".state" / "server.sock").exists()  # nothing of it in the store
    # the next hot command answers in-process and starts a new server for the call after it
    found = memctl("recall", "deploy", "--json", cwd=project)
    assert found.returncode == 0 and json.loads(found.stdout)
    assert wait_for_server(store, not_pid=data["pid"]) != data["pid"]


def test_warm_recall_follows_edits_forgets_and_writes_as_in_process_recall_does(project):
    """The server answers the vector side from the rows it keeps in memory: after each kind of
    change its answer is still the in-process one (which reads lance afresh)."""
    query = ("recall", "how do we roll out a release to production", "-k", "10", "--json")

    def warm_then_cold() -> list[dict]:
        warm = memctl(*query, cwd=project, server=True)
        cold = memctl(*query, cwd=project, server=False)
        assert_same(cold, warm)
        return json.loads(warm.stdout)

    assert warm_then_cold()  # the server keeps the table from here on
    store = project / ".memory"
    note = store / "semantic" / "rollout-note.md"
    note.write_text("Releases roll out to production through the canary ring first\n")
    assert str(note) in [hit["path"] for hit in warm_then_cold()]
    note.write_text("Releases reach production after the staging soak of one day\n")
    hits = warm_then_cold()
    assert "staging soak" in " ".join(hit["body"] for hit in hits)
    assert "canary ring" not in " ".join(hit["body"] for hit in hits)

    doomed = next(hit for hit in hits if hit["path"] == str(note))["id"]
    forgotten = memctl("forget", doomed, "--yes", cwd=project, server=True)
    assert forgotten.returncode == 0, forgotten.stderr
    assert doomed not in [hit["id"] for hit in warm_then_cold()]

    added = memctl(
        "add", "Production rollouts pause during the Friday freeze", "--json", cwd=project
    )
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["id"] in [hit["id"] for hit in warm_then_cold()]
