"""Which embedding model a store's index uses, and that model loaded for the store.

`embedding.model` names a model id, `multilingual`, or `auto`. `auto` decides once, at the
first sync that finds memories, from their text (the multilingual model when more than a tenth of
it is outside the Latin script, else the default English one), and records the decision in
`.state/embedding.json`. Why once: a model switch re-embeds the whole store and moves every
score; one Chinese memory in an English store must not lower its English recall (the full-text
side still finds Chinese words, cut into bigrams). The model changes only when the user asks:
`memctl index --model X`.
"""

from __future__ import annotations

import dataclasses
import json
from typing import cast

from memctl.config import EmbeddingSettings, Store
from memctl.core import ports
from memctl.core.errors import UsageError
from memctl.core.files.embedding import (
    AUTO,
    BUNDLED_MODEL,
    MODEL_CHOICES,
    MODELS,
    MULTILINGUAL_MODEL_ID,
    EmbeddingModel,
    model_spec,
)
from memctl.core.language.text_tokens import non_latin_share
from memctl.store.files import atomic_write, max_file_bytes, read_memory, scan_files
from memctl.store.index import MANIFEST, Manifest

# More than this share of non-Latin letters (about that share of the memories, a CJK character
# counting 3) makes `auto` choose the multilingual model. Why so low: on English text it loses
# ~0.02 of LoCoMo any@10 (hybrid; its vector side alone is as good), while the English model
# finds almost no Chinese memory by meaning (vector top-3 0.19 against 0.88, on
# benchmarks.multilingual): from a tenth of Chinese on, the store gains more than it loses.
# A stray name or word in another script stays well under it.
AUTO_NON_LATIN_SHARE = 0.1
# Where `auto` records its decision (and `index --model` the user's).
CHOICE_FILE = "embedding.json"


def configured_model(store: Store) -> str:
    return store.settings.embedding.model


def index_model(store: Store) -> EmbeddingModel:
    """The model the store's index holds vectors of (or will, at the next sync)."""
    name = configured_model(store)
    if name != AUTO:
        return model_spec(name)
    chosen = chosen_model(store)
    if chosen is not None:
        return chosen
    recorded = recorded_model(store)  # Why: a store indexed before the choice was recorded
    return MODELS[recorded] if recorded in MODELS else auto_model(store)


def recorded_model(store: Store) -> str | None:
    """The model the last sync recorded: from the small stamp file, else the manifest."""
    stamp = Manifest.load_stamp(store.index_dir, MANIFEST)
    return stamp.get("model") or Manifest.load(store.index_dir, MANIFEST).model


def chosen_model(store: Store) -> EmbeddingModel | None:
    """The model `auto` chose for this store (or `index --model` named), once recorded."""
    try:
        data = json.loads((store.state_dir / CHOICE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    model = data.get("model") if isinstance(data, dict) else None
    return MODELS.get(model) if isinstance(model, str) else None


def record_choice(store: Store, model: EmbeddingModel, why: str) -> None:
    """Record the store's model; a read-only store decides again next time."""
    data = json.dumps({"model": model.id, "why": why}, indent=2) + "\n"
    try:
        store.state_dir.mkdir(parents=True, exist_ok=True)
        atomic_write(store.state_dir / CHOICE_FILE, data.encode("utf-8"))
    except OSError:
        pass


def choose_model(store: Store, name: str) -> EmbeddingModel:
    """The user's choice (`index --model`): recorded for an `auto` store, which the next sync
    re-embeds with it; a store whose config.yaml names a model is changed there."""
    if name.strip() not in MODEL_CHOICES or name.strip() == AUTO:
        choices = ", ".join(c for c in MODEL_CHOICES if c != AUTO)
        raise UsageError(
            f"--model '{name}' is not a model memctl runs; expected one of: {choices}."
        )
    model = model_spec(name)
    configured = configured_model(store)
    if configured != AUTO and model_spec(configured) != model:
        raise UsageError(
            f"config.yaml names embedding.model: {configured}; set it to {name} (or auto) there."
        )
    record_choice(store, model, "memctl index --model")
    return model


def auto_model(store: Store, relpaths: list[str] | None = None) -> EmbeddingModel:
    """The multilingual model when over AUTO_NON_LATIN_SHARE of the memories' text is non-Latin,
    else the default."""
    paths = relpaths if relpaths is not None else sorted(scan_files(store.root, False))
    letters = []
    for relpath in paths:
        try:
            memory = read_memory(store.root, relpath, max_bytes=max_file_bytes(store))
        except Exception:  # noqa: BLE001 - a broken file is reported by the sync, not here
            continue
        letters.append(memory.embed_text())
    share = non_latin_share("\n".join(letters))
    return model_spec(MULTILINGUAL_MODEL_ID if share > AUTO_NON_LATIN_SHARE else BUNDLED_MODEL)


def settle_model(store: Store, current: EmbeddingModel, relpaths: list[str]) -> EmbeddingModel:
    """For `auto` with nothing recorded yet: decide from these files (when there are any) and
    record it; else keep `current`."""
    if configured_model(store) != AUTO or chosen_model(store) is not None:
        return current
    held = Manifest.load(store.index_dir, MANIFEST)
    if held.files and held.model in MODELS:
        # Why: a store indexed before choices were recorded keeps its model; nothing switches.
        record_choice(store, MODELS[held.model], "the model the index already held")
        return MODELS[held.model]
    if not relpaths:
        return current
    model = auto_model(store, relpaths)
    record_choice(store, model, f"auto, from the {len(relpaths)} memories present at first sync")
    return model


def model_settings(store: Store, model: EmbeddingModel | None = None) -> EmbeddingSettings:
    """The store's embedding settings naming the model its index uses (or `model`)."""
    model = model or index_model(store)
    return dataclasses.replace(store.settings.embedding, model=model.id)


def store_embedder(store: Store, model: EmbeddingModel | None = None) -> ports.Embedder:
    """The store's model (or `model`), batched and threaded as its config says; in the engine,
    the model's one session (see integrations.query_embedder.run_on_one_thread)."""
    from memctl.integrations.embedder import get_embedder
    from memctl.integrations.query_embedder import get_query_embedder, single_session

    settings = model_settings(store, model)
    if single_session() and settings.model == BUNDLED_MODEL:
        return cast(ports.Embedder, get_query_embedder(settings))
    return get_embedder(settings)


def store_query_embedder(store: Store) -> ports.QueryEmbedder:
    """The lightest loader of the store's model for one query."""
    from memctl.integrations.query_embedder import get_query_embedder

    return get_query_embedder(model_settings(store))
