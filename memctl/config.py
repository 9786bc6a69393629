"""Find the store, read its config.yaml into typed settings, and read the environment.

The only module that reads the environment or config.yaml. Each section of config.yaml is a
frozen dataclass below; its defaults live there and nowhere else. config.yaml is checked once,
when the store is opened: a value of the wrong type or out of range stops the command with
`config.yaml:LINE: what is wrong`; a key memctl does not know is a warning on stderr.
Adding a section is one dataclass and one line in `Settings`.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import stat
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memctl.core.errors import InvalidConfig, StoreNotFound
from memctl.core.files.embedding import AUTO, MODEL_CHOICES, model_spec
from memctl.core.files.safe_yaml import MAX_YAML_CHARS
from memctl.core.files.schema import (
    KeyPath,
    SettingError,
    build,
    fraction,
    known_keys,
    plain,
    section,
    setting,
)
from memctl.core.files.yaml_lines import BrokenYAML, line_of, load_with_lines
from memctl.core.learning import decay as decay_model
from memctl.core.trust.terminal import printable

STORE_DIRNAME = ".memory"
INDEX_DIRNAME = ".index"
STATE_DIRNAME = ".state"
ARCHIVE_DIRNAME = "archive"
PRIVATE_DIRNAME = "private"
USER_STORE_ENV = "MEMCTL_USER_STORE"
CONFIG_FILENAME = "config.yaml"

# --- the sections of config.yaml ---------------------------------------------------------------


@dataclass(frozen=True)
class EmbeddingSettings:
    # A model id, "multilingual", or "auto": the multilingual model when over a tenth of the
    # store's text is non-Latin, else the bundled English one (service/retrieval/embedding.py).
    model: str = setting(AUTO, choices=MODEL_CHOICES)
    batch_size: int = setting(64, at_least=1)
    threads: int | None = setting(None, at_least=1)  # None: the runtime decides

    @property
    def dimension(self) -> int:
        """The size of the vectors of the model named (`auto` here: the bundled model)."""
        return model_spec(self.model).dim


@dataclass(frozen=True)
class RecallSettings:
    k: int = setting(5, at_least=1)
    # Weighted sum of each side's scores, shifted so its weakest candidate is 0 and divided by
    # their standard deviation; "adaptive" scales each side's weight by its evidence for the
    # query (see coverage_chance, peak_gain), fully in a small store and less as it grows
    # (prior_half_size); "zscore" keeps the weights fixed; "score" divides by the range
    # (min-max) instead; "rrf": reciprocal rank fusion of the ranks.
    fusion: str = setting("adaptive", choices=("adaptive", "zscore", "score", "rrf"))
    bm25_weight: float = setting(0.6, at_least=0)
    vector_weight: float = setting(0.4, at_least=0)
    # adaptive: a best match holding no more than this share of the query gives BM25 no say
    # (a word or two any text shares with the query); shares above it are rescaled to 0-1
    coverage_chance: float = fraction(0.15)
    # adaptive, at any store size: a best match holding less than this share of the query cuts
    # BM25's weight in proportion (to none at coverage_chance): BM25 that matched only crumbs
    # of the query ranks noise in a store of any size
    coverage_full: float = fraction(0.3)
    # adaptive: vector weight times 1 + this x how far its top cosine stands above the rest
    peak_gain: float = setting(0.2, at_least=0)
    # adaptive, hybrid: the candidates holding the most of the query's words (at least
    # coverage_full of its weight) all get the best one's lexical score, so the vector side
    # decides among them; false keeps BM25's own order (term counts, text length)
    lexical_ties: bool = setting(True)
    # A store of this many memories takes half its lexical score from BM25 and half from a
    # match weighted by word frequency in general language (BM25's IDF is noise in a small
    # store); the prior's share fades as the store grows. 0 turns the prior off.
    prior_half_size: float = setting(100, at_least=0)
    # Hits less relevant than this (0-1, from their own evidence: cosine, weighted share of
    # the query's words, a verbatim identifier) are left out; 0 keeps every candidate.
    min_relevance: float = fraction(0.25)
    # A time the query names ("last week", "in May") adds this share of one retriever's top
    # score to memories dated then; it never removes the others. 0 turns it off.
    time_bonus: float = setting(1.0, at_least=0)
    # A question asking when or where ("When did we migrate?", "Where are invoices stored?",
    # 什么时候, 哪里) adds this share of one retriever's top score to memories whose own words
    # hold that kind of answer (a date or schedule; a place, path or address). 0 turns it off.
    answer_bonus: float = setting(0.5, at_least=0)
    # In a conversation written turn by turn ("Caroline: ..."), a query naming one speaker adds
    # this share of one retriever's top score to that speaker's own turns. 0 turns it off.
    speaker_bonus: float = setting(0.25, at_least=0)
    # A conversation's turns gain this share of one retriever's top score x ln(1 + their
    # words), capped at the candidates' median: chatter ("Wow, thanks!") ranks lower. 0 = off.
    length_prior: float = setting(0.2, at_least=0)
    rrf_k: int = setting(60, at_least=0)
    candidates: int = setting(50, at_least=1)
    # Share of a candidate's score passed to the memories written 1 and 2 steps before and
    # after it in the same session (front matter session_id); [] turns it off.
    neighbour_weights: tuple[float, ...] = setting((0.4, 0.1), at_least=0)
    # Bounded additive bonus for fresh memories: a share (at most 0.5) of one retriever's
    # top-rank score, halving every half-life. 0 turns it off; it never multiplies relevance.
    recency_bonus: float = setting(0.0, at_least=0, at_most=0.5)
    recency_half_life_days: float = setting(30.0, above=0)
    # Which memories the conversation stages (session neighbours, speaker, length prior) apply
    # to: "auto" those written in a session (session_id), "conversation" every memory, "notes"
    # none. docs/recall-pipeline.md lists the stages.
    profile: str = setting("auto", choices=("auto", "notes", "conversation"))


@dataclass(frozen=True)
class LLMSettings:
    model: str | None = setting(None)  # any litellm model string; None: offline algorithms
    timeout: float = setting(30.0, above=0)
    max_tokens: int = setting(1024, at_least=1)
    temperature: float = setting(0.0, at_least=0)
    api_base: str | None = setting(None)
    api_key: str | None = setting(None, secret=True)
    mock_response: Any = setting(None, secret=True)  # testing: litellm's mock path, no call


@dataclass(frozen=True)
class RedactionSettings:
    enabled: bool = setting(True)
    disabled: tuple[str, ...] = setting(())  # kinds not redacted
    patterns: dict[str, str] = setting({})  # NAME -> regex of your own kinds


@dataclass(frozen=True)
class WriteSettings:
    min_chars: int = setting(12, at_least=0)  # low-value filter: a CJK character counts 3
    dedup_threshold: float = fraction(0.95)  # cosine at which an add merges
    subject_candidates: int = setting(5, at_least=1)  # nearest memories checked for a subject
    subject_similarity: float = fraction(0.4)  # precise subject (field, facet)
    loose_subject_similarity: float = fraction(0.6)  # subject from a head word
    # A new memory with another value for a stored memory's subject supersedes it (a new file;
    # the old one is marked superseded_by): at this cosine, or at the lower one when the new
    # text says something changed ("now", "moved to", 改为).
    supersede_similarity: float = fraction(0.8)
    supersede_cue_similarity: float = fraction(0.55)


@dataclass(frozen=True)
class ExtractSettings:  # memctl extract: what the LLM sees
    max_conversation_chars: int = setting(24000, at_least=1)
    context_memories: int = setting(15, at_least=0)


@dataclass(frozen=True)
class HooksSettings:  # coding-agent hooks (memctl hook claude-code ...); budgets in tokens
    session_start_budget: int = setting(1500, at_least=1)
    prompt_budget: int = setting(400, at_least=1)
    prompt_k: int = setting(3, at_least=1)
    prompt_min_chars: int = setting(12, at_least=0)
    prompt_min_relevance: float | None = setting(0.35, at_least=0, at_most=1)  # None: recall.s
    prompt_min_rarity: float = setting(0.8, at_least=0, at_most=1)  # core.recall.rare_terms; 0: off
    # A memory this relevant is injected without a store-rare word shared with the prompt: it
    # clearly answers it, even when every memory speaks of the prompt's topic. 1: never.
    prompt_sure_relevance: float = setting(0.85, at_least=0, at_most=1)
    # Files a prompt names: at most this many memories anchored to them or naming them
    prompt_named_k: int = setting(0, at_least=0)
    background: bool = setting(True)  # PreCompact/SessionEnd ingest in a detached process
    compact_on_end: bool = setting(True)  # SessionEnd also runs `memctl compact`
    # With no LLM: at Stop, ask the agent once per session to record what is worth keeping
    ask_agent_to_record: bool = setting(True)
    budgets: dict[str, float] = setting({}, above=0)  # hook slug -> seconds before it gives up
    # Action time (PreToolUse): memories anchored to the file or command about to be touched,
    # plus at most action_k recall matches for its path and text at action_min_relevance.
    action_budget: int = setting(300, at_least=1)
    action_k: int = setting(1, at_least=0)
    action_min_relevance: float | None = setting(0.6, at_least=0, at_most=1)
    # ... and at most action_named_k memories whose text names the file (its path, a folder
    # it sits in, its name or stem) by a name at most action_named_share of the store holds.
    action_named_k: int = setting(2, at_least=0)
    action_named_share: float = setting(0.05, at_least=0, at_most=1)
    always_budget: int = setting(300, at_least=0)  # session start: `apply: always` memories
    # Session start: at most this many of the latest episodes (one line each), so a store
    # that learned from months of work still spends its start on rules and facts.
    session_start_episodes: int = setting(1, at_least=0)
    # Where a hook's `transcript_path` may point (Claude Code keeps them here); `~` is home.
    transcript_folders: tuple[str, ...] = setting(("~/.claude/projects",))


_DECAY = decay_model.DecaySettings()  # the decay model's own defaults


@dataclass(frozen=True)
class DecayWeights:
    age: float = setting(_DECAY.weights[0], at_least=0)
    importance: float = setting(_DECAY.weights[1], at_least=0)
    hotness: float = setting(_DECAY.weights[2], at_least=0)


@dataclass(frozen=True)
class DecayConfig:  # memctl decay: which memories are archived
    weights: DecayWeights = section(DecayWeights)
    horizon_days: float = setting(_DECAY.horizon_days, above=0)
    hotness_window_days: float = setting(_DECAY.hotness_window_days, above=0)
    hotness_saturation: int = setting(_DECAY.hotness_saturation, at_least=1)
    hotness_recency_weight: float = fraction(_DECAY.hotness_recency_weight)
    min_age_days: float = setting(_DECAY.min_age_days, at_least=0)
    threshold: float = fraction(_DECAY.threshold)
    max_memories: int | None = setting(_DECAY.max_memories, at_least=0)

    def model(self) -> decay_model.DecaySettings:
        """These settings as the decay model takes them."""
        w = self.weights
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return decay_model.DecaySettings(**{**values, "weights": (w.age, w.importance, w.hotness)})


@dataclass(frozen=True)
class SessionSettings:  # short-term memory: one buffer per session in .state/sessions/
    max_turns: int = setting(10, at_least=1)  # exchanges; system messages never count
    max_tokens: int = setting(8000, at_least=1)
    keep_ratio: float = setting(0.8, above=0, at_most=1)  # trimming keeps this share
    summary_ratio: float = setting(0.25, above=0, at_most=1)  # of what a summary replaces
    summary_max_tokens: int = setting(1000, at_least=1)
    ttl_minutes: float = setting(120.0, at_least=0)  # idle sessions end; 0 never
    min_exchanges: int = setting(2, at_least=0)  # fewer and ending writes no episode
    compact_on_add: bool = setting(True)


@dataclass(frozen=True)
class TaskSettings:  # importance of the episode a finished task becomes
    success_importance: float = fraction(0.7)
    partial_importance: float = fraction(0.75)
    failure_importance: float = fraction(0.85)

    def importance(self, outcome: str) -> float:
        """The base importance for an outcome: success, partial or failed."""
        return {"failed": self.failure_importance, "partial": self.partial_importance}.get(
            outcome, self.success_importance
        )


@dataclass(frozen=True)
class CompactSettings:
    min_episodes: int = setting(3, at_least=2)  # episodes about one target a summary needs
    similarity: float = fraction(0.7)
    ignore_tags: tuple[str, ...] = setting(("session", "task", "episode", "conversation"))
    sentence_embeddings: bool = setting(True)  # extractive summaries rank on the model


@dataclass(frozen=True)
class ContextSplit:  # share of the budget each section may use before it must shrink first
    task: float = fraction(0.2)
    session: float = fraction(0.35)
    memories: float = fraction(0.3)
    facts: float = fraction(0.15)


@dataclass(frozen=True)
class ContextSettings:
    budget: int = setting(2000, at_least=50)
    max_memories: int = setting(10, at_least=0)
    max_facts: int = setting(20, at_least=0)
    min_confidence: float = fraction(0.6)
    # Recalled memories need this relevance (0-1); None: recall.min_relevance.
    min_relevance: float | None = setting(None, at_least=0, at_most=1)
    recent_turns: int = setting(6, at_least=0)
    split: ContextSplit = section(ContextSplit)


@dataclass(frozen=True)
class ServerSettings:  # the user's engine (memctl serve) the hot commands talk to
    auto: bool = setting(True)  # this store uses it; hot commands start it when none runs
    idle_minutes: float = setting(30.0, at_least=0)  # the engine closes the store then; 0 never


@dataclass(frozen=True)
class IndexSettings:  # the index on object storage (store/remote_index.py)
    uri: str | None = setting(None)  # e.g. s3://bucket/prefix; None: .memory/.index only
    mode: str = setting("local", choices=("local", "remote"))  # remote: read the published index
    # Only what is not secret (endpoint, region, allow_http): credentials come from the
    # environment or the cloud profile, never from config.yaml.
    storage_options: dict[str, str] = setting({})
    # Local index upkeep (store/index_maintenance.py): an old version stays this long after a
    # newer one replaced it, for readers still on it; old versions are looked for every so many
    # versions; from ann_min_rows rows the vector column gets an ANN index.
    keep_versions_seconds: float = setting(2.0, at_least=0)
    cleanup_every_versions: int = setting(6, at_least=1)
    ann_min_rows: int = setting(50_000, at_least=1)


@dataclass(frozen=True)
class RoutingSettings:  # where extraction and the hooks write when a user store exists
    user_types: tuple[str, ...] = setting(("preference", "profile"))  # always the user store
    project_types: tuple[str, ...] = setting(("procedural", "episodic", "knowledge"))
    # Other types go to the user store when the text is about the person ("I", "my", "the
    # user") and names nothing of the code or the team; else to the project.
    about_user: bool = setting(True)


@dataclass(frozen=True)
class PrivacySettings:
    # Private memories (scope private, under private/) stay out of context, hooks, MCP and
    # exports unless a call opts in (--include-private) or this is true.
    share_private_with_agents: bool = setting(False)


@dataclass(frozen=True)
class LimitsSettings:
    # Memory files are untrusted input: larger ones are reported and skipped, never read whole.
    max_file_bytes: int = setting(2 * 1024 * 1024, at_least=1024)
    # Files memctl is handed (an import, a hook's transcript, `extract FILE`): larger ones are
    # refused, as are devices and pipes. Queries (recall, MCP) longer than max_query_bytes too.
    max_input_bytes: int = setting(64 * 1024 * 1024, at_least=1024)
    max_query_bytes: int = setting(64 * 1024, at_least=256)


@dataclass(frozen=True)
class Settings:
    """Everything config.yaml can say, checked; one field per section."""

    embedding: EmbeddingSettings = section(EmbeddingSettings)
    recall: RecallSettings = section(RecallSettings)
    llm: LLMSettings = section(LLMSettings)
    redaction: RedactionSettings = section(RedactionSettings)
    write: WriteSettings = section(WriteSettings)
    extract: ExtractSettings = section(ExtractSettings)
    hooks: HooksSettings = section(HooksSettings)
    decay: DecayConfig = section(DecayConfig)
    session: SessionSettings = section(SessionSettings)
    task: TaskSettings = section(TaskSettings)
    compact: CompactSettings = section(CompactSettings)
    context: ContextSettings = section(ContextSettings)
    server: ServerSettings = section(ServerSettings)
    index: IndexSettings = section(IndexSettings)
    routing: RoutingSettings = section(RoutingSettings)
    privacy: PrivacySettings = section(PrivacySettings)
    limits: LimitsSettings = section(LimitsSettings)


SECTIONS = tuple(f.name for f in dataclasses.fields(Settings))
# The defaults as plain data, shaped like config.yaml (templates/config.yaml documents them).
DEFAULTS: dict[str, Any] = plain(Settings())


# --- the environment ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Environment:
    """The environment variables memctl reads, and nothing else of the environment."""

    store: str | None = None  # MEMCTL_STORE: the store to use
    llm_model: str | None = None  # MEMCTL_LLM_MODEL: overrides llm.model
    claude_project_dir: str | None = None  # CLAUDE_PROJECT_DIR: where a Claude Code hook runs
    debug: bool = False  # MEMCTL_DEBUG=1: tracebacks for unexpected errors
    user_store: str | None = None  # MEMCTL_USER_STORE: the person's own store
    xdg_data_home: str | None = None  # XDG_DATA_HOME: where the user store lives by default
    home: str | None = None  # HOME
    # MEMCTL_HOOK_BUDGET: seconds any hook may take before it gives up, over hooks.budgets and
    # the hook's own limit (a slow or loaded machine; the tests, so no result depends on load).
    hook_budget: float | None = None
    # MEMCTL_REQUEST_ID: the client's id for one command, so a retry writes nothing twice
    request_id: str | None = None


def read_environment(env: Mapping[str, str] | Environment | None = None) -> Environment:
    if isinstance(env, Environment):
        return env
    env = os.environ if env is None else env
    return Environment(
        store=env.get("MEMCTL_STORE") or None,
        llm_model=env.get("MEMCTL_LLM_MODEL") or None,
        claude_project_dir=env.get("CLAUDE_PROJECT_DIR") or None,
        debug=env.get("MEMCTL_DEBUG", "") not in ("", "0"),
        user_store=env.get(USER_STORE_ENV) or None,
        xdg_data_home=env.get("XDG_DATA_HOME") or None,
        home=env.get("HOME") or None,
        hook_budget=_positive_seconds(env.get(HOOK_BUDGET_ENV)),
        request_id=env.get("MEMCTL_REQUEST_ID") or None,
    )


HOOK_BUDGET_ENV = "MEMCTL_HOOK_BUDGET"


def _positive_seconds(value: str | None) -> float | None:
    """A number of seconds above 0, else None (unset, or not a number: the defaults hold)."""
    try:
        seconds = float(value) if value else None
    except ValueError:
        return None
    return seconds if seconds is not None and 0 < seconds < float("inf") else None


ENGINE_MEMORY_MB_ENV = "MEMCTL_ENGINE_MEMORY_MB"
ENGINE_MAX_STORES_ENV = "MEMCTL_ENGINE_MAX_STORES"
ENGINE_PARSED_FILES_ENV = "MEMCTL_ENGINE_PARSED_FILES"


@dataclass(frozen=True)
class EngineSettings:
    """The user's engine (`memctl serve`): one process for every store, so its limits come from
    the environment it is started with, not from any one store's config.yaml."""

    memory_mb: float = 512.0  # MEMCTL_ENGINE_MEMORY_MB: over this RSS it sheds, then restarts
    max_stores: int = 32  # MEMCTL_ENGINE_MAX_STORES: open at once; the least recent closes first
    parsed_files: int = 20_000  # MEMCTL_ENGINE_PARSED_FILES: parsed memory files kept (~3 KB each)


def engine_settings(env: Mapping[str, str] | None = None) -> EngineSettings:
    """The engine's limits; a value that is not a positive number keeps the default."""
    env = os.environ if env is None else env
    defaults = EngineSettings()

    def number(name: str, default: float) -> float:
        try:
            value = float(env.get(name, "") or default)
        except ValueError:
            return default
        return value if value > 0 else default

    return EngineSettings(
        memory_mb=number(ENGINE_MEMORY_MB_ENV, defaults.memory_mb),
        max_stores=int(number(ENGINE_MAX_STORES_ENV, defaults.max_stores)),
        parsed_files=int(number(ENGINE_PARSED_FILES_ENV, defaults.parsed_files)),
    )


def editor_command() -> str:
    """$VISUAL, else $EDITOR, else vi: what `memctl edit` opens."""
    return os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"


def home_dir() -> Path:
    """The user's home folder (user-level agent settings live under it)."""
    return Path.home()


def tiktoken_cache_dirs() -> list[Path]:
    """Folders tiktoken itself would look in for a cached encoding file."""
    names = ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR")
    return [Path(os.environ[name]) for name in names if os.environ.get(name)]


# --- the store ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Store:
    """Where a store's files, index and state live, and its checked settings."""

    root: Path
    settings: Settings = field(default_factory=Settings, compare=False, hash=False)
    # What config.yaml held, as written; only for `section()` and `config`.
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)

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

    @property
    def config_path(self) -> Path:
        return self.root / CONFIG_FILENAME

    def section(self, name: str) -> dict[str, Any]:
        """One section as a plain dict: the untyped view, kept for older callers.

        Known sections give their checked values (defaults filled in) plus any key memctl does
        not know, as written (already warned about); unknown sections give what was written.
        New code reads `store.settings.<section>.<key>` instead.
        """
        written = self.raw.get(name)
        written = dict(written) if isinstance(written, Mapping) else {}
        if name not in SECTIONS:
            return written
        return {**written, **plain(getattr(self.settings, name))}

    @property
    def config(self) -> dict[str, Any]:
        """Every section as plain data (see `section`)."""
        names = [*SECTIONS, *(name for name in self.raw if name not in SECTIONS)]
        return {str(name): self.section(str(name)) for name in names}


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any] | None) -> dict[str, Any]:
    merged = copy.deepcopy(dict(base))
    for key, value in (override or {}).items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


@dataclass(frozen=True)
class LoadedConfig:
    settings: Settings
    raw: dict[str, Any]
    warnings: tuple[str, ...] = ()


# config.yaml path -> ((mtime_ns, size), what it said): a resident server opens its store on every
# request, and parsing and checking the commented template costs ~10 ms.
_loaded: dict[Path, tuple[tuple[int, int], LoadedConfig]] = {}


def read_config(root: Path) -> LoadedConfig:
    """Read and check `root/config.yaml` (defaults when it is missing); raises InvalidConfig."""
    path = root / CONFIG_FILENAME
    try:
        info = path.stat()
        seen = _loaded.get(path)
        if seen is not None and seen[0] == (info.st_mtime_ns, info.st_size):
            cached = seen[1]
            return LoadedConfig(cached.settings, copy.deepcopy(cached.raw), cached.warnings)
        text = read_config_text(path)
    except FileNotFoundError:
        return LoadedConfig(Settings(), {})
    except (OSError, UnicodeError) as exc:
        raise InvalidConfig(path, 1, f"unreadable: {exc}") from None
    data, lines = _parse_yaml(path, text)
    loaded = check_config(data, path, lines)
    _loaded[path] = ((info.st_mtime_ns, info.st_size), loaded)
    return LoadedConfig(loaded.settings, copy.deepcopy(loaded.raw), loaded.warnings)


def read_config_text(path: Path) -> str:
    """config.yaml's text: a regular file of at most MAX_YAML_CHARS, never a FIFO or a device
    (opening one would wait forever). Raises InvalidConfig naming it otherwise."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InvalidConfig(path, 1, "not a regular file; make it a YAML file or remove it")
        if info.st_size > MAX_YAML_CHARS:
            raise InvalidConfig(path, 1, f"larger than {MAX_YAML_CHARS // 1024} KiB; not read")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            raw = handle.read(MAX_YAML_CHARS + 1)
    finally:
        os.close(fd)
    return raw.decode("utf-8")


def check_config(
    data: Any, source: Path | str, lines: Mapping[KeyPath, int] | None = None
) -> LoadedConfig:
    """Typed settings from config data; `lines` maps a key path to its line in `source`."""
    lines = lines or {}
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise InvalidConfig(source, 1, "config.yaml must be a mapping of sections")
    try:
        settings, unknown = build(Settings, data)
    except SettingError as exc:
        raise InvalidConfig(source, line_of(lines, exc.keys), exc.problem) from None
    warnings = tuple(_unknown_warning(source, line_of(lines, keys), keys) for keys in unknown)
    return LoadedConfig(settings, dict(data), warnings)


# Keys an earlier memctl read, and what replaced them. Their values are not carried over: a
# cosine similarity and a relevance are on different scales.
REPLACED_KEYS: dict[tuple[str, ...], str] = {
    ("hooks", "prompt_min_similarity"): "hooks.prompt_min_relevance",
    ("context", "min_similarity"): "context.min_relevance",
}


def _unknown_warning(source: Path | str, line: int, keys: tuple[str, ...]) -> str:
    name = ".".join(keys)
    if tuple(keys) in REPLACED_KEYS:
        return (
            f"{source}:{line}: '{name}' was replaced by '{REPLACED_KEYS[tuple(keys)]}', a relevance "
            "in [0, 1] rather than a cosine (ignored; see docs/recall.md)"
        )
    return (
        f"{source}:{line}: unknown setting '{name}' (ignored); "
        f"known {'sections' if len(keys) == 1 else 'keys'}: {_known_names(keys)}"
    )


def config_error(store: Store, keys: KeyPath, problem: str) -> InvalidConfig:
    """A problem found while using a setting, pointed at that setting's line in config.yaml."""
    path = store.config_path
    try:
        _, lines = _parse_yaml(path, read_config_text(path))
    except (OSError, UnicodeError, InvalidConfig):
        lines = {}
    return InvalidConfig(path, line_of(lines, keys), problem)


def parse_section(name: str, data: Mapping[str, Any], source: str = "settings") -> Any:
    """One section's typed settings from plain data, checked like config.yaml."""
    return getattr(check_config({name: data}, source).settings, name)


def load_config(root: Path) -> dict[str, Any]:
    """config.yaml as plain data, defaults filled in and checked (see `Store.config`)."""
    loaded = read_config(root)
    return Store(root, loaded.settings, loaded.raw).config


def with_overrides(store: Store, overrides: Mapping[str, Any], source: str = "--set") -> Store:
    """The same store with some config keys replaced (checked like config.yaml)."""
    loaded = check_config(deep_merge(store.raw, overrides), source)
    return Store(store.root, _apply_environment(loaded.settings, None), loaded.raw)


def find_store(
    explicit: str | os.PathLike | None = None,
    cwd: Path | None = None,
    env: Mapping[str, str] | Environment | None = None,
) -> Path:
    """Like git: `--store`, then MEMCTL_STORE, then the nearest `.memory/` upward."""
    chosen = explicit or read_environment(env).store
    if chosen:
        path = Path(chosen).expanduser().resolve()
        if not path.is_dir():
            raise StoreNotFound(f"Store '{path}' does not exist. Create it with `memctl init`.")
        # Why: `--store ~/code/app` names the project; used as a store it would read nothing
        # and leave .index/ and .state/ in the project's root.
        inner = path / STORE_DIRNAME
        root = inner if path.name != STORE_DIRNAME and inner.is_dir() else path
        if root.name != STORE_DIRNAME and not (root / CONFIG_FILENAME).is_file():
            # Why: a command on a folder that is not a store would fill it with .index/,
            # .state/ and type folders; memctl writes only where `memctl init` did.
            raise StoreNotFound(
                f"'{path}' is not a memctl store (no {CONFIG_FILENAME} in it, no "
                f"{STORE_DIRNAME}/ below it). Create one with `memctl init {path}`."
            )
        return root
    here = (cwd or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / STORE_DIRNAME
        if candidate.is_dir():
            return candidate
    raise StoreNotFound(
        f"No {STORE_DIRNAME}/ found in {here} or any parent. Run `memctl init`, "
        "or point at one with --store PATH or MEMCTL_STORE."
    )


def print_warning(message: str) -> None:
    print(f"Warning: {printable(message)}", file=sys.stderr)


_warned: set[str] = set()


def warn_config_again() -> None:
    """A new command begins: it warns about config keys again (old or unknown ones), once.
    Why here and not once a process: the resident engine runs every command in one process,
    and a warning only its first command printed would look fixed to the next ones."""
    _warned.clear()


def open_store(
    explicit: str | os.PathLike | None = None,
    cwd: Path | None = None,
    env: Mapping[str, str] | Environment | None = None,
    warn: Callable[[str], None] | None = print_warning,
) -> Store:
    """The store and its checked settings. Unknown config keys go to `warn`, once a command
    (see warn_config_again)."""
    environment = read_environment(env)
    root = find_store(explicit, cwd, environment)
    loaded = read_config(root)
    for message in loaded.warnings:
        if warn is not None and message not in _warned:
            _warned.add(message)
            warn(message)
    return Store(root, _apply_environment(loaded.settings, environment), loaded.raw)


def _apply_environment(settings: Settings, environment: Environment | None) -> Settings:
    environment = environment or read_environment()
    if not environment.llm_model:
        return settings
    llm = dataclasses.replace(settings.llm, model=environment.llm_model)
    return dataclasses.replace(settings, llm=llm)


def user_store_path(env: Mapping[str, str] | Environment | None = None) -> Path:
    """Where the person's own store lives: MEMCTL_USER_STORE, else $XDG_DATA_HOME/memctl,
    else ~/.local/share/memctl. It need not exist."""
    environment = read_environment(env)
    if environment.user_store:
        return Path(environment.user_store).expanduser().resolve()
    data_home = environment.xdg_data_home
    if data_home and Path(data_home).is_absolute():  # Why: the XDG spec ignores relative paths
        return (Path(data_home) / "memctl").resolve()
    home = Path(environment.home) if environment.home else Path.home()
    return (home / ".local" / "share" / "memctl").resolve()


def open_user_store(
    env: Mapping[str, str] | Environment | None = None, besides: Store | None = None
) -> Store | None:
    """The user store when it exists (created by `memctl init --user`), else None.

    None too when it is the store `besides` itself: one store read twice is not two stores.
    """
    root = user_store_path(env)
    if not (root / CONFIG_FILENAME).is_file():
        return None
    if besides is not None and besides.root.resolve() == root:
        return None
    return open_store(root, env=env)


# --- config.yaml lines -------------------------------------------------------------------------


def _parse_yaml(path: Path, text: str) -> tuple[Any, dict[KeyPath, int]]:
    try:
        return load_with_lines(text)
    except BrokenYAML as exc:
        raise InvalidConfig(path, exc.line, exc.problem) from None


def _known_names(keys: KeyPath) -> str:
    return ", ".join(known_keys(Settings, keys[:-1])) or "none"
