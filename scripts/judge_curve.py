"""Learning curve of the statement judge: dev average precision against the share of labelled train sessions.

    python scripts/judge_curve.py --corpus DIR [--shares 0,0.125,0.25,0.5,1] [--seeds 29,30,31] [--json FILE]

Asks whether labelling more real sessions would bring the judge to the issue's targets. For each share of
the train split's sessions (drawn by each seed; the whole split and none once), the judge is refitted with
train_judge.py's functions at fixed settings (the lexical model at the shipped dim and an L2 of 10; the
vector model at an L2 of 1, blended half and half), on those sessions plus the hand-written sentences,
and without and with the hand-written messages (weight 0.3, dev's choice in train_judge.py). Reported: dev
average precision of P(statement), over all statements and over the MUST ones against the units that are
no statement. The TEST split is never read. Vectors come from train_judge.py's cache in the export (the
model is loaded only for texts it lacks).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
import train_judge as tj
from scipy import sparse

from memvault.reflect.mine import judge

DIM, L2, VECTOR_L2, BLEND, MESSAGE_WEIGHT = 4096, 10.0, 1.0, 0.5, 0.3


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, required=True, help="the corpus export (reflect_corpus.py export)")
    ap.add_argument("--shares", default="0,0.125,0.25,0.5,1")
    ap.add_argument("--seeds", default="29,30,31")
    ap.add_argument("--no-vectors", action="store_true")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    shares = [float(s) for s in args.shares.split(",")]
    seeds = [int(s) for s in args.seeds.split(",")]
    corpus = tj.corpus_examples(args.corpus, "train", None)
    hand, messages = tj.hand_examples(), tj.message_examples()
    dev = tj.corpus_examples(args.corpus, "dev", None)
    kinds = {k: i for i, k in enumerate(judge.KINDS)}
    y_dev = np.array([kinds[e["kind"]] for e in dev])
    statement = y_dev != kinds["none"]
    must = np.array([e["tier"] == "MUST" for e in dev])
    must_or_none = must | ~statement
    sessions = sorted({e["session"] for e in corpus})
    print(f"train: {len(sessions)} sessions, {len(corpus)} units; dev: {len(dev)} units, "
          f"{int(statement.sum())} statements, {int(must.sum())} MUST")  # fmt: skip
    vecs = None if args.no_vectors else tj.embedded(corpus + hand + messages + dev, args.corpus / "judge-vectors.npz",
                                                    print)  # fmt: skip
    cues = sorted({f for e in corpus + hand for f in judge.features(e["unit"]) if f.split(":")[0] in tj.CUE_PREFIXES})
    x_dev = tj.matrix(dev, DIM)
    d_dev = tj.dense(dev, vecs, cues) if vecs is not None else None

    def scores(train: list[dict[str, Any]]) -> dict[str, float]:
        y = np.array([kinds[e["kind"]] for e in train])
        w = tj.example_weights(train, 1.0, 0.0, MESSAGE_WEIGHT)
        lex = tj.log_probs(x_dev, *tj.fit(tj.matrix(train, DIM), y, w, L2))
        out = {"lexical": lex}
        if d_dev is not None:
            vec = tj.log_probs(d_dev, *tj.fit(sparse.csr_matrix(tj.dense(train, vecs, cues)), y, w, VECTOR_L2))
            out["blend"] = BLEND * vec + (1 - BLEND) * lex
        result = {}
        for name, z in out.items():
            p = tj.statement_p(tj.from_logs(z, 1.0))
            result[name] = tj.average_precision(p, statement)
            result[name + " MUST"] = tj.average_precision(p[must_or_none], must[must_or_none])
        return result

    rows = []
    for with_messages in (False, True):
        for share in shares:
            drawn = []
            for seed in seeds if 0 < share < 1 else seeds[:1]:
                chosen = set(random.Random(seed).sample(  # noqa: S311 - a reproducible draw
                    sessions, round(share * len(sessions))))
                train = [e for e in corpus if e["session"] in chosen] + hand + (messages if with_messages else [])
                drawn.append(scores(train))
            row = {"messages": with_messages, "share": share, "sessions": round(share * len(sessions)),
                   "draws": len(drawn)}  # fmt: skip
            for name in drawn[0]:
                values = np.array([d[name] for d in drawn])
                row[name] = round(float(values.mean()), 4)
                row[name + " sd"] = round(float(values.std()), 4)
            rows.append(row)
            print(" ".join(f"{k} {v}" for k, v in row.items() if not k.endswith(" sd")), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
