"""A start-up-light twin of the embedder for single queries and a handful of documents.

`import fastembed` costs ~1 s because it pulls in huggingface_hub, httpx and image code.
A fresh `memctl recall` (one query, e.g. from a hook on every prompt) or `memctl add` (one
memory) only needs the same tokenizer and ONNX model with the same mean pooling, so it runs
them through tokenizers and onnxruntime directly. tests/test_embedder.py proves the vectors
match fastembed's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import cast

from memctl.config import EmbeddingSettings
from memctl.core import ports
from memctl.core.files.embedding import BUNDLED_MODEL
from memctl.integrations import embedder as fastembed_side
from memctl.integrations.embedder import (
    RECENT_TEXTS,
    _model_file,
    concrete,
    embedder_loaded,
    get_embedder,
    tokenizer_dir,
)
from memctl.integrations.onnx_runtime import quiet_onnxruntime
from memctl.integrations.process_memory import give_back_free_memory

MAX_TOKENS = 512
# onnxruntime's basic graph rewrites (what its verbose log names) other than ConstantFolding:
# kept off in a folding session (see _session).
BASIC_REWRITES_BUT_FOLDING = (
    "CommonSubexpressionElimination",
    "ConstantSharing",
    "DoubleQDQPairsRemover",
    "EnsureUniqueDQForNodeUnit",
    "FreeDimensionOverrideTransformer",
    "GeluFusionL1",
    "LayerNormFusionL1",
    "Level1_RuleBasedTransformer",
    "MatMulAddFusion",
    "QDQPropagationTransformer",
    "ReshapeFusion",
    "SliceConcatToSpaceToDepthFusion",
    "TransposeOptimizer",
    "WeightBiasQuantization",
    "WhereDummyDq",
)
_one_thread = False  # see run_on_one_thread()
_session_threads: int | None = 1  # its ONNX threads when the settings leave them open
_release_after_pass = False  # see one_bulk_session()


def run_on_one_thread() -> None:
    """From now on this process holds one ONNX session per model, for queries and documents
    alike, on one thread (or `embedding.threads`), its constants folded at load (see _session).

    For the engine: one session instead of three (fastembed's for documents, one for queries,
    one folded): ~230 MB less, and its RSS stays flat (measured: a plain session's arena grew
    from 100 to 300 MB over 200 queries of varied length; the folded one stays at its load
    size). One thread because the engine's command thread works beside each embedding
    (full-text search, word weights), and two ONNX workers plus that thread on two busy cores
    wait for each other (a warm recall at 10k ran 10-30% faster this way). The vectors are the
    same bits as the unfolded session's (compared on 600 queries and memory texts)."""
    global _one_thread
    _one_thread = True
    _cached_query_embedder.cache_clear()


@contextlib.contextmanager
def one_bulk_session(release_between_passes: bool = False) -> Iterator[None]:
    """For a one-shot bulk write (`memctl import`, a transcript ingest): while inside, documents
    are embedded through one folded session on every core, not fastembed's batches, whose ONNX
    arena holds the largest padded batch it ever ran (~790 MB peak importing 1k notes).

    `release_between_passes`: the session is dropped when a sync has embedded what it needed
    (end_of_embedding_pass), before it writes its rows, so the model (~190 MB with its arena)
    and the index's writer are never held at once; a later pass loads it again (~0.3 s)."""
    global _one_thread, _session_threads, _release_after_pass
    before = (_one_thread, _session_threads, _release_after_pass)
    _one_thread, _session_threads = True, None
    _release_after_pass = release_between_passes
    _cached_query_embedder.cache_clear()
    try:
        yield
    finally:
        _one_thread, _session_threads, _release_after_pass = before
        _cached_query_embedder.cache_clear()


def end_of_embedding_pass() -> None:
    """A sync has embedded every text it needed: inside one_bulk_session(release_between_passes=
    True) the model's session is let go here (see there); elsewhere nothing happens."""
    if _release_after_pass:
        _cached_query_embedder.cache_clear()
        give_back_free_memory()


def single_session() -> bool:
    """Does this process embed everything through one session per model (the engine)?"""
    return _one_thread


class OnnxQueryEmbedder:
    """The `QueryEmbedder` port straight on ONNX Runtime: the bundled model, mean pooling."""

    def __init__(self, settings: EmbeddingSettings):
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(tokenizer_dir() / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self._tokenizer.no_padding()
        self.model_id = settings.model
        self.dim = settings.dimension
        if _one_thread:
            threads = settings.threads or _session_threads
            self._session = _session(settings.model, threads, fold_constants=True)
        else:
            threads = settings.threads
            self._session = _session(settings.model, threads)
        self._query_session = self._session
        self._inputs = {node.name for node in self._session.get_inputs()}
        self._recent = _recent_vectors((settings.model, _one_thread, threads))

    def embed(self, texts: Sequence[str]) -> ports.Vectors:
        """One vector per text, each run alone (no padding): for a handful of texts."""
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # Why remembered: a write embeds its texts to look for duplicates, then its sync embeds
        # the same texts for the index (as the fastembed side does; the same bits either way).
        with _RECENT_LOCK:
            known = {t: self._recent[t] for t in texts if t in self._recent}
        for text in dict.fromkeys(texts):
            if text not in known:
                # Why the query session: in the server it is the folded one (see _session), the
                # same bits at half the time; a few short texts gain little from more workers.
                known[text] = self._vector(text, self._query_session)
                with _RECENT_LOCK:
                    self._recent[text] = known[text]
                    while len(self._recent) > RECENT_TEXTS:
                        self._recent.popitem(last=False)
        return np.stack([known[text] for text in texts])

    def embed_query(self, text: str) -> ports.Vector:
        return self._vector(text, self._query_session)

    def _vector(self, text: str, session) -> ports.Vector:
        import numpy as np

        encoding = self._tokenizer.encode(text)
        ids = np.asarray([encoding.ids], dtype=np.int64)
        mask = np.asarray([encoding.attention_mask], dtype=np.int64)
        feed = {"input_ids": ids}
        if "attention_mask" in self._inputs:
            feed["attention_mask"] = mask
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = session.run(None, feed)[0]
        weights = mask[..., None].astype(np.float64)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norm = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norm, 1e-12, None))[0].astype(np.float32)


_RECENT_LOCK = threading.Lock()
_RECENT: dict[tuple, OrderedDict[str, ports.Vector]] = {}


def _recent_vectors(kind: tuple) -> OrderedDict[str, ports.Vector]:
    """The last texts this process embedded with sessions of one kind (model, folded, threads),
    kept when a session is let go (one_bulk_session): such sessions give the same bits for a
    text; another thread count may differ in the last bits."""
    with _RECENT_LOCK:
        return _RECENT.setdefault(kind, OrderedDict())


def _session(model: str, threads: int | None, fold_constants: bool = False):
    """An ONNX session of the model; `fold_constants` for a long-lived one (the server's).

    The int8 model turns its weights back into floats (Cast, Mul) on every run: ~60% of a short
    query's time, most of it the 30k-word embedding table for a handful of tokens. Folding
    those constants once at load (~0.2 s, ~30 MB more) halves a query's embedding, and gives the same
    bits: the same CPU kernels compute the same values, only earlier, and with prepacking off
    every MatMul still multiplies by its weights as a plain input, as the unfolded graph does
    (a prepacked weight is summed in another order and rounds differently). The other graph
    optimisations stay off: fused kernels round differently, and the server's answers must be
    byte-identical to the in-process ones, which cannot spend the load time on one query.
    """
    ort = quiet_onnxruntime()
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    disabled: list[str] = []
    if fold_constants:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.add_session_config_entry("session.disable_prepacking", "1")
        disabled = list(BASIC_REWRITES_BUT_FOLDING)
    # Why: idle worker threads that spin burn a core each between two small runs.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if threads:
        options.intra_op_num_threads = threads
    return ort.InferenceSession(
        str(_model_file(model)),
        sess_options=options,
        providers=["CPUExecutionProvider"],
        disabled_optimizers=disabled,
    )


def get_query_embedder(settings: EmbeddingSettings | None = None) -> ports.QueryEmbedder:
    """The lightest way to embed one query with the model `settings` name (the defaults when
    none are given); the multilingual models load fast, so they are the full embedder."""
    settings = concrete(settings or EmbeddingSettings())
    if settings.model != BUNDLED_MODEL:
        return get_embedder(settings)
    if _one_thread:  # Why: one session per model, whatever batch size each store's config asks
        settings = dataclasses.replace(settings, batch_size=EmbeddingSettings().batch_size)
    return _cached_query_embedder(settings)


@lru_cache(maxsize=2)
def _cached_query_embedder(settings: EmbeddingSettings) -> OnnxQueryEmbedder:
    return OnnxQueryEmbedder(settings)


def _light_loaded() -> bool:
    return _cached_query_embedder.cache_info().currsize > 0


# Past this many texts, fastembed's batching pays for its import.
FEW_TEXTS = 8


def embed_documents(
    texts: Sequence[str], settings: EmbeddingSettings, few: bool | None = None
) -> ports.Vectors:
    """Vectors for texts to store: a few through the light path (unless fastembed is loaded
    already), more through fastembed's batches; the multilingual models have one path."""
    settings = concrete(settings)
    few = len(texts) <= FEW_TEXTS if few is None else few
    # Why: both through the module-level getters, so a stand-in installed there is used.
    # A loaded light path (the server has both) skips fastembed's batching for a few texts.
    if settings.model == BUNDLED_MODEL and (_one_thread or few and not embedder_loaded()):
        # Why the engine too for many texts: fastembed's session would be a second copy of
        # the model (~170 MB); one text at a time through the one session, no padding.
        return cast(ports.Embedder, get_query_embedder(settings)).embed(texts)
    if settings.model == BUNDLED_MODEL and few and _light_loaded():
        return cast(ports.Embedder, get_query_embedder(settings)).embed(texts)
    return fastembed_side.get_embedder(settings).embed(texts)
