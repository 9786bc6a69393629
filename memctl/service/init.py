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


MODEL_LINE = "  model: auto\n"


def init_store(directory: Path, multilingual: bool = False) -> Store:
    """Create `<directory>/.memory` (or `directory` itself if it is named .memory) from templates.

    `multilingual` sets `embedding.model: multilingual` instead of the template's `auto`.
    """
    directory = Path(directory).resolve()
    root = directory if directory.name == STORE_DIRNAME else directory / STORE_DIRNAME
    if (root / "config.yaml").exists():
        raise MemctlError(f"A store already exists at {root}.")
    source = templates_dir()
    root.mkdir(parents=True, exist_ok=True)
    config = (source / "config.yaml").read_text(encoding="utf-8")
    if multilingual:
        config = config.replace(MODEL_LINE, "  model: multilingual\n", 1)
    (root / "config.yaml").write_text(config, encoding="utf-8")
    shutil.copyfile(source / "store-README.md", root / "README.md")
    shutil.copyfile(source / "gitignore", root / ".gitignore")
    return open_store(root)
