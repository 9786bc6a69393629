"""Create a store from the templates."""

from __future__ import annotations

import shutil
import sys
from importlib import resources
from pathlib import Path

from memctl.config import STORE_DIRNAME, Store, open_store
from memctl.core.errors import MemctlError


def templates_dir() -> Path:
    """The `templates/` folder: beside the package in a checkout, under share/ when installed."""
    candidates = [
        Path(__file__).resolve().parents[2] / "templates",
        Path(sys.prefix) / "share" / "memctl" / "templates",
    ]
    for candidate in candidates:
        if (candidate / "config.yaml").is_file():
            return candidate
    return Path(str(resources.files("memctl") / "templates"))


def init_store(directory: Path) -> Store:
    """Create `<directory>/.memory` (or `directory` itself if it is named .memory) from templates."""
    directory = Path(directory).resolve()
    root = directory if directory.name == STORE_DIRNAME else directory / STORE_DIRNAME
    if (root / "config.yaml").exists():
        raise MemctlError(f"A store already exists at {root}.")
    source = templates_dir()
    root.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source / "config.yaml", root / "config.yaml")
    shutil.copyfile(source / "store-README.md", root / "README.md")
    shutil.copyfile(source / "gitignore", root / ".gitignore")
    return open_store(root)
