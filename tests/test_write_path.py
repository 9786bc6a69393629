from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memctl import service
from memctl.cli.app import app
from memctl.config import open_store
from memctl.core.errors import InvalidMemoryFile, LowValueContent
from memctl.service.memories.redaction import redact_for_store
from memctl.service.retrieval.indexing import open_index

pytestmark = pytest.mark.usefixtures("fake_embedder")

runner = CliRunner()

EMAIL = "dana.ops@example.com"
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
DB_PASSWORD = "Tr0ub4dor-and-3"
SECRET_TEXT = (
    f"Deploy alerts go to {EMAIL}. The deploy user has key {AWS_KEY} "
    f"and DB_PASSWORD={DB_PASSWORD} on the staging box."
)
SECRETS = (EMAIL, AWS_KEY, DB_PASSWORD)


def memory_bytes(store) -> bytes:
    return b"".join(
        p.read_bytes() for p in sorted(store.root.rglob("*.md")) if p.name != "README.md"
    )


def index_text(store) -> str:
    index = open_index(store)
    if not index.exists():
        return ""
    rows = index.dataset().to_table(columns=["title", "text"]).to_pylist()
    return "\n".join(row["title"] + "\n" + row["text"] for row in rows)


def write_config(store, text: str):
    (store.root / "config.yaml").write_text(text, encoding="utf-8")
    return open_store(store.root)


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MEMCTL_STORE", raising=False)
    assert runner.invoke(app, ["init"]).exit_code == 0
    return open_store(tmp_path / ".memory")


def cli(*args: str):
    return runner.invoke(app, list(args))


# -- redaction ----------------------------------------------------------------------------------


def test_add_redacts_body_title_and_tags_before_disk_and_index(store):
    result = service.add_memory(
        store, SECRET_TEXT, title=f"Alerts for {EMAIL}", tags=["staging", EMAIL]
    )
    on_disk = result.path.read_bytes()
    indexed = index_text(store)
    for secret in SECRETS:
        assert secret.encode() not in on_disk
        assert secret not in indexed
    assert b"[REDACTED_EMAIL]" in on_disk and b"[REDACTED_AWS_KEY]" in on_disk
    assert b"DB_PASSWORD=[REDACTED_SECRET_ASSIGNMENT]" in on_disk
    assert result.memory.title == "Alerts for [REDACTED_EMAIL]"
    assert result.redacted == {"email": 3, "aws_key": 1, "secret_assignment": 1}


def test_text_in_extra_fields_is_redacted_too(store):
    result = service.add_memory(
        store,
        "Session about the staging deploy alerts",
        extra={"decisions": [f"page {EMAIL} on failures"]},
    )
    assert EMAIL.encode() not in result.path.read_bytes()
    assert result.redacted == {"email": 1}


def test_cli_add_reports_kinds_and_counts_never_values(project):
    plain = cli("add", SECRET_TEXT)
    assert plain.exit_code == 0, plain.output
    assert "email x1, aws_key x1, secret_assignment x1" in plain.stdout
    as_json = cli("add", SECRET_TEXT + " Second copy.", "--json")
    assert json.loads(as_json.stdout)["redacted"] == {
        "email": 1,
        "aws_key": 1,
        "secret_assignment": 1,
    }
    for output in (plain.output, as_json.output):
        assert not any(secret in output for secret in SECRETS)
    assert not any(secret.encode() in memory_bytes(project) for secret in SECRETS)


def test_no_redact_keeps_the_text_as_given(project):
    added = cli("add", SECRET_TEXT, "--no-redact", "--json")
    assert added.exit_code == 0, added.output
    info = json.loads(added.stdout)
    assert info["redacted"] == {}
    raw = Path(info["path"]).read_bytes()
    assert all(secret.encode() in raw for secret in SECRETS)


def test_a_kind_disabled_in_config_is_kept(store):
    store = write_config(store, "redaction:\n  disabled: [email]\n")
    result = service.add_memory(store, SECRET_TEXT)
    raw = result.path.read_bytes()
    assert EMAIL.encode() in raw
    assert AWS_KEY.encode() not in raw
    assert "email" not in result.redacted


def test_extra_pattern_from_config_is_applied(store):
    store = write_config(store, "redaction:\n  patterns:\n    employee_id: 'EMP-\\d{6}'\n")
    result = service.add_memory(store, "Badge EMP-004211 opens the server room on floor two")
    assert b"EMP-004211" not in result.path.read_bytes()
    assert b"[REDACTED_EMPLOYEE_ID]" in result.path.read_bytes()
    assert result.redacted == {"employee_id": 1}


def test_redaction_can_be_turned_off_in_config(store):
    store = write_config(store, "redaction:\n  enabled: false\n")
    result = service.add_memory(store, SECRET_TEXT)
    assert EMAIL.encode() in result.path.read_bytes() and result.redacted == {}


def test_broken_pattern_names_config_file_and_line_and_writes_nothing(store):
    store = write_config(
        store, "recall:\n  k: 5\nredaction:\n  patterns:\n    ticket: '(unclosed'\n"
    )
    with pytest.raises(InvalidMemoryFile) as caught:
        service.add_memory(store, "Tickets are filed in the tracker by the on-call person")
    assert caught.value.path.endswith("config.yaml") and caught.value.line == 5
    assert "ticket" in caught.value.problem
    assert memory_bytes(store) == b""


def test_redact_for_store_follows_the_store_settings(store):
    assert redact_for_store(store, f"mail {EMAIL}").text == "mail [REDACTED_EMAIL]"
    off = write_config(store, "redaction:\n  disabled: [email]\n")
    assert redact_for_store(off, f"mail {EMAIL}").counts == {}


# -- low-value filter ---------------------------------------------------------------------------


BARE_TRACE = (
    "Traceback (most recent call last):\n"
    '  File "app.py", line 3, in <module>\n    main()\n'
    "ValueError: bad value\n"
)


@pytest.mark.parametrize("text", ["ok thanks", "好的", "hm", BARE_TRACE])
def test_low_value_text_from_an_agent_is_refused_with_its_own_exit_code(store, text):
    """The gate is for what memctl is handed without a person choosing it (agents, extraction,
    import); `memctl add` stores what a person asks for (see test_first_hour)."""
    with pytest.raises(LowValueContent) as refused:
        service.add_memory(store, text)
    assert refused.value.exit_code == 3
    assert memory_bytes(store) == b""


def test_force_stores_low_value_text(project):
    forced = cli("add", "ok thanks", "--force", "--json")
    assert forced.exit_code == 0, forced.output
    assert "ok thanks" in Path(json.loads(forced.stdout)["path"]).read_text(encoding="utf-8")


def test_a_refused_add_leaves_other_memories_untouched(store):
    kept = service.add_memory(store, "The release train leaves every second Tuesday")
    before_files = memory_bytes(store)
    before_rows = open_index(store).dataset().to_table(columns=["id", "embed_hash"]).to_pylist()
    with pytest.raises(LowValueContent):
        service.add_memory(store, "ok")
    assert memory_bytes(store) == before_files
    assert (
        open_index(store).dataset().to_table(columns=["id", "embed_hash"]).to_pylist()
        == before_rows
    )
    assert [
        hit.id for hit in service.recall(service.RecallRequest(store, "release train", k=3)).hits
    ] == [kept.memory.id]
