from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from memctl.cli.app import app

runner = CliRunner()


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MEMCTL_STORE", raising=False)
    result = runner.invoke(app, ["init"])
    assert result.exit_code == 0, result.output
    return tmp_path


def invoke(*args: str, input: str | None = None):
    return runner.invoke(app, list(args), input=input)


def test_init_writes_config_readme_and_gitignore(project):
    root = project / ".memory"
    assert (root / "config.yaml").is_file()
    assert (root / "README.md").is_file()
    ignored = (root / ".gitignore").read_text()
    for entry in (".index/", ".state/", "private/"):
        assert entry in ignored
    assert invoke("init").exit_code == 1  # already there


@pytest.mark.usefixtures("fake_embedder")
def test_add_list_show_recall_forget(project):
    added = invoke(
        "add", "We deploy with make release", "--type", "procedural", "--tag", "deploy", "--json"
    )
    assert added.exit_code == 0, added.output
    info = json.loads(added.stdout)
    assert info["path"].endswith(f"-{info['id']}.md") and "/procedural/" in info["path"]

    listed = json.loads(invoke("list", "--json").stdout)
    assert [m["id"] for m in listed] == [info["id"]]

    shown = json.loads(invoke("show", info["id"], "--json").stdout)
    assert shown["tags"] == ["deploy"] and "make release" in shown["body"]

    hits = json.loads(invoke("recall", "how do we deploy", "--json").stdout)
    assert hits[0]["id"] == info["id"]
    assert list(hits[0]) == [  # the shape docs/recall.md documents, in its order
        "id", "path", "title", "type", "tags", "store", "via", "date", "relevance", "score",
        "current", "superseded_by", "supersedes", "stale", "origin", "trust", "quarantined",
        "body", "snippet", "neighbours",
    ]  # fmt: skip
    assert hits[0]["store"] == "project" and hits[0]["origin"] == "user"
    assert (hits[0]["origin"], hits[0]["trust"], hits[0]["quarantined"]) == (
        "user",
        "trusted",
        None,
    )
    assert 0.0 <= hits[0]["relevance"] <= 1.0 and hits[0]["current"] is True

    context = invoke("recall", "how do we deploy", "--format", "context").stdout
    assert context.startswith("<memctl-notes>\n") and context.endswith("</memctl-notes>\n")
    assert "## Memories relevant to: how do we deploy" in context
    assert "make release" in context

    forgot = invoke("forget", info["id"])
    assert forgot.exit_code == 0
    assert json.loads(invoke("recall", "make release", "--json").stdout) == []


def test_init_with_store_option_refuses_instead_of_creating_the_store_elsewhere(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    result = invoke("--store", str(tmp_path / "elsewhere"), "init")
    assert result.exit_code == 2 and "memctl init DIR" in result.output
    assert list(tmp_path.iterdir()) == []  # nothing created here or there
    assert invoke("init", str(tmp_path / "elsewhere")).exit_code == 0
    assert (tmp_path / "elsewhere" / ".memory" / "config.yaml").is_file()


def test_init_with_a_store_named_dot_memory_creates_that_store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "project" / ".memory"
    assert invoke("--store", str(store), "init").exit_code == 0
    assert (store / "config.yaml").is_file() and not (tmp_path / ".memory").exists()
    other = invoke("--store", str(store), "init", str(tmp_path / "other"))
    assert other.exit_code == 2  # DIR and --store disagree


@pytest.mark.usefixtures("fake_embedder")
def test_add_reads_stdin(project):
    result = invoke("add", "-", "--json", input="Long text from a hook\nsecond line\n")
    assert result.exit_code == 0
    memory = json.loads(invoke("show", json.loads(result.stdout)["id"], "--json").stdout)
    assert memory["body"] == "Long text from a hook\nsecond line\n"


@pytest.mark.usefixtures("fake_embedder")
def test_private_memory_goes_under_private(project):
    info = json.loads(invoke("add", "My home IP rotates weekly", "--private", "--json").stdout)
    assert "/.memory/private/" in info["path"]


@pytest.mark.usefixtures("fake_embedder")
def test_index_json_counts_and_problems(project):
    invoke("add", "Alpha is the codename of the billing rewrite")
    bad = project / ".memory" / "semantic" / "bad.md"
    bad.write_text("---\ntitle: ok\n<<<<<<< HEAD\n---\nx\n")
    report = json.loads(invoke("index", "--json").stdout)
    assert report["unchanged"] == 1 and report["embedded"] == 0
    assert report["problems"] == [
        {"path": str(bad), "line": 3, "problem": report["problems"][0]["problem"]}
    ]
    assert "conflict" in report["problems"][0]["problem"]


def test_errors_have_exit_codes_and_one_sentence(project):
    missing = invoke("show", "nope")
    assert missing.exit_code == 1
    assert "No memory with id 'nope'" in missing.output
    assert invoke("show", "nope", "--json").exit_code == 1
    assert json.loads(invoke("show", "nope", "--json").stdout)["error"]["kind"] == "not_found"
    assert invoke("add", "x", "--type", "memo").exit_code == 2
    assert invoke("add", "x", "--importance", "3").exit_code == 2
    assert invoke("recall", "x", "--format", "yaml").exit_code == 2


def test_missing_store_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MEMCTL_STORE", raising=False)
    result = invoke("list")
    assert result.exit_code == 1
    assert "memctl init" in result.output


@pytest.mark.usefixtures("fake_embedder")
def test_store_is_found_upward_and_by_option(project, monkeypatch):
    invoke("add", "Found from a subfolder")
    sub = project / "src" / "deep"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    assert len(json.loads(invoke("list", "--json").stdout)) == 1
    monkeypatch.chdir(project.parent)
    assert (
        len(json.loads(invoke("--store", str(project / ".memory"), "list", "--json").stdout)) == 1
    )


@pytest.mark.usefixtures("fake_embedder")
def test_store_option_naming_the_project_folder_uses_its_memory_store(project, monkeypatch):
    invoke("add", "Postgres listens on port 5433 in the dev docker compose")
    monkeypatch.chdir(project.parent)
    listed = invoke("--store", str(project), "list", "--json")
    assert listed.exit_code == 0, listed.output
    assert [m["title"] for m in json.loads(listed.stdout)] == [
        "Postgres listens on port 5433 in the dev docker compose"
    ]
    assert sorted(p.name for p in project.iterdir()) == [".memory"]  # nothing left beside it


@pytest.mark.slow
def test_help_does_not_import_heavy_modules():
    # Every registered command, group and subcommand: `--help` must stay light.
    code = (
        "import sys\n"
        "import typer\n"
        "from typer.testing import CliRunner\n"
        "from memctl.cli.app import app\n"
        "def paths(command, prefix=()):\n"
        "    yield prefix\n"
        "    for name, sub in getattr(command, 'commands', {}).items():\n"
        "        yield from paths(sub, prefix + (name,))\n"
        "all_paths = list(paths(typer.main.get_command(app)))\n"
        "assert len(all_paths) > 20, all_paths\n"
        "for args in all_paths:\n"
        "    result = CliRunner().invoke(app, [*args, '--help'])\n"
        "    assert result.exit_code == 0, (args, result.output)\n"
        "names = ('numpy', 'pyarrow', 'lancedb', 'lance', 'fastembed', 'onnxruntime', 'litellm', 'mcp',\n"
        "         'watchdog', 'tiktoken')\n"
        "heavy = [m for m in names if m in sys.modules]\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_list_and_show_do_not_import_the_index(project, fake_embedder):
    invoke("add", "Something worth keeping about the deploy")
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from memctl.cli.app import app\n"
        "r = CliRunner().invoke(app, ['list'])\n"
        "assert r.exit_code == 0, r.output\n"
        "print([m for m in ('lancedb', 'lance', 'fastembed', 'litellm') if m in sys.modules])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=project
    )
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
@pytest.mark.model
def test_installed_script_runs_in_a_real_process(project):
    exe = shutil.which("memctl")
    assert exe, "the memctl console script is not installed"
    added = subprocess.run(
        [exe, "add", "Use pnpm, never npm", "--json"], capture_output=True, text=True, cwd=project
    )
    assert added.returncode == 0, added.stderr
    found = subprocess.run(
        [exe, "recall", "which package manager, npm or pnpm", "--json"],
        capture_output=True,
        text=True,
        cwd=project,
    )
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)[0]["id"] == json.loads(added.stdout)["id"]


def test_the_command_map_matches_what_each_module_registers():
    import typer

    from memctl.cli.app import COMMANDS, build_app

    for module, names in COMMANDS.items():
        group = typer.main.get_command(build_app([module]))
        assert sorted(group.commands) == sorted(names), module
    assert sorted(typer.main.get_command(app).commands) == sorted(
        n for names in COMMANDS.values() for n in names
    )


def test_the_command_word_is_found_after_global_options():
    from memctl.cli.app import command_name

    assert command_name(["--store", "recall", "add", "x"]) == "add"  # a store folder named recall
    assert command_name(["-s", "/tmp/s", "recall", "q"]) == "recall"
    assert command_name(["--store=/tmp/s", "recall", "q"]) == "recall"
    assert command_name(["--help"]) is None


@pytest.mark.slow
def test_a_command_line_builds_only_its_own_command(tmp_path):
    # recall ends its process itself (see test below); atexit handlers still run, so one reports.
    code = (
        "import atexit, sys\n"
        "from memctl.cli.app import main\n"
        "atexit.register(lambda: print(sorted(m for m in sys.modules if m.startswith('memctl.cli.commands.'))))\n"
        f"sys.argv = ['memctl', '--store', {str(tmp_path / 'none')!r}, 'recall', 'anything']\n"
        "main()\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 1 and "does not exist" in result.stderr
    assert result.stdout.strip().splitlines()[-1] == "['memctl.cli.commands.recall']"


@pytest.mark.slow
@pytest.mark.model
def test_a_quick_exit_keeps_exit_codes_and_delivers_all_output(project):
    """recall/context/hook skip the interpreter's teardown; output and exit codes must not suffer."""
    from memctl import service
    from memctl.config import open_store

    store = open_store(project / ".memory")
    for n in range(40):
        service.add_memory(
            store,
            f"Runbook step {n}: restart the ingest worker {n} after deploys",
            sync=False,
            dedup=False,
        )
    exe = shutil.which("memctl")
    found = subprocess.run(
        [exe, "recall", "restart ingest worker", "-k", "40", "--json"],
        capture_output=True,
        text=True,
        cwd=project,
        check=False,
    )
    assert found.returncode == 0, found.stderr
    assert len(json.loads(found.stdout)) == 40
    usage = subprocess.run(
        [exe, "recall", "x", "--mode", "sideways"],
        capture_output=True,
        text=True,
        cwd=project,
        check=False,
    )
    assert usage.returncode == 2 and "Unknown recall mode" in usage.stderr
    context = subprocess.run(
        [exe, "context", "ingest worker"], capture_output=True, text=True, cwd=project, check=False
    )
    assert context.returncode == 0 and "ingest worker" in context.stdout


@pytest.mark.usefixtures("fake_embedder")
def test_recall_table_shows_a_one_line_memory_once_and_a_longer_ones_body(project):
    invoke("add", "TW-E4012 means the reconcile job ran on half a manifest; rerun it")
    invoke("add", "Deploys need a ticket. Open one in OPS before make release runs")
    out = invoke("recall", "TW-E4012", "-k", "1").stdout
    assert out.count("reconcile") == 1, out
    out = invoke("recall", "make release", "-k", "1").stdout
    assert "Deploys need a ticket" in out and "Open one in OPS" in out, out
