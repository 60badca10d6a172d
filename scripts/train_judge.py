"""Train the statement judge (memvault/reflect/mine/judge.py) from the labelled reflection corpus; write its weights.

    python scripts/train_judge.py [--corpus DIR] [--out FILE] [--seed 28] [--limit N] [--quiet]

Data (see scripts/data/reflect_corpus/README.md and scripts/data/judge_README.md):
- every session of the corpus TRAIN split (scripts/data/reflect_corpus/*.json, split by source repository;
  a new corpus file is picked up by its split), read from the export (`reflect_corpus.py export`, DIR, else
  $MEMVAULT_BENCH_DATA/reflect-corpus) by memvault's own reader (`bench_reflect.read_session`) and cut into
  units by the judge's own segmentation (`judge.units`): a unit is labelled with the kind of the labelled
  statement on its line whose quote it shares most words with (at least half of the quote's or of the
  unit's), "none" otherwise; a unit on a labelled negative is a hard "none" (twice the weight); a unit
  of a disputed statement is left out;
- the hand-written sentences of scripts/data/judge_sentences.json (one unit each, in reply to the agent).
The DEV split selects the model (hashed space size, L2 strength, the weight of statement examples: the
best average precision of P(statement) over its units), fits the temperature (least log loss) and the
routing thresholds (low: the best F1 of "a statement" on dev; medium and high: the lowest P(statement)
where dev precision is still >= 0.80 and >= 0.95, with at least MIN_SUPPORT units; 1.0, never, when
no threshold reaches it). The TEST split is never read. The model is refitted on the train data with the
chosen settings; training is deterministic (L-BFGS from zeros; --seed orders the examples and slices).

Needs numpy and scipy (a development dependency only: the product reads the weights in pure Python).
`--limit N` trains on the first N sessions of each split and `--quick` tries one setting (the tests' run).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

import numpy as np  # noqa: E402
import reflect_corpus  # noqa: E402
from bench_reflect import read_session  # noqa: E402
from reflect_score import words  # noqa: E402
from scipy import optimize, sparse  # noqa: E402

from memvault.reflect.mine import judge  # noqa: E402
from memvault.reflect.transcript import Turn  # noqa: E402

HAND = REPO / "scripts" / "data" / "judge_sentences.json"
OUT = REPO / "memvault" / "reflect" / "mine" / judge.WEIGHTS_FILE
DIMS = (4096, 16384)
L2S = (0.1, 0.3, 1.0)
POS_WEIGHTS = (1.0, 3.0)
TARGETS = {"medium": 0.80, "high": 0.95}  # dev precision at or above each threshold; "low" is the best dev F1
MIN_SUPPORT = 5  # a threshold needs at least this many dev units at or above it


def _label(unit: judge.Unit, session: dict[str, Any]) -> tuple[str, float, str]:
    """(kind or "none", weight, tier) for a unit of a corpus session; weight 0 leaves it out."""
    mine = words(unit.text)
    best, share = None, 0.0
    for st in session["statements"]:
        if unit.turn.line not in (st.get("lines") or [st["line"]]):
            continue
        quoted = words(st["quote"])
        common = len(quoted & mine)
        s = max(common / len(quoted) if quoted else 0.0, common / len(mine) if mine else 0.0)
        if s > share:
            best, share = st, s
    if best is not None and share >= 0.5:
        return (best["kind"], 0.0 if best.get("disputed") else 1.0, "" if best.get("disputed") else best["label"])
    for neg in session["negatives"]:
        if neg["line"] == unit.turn.line and words(neg["quote"]) & mine:
            return "none", 2.0, "negative"
    return "none", 1.0, ""


def corpus_examples(export: Path, split: str, limit: int | None) -> list[dict[str, Any]]:
    """The labelled units of every exported session of `split` (never "test")."""
    assert split != "test", "the test split is never read for training"
    chosen = [s for s in reflect_corpus.sessions() if s["split"] == split]
    out = []
    for s in chosen[:limit] if limit else chosen:
        path = reflect_corpus.exported_path(export, s)
        if not path.is_file():
            continue
        turns, _, _ = read_session(path, s["host"])
        if turns is None:
            continue
        reviewed = set(s["turns"])
        for unit in judge.units(turns):
            if unit.turn.line not in reviewed:
                continue
            kind, weight, tier = _label(unit, s)
            if weight:
                out.append({"unit": unit, "kind": kind, "weight": weight, "tier": tier, "session": s["id"]})
    return out


def hand_examples() -> list[dict[str, Any]]:
    data = json.loads(HAND.read_text(encoding="utf-8"))
    out = []
    for i, item in enumerate(data["sentences"]):
        turn = Turn("user", item["text"], i + 1, None, None, False)
        unit = judge.Unit(turn, item["text"], 0, 1, True, False, "", False)
        out.append({"unit": unit, "kind": item["kind"], "weight": 1.0, "tier": "hand", "session": "hand"})
    return out


def matrix(examples: list[dict[str, Any]], dim: int) -> sparse.csr_matrix:
    rows, cols = [], []
    for r, ex in enumerate(examples):
        for c in set(judge.buckets(judge.features(ex["unit"]), dim)):
            rows.append(r)
            cols.append(c)
    return sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(examples), dim))


def fit(x: sparse.csr_matrix, y: np.ndarray, w: np.ndarray, l2: float) -> tuple[np.ndarray, np.ndarray]:
    """Multinomial logistic regression, weighted, L2 on the weights (not the biases), by L-BFGS from zeros."""
    n, d = x.shape
    k = len(judge.KINDS)
    onehot = np.eye(k)[y]

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        wt, b = theta[: d * k].reshape(d, k), theta[d * k :]
        z = x @ wt + b
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        nll = -(w * np.log(p[np.arange(n), y] + 1e-12)).sum() / w.sum()
        g = (p - onehot) * w[:, None] / w.sum()
        gw = x.T @ g + l2 * wt / n
        return nll + 0.5 * l2 * (wt**2).sum() / n, np.concatenate([np.asarray(gw).ravel(), g.sum(axis=0)])

    theta = optimize.minimize(loss, np.zeros(d * k + k), jac=True, method="L-BFGS-B",
                              options={"maxiter": 400}).x  # fmt: skip
    return theta[: d * k].reshape(d, k), theta[d * k :]


def probs(x: sparse.csr_matrix, wt: np.ndarray, b: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    z = (x @ wt + b) / temperature
    z -= z.max(axis=1, keepdims=True)
    p = np.exp(z)
    return p / p.sum(axis=1, keepdims=True)


def statement_p(p: np.ndarray) -> np.ndarray:
    return p[:, : len(judge.KINDS) - 1].max(axis=1)


def average_precision(score: np.ndarray, positive: np.ndarray) -> float:
    order = np.argsort(-score, kind="stable")
    hits = positive[order]
    if not hits.any():
        return 0.0
    precision = np.cumsum(hits) / np.arange(1, len(hits) + 1)
    return float((precision * hits).sum() / hits.sum())


def threshold(score: np.ndarray, positive: np.ndarray, target: float) -> float:
    """The lowest score whose units at or above it are right at least `target` of the time (1.0: none is)."""
    best = 1.0
    for t in sorted(set(np.round(score, 4)), reverse=True):
        chosen = score >= t
        if chosen.sum() >= MIN_SUPPORT and positive[chosen].mean() >= target:
            best = float(t)
    return best


def best_f1(score: np.ndarray, positive: np.ndarray) -> float:
    """The score threshold with the best F1 of "a statement" over the dev units."""
    best, at = -1.0, 1.0
    for t in sorted(set(np.round(score, 4)), reverse=True):
        chosen = score >= t
        tp = float(positive[chosen].sum())
        f1 = 2 * tp / (chosen.sum() + positive.sum()) if tp else 0.0
        if f1 > best:
            best, at = f1, float(t)
    return at


def reliability(score: np.ndarray, positive: np.ndarray, bins: int = 5) -> list[dict[str, Any]]:
    out = []
    for i in range(bins):
        lo, hi = i / bins, (i + 1) / bins
        inside = (score >= lo) & ((score < hi) if i < bins - 1 else (score <= hi))
        if inside.any():
            out.append({"bin": f"{lo:.1f}-{hi:.1f}", "units": int(inside.sum()),
                        "mean_p": round(float(score[inside].mean()), 3),
                        "statements": round(float(positive[inside].mean()), 3)})  # fmt: skip
    return out


def encode(wt: np.ndarray) -> tuple[str, float]:
    scale = float(np.abs(wt).max()) / 32767 or 1.0
    ints = np.round(wt / scale).astype("<i2")
    return base64.b64encode(ints.tobytes()).decode("ascii"), scale


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, help="the corpus export (default: $MEMVAULT_BENCH_DATA/reflect-corpus)")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--seed", type=int, default=28)
    ap.add_argument("--limit", type=int, help="only the first N sessions of each split (a quick run)")
    ap.add_argument("--quick", action="store_true", help="one setting instead of the grid (the tests' run)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    export = args.corpus or Path(os.environ.get("MEMVAULT_BENCH_DATA", "")) / "reflect-corpus"
    if not export.is_dir():
        print(f"skipped: no corpus export at {export} (scripts/reflect_corpus.py export)")
        return 0
    say = (lambda *a: None) if args.quiet else print
    started = time.perf_counter()
    rng = random.Random(args.seed)  # noqa: S311 - an order, not a secret
    train = corpus_examples(export, "train", args.limit) + hand_examples()
    dev = corpus_examples(export, "dev", args.limit)
    rng.shuffle(train)
    kinds = {k: i for i, k in enumerate(judge.KINDS)}
    y_train = np.array([kinds[e["kind"]] for e in train])
    y_dev = np.array([kinds[e["kind"]] for e in dev])
    pos_dev = y_dev != kinds["none"]
    say(f"train units {len(train)} ({int((y_train != kinds['none']).sum())} statements), "
        f"dev units {len(dev)} ({int(pos_dev.sum())} statements)")  # fmt: skip
    best: tuple[float, int, float, float] | None = None
    grid = ((1024,), L2S[1:2], POS_WEIGHTS[:1]) if args.quick else (DIMS, L2S, POS_WEIGHTS)
    for dim in grid[0]:
        x_train, x_dev = matrix(train, dim), matrix(dev, dim)
        for l2 in grid[1]:
            for pos in grid[2]:
                w = np.array([e["weight"] * (pos if e["kind"] != "none" else 1.0) for e in train])
                wt, b = fit(x_train, y_train, w, l2)
                ap_dev = average_precision(statement_p(probs(x_dev, wt, b)), pos_dev)
                say(f"  dim {dim:>5} l2 {l2:<4} statement weight {pos:<3}: dev AP {ap_dev:.3f}")
                if best is None or ap_dev > best[0] + 1e-9:
                    best = (ap_dev, dim, l2, pos)
    assert best is not None
    ap_dev, dim, l2, pos = best
    x_train, x_dev = matrix(train, dim), matrix(dev, dim)
    w = np.array([e["weight"] * (pos if e["kind"] != "none" else 1.0) for e in train])
    wt, b = fit(x_train, y_train, w, l2)
    temps = [round(0.5 + 0.05 * i, 2) for i in range(51)]
    nll = [-np.log(probs(x_dev, wt, b, t)[np.arange(len(dev)), y_dev] + 1e-12).mean() for t in temps]
    temperature = temps[int(np.argmin(nll))]
    score = statement_p(probs(x_dev, wt, b, temperature))
    cuts = {"low": best_f1(score, pos_dev), **{name: threshold(score, pos_dev, t) for name, t in TARGETS.items()}}
    cuts["medium"] = max(cuts["medium"], cuts["low"])
    cuts["high"] = max(cuts["high"], cuts["medium"])
    weights, scale = encode(wt)
    dev_at = {name: {"units": int((score >= t).sum()), "right": int(pos_dev[score >= t].sum()),
                     "statements": int(pos_dev.sum())} for name, t in cuts.items()}  # fmt: skip
    about = {
        "trained_by": "scripts/train_judge.py",
        "seed": args.seed,
        "data": {"train_units": len(train), "dev_units": len(dev), "limit": args.limit,
                 "hand_sentences": sum(e["tier"] == "hand" for e in train)},
        "chosen": {"dim": dim, "l2": l2, "statement_weight": pos, "dev_average_precision": round(ap_dev, 4)},
        "dev_at_thresholds": dev_at,
        "dev_reliability": reliability(score, pos_dev),
    }
    out = {"kinds": list(judge.KINDS), "dim": dim, "scale": scale, "bias": [round(float(v), 6) for v in b],
           "temperature": temperature, "thresholds": {k: round(v, 4) for k, v in cuts.items()}, "about": about,
           "weights": weights}  # fmt: skip
    args.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    say(json.dumps({k: v for k, v in out.items() if k != "weights"}, indent=1))
    say(f"wrote {args.out} ({args.out.stat().st_size:,} bytes) in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
