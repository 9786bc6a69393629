from __future__ import annotations

import numpy as np
import pytest

from memctl.integrations.embedder import DIMENSION, get_embedder
from memctl.integrations.query_embedder import get_query_embedder

pytestmark = pytest.mark.model

TEXTS = [
    "how do we deploy",
    "reconcile_manifest() throws TW-E4012",
    "Maria prefers tabs over spaces in Go code, and wants gofmt to run on save. "
    * 40,  # past 512 tokens
    "我们决定使用 Postgres",
]


def test_vectors_are_unit_length_and_384_wide():
    vectors = get_embedder().embed(TEXTS)
    assert vectors.shape == (len(TEXTS), DIMENSION)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_light_query_embedder_matches_fastembed():
    fast = get_embedder()
    light = get_query_embedder()
    for text in TEXTS:
        a = fast.embed_query(text)
        b = light.embed_query(text)
        assert float(a @ b) > 0.9999, text


def test_related_texts_are_closer_than_unrelated():
    a, b, c = get_embedder().embed(
        ["ship the release to production", "deploy the new version", "lunch menu"]
    )
    assert a @ b > a @ c


# Queries of every shape a user types: the server's query session must give their exact bits.
QUERIES = [
    *TEXTS,
    "x",
    "why did the nightly backup job fail last week?",
    "who owns src/inventory/secret_index.py",
    "TW-E4012",
    "what did we decide about flask for backup",
    "Datenbank Migration rückgängig machen",
    "¿cómo desplegamos la versión nueva?",
    "上周 我们 讨论 了 什么",
    "def reconcile(manifest: dict) -> None: raise ValueError('bad')",
    "a deadlock under concurrent writes " * 12,
]


def test_the_servers_one_thread_query_vectors_are_the_same_bits(monkeypatch):
    """The engine embeds queries and documents through one ONNX session on one thread, its
    model's constants folded at load (one copy of the model, not three); its answers must stay
    byte-identical to the in-process ones, which use every thread and compute the constants on
    every run."""
    from memctl.config import EmbeddingSettings
    from memctl.integrations import query_embedder
    from memctl.integrations.embedder import concrete

    settings = concrete(EmbeddingSettings())
    everywhere = query_embedder.OnnxQueryEmbedder(settings)
    monkeypatch.setattr(query_embedder, "_one_thread", True)
    server = query_embedder.OnnxQueryEmbedder(settings)
    assert server._query_session is server._session  # one session for queries and documents
    for text in QUERIES:
        assert server.embed_query(text).tobytes() == everywhere.embed_query(text).tobytes(), text
    # A warm add's text goes through the same folded session: the vector the index stores must
    # be the one an in-process add stores.
    assert server.embed(QUERIES).tobytes() == everywhere.embed(QUERIES).tobytes()
