"""Which embedding model a store's index uses, and that model loaded for the store.

`embedding.model` names a model id, `multilingual`, or `auto`: the multilingual model when
more than a tenth of the store's text is outside the Latin script, else the default English one.
The choice is recorded in the index manifest; it is made again while the store is small (so its
first memories do not decide for good) and whenever the index is rebuilt.
"""

from __future__ import annotations

import dataclasses
from typing import cast

from memctl.config import EmbeddingSettings, Store
from memctl.core import ports
from memctl.core.embedding import (
    AUTO,
    BUNDLED_MODEL,
    MODELS,
    MULTILINGUAL_MODEL_ID,
    EmbeddingModel,
    model_spec,
)
from memctl.core.text_tokens import non_latin_share
from memctl.store.files import max_file_bytes, read_memory, scan_files
from memctl.store.index import MANIFEST, Manifest

# `auto` looks at every file again at each sync until the store holds this many memories.
AUTO_SETTLE_MEMORIES = 30
# More than this share of non-Latin letters (about that share of the memories, a CJK character
# counting 3) makes `auto` choose the multilingual model. Why so low: on English text it loses
# ~0.02 of LoCoMo any@10 (hybrid; its vector side alone is as good), while the English model
# finds almost no Chinese memory by meaning (vector top-3 0.19 against 0.88, on
# benchmarks.multilingual): from a tenth of Chinese on, the store gains more than it loses.
# A stray name or word in another script stays well under it.
AUTO_NON_LATIN_SHARE = 0.1


def configured_model(store: Store) -> str:
    return store.settings.embedding.model


def index_model(store: Store) -> EmbeddingModel:
    """The model the store's index holds vectors of (or will, at the next sync)."""
    name = configured_model(store)
    if name != AUTO:
        return model_spec(name)
    recorded = recorded_model(store)
    return MODELS[recorded] if recorded in MODELS else auto_model(store)


def recorded_model(store: Store) -> str | None:
    """The model the last sync recorded: from the small stamp file, else the manifest."""
    stamp = Manifest.load_stamp(store.index_dir, MANIFEST)
    return stamp.get("model") or Manifest.load(store.index_dir, MANIFEST).model


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


def settle_model(
    store: Store, current: EmbeddingModel, relpaths: list[str], rebuild: bool
) -> EmbeddingModel:
    """For `auto`: decide again on a rebuild or while the store is small; else keep `current`."""
    if configured_model(store) != AUTO or not (rebuild or len(relpaths) < AUTO_SETTLE_MEMORIES):
        return current
    return auto_model(store, relpaths)


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
