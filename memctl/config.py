"""Find the store and read its configuration. The only module that reads the environment."""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from memctl.core.errors import InvalidMemoryFile, StoreNotFound

STORE_DIRNAME = ".memory"
INDEX_DIRNAME = ".index"
STATE_DIRNAME = ".state"
ARCHIVE_DIRNAME = "archive"
PRIVATE_DIRNAME = "private"

DEFAULTS: dict[str, Any] = {
    "embedding": {"model": "all-MiniLM-L6-v2-int8", "batch_size": 64, "threads": None},
    "recall": {
        "k": 5,
        # Weighted sum of each side's scores, shifted so its weakest candidate is 0 and divided by
        # their standard deviation; "adaptive" scales each side's weight by its evidence for the
        # query (see coverage_exponent, peak_gain), "zscore" keeps the weights fixed, "score"
        # divides by the range (min-max) instead; "rrf": reciprocal rank fusion of the ranks.
        "fusion": "adaptive",
        "bm25_weight": 0.6,
        "vector_weight": 0.4,
        # adaptive: BM25's weight times (weighted share of the query its best match holds) ** this
        "coverage_exponent": 1.0,
        # adaptive: vector weight times 1 + this x how far its top cosine stands above the rest
        "peak_gain": 0.2,
        # A store of this many memories takes half its lexical score from BM25 and half from a
        # match weighted by word frequency in general language (BM25's IDF is noise in a small
        # store); the prior's share fades as the store grows. 0 turns the prior off.
        "prior_half_size": 100,
        # Hits less relevant than this (0-1, from their own evidence: cosine, weighted share of
        # the query's words, a verbatim identifier) are left out; 0 keeps every candidate.
        "min_relevance": 0.25,
        "rrf_k": 60,
        "candidates": 50,
        # Share of a candidate's score passed to the memories written 1 and 2 steps before and
        # after it in the same session (front matter session_id); [] turns it off.
        "neighbour_weights": [0.4, 0.1],
        # Bounded additive bonus for fresh memories: a share (at most 0.5) of one retriever's
        # top-rank score, halving every half-life. 0 turns it off; it never multiplies relevance.
        "recency_bonus": 0.0,
        "recency_half_life_days": 30,
    },
    "llm": {"model": None, "timeout": 30, "max_tokens": 1024},
    # Write path: kinds listed in `disabled` are not redacted; `patterns` maps NAME -> regex.
    "redaction": {"enabled": True, "disabled": [], "patterns": {}},
    "write": {
        "min_chars": 12,  # low-value filter: content characters, a CJK character counts 3
        "dedup_threshold": 0.95,  # cosine at or above which an add merges into the existing memory
        "subject_candidates": 5,  # nearest memories checked for the same subject, another value
        "subject_similarity": 0.4,  # least cosine for a precise subject (profile field, facet)
        "loose_subject_similarity": 0.6,  # least cosine for a subject guessed from a head word
        # A new memory with another value for a stored memory's subject supersedes it (a new
        # file; the old one is marked superseded_by): at this cosine, or at the lower one when
        # the new text says something changed ("now", "moved to", 改为).
        "supersede_similarity": 0.8,
        "supersede_cue_similarity": 0.55,
    },
    # memctl extract: how much of a conversation, and how many stored memories, the LLM sees.
    "extract": {"max_conversation_chars": 24000, "context_memories": 15},
    "hooks": {  # coding-agent hooks (memctl hook claude-code ...); budgets in tokens
        "session_start_budget": 1500,
        "prompt_budget": 400,
        "prompt_k": 3,
        "prompt_min_chars": 12,
        "prompt_min_relevance": None,  # None: recall.min_relevance
        "background": True,  # PreCompact/SessionEnd ingest transcripts in a detached process
        "compact_on_end": True,  # SessionEnd also runs `memctl compact`
    },
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
        "min_relevance": None,  # recalled memories need this relevance; None: recall.min_relevance
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
        raise InvalidMemoryFile(
            path, mark.line + 1 if mark else 1, f"broken YAML: {getattr(exc, 'problem', exc)}"
        ) from None
    if not isinstance(data, dict):
        raise InvalidMemoryFile(path, 1, "config.yaml must be a mapping")
    return deep_merge(DEFAULTS, data)


def find_store(
    explicit: str | os.PathLike | None = None,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> Path:
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


def open_store(
    explicit: str | os.PathLike | None = None,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> Store:
    env = dict(os.environ) if env is None else env
    root = find_store(explicit, cwd, env)
    config = load_config(root)
    if env.get("MEMCTL_LLM_MODEL"):
        config = deep_merge(config, {"llm": {"model": env["MEMCTL_LLM_MODEL"]}})
    return Store(root=root, config=config, env=env)
