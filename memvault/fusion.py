"""Pure score fusion for hybrid recall: the seed's weighted sum, reciprocal rank fusion, and an adaptive blend."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import TypeVar

K = TypeVar("K", bound=Hashable)
METHODS = ("weighted", "rrf", "adaptive")
RRF_K = 60


def fuse(
    vector: Mapping[K, float],
    keyword: Mapping[K, float],
    *,
    method: str = "adaptive",
    vector_weight: float = 0.7,
    keyword_weight: float = 0.3,
) -> list[tuple[K, float]]:
    """Merge per-note vector similarities (cosine) and keyword relevances (bm25, higher is better), best first.

    Ties break by key order of appearance (vector side first) so results are deterministic.
    """
    if method == "weighted":
        scores = weighted(vector, keyword, vector_weight, keyword_weight)
    elif method == "rrf":
        scores = rrf(vector, keyword, vector_weight, keyword_weight)
    elif method == "adaptive":
        scores = adaptive(vector, keyword)
    else:
        raise ValueError(f"unknown fusion {method!r}; expected one of {', '.join(METHODS)}")
    order = {key: i for i, key in enumerate([*vector, *keyword])}
    return sorted(scores.items(), key=lambda item: (-item[1], order[item[0]]))


def weighted(vector: Mapping[K, float], keyword: Mapping[K, float], wv: float, wk: float) -> dict[K, float]:
    """The seed's `wv·similarity + wk·keyword`, the keyword side scaled so its best hit is 1."""
    top = max(keyword.values(), default=0.0) or 1.0
    keys = {**dict.fromkeys(vector), **dict.fromkeys(keyword)}
    return {k: wv * vector.get(k, 0.0) + wk * keyword.get(k, 0.0) / top for k in keys}


def rrf(vector: Mapping[K, float], keyword: Mapping[K, float], wv: float = 1.0, wk: float = 1.0) -> dict[K, float]:
    """Reciprocal rank fusion: Σ w / (60 + rank), ranks from each side's own order (best first)."""
    out: dict[K, float] = {}
    for weight, side in ((wv, vector), (wk, keyword)):
        for rank, key in enumerate(sorted(side, key=lambda k: -side[k]), 1):
            out[key] = out.get(key, 0.0) + weight / (RRF_K + rank)
    return out


def adaptive(vector: Mapping[K, float], keyword: Mapping[K, float]) -> dict[K, float]:
    """Placeholder until the benchmark picks the rule: equal-weight RRF."""
    return rrf(vector, keyword)
