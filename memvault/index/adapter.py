"""The shipped query adapter: a linear map, trained on the team's recall data, over the default model's query vectors.

A query's vector q becomes normalise(M q); documents keep the stock model's vectors, so an index built
with the stock model needs no re-embedding. M is a 384 × 384 float32 matrix in `query_map.npy` beside
this module, written by scripts/train_adapter.py (see wiki/explanation/recall.md, "The adapted
embedding"). It applies only to the default model: a user's own model gets no map. Set
MEMVAULT_QUERY_ADAPTER=off to embed queries with the stock model (benchmarks compare the two that way).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from memvault.errors import MemvaultError

MAP_FILE = Path(__file__).with_name("query_map.npy")
ENV = "MEMVAULT_QUERY_ADAPTER"


class AdapterError(MemvaultError):
    """The shipped query map is missing or malformed (a broken install)."""

    code = "query_adapter_invalid"


def enabled() -> bool:
    """Whether queries of the default model go through the map (MEMVAULT_QUERY_ADAPTER=off turns it off)."""
    return os.environ.get(ENV, "").strip().lower() not in ("off", "0", "no", "false")


def load(dim: int, path: Path = MAP_FILE) -> Any:
    """The map as a (dim × dim) float32 numpy array; AdapterError when the file is absent or does not fit."""
    import numpy as np

    try:
        matrix = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise AdapterError(f"cannot read the query adapter {path.name}: {exc}") from exc
    if matrix.shape != (dim, dim) or not np.isfinite(matrix).all():
        raise AdapterError(f"the query adapter {path.name} has shape {matrix.shape}, not ({dim}, {dim})")
    return matrix.astype(np.float32)


def apply(matrix: Any, vectors: Any) -> Any:
    """normalise(M q) for each row q of `vectors` (float32 numpy arrays in and out)."""
    import numpy as np

    mapped = vectors @ matrix.T
    norms = np.linalg.norm(mapped, axis=1, keepdims=True)
    return (mapped / np.maximum(norms, 1e-12)).astype(np.float32)
