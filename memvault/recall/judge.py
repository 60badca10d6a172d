"""The relevance judge: P(relevant) of a candidate chunk from its signals, by a small logistic model shipped as JSON.

Two models, trained by scripts/train_relevance.py on the team's labelled (prompt, passage) examples run
through the real recall: "hybrid" (with the query vector's cosine) and "keyword" (the service down, no
cosine). Each is a weighted sum of the features below through the logistic function, its weights
calibrated on the dev split; the floor probability comes with them (chosen on dev as well). Pure Python:
runs on the prompt path (no numpy), about a microsecond per chunk.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from memvault.records import Record

TYPE_CHECKING = False  # typing.TYPE_CHECKING (mypy reads it so) without importing typing at run time
if TYPE_CHECKING:
    from .relevance import Signals

WEIGHTS = Path(__file__).with_name("judge.json")
# How each feature reads the signals (`relevance.Signals`); every one lies in 0..1 so the weights compare.
FEATURES = (
    "cosine",  # the chunk's cosine to the query vector (hybrid only)
    "coverage",  # IDF-weighted share of the prompt's content words the chunk contains
    "shared",  # how many of the prompt's words it contains, log-scaled (8 or more: 1)
    "identifier",  # it contains an exact identifier the prompt names
    "rare",  # the rarest shared word's IDF, as a share of the most a word can weigh in this index
    "keyword",  # the note's bm25 relative to the best keyword hit (0: not found by keywords)
    "first",  # the note is ranked first by fusion
    "rank",  # 1 / (1 + the note's fusion rank)
    "score",  # the fusion score (adaptive: standard deviations above the typical candidate), /6
    "margin",  # the fusion score's margin over the next note's, /4
    "words",  # how many content words the prompt has, log-scaled (a two-part prompt covers little of itself)
    "kind",  # the note has a kind (a memory entry: preference, rule, …)
    "memory",  # the note is in the MemoryVault folder
    "lead",  # the chunk is its note's first
    "long",  # how many chunks the note has, log-scaled (32 or more: 1)
    "part",  # the coverage of the prompt's best-covered sentence (a two-part prompt asks two things)
)


class Model(Record):
    """One logistic model: P = 1 / (1 + exp(-(bias + Σ weight × feature)))."""

    features: tuple[str, ...]
    weights: tuple[float, ...]
    bias: float


class Judge(Record):
    """The shipped judge: the hybrid and the keyword-only model, and the floor probability chosen on dev."""

    hybrid: Model
    keyword: Model
    floor: float
    meta: dict[str, object]


def features(s: Signals) -> dict[str, float]:
    """The judge's features of one chunk's `relevance.Signals`."""
    return {
        "cosine": 0.0 if s.cosine is None else max(-1.0, min(1.0, float(s.cosine))),
        "coverage": float(s.coverage),
        "shared": min(1.0, math.log1p(s.shared_words) / math.log(9)),
        "identifier": 1.0 if s.identifier else 0.0,
        "rare": max(0.0, min(1.0, float(s.rare))),
        "keyword": max(0.0, min(1.0, float(s.keyword))),
        "first": 1.0 if s.rank == 0 else 0.0,
        "rank": 1.0 / (1 + s.rank),
        "score": max(-1.0, min(6.0, float(s.score))) / 6,
        "margin": max(0.0, min(4.0, float(s.margin))) / 4,
        "words": min(1.0, math.log1p(s.words) / math.log(33)),
        "kind": 1.0 if s.kind else 0.0,
        "memory": 1.0 if s.memory else 0.0,
        "lead": 1.0 if s.seq == 0 else 0.0,
        "long": min(1.0, math.log(max(1, s.chunks)) / math.log(32)),
        "part": float(s.part),
    }


def logit(model: Model, values: dict[str, float]) -> float:
    return model.bias + sum(w * values[name] for name, w in zip(model.features, model.weights, strict=True))


def sigmoid(z: float) -> float:
    return 1 / (1 + math.exp(-z)) if z >= 0 else math.exp(z) / (1 + math.exp(z))


def model_for(judge: Judge, signals: Signals) -> Model:
    """The hybrid model when the chunk has a cosine, else the keyword-only one."""
    return judge.keyword if signals.cosine is None else judge.hybrid


def probability(judge: Judge, signals: Signals) -> float:
    """P(relevant) of one chunk."""
    return sigmoid(logit(model_for(judge, signals), features(signals)))


def reasons(judge: Judge, signals: Signals, top: int = 3) -> list[tuple[str, float]]:
    """The features that moved P the most for this chunk, with their signed share of the logit, largest first."""
    model = model_for(judge, signals)
    values = features(signals)
    parts = [(name, w * values[name]) for name, w in zip(model.features, model.weights, strict=True)]
    return sorted((p for p in parts if abs(p[1]) >= 0.05), key=lambda p: -abs(p[1]))[:top]


def _model(raw: object) -> Model:
    if not isinstance(raw, dict):
        raise ValueError("a model must be an object")
    names = tuple(str(n) for n in raw["features"])
    weights = tuple(float(w) for w in raw["weights"])
    unknown = [n for n in names if n not in FEATURES]
    if unknown or len(names) != len(weights):
        raise ValueError(f"unknown features {unknown}" if unknown else "features and weights differ in length")
    return Model(names, weights, float(raw["bias"]))


def parse(text: str) -> Judge:
    """A judge from its JSON (`scripts/train_relevance.py` writes it); ValueError when it is not one."""
    try:
        raw = json.loads(text)
        floor = float(raw["floor"])
        judge = Judge(_model(raw["hybrid"]), _model(raw["keyword"]), floor, dict(raw.get("meta", {})))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"not a relevance judge: {exc}") from exc
    if "cosine" in judge.keyword.features:
        raise ValueError("not a relevance judge: the keyword-only model cannot use the cosine")
    if not 0 < floor < 1:
        raise ValueError(f"not a relevance judge: floor {floor} is not a probability")
    return judge


_LOADED: list[Judge | None] = []


def load(path: Path = WEIGHTS) -> Judge | None:
    """The shipped judge (read once per process), or None when its file is missing or damaged (the caller falls
    back to the hand-set floor of `relevance`)."""
    if path != WEIGHTS:
        try:
            return parse(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
    if not _LOADED:
        try:
            _LOADED.append(parse(WEIGHTS.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            _LOADED.append(None)
    return _LOADED[0]
