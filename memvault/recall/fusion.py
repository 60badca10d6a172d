"""Pure score fusion for hybrid recall: the seed's weighted sum, reciprocal rank fusion, an adaptive z-score blend."""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping

TYPE_CHECKING = False  # typing.TYPE_CHECKING (mypy reads it so) without importing typing at run time
if TYPE_CHECKING:
    from typing import TypeVar

    K = TypeVar("K", bound=Hashable)

METHODS = ("weighted", "rrf", "adaptive")
RRF_K = 60
LEAK = 0.01  # adaptive: how much of a below-average z-score is kept (keeps those candidates in order)
# adaptive: how much of a note's standing out is discounted per "chance" it had (see `chances`).
CHANCE = 0.5


def fuse(
    vector: Mapping[K, float],
    keyword: Mapping[K, float],
    *,
    method: str = "adaptive",
    vector_weight: float = 0.7,
    keyword_weight: float = 0.3,
    sizes: Mapping[K, int] | None = None,
) -> list[tuple[K, float]]:
    """Merge per-note vector similarities (cosine) and keyword relevances (bm25, higher is better), best first.

    The weights apply to "weighted" and "rrf"; "adaptive" sets its own per query, and discounts notes
    by their number of chunks (`sizes`, see `chances`). Ties break by key order of appearance (vector
    side first) so results are deterministic.
    """
    if method == "weighted":
        scores = weighted(vector, keyword, vector_weight, keyword_weight)
    elif method == "rrf":
        scores = rrf(vector, keyword, vector_weight, keyword_weight)
    elif method == "adaptive":
        scores = adaptive(vector, keyword, chances(sizes or {}))
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


def chances(sizes: Mapping[K, int]) -> dict[K, float]:
    """How far a note's best chunk stands out by chance alone, in standard deviations: √(2 ln n) for n chunks.

    A note scores by its best chunk, so a note of hundreds of chunks (a list, a log, a newsletter
    archive) gets hundreds of tries at every query: the largest of n unrelated scores lies about
    √(2 ln n) standard deviations above their mean. A one-chunk note is not discounted at all.
    """
    return {key: math.sqrt(2 * math.log(n)) for key, n in sizes.items() if n > 1}


def adaptive(
    vector: Mapping[K, float], keyword: Mapping[K, float], discount: Mapping[K, float] | None = None
) -> dict[K, float]:
    """Confidence-weighted z-scores: each side speaks in proportion to how clearly its best candidate stands out.

    1. Each side's scores become z-scores over that side's own candidates, so cosines and bm25
       values are in the same unit ("standard deviations above this side's typical candidate").
    2. Only standing out counts: a below-average z is shrunk by LEAK (kept only to order those
       candidates), and a note missing from a side counts as one standard deviation below that
       side's weakest candidate, so appearing on a side always helps a note, if only a little.
    3. A note with many chunks had many chances to stand out: its z on each side is lowered by
       CHANCE × `discount` (see `chances`), so a long list note does not win by size.
    4. A side's confidence is its best z. A side whose candidates all look alike (a common
       word matched everywhere, vectors of unrelated notes, a single candidate) gets little
       weight; the other side then decides. Score = (cv·zv + ck·zk) / (cv + ck).

    Chosen on scripts/bench_recall.py: at or above the better single side both on LoCoMo, where
    keywords are stronger, and on the preference paraphrase set, where vectors are; fixed weights
    clearly lose on one of the two.
    """
    sides = [_standout(vector), _standout(keyword)]
    if discount:
        sides = [{k: z - CHANCE * discount.get(k, 0.0) for k, z in side.items()} for side in sides]
    confidence = [max(z.values(), default=0.0) for z in sides]
    total = sum(confidence)
    weights = [c / total for c in confidence] if total > 0 else [0.5, 0.5]
    floors = [min(z.values(), default=0.0) - LEAK for z in sides]
    keys = {**dict.fromkeys(vector), **dict.fromkeys(keyword)}
    return {k: sum(w * z.get(k, floor) for w, z, floor in zip(weights, sides, floors, strict=True)) for k in keys}


def _standout(side: Mapping[K, float]) -> dict[K, float]:
    """z-scores over the side's candidates, below-average ones shrunk by LEAK; all 0 without a spread."""
    if not side:
        return {}
    values = list(side.values())
    mean = sum(values) / len(values)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    if not sd > 1e-12:
        return dict.fromkeys(side, 0.0)
    out = {}
    for key, value in side.items():
        z = (value - mean) / sd
        out[key] = z if z > 0 else LEAK * z
    return out
