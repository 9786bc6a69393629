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


MODEL_LINE = "  model: auto\n"


def init_store(directory: Path, multilingual: bool = False) -> Store:
    """Create `<directory>/.memory` (or `directory` itself if it is named .memory) from templates.

    `multilingual` sets `embedding.model: multilingual` instead of the template's `auto`.
    """
    directory = Path(directory).resolve()
    root = directory if directory.name == STORE_DIRNAME else directory / STORE_DIRNAME
    if (root / "config.yaml").exists():
        raise MemctlError(f"A store already exists at {root}.")
    _populate(root, multilingual)
    return open_store(root)


def enclosing_store(directory: Path) -> Path | None:
    """The store of a project `directory` is inside (a `.memory/` with a config.yaml in a
    folder above it), which commands run from `directory` would read; None when there is none."""
    directory = Path(directory).resolve()
    project = directory.parent if directory.name == STORE_DIRNAME else directory
    for folder in project.parents:
        if (folder / STORE_DIRNAME / "config.yaml").is_file():
            return folder / STORE_DIRNAME
    return None


def init_user_store(env: dict[str, str] | None = None, multilingual: bool = False) -> Store:
    """Create the person's own store where `user_store_path` says (the folder itself is the
    store). It is not made a git repository: what is in it is nobody else's."""
    root = user_store_path(env)
    if (root / "config.yaml").exists():
        raise MemctlError(f"A user store already exists at {root}.")
    _populate(root, multilingual)
    store = open_user_store(env)
    assert store is not None  # Why: _populate just wrote its config.yaml
    return store


def enclosing_git_repository(path: Path) -> Path | None:
    """The work tree `path` is inside, if any (found by its .git, without running git)."""
    for folder in (path, *path.parents):
        if (folder / ".git").exists():
            return folder
    return None


def _populate(root: Path, multilingual: bool = False) -> None:
    source = templates_dir()
    if not (source / "config.yaml").is_file():
        raise MemctlError(f"memctl's templates are missing from {source}; reinstall memctl.")
    root.mkdir(parents=True, exist_ok=True)
    config = (source / "config.yaml").read_text(encoding="utf-8")
    if multilingual:
        config = config.replace(MODEL_LINE, "  model: multilingual\n", 1)
    (root / "config.yaml").write_text(config, encoding="utf-8")
    shutil.copyfile(source / "store-README.md", root / "README.md")
    shutil.copyfile(source / "gitignore", root / ".gitignore")
