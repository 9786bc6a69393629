"""Create a store from the templates."""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

from memctl.config import STORE_DIRNAME, Store, open_store
from memctl.core.errors import MemctlError


def templates_dir() -> Path:
    """The templates `memctl init` copies, shipped inside the package (`templates/` links here)."""
    return Path(str(resources.files("memctl") / "templates"))


def init_store(directory: Path) -> Store:
    """Create `<directory>/.memory` (or `directory` itself if it is named .memory) from templates."""
    directory = Path(directory).resolve()
    root = directory if directory.name == STORE_DIRNAME else directory / STORE_DIRNAME
    if (root / "config.yaml").exists():
        raise MemctlError(f"A store already exists at {root}.")
    source = templates_dir()
    if not (source / "config.yaml").is_file():
        raise MemctlError(f"memctl's templates are missing from {source}; reinstall memctl.")
    root.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source / "config.yaml", root / "config.yaml")
    shutil.copyfile(source / "store-README.md", root / "README.md")
    shutil.copyfile(source / "gitignore", root / ".gitignore")
    return open_store(root)
