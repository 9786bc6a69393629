"""The user store: the person's own memories, read with every project's, written by routing.

Every test runs with MEMCTL_USER_STORE in a temp folder (conftest), so nothing here touches the
real ~/.local/share/memctl.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memctl.cli.app import app
from memctl.config import user_store_path
from memctl.core.learning.routing import route
from memctl.core.recall.federation import interleave_by_rank, merge_by_heads

pytestmark = pytest.mark.model  # recall and sync on the bundled model

runner = CliRunner()
ROUTING = {
    "user_types": ["preference", "profile"],
    "project_types": ["procedural", "episodic", "knowledge"],
    "about_user": True,
}


def invoke(*args: str, input: str | None = None):
    return runner.invoke(app, list(args), input=input)


@pytest.fixture
def project(tmp_path, monkeypatch):
    root = tmp_path / "project"
    root.mkdir()
    monkeypatch.chdir(root)
    monkeypatch.delenv("MEMCTL_STORE", raising=False)
    assert invoke("init").exit_code == 0
    assert invoke("add", "We deploy with make release, then promote the rollout").exit_code == 0
    assert invoke("add", "Postgres listens on port 5433 in the dev docker compose").exit_code == 0
    return root


@pytest.fixture
def with_user(project, no_user_store):
    created = invoke("init", "--user", "--json")
    assert created.exit_code == 0, created.output
    assert json.loads(created.stdout)["store"] == str(no_user_store)
    for text in ("I prefer answers in short bullet points", "I like tabs in Go files"):
        assert invoke("add", "--user", text, "--type", "preference").exit_code == 0
    return no_user_store


def recall_json(*args: str) -> list[dict]:
    result = invoke("recall", *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


# --- where it lives ------------------------------------------------------------------------


def test_the_user_store_path_follows_the_environment(tmp_path):
    assert user_store_path({"MEMCTL_USER_STORE": str(tmp_path / "mine")}) == tmp_path / "mine"
    assert user_store_path({"XDG_DATA_HOME": str(tmp_path / "data")}) == (
        tmp_path / "data" / "memctl"
    )
    home = {"HOME": str(tmp_path / "home"), "XDG_DATA_HOME": "relative/ignored"}
    assert user_store_path(home) == tmp_path / "home" / ".local" / "share" / "memctl"


def test_init_user_creates_it_once_and_add_user_needs_it(project, no_user_store):
    missing = invoke("add", "--user", "I prefer dark roast coffee", "--type", "preference")
    assert missing.exit_code == 1 and "memctl init --user" in missing.output
    assert not no_user_store.exists()

    assert invoke("init", "--user").exit_code == 0
    assert (no_user_store / "config.yaml").is_file() and not (no_user_store / ".git").exists()
    assert invoke("init", "--user").exit_code == 1  # already there

    added = invoke("add", "--user", "I prefer dark roast coffee", "--type", "preference", "--json")
    assert added.exit_code == 0, added.output
    assert Path(json.loads(added.stdout)["path"]).is_relative_to(no_user_store)
    assert not list((project / ".memory").rglob("*dark-roast*"))


# --- federated reads -----------------------------------------------------------------------


def test_without_a_user_store_recall_and_list_are_as_before(project):
    hits = recall_json("how do we deploy")
    assert hits and all(hit["store"] == "project" for hit in hits)  # one shape for a hit
    listed = invoke("list", "--json")
    assert all("store" not in item for item in json.loads(listed.stdout))
    assert "store" not in invoke("list").stdout


def test_recall_reads_both_stores_and_tags_each_hit(with_user):
    hits = recall_json("how should answers be formatted", "-k", "3")
    assert hits[0]["store"] == "user" and "bullet points" in hits[0]["body"]
    everything = recall_json("how should answers be formatted", "-k", "3", "--min-relevance", "0")
    assert {hit["store"] for hit in everything} == {"user", "project"}

    deploy = recall_json("how do we deploy", "-k", "5")
    assert deploy[0]["store"] == "project" and "make release" in deploy[0]["body"]
    assert all(hit["store"] == "project" for hit in deploy)  # unrelated preferences stay out

    for flag in ("--store-only", "--no-user"):
        alone = recall_json("how should answers be formatted", flag, "--min-relevance", "0")
        assert alone and all(hit["store"] == "project" for hit in alone)
        assert not any("bullet points" in hit["body"] for hit in alone)


def test_recall_keeps_the_project_order_it_had_alone(with_user):
    alone = [hit["id"] for hit in recall_json("port of the database", "--store-only", "-k", "2")]
    together = recall_json("port of the database", "-k", "4")
    assert [hit["id"] for hit in together if hit["store"] == "project"] == alone


def test_list_shows_both_stores(with_user):
    listed = json.loads(invoke("list", "--json").stdout)
    assert [item["store"] for item in listed] == ["project", "project", "user", "user"]
    assert all(Path(item["path"]).is_file() for item in listed)
    assert len(json.loads(invoke("list", "--json", "--no-user").stdout)) == 2
    mine = invoke("show", listed[-1]["id"], "--json")  # an id a federated list or recall showed
    assert mine.exit_code == 0 and json.loads(mine.stdout)["path"] == listed[-1]["path"]


def test_context_shows_the_persons_preferences_in_every_project(with_user):
    result = invoke("context", "deploy", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert {fact["store"] for fact in data["facts"]} == {"user"}
    assert "short bullet points (preference, confidence 0.8, origin user, " in data["markdown"]
    assert re.search(r"short bullet points \(.*, user store\)", data["markdown"])
    alone = json.loads(invoke("context", "deploy", "--json", "--store-only").stdout)
    assert alone["facts"] == [] and "bullet points" not in alone["markdown"]


def test_the_user_store_is_not_exported_into_the_project(with_user, project):
    result = invoke("export", "--format", "claude-md", "--output", "-")
    assert result.exit_code == 0, result.output
    assert "bullet points" not in result.stdout


# --- hooks -----------------------------------------------------------------------------------


def prompt_payload(cwd: Path, prompt: str) -> str:
    return json.dumps(
        {
            "session_id": "s1",
            "cwd": str(cwd),
            "hook_event_name": "UserPromptSubmit",
            "prompt": prompt,
        }
    )


def test_prompt_hook_reads_the_user_store_unless_store_only(with_user, project):
    prompt = prompt_payload(project, "please format your answers as short bullet points")
    found = invoke("hook", "claude-code", "user-prompt-submit", input=prompt)
    assert found.exit_code == 0, found.output
    context = json.loads(found.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "short bullet points" in context

    other = prompt.replace('"s1"', '"s2"')
    alone = invoke("hook", "claude-code", "user-prompt-submit", "--store-only", input=other)
    assert alone.exit_code == 0 and "bullet points" not in alone.stdout


# --- routing ---------------------------------------------------------------------------------

CONVERSATION = (
    "I prefer answers in short bullet points.\n"
    "We decided to use Postgres for the billing service.\n"
    "To deploy, run make release and then promote the rollout.\n"
    "Remember that I am allergic to peanuts.\n"
)


def test_extract_routes_what_is_about_the_person_to_the_user_store(with_user, project):
    planned = invoke("extract", "-", "--dry-run", "--json", input=CONVERSATION)
    assert planned.exit_code == 0, planned.output
    plan = {item["text"]: item["store"] for item in json.loads(planned.stdout)["plan"]}
    assert plan == {
        "The user prefers answers in short bullet points.": "user",
        "The team decided to use Postgres for the billing service.": "project",
        "To deploy, run make release and then promote the rollout.": "project",
        "The user is allergic to peanuts.": "user",
    }
    table = invoke("extract", "-", "--dry-run", input=CONVERSATION).stdout
    assert "store" in table and "user" in table

    written = invoke("extract", "-", "--json", input=CONVERSATION)
    assert written.exit_code == 0, written.output
    applied = json.loads(written.stdout)["applied"]
    # the preference was already in the user store: a mention more there, nothing new here
    assert {done["store"] for done in applied} == {"user", "project"}
    for done in applied:
        root = with_user if done["store"] == "user" else project / ".memory"
        assert Path(done["path"]).is_relative_to(root)
    assert not list((project / ".memory").rglob("*peanuts*"))
    assert list(with_user.rglob("*peanuts*"))


def test_extract_without_a_user_store_plans_as_before(project):
    planned = invoke("extract", "-", "--dry-run", "--json", input=CONVERSATION)
    assert all("store" not in item for item in json.loads(planned.stdout)["plan"])


@pytest.mark.parametrize(
    ("memory_type", "text", "expected"),
    [
        ("preference", "The team prefers squash merges", "user"),  # the type decides
        ("procedural", "I always run the linter first", "project"),
        ("semantic", "The user is allergic to peanuts.", "user"),
        ("semantic", "The user wrote the deploy script", "project"),
        ("semantic", "My manager calls getUserById twice", "project"),
        ("semantic", "我对花生过敏", "user"),
        ("semantic", "我们决定使用 Postgres", "project"),
        ("semantic", "The API gateway times out after 30 seconds", "project"),
    ],
)
def test_routing_defaults(memory_type, text, expected):
    assert route(memory_type, text, ROUTING) == expected


def test_routing_is_configurable():
    assert route("preference", "I like tabs", {**ROUTING, "user_types": []}) == "user"
    assert route("preference", "I like tabs", {"user_types": [], "about_user": False}) == (
        "project"
    )


# --- merging ---------------------------------------------------------------------------------


def test_merge_keeps_each_lists_order_and_the_first_list_wins_ties():
    project = [("p1", 0.2), ("p2", 0.9), ("p3", 0.1)]
    user = [("u1", 0.5), ("u2", 0.2)]
    merged = merge_by_heads([project, user], lambda item: item[1])
    assert [item[0] for _, item in merged] == ["u1", "p1", "p2", "u2", "p3"]
    assert [item for _, item in merge_by_heads([[("p", 0.3)], [("u", 0.3)]], lambda i: i[1])] == [
        ("p", 0.3),
        ("u", 0.3),
    ]
    assert interleave_by_rank([["p1", "p2", "p3"], ["u1"]], 3) == [(0, "p1"), (1, "u1"), (0, "p2")]


def test_the_next_step_init_user_suggests_gives_a_preference_every_context_shows(project):
    created = invoke("init", "--user")
    assert created.exit_code == 0, created.output
    (suggested,) = [line for line in created.stdout.splitlines() if line.startswith("Next: ")]
    words = shlex.split(suggested.removeprefix("Next: "))
    assert words[0] == "memctl" and invoke(*words[1:]).exit_code == 0
    shown = json.loads(invoke("context", "--json").stdout)
    assert [fact["store"] for fact in shown["facts"]] == ["user"]
    assert "short bullet points (preference" in shown["markdown"]
