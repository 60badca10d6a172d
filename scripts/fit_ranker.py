"""Would a learned ordering beat the adaptive fusion? A logistic model over the signals recall already has.

    python scripts/fit_ranker.py [--locomo PATH] [--cache DIR] [--sections turns,sessions]

For every LoCoMo question (categories 1–4) the real recall's two candidate lists (vector and keyword,
up to 100 notes each) are captured, and each candidate note gets the features fusion could use: its
z-score on each side (as `fusion.adaptive` computes it), whether it is on each side, its cosine, its
keyword score relative to the best, and its number of chunks. A logistic regression (plain gradient
descent) is fitted on the seven dev conversations (scripts/calibrate_floor.py's split) to tell
evidence notes from the rest, then the candidates of the three held-out conversations are re-ordered
by it and scored against the shipped fusion. Kept only if it pays on the held-out part.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_recall as br
import calibrate_floor as cf

from memvault.index import embed
from memvault.recall import fusion

FEATURES = ["z_vec", "z_kw", "on_vec", "on_kw", "cosine", "kw_rel", "log_chunks", "bias"]


def features(cap: br.Capture, sizes: dict[int, int]) -> dict[int, list[float]]:
    zv, zk = fusion._standout(cap.vector), fusion._standout(cap.keyword)
    floor_v, floor_k = min(zv.values(), default=0.0) - fusion.LEAK, min(zk.values(), default=0.0) - fusion.LEAK
    top = max(cap.keyword.values(), default=0.0) or 1.0
    out = {}
    for note in {**cap.vector, **cap.keyword}:
        out[note] = [
            zv.get(note, floor_v), zk.get(note, floor_k), float(note in cap.vector), float(note in cap.keyword),
            cap.vector.get(note, 0.0), cap.keyword.get(note, 0.0) / top, math.log(sizes.get(note, 1)), 1.0,
        ]  # fmt: skip
    return out


def fit(rows: list[tuple[list[float], int]], steps: int = 2000, rate: float = 0.5) -> list[float]:
    """Class-balanced logistic regression by gradient descent (numpy: a benchmark script, not the prompt path)."""
    import numpy as np

    x = np.array([r[0] for r in rows], dtype=np.float64)
    y = np.array([r[1] for r in rows], dtype=np.float64)
    scale = np.where(y > 0, (len(y) - y.sum()) / max(1.0, y.sum()), 1.0)
    w = np.zeros(x.shape[1])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-np.clip(x @ w, -30, 30)))
        w -= rate * (x.T @ ((p - y) * scale)) / len(y)
    return [float(v) for v in w]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locomo", type=Path, default=br.LOCOMO)
    parser.add_argument("--cache", type=Path)
    parser.add_argument("--sections", default="turns", help="turns (sessions: notes re-ordered without their chunks)")
    args = parser.parse_args()
    if not args.locomo.is_file():
        print(f"skipped: {args.locomo} not found (pass --locomo PATH)")
        return 0
    samples = json.loads(args.locomo.read_text(encoding="utf-8"))
    held = cf.heldout_conversations(samples)
    embedder = embed.load()
    with tempfile.TemporaryDirectory(prefix="memvault-ranker-") as tmp:
        for section in args.sections.split(","):
            corpus = br.locomo(samples, section)
            corpus.queries = [q for q in corpus.queries if 1 <= q.category <= 4]
            built = br.build(corpus, Path(tmp), embedder, args.cache, "")
            if corpus.unit == "chunk":
                br.chunk_keys(corpus, built.index)
            run = br.run_queries(built, corpus, embedder, ["adaptive"], br.K)
            sizes = {
                int(n): int(c)
                for n, c in built.index.conn.execute("SELECT note_id, count(*) FROM chunks GROUP BY note_id")
            }
            note_keys: dict[int, frozenset[str]] = {}
            for item, keys in corpus.keys.items():
                path = item.split("#")[0]
                note = next((n for n, p in built.path_of.items() if p == path), None)
                if note is not None:
                    note_keys[note] = note_keys.get(note, frozenset()) | keys
            train, feats = [], []
            for cap, q in zip(run.captures, corpus.queries, strict=True):
                f = features(cap, sizes)
                feats.append(f)
                if q.group not in held:
                    train += [(x, int(bool(note_keys.get(n, frozenset()) & q.targets))) for n, x in f.items()]
            weights = fit(train)
            print(
                f"\n{corpus.name}: weights "
                + ", ".join(f"{n} {w:+.3f}" for n, w in zip(FEATURES, weights, strict=True))
            )
            if corpus.unit == "chunk":
                print(
                    "  (session notes: re-ordering notes cannot choose their chunks; scored on notes' best chunks only)"
                )
            for part in ("dev", "heldout"):
                idx = [i for i, q in enumerate(corpus.queries) if (q.group in held) == (part == "heldout")]
                shipped = [run.ranked["adaptive"][i] for i in idx]
                learned = []
                for i in idx:
                    order = sorted(
                        feats[i], key=lambda n: -sum(w * v for w, v in zip(weights, feats[i][n], strict=True))
                    )
                    items = {p.split("#")[0]: p for p in run.ranked["adaptive"][i]}
                    learned.append([items.get(built.path_of[n], built.path_of[n]) for n in order[: br.K]])
                qs = [corpus.queries[i] for i in idx]
                a = br.aggregate(br.score(p, q, corpus.keys) for p, q in zip(shipped, qs, strict=True))
                b = br.aggregate(br.score(p, q, corpus.keys) for p, q in zip(learned, qs, strict=True))
                print(f"  {part}: adaptive R@5 {a['R@5']:.3f} R@10 {a['R@10']:.3f}; "
                      f"learned R@5 {b['R@5']:.3f} R@10 {b['R@10']:.3f} (n={len(idx)})")  # fmt: skip
            built.index.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
