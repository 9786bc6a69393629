"""Find the store and read its configuration. The only module that reads the environment."""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from memctl.errors import InvalidMemoryFile, StoreNotFound

STORE_DIRNAME = ".memory"
INDEX_DIRNAME = ".index"
STATE_DIRNAME = ".state"
ARCHIVE_DIRNAME = "archive"
PRIVATE_DIRNAME = "private"

DEFAULTS: dict[str, Any] = {
    "embedding": {"model": "all-MiniLM-L6-v2-int8", "batch_size": 64, "threads": None},
    "recall": {
        "k": 5,
        "rrf_k": 60,
        "vector_weight": 1.0,
        "bm25_weight": 1.0,
        "candidates": 50,
        "recency_bonus": 0.0,
        "importance_bonus": 0.0,
        "mmr_lambda": 1.0,
    },
    "llm": {"model": None, "timeout": 30, "max_tokens": 1024},
    "decay": {
        "weights": {"age": 0.4, "importance": 0.35, "hotness": 0.25},
        "horizon_days": 90,
        "hotness_window_days": 30,
        "hotness_saturation": 20,
        "hotness_recency_weight": 0.6,
        "min_age_days": 7,
        "threshold": 0.6,
        "max_memories": 10000,
    },
    # Short-term memory: one buffer per session in .state/sessions/.
    "session": {
        "max_turns": 10,  # exchanges (a message and its reply); system messages never count
        "max_tokens": 8000,
        "keep_ratio": 0.8,  # trimming keeps this share of both limits
        "summary_ratio": 0.25,  # rolling summary: 20-30% of what it replaces
        "summary_max_tokens": 1000,
        "ttl_minutes": 120,  # idle sessions are ended by the next session command
        "min_exchanges": 2,  # fewer and ending a session writes no episode
        "compact_on_add": True,
    },
    # Working memory: the task in progress, in .state/task.json.
    "task": {"success_importance": 0.7, "partial_importance": 0.75, "failure_importance": 0.85},
    "compact": {
        "min_episodes": 3,  # consolidation needs at least this many episodes about one target
        "similarity": 0.7,
        "ignore_tags": ["session", "task", "episode", "conversation"],
        "sentence_embeddings": True,  # extractive summaries rank sentences on the bundled model
    },
    "context": {
        "budget": 2000,
        "max_memories": 10,
        "max_facts": 20,
        "min_confidence": 0.6,
        "recent_turns": 6,
        # Share of the budget each section may use before it must shrink first.
        "split": {"task": 0.2, "session": 0.35, "memories": 0.3, "facts": 0.15},
    },
}


@dataclass(frozen=True)
class Store:
    """Where a store's files, index and state live, plus its merged configuration."""

    root: Path
    config: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    env: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    @property
    def index_dir(self) -> Path:
        return self.root / INDEX_DIRNAME

    @property
    def state_dir(self) -> Path:
        return self.root / STATE_DIRNAME

    @property
    def archive_dir(self) -> Path:
        return self.root / ARCHIVE_DIRNAME

    @property
    def private_dir(self) -> Path:
        return self.root / PRIVATE_DIRNAME

    def section(self, name: str) -> dict[str, Any]:
        return self.config.get(name, {}) or {}


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(base)
    for key, value in (override or {}).items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def load_config(root: Path) -> dict[str, Any]:
    path = root / "config.yaml"
    if not path.exists():
        return copy.deepcopy(DEFAULTS)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InvalidMemoryFile(path, mark.line + 1 if mark else 1, f"broken YAML: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(data, dict):
        raise InvalidMemoryFile(path, 1, "config.yaml must be a mapping")
    return deep_merge(DEFAULTS, data)


def find_store(explicit: str | os.PathLike | None = None, cwd: Path | None = None,
               env: dict[str, str] | None = None) -> Path:
    """Like git: `--store`, then MEMCTL_STORE, then the nearest `.memory/` upward."""
    env = dict(os.environ) if env is None else env
    chosen = explicit or env.get("MEMCTL_STORE")
    if chosen:
        path = Path(chosen).expanduser().resolve()
        if not path.is_dir():
            raise StoreNotFound(f"Store '{path}' does not exist. Create it with `memctl init`.")
        return path
    here = (cwd or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / STORE_DIRNAME
        if candidate.is_dir():
            return candidate
    raise StoreNotFound(
        f"No {STORE_DIRNAME}/ found in {here} or any parent. Run `memctl init`, "
        "or point at one with --store PATH or MEMCTL_STORE."
    )


def open_store(explicit: str | os.PathLike | None = None, cwd: Path | None = None,
               env: dict[str, str] | None = None) -> Store:
    env = dict(os.environ) if env is None else env
    root = find_store(explicit, cwd, env)
    config = load_config(root)
    if env.get("MEMCTL_LLM_MODEL"):
        config = deep_merge(config, {"llm": {"model": env["MEMCTL_LLM_MODEL"]}})
    return Store(root=root, config=config, env=env)
