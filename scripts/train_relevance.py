"""Train recall's relevance judge (memvault/recall/judge.json) on the team's labelled examples, through the real recall.

    python scripts/train_relevance.py [--out memvault/recall/judge.json] [--rows ROWS.json] [--limit N]

Data: every scripts/data/recall_train/*.jsonl (scripts/recall_data.py, its split by group: train, dev,
test). For each split, every distinct passage becomes a note of one real temporary vault (real SQLite +
sqlite-vec, the packaged embedding model through `embed.load`, as the warm service loads it): a kepano
passage a user note under Notes/, a session rule a MemoryVault preference entry titled by its first
sentence. Every distinct prompt of the split is then recalled in that vault by `search.recall` with the
floor off (k = 10), once with the query vector (hybrid) and once without (keyword-only, the service down),
and each hit's signals (`search.signals_of`) become one row: label 1 when the hit's passage is labelled
relevant for that prompt, else 0 (a passage labelled 0, or any other passage of the vault: the extra
negatives). A positive passage recall did not put in the top 10 gives no row: the judge only ever sees hits.

Fitting: logistic regression (L2, full-batch Newton steps, numpy here, never at run time) per mode, on
train, the weights of the cosine and the keyword signals held ≥ 0 (MONOTONE); the L2 strength and the
feature set are chosen on dev by log-loss; then Platt scaling on dev (a, b over the logit, folded into
the weights); then the floor probability on dev, by a rule fixed before any evaluation set is looked at
(--floor-rule matched, the default): the lowest P on a 0.01 grid at which no more of the dev unrelated
prompts (every example of the prompt of kind `unrelated`; --negatives all: every prompt without a
relevant passage, near misses and hard negatives too) get any of their top 5 hits (the hook's recall.k)
through than through the hand-set floor of before, hybrid and keyword-only each (never more false
injection than before the judge). --floor-rule bound: at most --max-injecting hybrid, 1.5× that
keyword-only. Printed: the dev ROC-style table (each floor of the judge and of the hand floor: unrelated prompts
injecting, relevant hits kept) and, at the chosen floor, the judge beside the hand floor on dev with the
default that follows (the judge when it keeps at least as many relevant hits in both modes, else the hand
floor; recorded in judge.json's meta, the config's default set to match).
Test is scored once, at the end, beside the hand-set floor of before. Seeded (--seed): the same data
gives the same weights.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import recall_data

from memvault.index import core as ix
from memvault.index import embed, sync
from memvault.recall import judge, relevance, search
from memvault.store import disk

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "memvault" / "recall" / "judge.json"
FOLDER = "MemoryVault"
K = 10  # hits kept per prompt (the judge sees ranks 1–10; the hook injects at most recall.k = 5)
K_HOOK = 5
SEED = 20260429
L2_GRID = (0.01, 0.1, 1.0, 10.0)
# The feature sets tried (chosen on dev): all of them, and without the note's kind and folder (in this data they
# follow the source: every session rule is a MemoryVault entry, every kepano passage a user note).
FEATURE_SETS = {
    "all": judge.FEATURES,
    "no kind/folder": tuple(f for f in judge.FEATURES if f not in ("kind", "memory")),
    "chunk only": ("cosine", "coverage", "part", "identifier", "rare", "keyword"),
}
# The shipped judge uses the chunk's own signals only. Dev log-loss prefers "all", but dev comes from the same two
# kinds of training vault as train (one vault per split, hundreds of look-alike passages): there the fusion rank,
# score and margin, the prompt's length and the note's kind, folder and shape learn that vault's make-up, and on
# examples/vault (about 20 distinct notes) the "all" judge gave its own notes P 0.03–0.19 for prompts they answer
# (tests/test_relevance.py). Chosen after seeing that; see wiki/explanation/recall.md, "The relevance judge".
SHIPPED_FEATURES = "chunk only"


@dataclass
class Row:
    split: str
    mode: str  # "hybrid" or "keyword"
    prompt: str
    label: int
    kind: str  # the example's kind, or "extra" (a passage of the vault not labelled for this prompt)
    source: str
    signals: dict[str, Any]


# ---- the vault of one split --------------------------------------------------------------------------------


def _slug(text: str, words: int = 6) -> str:
    return "-".join(re.findall(r"[a-z0-9]+", text.lower())[:words]) or "note"


def _markdown(meta: dict[str, object], body: str) -> str:
    head = "\n".join(f"{key}: {json.dumps(value, ensure_ascii=False)}" for key, value in meta.items())
    return f"---\n{head}\n---\n{body}\n"


def note_of(example: recall_data.Example, number: int) -> tuple[str, str]:
    """(vault-relative path, markdown) of an example's passage as a note a user of memvault would have."""
    tag = hashlib.sha256(example.passage.encode()).hexdigest()[:6]
    if example.source == "session-rules":
        first, _, rest = example.passage.partition(". ")
        meta = {"kind": "preference", "status": "active", "group": _slug(example.group, 4)}
        path = f"{FOLDER}/{_slug(example.group, 4)}/preference/{_slug(first)}-{tag}.md"
        return path, _markdown(meta, f"# {first.rstrip('.')}\n\n{rest}".rstrip())
    stem = example.group.rsplit("/", 1)[-1].removesuffix(".md").removesuffix(".base")
    folder = example.group.rsplit("/", 1)[0] if "/" in example.group else "Notes"
    path = f"{folder}/{stem}{'' if number == 0 else f' {number + 1}'}.md"
    return path, example.passage + "\n"


def build(examples: list[recall_data.Example], work: Path, embedder: embed.Embedder) -> tuple[ix.Index, dict[str, str]]:
    """One real vault of the examples' distinct passages, synced and embedded: (index, passage → note path)."""
    root = work / "vault"
    paths: dict[str, str] = {}
    per_group: dict[str, int] = {}
    for ex in examples:
        if ex.passage in paths:
            continue
        number = per_group.get(ex.group, 0)
        per_group[ex.group] = number + 1
        rel, text = note_of(ex, number)
        while rel in paths.values():  # two passages of a group named alike
            rel = rel.removesuffix(".md") + " b.md"
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        paths[ex.passage] = rel
    index = ix.open_index(work / "index.sqlite3", rebuild=True)
    sync.sync(index, sync.Layout(root, FOLDER, disk.ignore_patterns(root)))
    sync.embed_pending(index, embedder, batch_notes=256)
    return index, paths


def query_embedder(embedder: embed.Embedder, prompts: list[str]) -> Callable[[str, float], tuple[str, bytes]]:
    """The query vectors as the warm service makes them (`service.Server._query_vector`), encoded in one batch."""
    encode = getattr(embedder, "encode_query", None) or embedder.encode  # an adapted query side, when there is one
    vectors = dict(zip(prompts, encode(prompts), strict=True))
    return lambda text, _timeout: (embedder.name, vectors[text])


def collect(split: str, embedder: embed.Embedder, limit: int | None = None) -> list[Row]:
    """The rows of one split: every distinct prompt recalled in the split's vault, hybrid and keyword-only."""
    examples = recall_data.examples(split)
    if limit:
        examples = examples[:limit]
    prompts = list(dict.fromkeys(ex.prompt for ex in examples))
    relevant: dict[str, set[str]] = {p: set() for p in prompts}
    labelled: dict[tuple[str, str], str] = {}
    source: dict[str, str] = {}
    for ex in examples:
        if ex.label:
            relevant[ex.prompt].add(ex.passage)
        labelled[(ex.prompt, ex.passage)] = ex.kind
        source.setdefault(ex.prompt, ex.source)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix=f"memvault-judge-{split}-") as tmp:
        index, paths = build(examples, Path(tmp), embedder)
        passage_of = {path: passage for passage, path in paths.items()}
        vector = query_embedder(embedder, prompts)
        # The floor off (every hit's signals); each note's judged chunk chosen by the shipped judge's P, if any.
        shipped = judge.load()
        options = search.Options(k=K, budget_ms=60_000, min_probability=shipped.floor if shipped else 0.5)
        for prompt in prompts:
            for mode in ("hybrid", "keyword"):
                result = search.recall(index, prompt, options, vector if mode == "hybrid" else None)
                for hit in result.hits:
                    passage = passage_of.get(hit.path, "")
                    label = int(passage in relevant[prompt])
                    kind = labelled.get((prompt, passage), "extra")
                    signals = search.signals_of(hit)._asdict()
                    rows.append(Row(split, mode, prompt, label, kind, source[prompt], signals))
        index.close()
    return rows


# ---- fitting -----------------------------------------------------------------------------------------------


def matrix(rows: list[Row], names: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    feats = [judge.features(relevance.Signals(**r.signals)) for r in rows]
    x = np.array([[f[n] for n in names] for f in feats], dtype=float).reshape(len(rows), len(names))
    return x, np.array([r.label for r in rows], dtype=float)


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float, steps: int = 50) -> tuple[np.ndarray, float]:
    """Weights and bias minimising the mean log-loss + l2/2n × |w|² (the bias not penalised), by Newton steps."""
    n, d = x.shape
    xb = np.hstack([x, np.ones((n, 1))])
    w = np.zeros(d + 1)
    penalty = np.diag([l2] * d + [0.0])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-np.clip(xb @ w, -30, 30)))
        grad = xb.T @ (p - y) + penalty @ w
        hess = xb.T @ (xb * (p * (1 - p))[:, None]) + penalty + 1e-9 * np.eye(d + 1)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return w[:-1], float(w[-1])


# The features more of which may never make a chunk less relevant (the judge's P never falls as the cosine or the
# keyword coverage rises; tests/test_relevance_judge.py): their weights are kept ≥ 0.
MONOTONE = ("cosine", "coverage", "part", "keyword")


def fit_monotone(x: np.ndarray, y: np.ndarray, l2: float, names: tuple[str, ...]) -> tuple[np.ndarray, float]:
    """`fit_logistic` with the MONOTONE features' weights ≥ 0: while one comes out negative, the most negative is
    held at 0 and the rest refitted (correlated signals — coverage beside bm25 and the cosine — can otherwise
    take a negative weight that would rank a chunk lower for containing more of the prompt)."""
    active = list(range(len(names)))
    while True:
        w_active, b = fit_logistic(x[:, active], y, l2)
        w = np.zeros(len(names))
        w[active] = w_active
        negative = [i for i in active if names[i] in MONOTONE and w[i] < 0]
        if not negative:
            return w, b
        active.remove(min(negative, key=lambda i: w[i]))


def log_loss(z: np.ndarray, y: np.ndarray) -> float:
    p = np.clip(1 / (1 + np.exp(-z)), 1e-9, 1 - 1e-9)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def fit_mode(
    train: list[Row], dev: list[Row], mode: str, sets: dict[str, tuple[str, ...]]
) -> tuple[judge.Model, dict[str, Any]]:
    """The model of one mode: the feature set and L2 chosen on dev log-loss, then Platt-scaled on dev."""
    tried = []
    for set_name, names in sets.items():
        names = tuple(n for n in names if not (mode == "keyword" and n == "cosine"))
        xt, yt = matrix(train, names)
        xd, yd = matrix(dev, names)
        for l2 in L2_GRID:
            w, b = fit_monotone(xt, yt, l2, names)
            tried.append((log_loss(xd @ w + b, yd), set_name, l2, names, w, b))
    loss, set_name, l2, names, w, b = min(tried, key=lambda t: t[0])
    xd, yd = matrix(dev, names)
    a, c = fit_logistic((xd @ w + b)[:, None], yd, 0.0)  # Platt: P = σ(a·z + c)
    weights, bias = w * a[0], b * a[0] + c
    model = judge.Model(names, tuple(round(float(v), 4) for v in weights), round(float(bias), 4))
    info = {"features": set_name, "l2": l2, "dev_log_loss_before_platt": round(loss, 4), "platt": [float(a[0]), c],
            "tried": [{"features": t[1], "l2": t[2], "dev_log_loss": round(t[0], 4)} for t in tried]}  # fmt: skip
    return model, info


# ---- the floor and the figures -----------------------------------------------------------------------------


def by_prompt(rows: list[Row]) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = {}
    for r in rows:
        out.setdefault(r.prompt, []).append(r)
    return out


HAND = relevance.Floor(relevance.MIN_RELEVANCE)  # the hand-set floor of before the judge, its shipped constants


def passes(row: Row, shipped: judge.Judge | None, floor: float, hand: relevance.Floor = HAND) -> bool:
    """Whether a hit passes: the judge's P ≥ floor, or (shipped None) the hand-set floor `hand`."""
    signals = relevance.Signals(**row.signals)
    if shipped is None:
        return relevance._hand_floor(signals, hand)[0]
    if signals.identifier:
        return True
    if signals.cosine is None and signals.shared_words < relevance.MIN_SHARED_WORDS:  # the rule `relevance` keeps
        return False
    return judge.probability(shipped, signals) >= floor


_KINDS: dict[str, set[str]] = {}


def unrelated(prompt: str) -> bool:
    """Whether every example of `prompt` is of kind `unrelated` (an ordinary prompt no passage answers)."""
    if not _KINDS:
        for ex in recall_data.examples():
            _KINDS.setdefault(ex.prompt, set()).add(ex.kind)
    return _KINDS.get(prompt, set()) == {"unrelated"}


def rates(
    rows: list[Row], mode: str, shipped: judge.Judge | None, floor: float, hand: relevance.Floor = HAND
) -> dict[str, float]:
    """For one mode: the share of unrelated prompts (every example `unrelated`) and of all negative prompts (no
    relevant passage: near misses and hard negatives too) injecting anything from their top 5, the share of relevant
    hits (top 10) kept, of positive prompts with a relevant hit kept in their top 5, and of their other hits passing."""
    prompts = by_prompt([r for r in rows if r.mode == mode])
    neg = [hits for hits in prompts.values() if not any(h.label for h in hits)]
    unrel = [hits for p, hits in prompts.items() if unrelated(p) and not any(h.label for h in hits)]
    pos = [hits for hits in prompts.values() if any(h.label for h in hits)]
    relevant = [h for hits in pos for h in hits if h.label]
    return {
        "unrelated_injecting": sum(any(passes(h, shipped, floor, hand) for h in hits[:K_HOOK]) for hits in unrel)
        / max(1, len(unrel)),
        "negatives_injecting": sum(any(passes(h, shipped, floor, hand) for h in hits[:K_HOOK]) for hits in neg)
        / max(1, len(neg)),
        "relevant_hits_kept": sum(passes(h, shipped, floor, hand) for h in relevant) / max(1, len(relevant)),
        "positive_prompts_served": sum(
            any(h.label and passes(h, shipped, floor, hand) for h in hits[:K_HOOK]) for hits in pos
        ) / max(1, len(pos)),
        "n_unrelated_prompts": len(unrel),
        "n_negative_prompts": len(neg),
        "n_positive_prompts": len(pos),
        "irrelevant_hits_passing": sum(
            passes(h, shipped, floor, hand) for hits in pos for h in hits[:K_HOOK] if not h.label
        ) / max(1, sum(1 for hits in pos for h in hits[:K_HOOK] if not h.label)),
    }


def bounds(dev: list[Row], rule: str, bound: float, negatives: str) -> dict[str, float]:
    """The most dev negative prompts may inject, per mode. Rule "matched" (the default): no more than the hand-set
    floor injects on the same dev prompts, in each mode (never more false injection than before the judge);
    rule "bound": at most `bound` hybrid, 1.5 × `bound` keyword-only."""
    key = "unrelated_injecting" if negatives == "unrelated" else "negatives_injecting"
    if rule == "matched":
        return {mode: rates(dev, mode, None, 0.0)[key] for mode in ("hybrid", "keyword")}
    return {"hybrid": bound, "keyword": 1.5 * bound}


def choose_floor(dev: list[Row], shipped: judge.Judge, limits: dict[str, float], negatives: str) -> float:
    """The lowest floor on a 0.01 grid keeping dev unrelated prompts (or, `negatives` "all", every negative prompt)
    injecting at most `limits[mode]` in both modes."""
    key = "unrelated_injecting" if negatives == "unrelated" else "negatives_injecting"
    for step in range(1, 100):
        floor = step / 100
        if all(rates(dev, mode, shipped, floor)[key] <= limit + 1e-12 for mode, limit in limits.items()):
            return floor
    return 0.99


# The hand floor's curve: its one constant swept (hybrid: min_relevance on cosine + 0.2 × coverage; keyword-only:
# min_coverage), the other constants as shipped.
HAND_SWEEP = {
    "hybrid": [round(0.25 + 0.025 * i, 3) for i in range(17)],
    "keyword": [round(0.2 + 0.05 * i, 3) for i in range(15)],
}


def curves(dev: list[Row], shipped: judge.Judge) -> list[dict[str, Any]]:
    """The dev ROC-style table: for each floor of the judge (P) and of the hand floor (its constant), the share of
    dev unrelated prompts injecting and of dev relevant hits kept, per mode."""
    out = []
    for mode in ("hybrid", "keyword"):
        for at in sorted({step / 100 for step in range(5, 100, 5)} | {shipped.floor}):
            out.append({"mode": mode, "floor": "judge", "at": at} | rates(dev, mode, shipped, at))
        shipped_at = HAND.min_relevance if mode == "hybrid" else HAND.min_coverage
        for value in sorted({*HAND_SWEEP[mode], shipped_at}):
            hand = HAND._replace(min_relevance=value) if mode == "hybrid" else HAND._replace(min_coverage=value)
            out.append({"mode": mode, "floor": "hand floor", "at": value} | rates(dev, mode, None, 0.0, hand))
    return out


def show_curves(lines: list[dict[str, Any]], shipped: judge.Judge) -> None:
    print("\ndev, ROC-style (* the shipped constant / the chosen floor):")
    print(f"{'mode':<8} {'floor':<11} {'at':>6} {'unrelated injecting':>20} {'relevant hits kept':>19} "
          f"{'pos. prompts served@5':>22}")  # fmt: skip
    shipped_at = {"judge": shipped.floor, "hybrid": HAND.min_relevance, "keyword": HAND.min_coverage}
    for r in lines:
        mark = "*" if r["at"] == shipped_at["judge" if r["floor"] == "judge" else r["mode"]] else " "
        print(f"{r['mode']:<8} {r['floor']:<11} {r['at']:>6.3f}{mark}{r['unrelated_injecting']:>19.3f} "
              f"{r['relevant_hits_kept']:>19.3f} {r['positive_prompts_served']:>22.3f}")  # fmt: skip


def table(rows: dict[str, list[Row]], shipped: judge.Judge) -> list[dict[str, Any]]:
    out = []
    for split, got in rows.items():
        for mode in ("hybrid", "keyword"):
            for name, which in (("hand floor", None), ("judge", shipped)):
                out.append({"split": split, "mode": mode, "floor": name} | rates(got, mode, which, shipped.floor))
    return out


def show(lines: list[dict[str, Any]]) -> None:
    print(f"\n{'split':<6} {'mode':<8} {'floor':<11} {'unrelated injecting':>20} {'neg. prompts injecting':>23} "
          f"{'relevant hits kept':>19} "
          f"{'pos. prompts served@5':>22} {'irrelevant@5 passing':>21} {'n unrel/neg/pos':>16}")  # fmt: skip
    for r in lines:
        print(f"{r['split']:<6} {r['mode']:<8} {r['floor']:<11} {r['unrelated_injecting']:>20.3f} "
              f"{r['negatives_injecting']:>23.3f} "
              f"{r['relevant_hits_kept']:>19.3f} {r['positive_prompts_served']:>22.3f} "
              f"{r['irrelevant_hits_passing']:>21.3f} "
              f"{r['n_unrelated_prompts']:>4}/{r['n_negative_prompts']}/{r['n_positive_prompts']}")  # fmt: skip


def train(
    rows: dict[str, list[Row]],
    bound: float,
    seed: int,
    negatives: str = "unrelated",
    features: str | None = None,
    rule: str = "matched",
) -> tuple[judge.Judge, dict[str, Any]]:
    sets = {features: FEATURE_SETS[features]} if features else FEATURE_SETS
    np.random.default_rng(seed)  # nothing is sampled: Newton steps from zero are deterministic; kept for the record
    models, infos = {}, {}
    for mode in ("hybrid", "keyword"):
        tr = [r for r in rows["train"] if r.mode == mode]
        dv = [r for r in rows["dev"] if r.mode == mode]
        models[mode], infos[mode] = fit_mode(tr, dv, mode, sets)
    provisional = judge.Judge(models["hybrid"], models["keyword"], 0.5, {})
    limits = bounds(rows["dev"], rule, bound, negatives)
    floor = choose_floor(rows["dev"], provisional, limits, negatives)
    counts = {s: {"rows": len(r), "positive": sum(x.label for x in r), "prompts": len({x.prompt for x in r})}
              for s, r in rows.items()}  # fmt: skip
    files = sorted({p.name for p in recall_data.DATA_DIR.glob("*.jsonl")})
    meta = {"trained_by": "scripts/train_relevance.py", "seed": seed, "data": files, "rows": counts,
            "floor_rule": rule, "max_injecting_dev": {m: round(v, 4) for m, v in limits.items()},
            "floor_negatives": negatives, "fits": infos}  # fmt: skip
    return judge.Judge(models["hybrid"], models["keyword"], floor, meta), meta


def compare(dev: list[Row], shipped: judge.Judge) -> dict[str, Any]:
    """The decision on the default, on dev only: at the chosen floor, does the judge keep at least as many dev
    relevant hits as the hand-set floor, in both modes, with no more dev unrelated prompts injecting?"""
    out: dict[str, Any] = {}
    print("\ndev, the judge at its floor beside the hand-set floor:")
    for mode in ("hybrid", "keyword"):
        hand, got = rates(dev, mode, None, 0.0), rates(dev, mode, shipped, shipped.floor)
        keys = ("unrelated_injecting", "relevant_hits_kept", "positive_prompts_served")
        out[mode] = {"hand floor": {k: round(hand[k], 4) for k in keys}, "judge": {k: round(got[k], 4) for k in keys}}
        print(f"  {mode:<8} unrelated injecting {hand[keys[0]]:.3f} → {got[keys[0]]:.3f}, relevant hits kept "
              f"{hand[keys[1]]:.3f} → {got[keys[1]]:.3f}, positive prompts served {hand[keys[2]]:.3f} → "
              f"{got[keys[2]]:.3f}")  # fmt: skip
    better = all(out[m]["judge"]["relevant_hits_kept"] >= out[m]["hand floor"]["relevant_hits_kept"]
                 and out[m]["judge"]["unrelated_injecting"] <= out[m]["hand floor"]["unrelated_injecting"]
                 for m in out)  # fmt: skip
    out["default"] = "judge" if better else "hand floor"
    print(f"  the default by this rule: {out['default']}")
    return out


def dump(shipped: judge.Judge) -> str:
    def model(m: judge.Model) -> dict[str, Any]:
        return {"features": list(m.features), "weights": list(m.weights), "bias": m.bias}

    data = {"floor": shipped.floor, "hybrid": model(shipped.hybrid), "keyword": model(shipped.keyword),
            "meta": shipped.meta}  # fmt: skip
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=OUT, help="where the judge's JSON goes")
    parser.add_argument("--rows", type=Path, help="save the collected rows here, or reuse them when the file exists")
    parser.add_argument("--limit", type=int, help="only the first N examples of each split (a quick check)")
    parser.add_argument("--floor-rule", choices=("matched", "bound"), default="matched",
                        help="the floor: the lowest P whose dev unrelated prompts inject no more than the hand-set "
                             "floor's in each mode ('matched'), or at most --max-injecting ('bound')")
    parser.add_argument("--max-injecting", type=float, default=0.05,
                        help="with --floor-rule bound: the bound on dev negative prompts injecting (hybrid)")
    parser.add_argument("--negatives", choices=("unrelated", "all"), default="unrelated",
                        help="the dev prompts the bound is on: unrelated ones, or all without a relevant passage")
    parser.add_argument("--features", choices=[*sorted(FEATURE_SETS), "choose"], default=SHIPPED_FEATURES,
                        help=f"the feature set ('choose': by dev log-loss; default: {SHIPPED_FEATURES!r})")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    if args.rows and args.rows.exists():
        raw = json.loads(args.rows.read_text(encoding="utf-8"))
        rows = {s: [Row(**r) for r in got] for s, got in raw.items()}
    else:
        embedder = embed.load()
        rows = {}
        for split in recall_data.SPLITS:
            started = time.perf_counter()
            rows[split] = collect(split, embedder, args.limit)
            print(f"{split}: {len(rows[split])} hits of {len({r.prompt for r in rows[split]})} prompts "
                  f"in {time.perf_counter() - started:.0f} s", flush=True)  # fmt: skip
        if args.rows:
            args.rows.write_text(json.dumps({s: [r.__dict__ for r in got] for s, got in rows.items()}),
                                 encoding="utf-8")  # fmt: skip
    shipped, meta = train({"train": rows["train"], "dev": rows["dev"]}, args.max_injecting, args.seed, args.negatives,
                         None if args.features == "choose" else args.features, args.floor_rule)
    for mode in ("hybrid", "keyword"):
        m = getattr(shipped, mode)
        print(f"\n{mode} ({meta['fits'][mode]['features']}, L2 {meta['fits'][mode]['l2']}): bias {m.bias:+.2f}; "
              + ", ".join(f"{n} {w:+.2f}" for n, w in zip(m.features, m.weights, strict=True)))  # fmt: skip
    print(f"\nfloor probability (chosen on dev, rule {args.floor_rule!r}: dev unrelated prompts injecting at most "
          + ", ".join(f"{m} {v:.3f}" for m, v in meta["max_injecting_dev"].items()) + f"): {shipped.floor:.2f}")
    show_curves(curves(rows["dev"], shipped), shipped)
    verdict = compare(rows["dev"], shipped)
    figures = table(rows, shipped)
    show(figures)
    shipped = shipped._replace(meta=meta | {"dev_comparison": verdict, "figures": figures})
    args.out.write_text(dump(shipped), encoding="utf-8")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
