from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from memctl import service
from memctl.config import Store, open_store
from memctl.integrations import embedder as _embedder_module
from memctl.integrations import query_embedder as _query_embedder_module


@pytest.fixture(autouse=True)
def no_user_store(tmp_path_factory, monkeypatch):
    """No test reads or writes the real ~/.local/share/memctl: the user store is a temp folder
    that does not exist until a test creates it (see the `user_store` fixture). The same for
    the user's cache folder (`--help` is cached there) and state folder (the provenance key)."""
    home = tmp_path_factory.mktemp("user-data")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("user-cache")))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("user-state")))
    monkeypatch.setenv("XDG_DATA_HOME", str(home))
    monkeypatch.setenv("MEMCTL_USER_STORE", str(home / "memctl"))
    # Why: a hook gives up after a few seconds (claude_code.HOOK_SPECS); on a loaded machine a
    # first hook that builds the index took longer, printed nothing and failed its test. The
    # tests check what hooks say, so they wait; tests of the time limit pass their own budget.
    monkeypatch.setenv("MEMCTL_HOOK_BUDGET", "600")
    return home / "memctl"


@pytest.fixture(autouse=True)
def no_freshness_guard_left_behind():
    """An engine a test ran in this process installs itself as the freshness guard; the next
    test starts without it, as a fresh process would."""
    yield
    from memctl.service.retrieval.indexing import set_freshness_guard

    set_freshness_guard(None)


@pytest.fixture
def user_store(no_user_store) -> Store:
    """The person's user store, created as `memctl init --user` does (in a temp folder)."""
    from memctl.service.init import init_user_store

    return init_user_store()


@pytest.fixture
def store(tmp_path: Path) -> Store:
    """An empty store in a temp project folder."""
    return service.init_store(tmp_path)


@pytest.fixture
def write_file(store: Store):
    """Write a file into the store as a person would (no memctl involved)."""

    def write(relpath: str, content: str | bytes) -> Path:
        path = store.root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode() if isinstance(content, str) else content
        path.write_bytes(data)
        return path

    return write


# --- Test tiers: a recording fake embedder, and the real model only in `model` tests ----------
# `pytest -m "not model"` is the fast tier. A test that needs what the real model knows (meaning,
# similarity) is marked `model`; a test of plumbing (sync counts, hash skips) uses `fake_embedder`.
# Any other test that reaches for the real model fails and says so, so the marks stay true.
# (A test that starts memctl processes is marked `slow`, and `model` as well if they embed.)


class RecordingEmbedder:
    """A deterministic stand-in for the bundled model that records every text it embedded.

    A vector is a hashed bag of words at the model's dimension, unit length: equal texts get equal
    vectors and texts sharing words point the same way; it knows nothing about meaning.
    """

    model_id = _embedder_module.MODEL_ID
    dim = _embedder_module.DIMENSION
    batch_size = 64

    def __init__(self) -> None:
        self.texts: list[str] = []  # every text embedded to be stored (sync, dedup, episodes)
        self.queries: list[str] = []  # every query embedded to search

    def vector(self, text: str) -> np.ndarray:
        vector = np.zeros(self.dim, dtype=np.float32)
        for word in re.findall(r"\w+", text.lower()):
            digest = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
            vector[digest % self.dim] += 1.0 if digest >> 63 else -1.0
        norm = float(np.linalg.norm(vector))
        if not norm:
            vector[0], norm = 1.0, 1.0  # a text without words still gets a unit vector
        return vector / norm

    def embed(self, texts: list[str]) -> np.ndarray:
        self.texts.extend(texts)
        return np.array([self.vector(t) for t in texts], dtype=np.float32).reshape(-1, self.dim)

    def embed_query(self, text: str) -> np.ndarray:
        self.queries.append(text)
        return self.vector(text)


@pytest.fixture
def fake_embedder(monkeypatch, _real_model_only_in_model_tests) -> RecordingEmbedder:
    """Every embedding in this test comes from a fresh RecordingEmbedder."""
    fake = RecordingEmbedder()
    monkeypatch.setattr(_embedder_module, "get_embedder", lambda *args, **kwargs: fake)
    monkeypatch.setattr(_query_embedder_module, "get_query_embedder", lambda *a, **kw: fake)
    return fake


@pytest.fixture(autouse=True)
def _real_model_only_in_model_tests(request, monkeypatch):
    if request.node.get_closest_marker("model"):
        yield
        return
    refused: list[bool] = []

    def refuse(*args, **kwargs):
        refused.append(True)
        # A BaseException, so that most code cannot swallow it; hooks log even those, which
        # is why the teardown below checks again.
        pytest.fail(MODEL_REFUSED.format(request.node.nodeid), pytrace=False)

    monkeypatch.setattr(_embedder_module, "get_embedder", refuse)
    monkeypatch.setattr(_query_embedder_module, "get_query_embedder", refuse)
    yield
    if refused:
        pytest.fail(MODEL_REFUSED.format(request.node.nodeid), pytrace=False)


MODEL_REFUSED = "{} uses the real embedding model: mark it `model`, or take `fake_embedder`"


@pytest.fixture(scope="session", autouse=True)
def _warm_model_once(request) -> None:
    """Load the real model once, before the first `model` test, so no single test pays for it."""
    if any(item.get_closest_marker("model") for item in request.session.items):
        _embedder_module.get_embedder()
        _query_embedder_module.get_query_embedder()


# --- Stores built once, copied per test ---------------------------------------------------------


@pytest.fixture
def copy_store(tmp_path: Path):
    """`copy_store(store)`: a private copy of a store built once for a module, for one test.

    Files, index and manifest keep their times, so the copy needs no sync; a test may change
    its copy freely without any other test seeing it.
    """

    def copy(original: Store) -> Store:
        root = tmp_path / "copied" / original.root.name
        shutil.copytree(original.root, root, symlinks=True)
        return open_store(root)

    return copy


# --- the resident server ---------------------------------------------------------------------
# Every test runs memctl in-process (MEMCTL_NO_SERVER=1), so no test starts a server by accident
# and none is left behind; tests/test_server.py turns the server on for its own stores and stops
# what it starts.


@pytest.fixture(autouse=True)
def no_resident_server(request, monkeypatch):
    if request.node.get_closest_marker("resident_server") is None:
        monkeypatch.setenv("MEMCTL_NO_SERVER", "1")
    else:
        monkeypatch.delenv("MEMCTL_NO_SERVER", raising=False)


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    """A project folder with `memctl init` done, as the working directory, under its own HOME."""
    from typer.testing import CliRunner

    from memctl.cli.app import app

    root = tmp_path / "project"
    root.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.chdir(root)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("MEMCTL_STORE", raising=False)
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    assert CliRunner().invoke(app, ["init"]).exit_code == 0
    return root
