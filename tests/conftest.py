from __future__ import annotations

from pathlib import Path

import pytest

from memctl import service
from memctl.config import Store


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
