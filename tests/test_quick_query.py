"""The warm service's traced single-query path gives the vectors sentence-transformers' encode gives."""

from __future__ import annotations

import numpy as np
import pytest

from memvault.index import quick

PROMPTS = [
    "how did we fix the flaky integration tests last time",
    "Our Zephyrq consumer is lagging on the billing topic again, what did we do last time?",
    "écris un résumé long — « paragraph-long narratives » s'il te plaît",
    "   tabs pls   ",
    "x",
    "KX-4471 " * 300,  # past the model's 256-token limit: truncated the same way
]


def _vectors(embedder, texts: list[str]) -> list[np.ndarray]:
    return [np.frombuffer(blob, dtype=np.float32) for blob in embedder.encode_query(texts, threads=1)]


def test_the_traced_query_path_gives_encodes_vectors(embedder) -> None:
    saved = embedder.quick
    try:
        embedder.quick = None
        want = [_vectors(embedder, [p])[0] for p in PROMPTS]
        assert embedder.quicken(), "the packaged MiniLM is a transformer + mean pooling + normalisation"
        got = [_vectors(embedder, [p])[0] for p in PROMPTS]
        batch = _vectors(embedder, PROMPTS[:2])  # more than one text: sentence-transformers' own batch path
    finally:
        embedder.quick = saved
    for text, a, b in zip(PROMPTS, want, got, strict=True):
        assert a.shape == b.shape == (embedder.dim,)
        assert float(np.abs(a - b).max()) < quick.TOLERANCE, text
    assert all(float(np.abs(a - b).max()) < quick.TOLERANCE for a, b in zip(want[:2], batch, strict=True))


def test_a_model_of_another_architecture_keeps_encode(embedder) -> None:
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.models import Pooling

    model = embedder.model
    cls_pooled = SentenceTransformer(modules=[model[0], Pooling(embedder.dim, pooling_mode="cls")], device="cpu")
    assert quick.build(cls_pooled) is None  # not mean pooling: traced vectors would not be this model's
    unnormalised = SentenceTransformer(modules=[model[0], model[1]], device="cpu")
    assert quick.build(unnormalised) is None


@pytest.mark.parametrize("broken", ["trace", "differs"])
def test_a_trace_that_fails_or_differs_leaves_encode_in_charge(embedder, monkeypatch, broken) -> None:
    if broken == "trace":

        def cannot_trace(self: quick.QuickQuery, model: object) -> None:
            raise RuntimeError("TorchScript cannot trace this model")

        monkeypatch.setattr(quick.QuickQuery, "__init__", cannot_trace)
    else:
        real = quick.QuickQuery.vector
        monkeypatch.setattr(quick.QuickQuery, "vector", lambda self, text: real(self, text) * 0.5)
    assert quick.build(embedder.model) is None
