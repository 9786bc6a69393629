"""Small things a new user meets first: Ctrl-C, help labels, text cut between words, `show`,
plain English in session messages."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from typer.testing import CliRunner

from memctl import service
from memctl.cli.app import app
from memctl.core.files.memory import first_line
from memctl.core.language.text import clip
from memctl.core.recall.hook_blocks import BlockItem, memory_line

runner = CliRunner()
BODY = (
    "Run make release, then kubectl argo rollouts promote api once the canary dashboards "
    "stay green for ten minutes."
)


@pytest.mark.slow
def test_ctrl_c_during_a_command_is_one_line_not_a_traceback(store):
    script = textwrap.dedent(
        f"""
        import os, signal, sys, time
        import memctl.cli.app as cli
        def interrupted(*args):  # as if Ctrl-C came while the command's modules load
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
        cli.build_app = interrupted
        sys.argv = ["memctl", "--store", {str(store.root)!r}, "recall", "how do we deploy"]
        cli.main()
        """
    )
    env = {"MEMCTL_NO_SERVER": "1", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 130
    assert "Traceback" not in done.stderr and done.stderr.strip() == "Interrupted."


@pytest.mark.parametrize("command", [["recall"], ["add"], ["session", "add"], ["import"]])
def test_help_names_values_in_words_not_python_types(command):
    shown = runner.invoke(app, [*command, "--help"]).stdout
    for placeholder in ("<str>", "<int>", "<float>", "<list[str]>", "{"):
        assert placeholder not in shown, placeholder
    usage = shown.splitlines()[0]
    assert usage.split()[-1].isupper()  # Usage: memctl recall [OPTIONS] QUERY


def test_recall_help_labels_its_options():
    shown = runner.invoke(app, ["recall", "--help"]).stdout
    # QUERY is optional since `recall --path FILE` asks by file alone.
    assert "Usage: memctl recall [OPTIONS] [QUERY]" in shown and "{QUERY}" not in shown
    assert "--limit INTEGER" in shown and "--tag TEXT" in shown


def test_titles_and_clips_end_between_words():
    title = first_line(BODY, max_len=45)
    assert title == "Run make release, then kubectl argo rollouts…"
    assert clip(BODY, 30) == "Run make release, then…"
    assert clip("没有空格的中文句子没有空格的中文句子", 10) == "没有空格的中文句子…"


def test_a_hook_line_never_opens_on_the_rest_of_a_cut_word():
    cut = "Run make release, then kubectl argo ro…"  # a title written before, cut mid-word
    line = memory_line(BlockItem("id1", cut, "procedural", BODY))
    assert "argo rollouts promote api" in line and "llouts" not in line.replace("rollouts", "")
    assert line.count("kubectl argo") == 1 and line.endswith("(procedural, id1)")
    line = memory_line(
        BlockItem("id2", "Incident 42: T…", "episodic", "Incident 42: The root cause was DNS.")
    )
    assert line == "- **Incident 42: The root cause was DNS.** (episodic, id2)"


def test_a_hook_line_never_resumes_a_sentence_after_its_metadata():
    body = "Keep CI green: CI fails on any ruff warning. Run ruff check before you push."
    line = memory_line(
        BlockItem("m7", "Keep CI green: CI fails on any ruff...", "procedural", body)
    )
    text, meta = line.rsplit(" (", 1)
    assert meta == "procedural, m7)" and "ruff warning." in text and "..." not in text
    long_body = "Run the linter first. " + "Then run every test of the package again. " * 20
    line = memory_line(BlockItem("m8", "Lint", "procedural", long_body), max_chars=200)
    assert len(line) <= 200 and line.endswith("(procedural, m8)")
    assert line.split(" (procedural")[0].endswith(".")  # a whole sentence, not a cut one


def test_show_prints_lists_as_a_person_writes_them(store, fake_embedder):
    added = service.add_memory(store, BODY, type="procedural", tags=["deploy", "ops"])
    shown = runner.invoke(app, ["--store", str(store.root), "show", added.memory.id]).stdout
    assert "tags: deploy, ops" in shown and "['deploy'" not in shown


def test_session_add_speaks_plain_english(store, fake_embedder):
    said = runner.invoke(
        app, ["--store", str(store.root), "session", "add", "-S", "s1", "We ship on Fridays"]
    ).stdout
    assert said.startswith("Added a user turn to s1") and "holds 1 turn," in said
    said = runner.invoke(
        app,
        ["--store", str(store.root), "session", "add", "-S", "s1", "-r", "assistant", "Noted."],
    ).stdout
    assert said.startswith("Added an assistant turn") and "holds 2 turns," in said
