"""The index on object storage, against a real S3-compatible server (moto) on loopback.

One clone publishes its index; another, with `index.mode: remote`, recalls from it and embeds
only the files it changed or added.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memctl.cli.app import app

pytestmark = pytest.mark.model  # recall and sync on the bundled model

runner = CliRunner()
BUCKET = "team"
URI = f"s3://{BUCKET}/memctl"
MEMORIES = {
    "deploy": ("procedural", "We deploy with make release, then promote the rollout"),
    "postgres": ("semantic", "Postgres listens on port 5433 in the dev docker compose"),
    "gateway": ("semantic", "The API gateway times out after 30 seconds under load"),
}


@pytest.fixture(scope="module")
def s3_endpoint():
    """moto's S3 server on a free loopback port, stopped after the module's tests."""
    pytest.importorskip("moto.server")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("moto server did not start") from None
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture
def s3(s3_endpoint, monkeypatch):
    """Credentials and endpoint in the environment only, as a user would set them; a fresh
    bucket per test."""
    import boto3

    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT": s3_endpoint,  # what Lance's object store reads
        "AWS_ENDPOINT_URL": s3_endpoint,  # what boto3 reads
        "AWS_ALLOW_HTTP": "true",
    }.items():
        monkeypatch.setenv(name, value)
    client = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    yield client
    listed = client.list_objects_v2(Bucket=BUCKET).get("Contents", [])
    for item in listed:
        client.delete_object(Bucket=BUCKET, Key=item["Key"])
    client.delete_bucket(Bucket=BUCKET)


def invoke(root: Path, *args: str):
    result = runner.invoke(app, ["--store", str(root / ".memory"), *args])
    assert result.exit_code == 0, result.output
    return result


def add_config(root: Path, text: str) -> None:
    config = root / ".memory" / "config.yaml"
    config.write_text(config.read_text(encoding="utf-8") + text, encoding="utf-8")


@pytest.fixture
def publisher(tmp_path, s3, monkeypatch):
    root = tmp_path / "publisher"
    root.mkdir()
    monkeypatch.delenv("MEMCTL_STORE", raising=False)
    invoke(root, "init", str(root))
    add_config(root, f"\nindex:\n  uri: {URI}\n")
    for name, (memory_type, text) in MEMORIES.items():
        invoke(root, "add", text, "--type", memory_type, "--tag", name)
    invoke(root, "add", "Salary bands for the team are in the HR folder", "--private")
    return root


def clone(publisher: Path, target: Path) -> Path:
    """What `git clone` gives another person: the committed files, no index, no private/."""
    shutil.copytree(
        publisher / ".memory",
        target / ".memory",
        ignore=shutil.ignore_patterns(".index", ".state", "private"),
    )
    add_config(target, "  mode: remote\n")
    return target


def file_of(root: Path, tag: str) -> Path:
    return next(p for p in (root / ".memory").rglob("*.md") if f"- {tag}\n" in p.read_text())


def recall(root: Path, query: str) -> list[dict]:
    return json.loads(invoke(root, "recall", query, "--json", "-k", "5").stdout)


def test_a_clone_recalls_from_the_published_index_embedding_only_its_own_changes(
    publisher, tmp_path, s3
):
    published = json.loads(invoke(publisher, "index", "--publish", "--json").stdout)
    assert (published["rows"], published["files"]) == (3, 3)  # the private memory stays home
    keys = [item["Key"] for item in s3.list_objects_v2(Bucket=BUCKET)["Contents"]]
    assert any(key.startswith("memctl/memories.lance/") for key in keys)

    other = clone(publisher, tmp_path / "other")
    untouched = json.loads(invoke(other, "index", "--json").stdout)
    assert untouched["embedded"] == 0 and untouched["published"]["files"] == 3
    assert "make release" in recall(other, "how do we ship to production")[0]["body"]

    edited = file_of(other, "postgres")
    edited.write_text(edited.read_text().replace("5433", "6543"), encoding="utf-8")
    file_of(other, "gateway").unlink()
    (other / ".memory" / "semantic" / "redis.md").write_text(
        "Redis runs on port 6380 in the dev docker compose\n", encoding="utf-8"
    )
    synced = json.loads(invoke(other, "index", "--json").stdout)
    assert synced["embedded"] == 2  # the edited and the new file; nothing published again

    bodies = [hit["body"] for hit in recall(other, "which port does the database listen on")]
    assert any("6543" in body for body in bodies)
    assert not any("5433" in body for body in bodies)  # the published row of the edit is hidden
    assert any("6380" in body for body in bodies)
    everything = [hit["body"] for hit in recall(other, "API gateway timeout under load")]
    assert not any("gateway" in body for body in everything)  # deleted here: hidden
    assert not any("Salary" in body for body in recall(other, "salary bands HR"))

    import lance

    overlay = lance.dataset(str(other / ".memory" / ".index" / "memories.lance"))
    assert overlay.count_rows() == 2


def test_a_front_matter_edit_reuses_the_published_vector(publisher, tmp_path):
    invoke(publisher, "index", "--publish")
    other = clone(publisher, tmp_path / "other")
    path = file_of(other, "deploy")
    path.write_text(path.read_text().replace("importance: 0.5", "importance: 0.9"))
    assert json.loads(invoke(other, "index", "--json").stdout)["embedded"] == 0


def test_a_clone_keeps_the_version_it_pulled_and_its_files_decide_what_it_sees(publisher, tmp_path):
    invoke(publisher, "index", "--publish")
    other = clone(publisher, tmp_path / "other")
    invoke(other, "index")
    invoke(publisher, "add", "Feature flags live in LaunchDarkly under the web project")
    invoke(publisher, "index", "--publish")
    pulled = json.loads(invoke(other, "index", "--json").stdout)
    assert pulled["published"]["files"] == 4
    # The files are the truth: the new memory's file has not reached this clone yet.
    assert not any("LaunchDarkly" in hit["body"] for hit in recall(other, "feature flags"))
    new = next(p for p in (publisher / ".memory").rglob("*.md") if "LaunchDarkly" in p.read_text())
    target = other / new.relative_to(publisher)
    shutil.copy2(new, target)  # what `git pull` brings
    assert json.loads(invoke(other, "index", "--json").stdout)["embedded"] == 0
    assert any("LaunchDarkly" in hit["body"] for hit in recall(other, "feature flags"))


def test_credentials_never_go_in_config_and_remote_needs_a_uri(publisher):
    add_config(publisher, "  storage_options:\n    aws_secret_access_key: abc\n")
    result = runner.invoke(app, ["--store", str(publisher / ".memory"), "index", "--publish"])
    assert result.exit_code == 1 and "credential" in result.output
    assert "aws_secret_access_key" in result.output


def test_remote_mode_without_a_uri_is_a_clear_error(tmp_path):
    invoke(tmp_path, "init", str(tmp_path))
    add_config(tmp_path, "\nindex:\n  mode: remote\n")
    result = runner.invoke(app, ["--store", str(tmp_path / ".memory"), "index"])
    assert result.exit_code == 1 and "index.uri is not set" in result.output
