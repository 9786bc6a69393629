from __future__ import annotations

from pathlib import Path

import pytest

from memctl import service
from memctl.config import Store


@pytest.fixture(autouse=True)
def no_user_store(tmp_path_factory, monkeypatch):
    """No test reads or writes the real ~/.local/share/memctl: the user store is a temp folder
    that does not exist until a test creates it (see the `user_store` fixture)."""
    home = tmp_path_factory.mktemp("user-data")
    monkeypatch.setenv("XDG_DATA_HOME", str(home))
    monkeypatch.setenv("MEMCTL_USER_STORE", str(home / "memctl"))
    return home / "memctl"


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
