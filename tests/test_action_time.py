"""Action-time memory in a real git project: the PreToolUse hook, staleness, renames, project
scoping, the ledger. Plumbing tests: the recording fake embedder stands in for the model."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memctl.agents.action_events import ALWAYS_HEADING
from memctl.cli.app import app
from memctl.core.trust.fence import is_fenced
from memctl.store.code_tree import working_tree

runner = CliRunner()


def invoke(*args: str, input: str | None = None):
    return runner.invoke(app, list(args), input=input)


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], check=True, capture_output=True, text=True
    ).stdout


def memory_file(root: Path, name: str, front: str, body: str) -> Path:
    path = root / ".memory" / "procedural" / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nid: {name}\ntype: procedural\n{front}---\n\n{body}\n")
    return path


@pytest.fixture
def project(tmp_path, monkeypatch, fake_embedder):
    for key, value in {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }.items():
        monkeypatch.setenv(key, value)
    root = tmp_path / "shop"
    (root / "src" / "i18n").mkdir(parents=True)
    (root / "src" / "i18n" / "Strings.resx").write_text("<root/>\n")
    (root / "src" / "loader.py").write_text("class ResourceLoader:\n    pass\n")
    git(root, "init", "-q")
    git(root, "remote", "add", "origin", "git@github.com:acme/shop.git")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    monkeypatch.chdir(root)
    monkeypatch.delenv("MEMCTL_STORE", raising=False)
    assert invoke("init").exit_code == 0
    memory_file(
        root,
        "resxrule0001",
        "paths:\n- '**/*.resx'\n",
        "When you change a .resx file, regenerate its Designer.cs too.",
    )
    memory_file(
        root,
        "loaderrule01",
        "title: Loader caching\npaths:\n- src/loader.py\nsymbols:\n- ResourceLoader\n",
        "ResourceLoader caches every bundle; call reload after edits.",
    )
    return root


def pre_tool_use(root: Path, session: str, tool: str, **tool_input) -> str:
    payload = {
        "hook_event_name": "PreToolUse",
        "session_id": session,
        "cwd": str(root),
        "tool_name": tool,
        "tool_input": tool_input,
    }
    result = invoke("hook", "claude-code", "pre-tool-use", input=json.dumps(payload))
    assert result.exit_code == 0, result.output
    if not result.stdout.strip():
        return ""
    output = json.loads(result.stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == "PreToolUse"
    return output["additionalContext"]


def test_the_hook_injects_what_is_anchored_to_the_file_once_per_session(project):
    resx = str(project / "src" / "i18n" / "Strings.resx")
    first = pre_tool_use(project, "s1", "Edit", file_path=resx, old_string="a", new_string="b")
    assert "regenerate its Designer.cs" in first and "ResourceLoader" not in first
    again = pre_tool_use(project, "s1", "Read", file_path=resx)
    assert "regenerate its Designer.cs" not in again
    other_session = pre_tool_use(project, "s2", "Read", file_path=resx)
    assert "regenerate its Designer.cs" in other_session


def test_a_memory_whose_code_is_gone_is_shown_as_stale_never_as_fact(project):
    (project / "src" / "loader.py").write_text("def load():\n    pass\n")  # symbol gone
    context = pre_tool_use(project, "s1", "Write", file_path="src/loader.py", content="x = 1")
    assert "Possibly outdated" in context
    assert "Loader caching" in context and "call reload" not in context  # no body, as fact
    listed = invoke("stale", "--json")
    assert listed.exit_code == 0, listed.output
    assert [(m["id"], m["missing_symbols"]) for m in json.loads(listed.stdout)] == [
        ("loaderrule01", ["ResourceLoader"])
    ]


def test_a_git_rename_carries_the_anchor_and_a_deletion_makes_it_stale(project):
    assert invoke("index").exit_code == 0  # remembers the commit anchors were checked at
    git(project, "mv", "src/loader.py", "src/resources_loader.py")
    git(project, "rm", "-q", "src/i18n/Strings.resx")
    git(project, "commit", "-qm", "move")
    synced = invoke("index", "--json")
    assert synced.exit_code == 0, synced.output
    assert json.loads(synced.stdout)["anchors_carried"] == ["loaderrule01"]
    text = (project / ".memory" / "procedural" / "loaderrule01.md").read_text()
    assert "- src/resources_loader.py\n" in text
    stale = json.loads(invoke("stale", "--json").stdout)
    assert [m["id"] for m in stale] == ["resxrule0001"]


def test_the_symbol_index_reads_only_files_whose_content_changed(project, monkeypatch):
    state = project / ".memory" / ".state"
    tree = working_tree(project, state)
    assert "ResourceLoader" in tree.symbols()
    reads: list[str] = []
    (project / "src" / "new.py").write_text("class ShinyThing:\n    pass\n")
    git(project, "add", "src/new.py")
    monkeypatch.setattr("memctl.store.code_tree.MEMO_SECONDS", 0.0)
    fresh = working_tree(project, state)
    original = fresh.read
    fresh.read = lambda path: reads.append(path) or original(path)
    assert {"ResourceLoader", "ShinyThing"} <= fresh.symbols()
    assert reads == ["src/new.py"]


def test_recall_path_and_add_proposals(project):
    found = invoke("recall", "--path", "src/i18n/Strings.resx", "--json")
    assert found.exit_code == 0, found.output
    hits = json.loads(found.stdout)
    assert [hit["id"] for hit in hits] == ["resxrule0001"]
    assert "regenerate its Designer.cs" in hits[0]["body"]
    plain = json.loads(invoke("recall", "resx file Designer", "-k", "1", "--json").stdout)
    assert list(hits[0]) == list(plain[0])  # one shape for a hit, with --path or without
    added = invoke("add", "Bump ResourceLoader when src/loader.py changes", "--json")
    assert added.exit_code == 0, added.output
    proposed = json.loads(added.stdout)["anchors_proposed"]
    assert proposed["paths"] == ["src/loader.py"] and proposed["symbols"] == ["ResourceLoader"]
    bare = invoke("add", "Bump nothing in src/loader.py ever", "--no-anchors", "--json")
    assert json.loads(bare.stdout)["anchors_proposed"] is None
    assert "paths" not in Path(json.loads(bare.stdout)["path"]).read_text()


def test_always_memories_open_the_session_and_manual_ones_wait(project):
    memory_file(project, "alwaysrule1", "apply: always\n", "Run make fmt before every commit.")
    memory_file(project, "manualrule1", "apply: manual\npaths:\n- src/\n", "Ask Ana first.")
    start = {"hook_event_name": "SessionStart", "session_id": "s9", "cwd": str(project)}
    result = invoke("hook", "claude-code", "session-start", input=json.dumps(start))
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert ALWAYS_HEADING in context and "make fmt" in context
    assert is_fenced(context)  # the rules and the usual context share one notes block
    touched = pre_tool_use(project, "s9", "Read", file_path="src/loader.py")
    assert "Ask Ana" not in touched


def test_the_ledger_counts_tokens_and_an_edit_of_the_anchored_file_as_use(project):
    resx = str(project / "src" / "i18n" / "Strings.resx")
    pre_tool_use(project, "s1", "Read", file_path=resx)
    pre_tool_use(project, "s1", "Edit", file_path=resx, old_string="a", new_string="b")
    pre_tool_use(project, "s2", "Read", file_path="src/loader.py")
    ledger = (project / ".memory" / ".state" / "ledger.jsonl").read_text()
    assert "Designer" not in ledger  # ids and counts, never the memory's words
    stats = invoke("stats", "--json", "--never-used-after", "1")
    assert stats.exit_code == 0, stats.output
    injections = json.loads(stats.stdout)["injections"]
    sessions = {row["session"]: row for row in injections["sessions"]}
    assert sessions["s1"]["used"] == 1 and sessions["s2"]["used"] == 0
    assert sessions["s1"]["tokens"] > 0
    assert [item["id"] for item in injections["never_used"]] == ["loaderrule01"]


def test_stop_counts_a_memory_whose_words_the_reply_uses(project):
    pre_tool_use(project, "s1", "Read", file_path="src/loader.py")
    reply = "Done: the loader caches every bundle, so I call reload after the edits."
    stop = {"hook_event_name": "Stop", "session_id": "s1", "cwd": str(project)}
    stop["last_assistant_message"] = reply
    assert invoke("hook", "claude-code", "stop", input=json.dumps(stop)).exit_code == 0
    stats = json.loads(invoke("stats", "--json").stdout)["injections"]
    assert stats["used"] == 1


def test_install_adds_the_tool_hook_with_its_matcher(project):
    assert invoke("hooks", "install", "claude-code", "--local").exit_code == 0
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())
    (group,) = settings["hooks"]["PreToolUse"]
    assert group["matcher"] == "Read|Edit|Write|MultiEdit|Bash"
    assert group["hooks"][0]["command"].endswith("hook claude-code pre-tool-use")


def test_user_store_memories_stay_with_their_project(project, user_store, fake_embedder):
    added = invoke("add", "--user", "Release with the shop's make ship target", "--json")
    assert added.exit_code == 0, added.output
    text = Path(json.loads(added.stdout)["path"]).read_text()
    assert "project: github.com/acme/shop\n" in text
    pref = invoke("add", "--user", "I prefer short answers", "--type", "preference", "--json")
    assert "project:" not in Path(json.loads(pref.stdout)["path"]).read_text()
    other = user_store.root / "semantic" / "other-project-aaaaaaaaaaaa.md"
    other.parent.mkdir(parents=True, exist_ok=True)
    other.write_text(
        "---\nid: aaaaaaaaaaaa\nproject: github.com/acme/blog\n---\n\nRelease with make ship.\n"
    )
    hits = json.loads(invoke("recall", "release with make ship", "--json").stdout)
    assert "aaaaaaaaaaaa" not in [hit["id"] for hit in hits]
    assert json.loads(added.stdout)["id"] in [hit["id"] for hit in hits]
    listed = json.loads(invoke("list", "--project", "--json").stdout)
    bound = {item["id"]: item["bound_to"] for item in listed}
    assert bound["aaaaaaaaaaaa"] == "github.com/acme/blog"
    assert bound[json.loads(pref.stdout)["id"]] == "shared"
    assert bound[json.loads(added.stdout)["id"]] == "this project"


def test_extraction_anchors_what_it_writes(project):
    conversation = (
        "user: We decided that ResourceLoader must be reloaded after every bundle edit.\n"
    )
    result = invoke("extract", "-", "--no-llm", "--json", input=conversation)
    assert result.exit_code == 0, result.output
    outcome = json.loads(result.stdout)
    written = [o for o in outcome["applied"] if o.get("anchors")]
    assert written and written[0]["anchors"] == {"symbols": ["ResourceLoader"]}
