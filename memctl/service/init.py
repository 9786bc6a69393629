"""Create a store from the templates."""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

from memctl.config import STORE_DIRNAME, Store, open_store, open_user_store, user_store_path
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
    _populate(root)
    return open_store(root)


def init_user_store(env: dict[str, str] | None = None) -> Store:
    """Create the person's own store where `user_store_path` says (the folder itself is the
    store). It is not made a git repository: what is in it is nobody else's."""
    root = user_store_path(env)
    if (root / "config.yaml").exists():
        raise MemctlError(f"A user store already exists at {root}.")
    _populate(root)
    store = open_user_store(env)
    assert store is not None  # Why: _populate just wrote its config.yaml
    return store


def enclosing_git_repository(path: Path) -> Path | None:
    """The work tree `path` is inside, if any (found by its .git, without running git)."""
    for folder in (path, *path.parents):
        if (folder / ".git").exists():
            return folder
    return None


def _populate(root: Path) -> None:
    source = templates_dir()
    if not (source / "config.yaml").is_file():
        raise MemctlError(f"memctl's templates are missing from {source}; reinstall memctl.")
    root.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source / "config.yaml", root / "config.yaml")
    shutil.copyfile(source / "store-README.md", root / "README.md")
    shutil.copyfile(source / "gitignore", root / ".gitignore")
