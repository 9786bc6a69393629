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
