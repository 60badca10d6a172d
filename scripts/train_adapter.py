"""Adapt the packaged MiniLM to the team's recall data: a linear map over its query vectors, or a fine-tune.

    nice python scripts/train_adapter.py linear  [--rank R] [--steps N] [--floor W] [--groups F] [--save FILE] [--test]
    nice python scripts/train_adapter.py finetune [--epochs N] [--lora R] [--save DIR|FILE.npz] [--limit N] [--test]
    nice python scripts/train_adapter.py stock [--test]
    nice python scripts/train_adapter.py map [--map FILE] [--test]     (score a saved map, default the shipped one)

Data: every scripts/data/recall_train/*.jsonl through recall_data.py (or the --files named), split by group
(train / dev / test).
Training reads the train split only; settings are chosen on dev; `--test` adds the test figures (report
them once, for the chosen setting). LoCoMo and the preference set are never read here.

`linear`: the documents keep the stock model's vectors (nothing is re-embedded); a query's vector q becomes
normalise(M q) with M = I + A, A full (rank 0) or U Vᵀ (rank R), initialised at 0. Loss, full batch with
Adam: a softmax over every train passage for each (prompt, relevant passage) pair, the prompt's other
relevant passages masked (in-batch negatives, and the prompt's labelled non-relevant passages are in the
pool as hard negatives, weighted up by --hard), plus a logistic loss on every labelled pair so that
relevant and non-relevant cosines separate across prompts (AUC), plus --decay ‖A‖² (stay near the stock
space). `--symmetric` applies M to the passages too (the stored vectors would change: a new model id).
`--floor W` adds the floor's term (one cosine threshold for every prompt, as the relevance floor uses it): a
logistic on (cos − --floor-at) / --floor-width, the relevant pairs against each train prompt's --mine
best-ranked passages not relevant to it, mined afresh each step (a prompt with no relevant passage brings its
best passages, as an unrelated prompt reaches the floor with its best hit). With --floor-margin m the term is
a margin instead: the mean of relu(m + q − cos) over the relevant pairs, q the 95th percentile of the mined
cosines.

`finetune`: the model itself, sentence-transformers' MultipleNegativesRankingLoss over (prompt, relevant
passage, a labelled non-relevant passage of the same prompt, else another train passage) in batches
that never hold one passage twice, AdamW, a plain torch loop (no `datasets`/`accelerate` needed). With `--lora R`
the model is frozen and each linear layer of its transformer learns a rank-R delta b·a (b starts at 0), saved
with --save as an .npz of the factors (`<layer>.a`, `<layer>.b`). Measured, not shipped: wiki/explanation/recall.md.

(Over 400 lines: both methods, their data and their shared scores stay in one script, so that one run prints
them side by side on the same split.)

Scores, per split: each prompt with a relevant passage ranks ALL passages of the data (every split, every
file: its own group's and all the others) — recall@1/5/10 and MRR of the first relevant one; and AUC, the
chance a labelled relevant pair's cosine beats a labelled non-relevant pair's (every labelled pair of the
split, across prompts); and what a cosine floor can keep: the share of relevant pairs at or above the lowest
threshold that lets through at most 5 % of the negatives (each prompt's best-ranked passage not relevant to it;
also with only the prompts that have no relevant passage, and only those labelled `unrelated` alone), and the
shares over 0.435 (the hand-set floor's constant). Deterministic: fixed seed, one torch thread per --threads,
CPU only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import recall_data

SEED = 29
DIM = 384


@dataclass
class Data:
    """Texts and labels in index form: prompts and passages de-duplicated by text."""

    prompts: list[str]
    passages: list[str]
    pairs: dict[str, list[tuple[int, int, int]]]  # split → (prompt i, passage j, label)
    examples: dict[str, list[recall_data.Example]] = field(default_factory=dict)  # split → its examples
    prompt_of: dict[str, int] = field(default_factory=dict)  # prompt text → i

    def relevant(self, split: str) -> dict[int, set[int]]:
        out: dict[int, set[int]] = defaultdict(set)
        for i, j, label in self.pairs[split]:
            if label:
                out[i].add(j)
        return out


def data(examples: list[recall_data.Example]) -> Data:
    prompts: dict[str, int] = {}
    passages: dict[str, int] = {}
    pairs: dict[str, list[tuple[int, int, int]]] = {s: [] for s in recall_data.SPLITS}
    by_split: dict[str, list[recall_data.Example]] = {s: [] for s in recall_data.SPLITS}
    for ex in examples:
        i = prompts.setdefault(ex.prompt, len(prompts))
        j = passages.setdefault(ex.passage, len(passages))
        pairs[ex.split].append((i, j, ex.label))
        by_split[ex.split].append(ex)
    return Data(list(prompts), list(passages), pairs, by_split, prompts)


# ---- stock vectors (cached by text) --------------------------------------------------------------------------


def stock_vectors(texts: list[str], cache: Path | None) -> np.ndarray:
    """The packaged model's L2-normalised vectors for `texts` (float32), reusing a cache file when given."""
    known: dict[str, np.ndarray] = {}
    if cache and cache.exists():
        with np.load(cache) as saved:
            known = {key: saved[key] for key in saved.files}
    keys = [hashlib.sha256(text.encode()).hexdigest()[:24] for text in texts]
    missing = sorted({t for t, k in zip(texts, keys, strict=True) if k not in known})
    if missing:
        from memvault.index import embed

        embedder = embed.load()
        for text, blob in zip(missing, embedder.encode(missing), strict=True):
            known[hashlib.sha256(text.encode()).hexdigest()[:24]] = np.frombuffer(blob, dtype="<f4")
        if cache:
            cache.parent.mkdir(parents=True, exist_ok=True)
            np.savez(cache, **known)
    return np.stack([known[k] for k in keys]).astype(np.float32)


# ---- scores --------------------------------------------------------------------------------------------------


def auc(pos: list[float], neg: list[float]) -> float:
    """Mann–Whitney AUC: P(a relevant pair's score > a non-relevant pair's), ties counted half."""
    if not pos or not neg:
        return float("nan")
    scores = np.array(pos + neg)
    order = scores.argsort(kind="mergesort")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    for value in np.unique(scores):  # average ranks of ties
        tied = scores == value
        ranks[tied] = ranks[tied].mean()
    return float((ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def score(d: Data, split: str, queries: np.ndarray, docs: np.ndarray) -> dict[str, float]:
    """recall@1/5/10, MRR over every passage of the data, and AUC of labelled pairs, for one split."""
    relevant = d.relevant(split)
    hits = {1: 0, 5: 0, 10: 0}
    reciprocal = 0.0
    for i, wanted in relevant.items():
        sims = docs @ queries[i]
        order = np.argsort(-sims, kind="stable")
        first = next(rank for rank, j in enumerate(order, 1) if j in wanted)
        reciprocal += 1 / first
        for k in hits:
            hits[k] += first <= k
    n = max(1, len(relevant))
    pos = [float(queries[i] @ docs[j]) for i, j, label in d.pairs[split] if label]
    neg = [float(queries[i] @ docs[j]) for i, j, label in d.pairs[split] if not label]
    return {"prompts": len(relevant), **{f"R@{k}": hits[k] / n for k in hits}, "MRR": reciprocal / n,
            "AUC": auc(pos, neg), "pairs": len(d.pairs[split]), **floor_figures(d, split, queries, docs)}  # fmt: skip


def kept_at(negatives: np.ndarray, positives: np.ndarray, share: float) -> tuple[float, float]:
    """(t, kept): the lowest cosine threshold t letting through at most `share` of `negatives`, and the share of
    `positives` at or above it."""
    ranked = np.sort(negatives)[::-1]
    allowed = int(np.floor(share * len(ranked)))  # this many negatives may pass
    t = float(np.nextafter(ranked[allowed], np.inf)) if allowed < len(ranked) else float(ranked[-1])
    return t, float((positives >= t).mean()) if len(positives) else float("nan")


def floor_figures(d: Data, split: str, queries: np.ndarray, docs: np.ndarray) -> dict[str, float]:
    """What an absolute cosine floor can do on one split (every passage of the data is the vault).

    Negatives, one per prompt of the split: its best-ranked passage that is not labelled relevant to it (what a
    floor would let through as a wrong note); "unrelated": the prompts with no relevant passage, their best
    passage. Positives: the labelled relevant pairs. kept@5% is the share of positives at or above the lowest
    threshold letting through at most 5 % of the negatives; at 0.435 (the hand-set floor's `min_relevance`, a
    passage sharing no word): the shares of positives and negatives over it.
    """
    relevant = d.relevant(split)
    prompts = sorted({i for i, _, _ in d.pairs[split]})
    sims = queries[prompts] @ docs.T
    kinds: dict[int, set[str]] = defaultdict(set)
    for ex in d.examples.get(split, []):
        kinds[d.prompt_of[ex.prompt]].add(ex.kind)
    best_wrong, unrelated, offtopic = [], [], []
    for row, i in enumerate(prompts):
        wrong = sims[row].copy()
        wrong[list(relevant.get(i, ()))] = -np.inf
        best_wrong.append(wrong.max())
        if i not in relevant:
            unrelated.append(wrong.max())
            if kinds[i] == {"unrelated"}:
                offtopic.append(wrong.max())
    neg, alone, off = np.array(best_wrong), np.array(unrelated), np.array(offtopic)
    pos = np.array([float(queries[i] @ docs[j]) for i, j, label in d.pairs[split] if label])
    t, kept = kept_at(neg, pos, 0.05)
    t_u, kept_u = kept_at(alone, pos, 0.05)
    t_o, kept_o = kept_at(off, pos, 0.05) if len(off) else (float("nan"), float("nan"))
    return {"t@5%": t, "kept@5%": kept, "t@5% unrelated": t_u, "kept@5% unrelated": kept_u,
            "t@5% off-topic": t_o, "kept@5% off-topic": kept_o, "off-topic prompts": len(off),
            "pos mean": float(pos.mean()), "neg mean": float(neg.mean()),
            "kept@0.435": float((pos >= 0.435).mean()), "wrong@0.435": float((neg >= 0.435).mean()),
            "unrelated@0.435": float((alone >= 0.435).mean())}  # fmt: skip


def show(name: str, split: str, s: dict[str, float]) -> None:
    print(f"{name:<34} {split:<5} prompts {s['prompts']:>3}  R@1 {s['R@1']:.3f}  R@5 {s['R@5']:.3f}  "
          f"R@10 {s['R@10']:.3f}  MRR {s['MRR']:.3f}  AUC {s['AUC']:.3f}", flush=True)  # fmt: skip
    if "kept@5%" in s:
        print(f"{'':<34} {'':<5} floor: kept@5% {s['kept@5%']:.3f} (t {s['t@5%']:.3f}); prompts with no relevant "
              f"passage: kept@5% {s['kept@5% unrelated']:.3f} (t {s['t@5% unrelated']:.3f}); labelled `unrelated` "
              f"only ({s['off-topic prompts']}): kept@5% {s['kept@5% off-topic']:.3f} (t {s['t@5% off-topic']:.3f}); "
              f"at 0.435 kept "
              f"{s['kept@0.435']:.3f}, wrong {s['wrong@0.435']:.3f}, unrelated {s['unrelated@0.435']:.3f}; "
              f"mean cos pos {s['pos mean']:.3f} / best wrong {s['neg mean']:.3f}", flush=True)  # fmt: skip


def normalise(m: np.ndarray) -> np.ndarray:
    return m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)


# ---- (a) a linear map ----------------------------------------------------------------------------------------


def train_linear(d: Data, q: np.ndarray, p: np.ndarray, args: argparse.Namespace) -> np.ndarray:
    """M (DIM × DIM, float32) fitted on the train split; a query's adapted vector is normalise(M q)."""
    import torch

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    train = d.pairs["train"]
    pool = sorted({j for _, j, _ in train})  # the softmax runs over every train passage
    at = {j: n for n, j in enumerate(pool)}
    relevant = d.relevant("train")
    anchors = [(i, j) for i, j, label in train if label]
    hard: dict[int, set[int]] = defaultdict(set)
    for i, j, label in train:
        if not label:
            hard[i].add(j)
    prompt_ids = sorted({i for i, _, _ in train})
    row = {i: n for n, i in enumerate(prompt_ids)}
    mask = torch.zeros(len(anchors), len(pool))  # other relevant passages of the same prompt: not negatives
    weight = torch.ones(len(anchors), len(pool))
    for n, (i, j) in enumerate(anchors):
        for other in relevant[i] - {j}:
            mask[n, at[other]] = float("-inf")
        for h in hard[i]:
            weight[n, at[h]] = args.hard
    target = torch.tensor([at[j] for _, j in anchors])
    anchor_rows = torch.tensor([row[i] for i, _ in anchors])
    labelled = [(row[i], at[j], label) for i, j, label in train]
    li = torch.tensor([a for a, _, _ in labelled])
    lj = torch.tensor([b for _, b, _ in labelled])
    ly = torch.tensor([float(c) for _, _, c in labelled])
    Q = torch.tensor(q[prompt_ids])
    P = torch.tensor(p[pool])
    own = torch.zeros(len(prompt_ids), len(pool))  # a prompt's relevant passages: never mined as its negatives
    for i, wanted in relevant.items():
        for j in wanted:
            own[row[i], at[j]] = float("-inf")
    positive = ly == 1
    mine = min(getattr(args, "mine", 0), len(pool) - 1)
    if args.rank:
        U = torch.nn.Parameter(torch.randn(DIM, args.rank) * 0.01)
        V = torch.nn.Parameter(torch.zeros(DIM, args.rank))
        params = [U, V]
    else:
        A = torch.nn.Parameter(torch.zeros(DIM, DIM))
        params = [A]
    bias = torch.nn.Parameter(torch.tensor(0.4))  # the logistic loss's threshold and scale
    scale = torch.nn.Parameter(torch.tensor(10.0))
    optimiser = torch.optim.Adam([*params, bias, scale], lr=args.lr)

    def delta() -> torch.Tensor:
        return U @ V.T if args.rank else A

    for _step in range(args.steps):
        optimiser.zero_grad()
        D = delta()
        mapped = torch.nn.functional.normalize(Q + Q @ D.T, dim=1)
        docs = torch.nn.functional.normalize(P + P @ D.T, dim=1) if args.symmetric else P
        sims = mapped @ docs.T
        logits = sims[anchor_rows] / args.temperature + mask + torch.log(weight)
        contrast = torch.nn.functional.cross_entropy(logits, target)
        pair = torch.nn.functional.binary_cross_entropy_with_logits(scale * (sims[li, lj] - bias), ly)
        loss = contrast + args.pair * pair + args.decay * (D**2).sum()
        if getattr(args, "floor", 0.0) and mine:
            loss = loss + args.floor * floor_loss(sims, own, li[positive], lj[positive], mine, args)
        loss.backward()
        optimiser.step()
    with torch.no_grad():
        return (torch.eye(DIM) + delta()).numpy().astype(np.float32)


def floor_loss(sims: Any, own: Any, pi: Any, pj: Any, mine: int, args: argparse.Namespace) -> Any:
    """The floor's term: one threshold for every prompt. Logistic on (cos − --floor-at) / --floor-width, the
    relevant pairs against each train prompt's `mine` best-ranked passages not relevant to it (mined afresh
    every step from the whole train pool: a prompt with no relevant passage contributes its best passages, as an
    unrelated prompt reaches the floor with its best hit), the two sides weighted alike. With --floor-margin m
    instead: the mean of relu(m + q − cos) over the relevant pairs, q the 95th percentile of the mined cosines
    (the other prompts' hardest negatives: the 5 % point itself)."""
    import torch

    wrong = (sims + own).topk(mine, dim=1).values.flatten()
    if getattr(args, "floor_margin", 0.0):  # each relevant pair above the level that lets 5 % of them through
        level = torch.quantile(wrong, 0.95)
        return torch.relu(args.floor_margin + level - sims[pi, pj]).mean()
    logit = lambda c: (c - args.floor_at) / args.floor_width  # noqa: E731
    bce = torch.nn.functional.binary_cross_entropy_with_logits
    return 0.5 * bce(logit(sims[pi, pj]), torch.ones(len(pi))) + 0.5 * bce(logit(wrong), torch.zeros(len(wrong)))


def apply(m: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    return normalise(vectors @ m.T)


# ---- (b) a fine-tune -----------------------------------------------------------------------------------------


def finetune(d: Data, args: argparse.Namespace) -> Any:
    """The packaged model fine-tuned with MultipleNegativesRankingLoss; returns the SentenceTransformer."""
    import torch
    from sentence_transformers.losses import MultipleNegativesRankingLoss

    from memvault.index import embed

    random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    model = embed.load(threads=args.threads).model
    if args.lora:
        add_lora(model, args.lora, args.seed)
    train = d.pairs["train"]
    hard: dict[int, list[int]] = defaultdict(list)
    for i, j, label in train:
        if not label:
            hard[i].append(j)
    pool = sorted({j for _, j, _ in train})
    rng = random.Random(args.seed)  # noqa: S311 (a seeded shuffle, not a secret)
    triples = []
    for i, j, label in train:
        if label:
            wrong = hard[i] or [x for x in pool if x not in d.relevant("train")[i]]
            triples.append((i, j, rng.choice(wrong)))
    if args.limit:
        triples = triples[: args.limit]
    loss_fn = MultipleNegativesRankingLoss(model)
    optimiser = torch.optim.AdamW([w for w in model.parameters() if w.requires_grad], lr=args.lr)
    model.train()
    started = time.perf_counter()
    for epoch in range(args.epochs):
        rng.shuffle(triples)
        batches: list[list[tuple[int, int, int]]] = []
        for triple in triples:  # one passage at most once per batch (no false in-batch negatives)
            for batch in batches:
                if len(batch) < args.batch and all(triple[1] not in (b[1], b[2]) and triple[2] != b[1] for b in batch):
                    batch.append(triple)
                    break
            else:
                batches.append([triple])
        for batch in batches:
            features = [model.tokenize([texts[x] for x in column]) for texts, column in
                        ((d.prompts, [b[0] for b in batch]), (d.passages, [b[1] for b in batch]),
                         (d.passages, [b[2] for b in batch]))]  # fmt: skip
            optimiser.zero_grad()
            loss = loss_fn(features, None)
            loss.backward()
            optimiser.step()
        print(f"  epoch {epoch + 1}: {len(batches)} batches, {time.perf_counter() - started:.0f} s", flush=True)
    model.eval()
    return model


LORA_TARGETS = (
    "attention.self.query",
    "attention.self.key",
    "attention.self.value",
    "attention.output.dense",
    "intermediate.dense",
    "output.dense",
)  # every Linear of each BERT layer


def add_lora(model: Any, rank: int, seed: int) -> None:
    """Freeze the model and give each Linear of its transformer layers a trainable low-rank delta B·A (B at 0)."""
    import torch

    class LoRA(torch.nn.Module):
        def __init__(self, base: Any) -> None:
            super().__init__()
            self.base = base
            generator = torch.Generator().manual_seed(seed)
            start = torch.randn(rank, base.in_features, generator=generator) / base.in_features**0.5
            self.a = torch.nn.Parameter(start)
            self.b = torch.nn.Parameter(torch.zeros(base.out_features, rank))

        def forward(self, x: Any) -> Any:
            return self.base(x) + (x @ self.a.T) @ self.b.T

    for weight in model.parameters():
        weight.requires_grad = False
    bert = model[0].auto_model
    for name, module in list(bert.named_modules()):
        if name.split(".", 3)[:2] == ["encoder", "layer"] and name.split(".", 3)[-1] in LORA_TARGETS:
            parent_name, _, child = name.rpartition(".")
            setattr(bert.get_submodule(parent_name), child, LoRA(module))


def lora_factors(model: Any) -> dict[str, np.ndarray]:
    """`<Linear's name>.a` and `.b` → its low-rank factors (float32): the weight's delta is b @ a."""
    out = {}
    for name, module in model[0].auto_model.named_modules():
        if hasattr(module, "a") and hasattr(module, "base"):
            out[f"{name}.a"] = module.a.detach().numpy().astype(np.float32)
            out[f"{name}.b"] = module.b.detach().numpy().astype(np.float32)
    return out


def encode(model: Any, texts: list[str]) -> np.ndarray:
    return np.asarray(model.encode(texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False),
                      dtype=np.float32)  # fmt: skip


# ---- main ----------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("method", choices=("stock", "linear", "map", "finetune"))
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--cache", type=Path, help="an .npz of stock vectors by text, reused between runs")
    parser.add_argument("--files", help="only these data files (comma-separated names, e.g. uv-docs.jsonl)")
    parser.add_argument("--test", action="store_true", help="also score the test split (once, at the end)")
    parser.add_argument("--save", type=Path, help="linear: write M here (.npy, float32); finetune: the model's folder")
    parser.add_argument("--limit", type=int, default=0, help="train on the first N train examples only")
    parser.add_argument("--groups", type=float, default=1.0, help="linear: train on this share of the train groups")
    parser.add_argument("--rank", type=int, default=0, help="linear: 0 full map, else I + U Vᵀ of this rank")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--lr", type=float, default=None, help="linear 1e-4, finetune 2e-5 by default")
    parser.add_argument("--temperature", type=float, default=0.05)
    parser.add_argument("--hard", type=float, default=2.0, help="linear: weight of a labelled non-relevant passage")
    parser.add_argument("--pair", type=float, default=1.0, help="linear: weight of the labelled-pair logistic loss")
    parser.add_argument("--decay", type=float, default=1e-3, help="linear: weight of ‖A‖²")
    parser.add_argument("--symmetric", action="store_true", help="linear: map the passages too")
    parser.add_argument("--floor", type=float, default=0.0, help="linear: weight of the floor's term (0: none)")
    parser.add_argument("--mine", type=int, default=5, help="linear: best-ranked wrong passages per prompt, floor term")
    parser.add_argument("--floor-at", type=float, default=0.435, help="linear: the floor term's cosine threshold")
    parser.add_argument("--floor-width", type=float, default=0.05, help="linear: the floor term's logistic width")
    parser.add_argument("--floor-margin", type=float, default=0.0, help="linear: the floor term as a margin")
    parser.add_argument("--map", type=Path, help="method map: score this saved map (default: the shipped one)")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--lora", type=int, default=0, help="finetune: train a low-rank delta of this rank only")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    args.lr = args.lr or (2e-5 if args.method == "finetune" else 1e-4)

    examples = recall_data.examples()
    if args.files:
        wanted = {name.strip() for name in args.files.split(",")}
        unknown = wanted - {ex.file for ex in examples}
        if unknown:
            parser.error(f"--files: no such data file: {', '.join(sorted(unknown))}")
        examples = [ex for ex in examples if ex.file in wanted]
    if args.limit and args.method == "linear":
        train = [ex for ex in examples if ex.split == "train"][: args.limit]
        examples = train + [ex for ex in examples if ex.split != "train"]
    d = data(examples)
    if args.groups < 1:  # every passage stays in the ranking; only what the map learns from shrinks
        groups = sorted({ex.group for ex in d.examples["train"]})
        kept = set(random.Random(args.seed).sample(  # noqa: S311 - a reproducible draw
            groups, max(1, round(len(groups) * args.groups))))
        d.pairs["train"] = [pair for pair, ex in zip(d.pairs["train"], d.examples["train"], strict=True)
                            if ex.group in kept]  # fmt: skip
        print(f"training on {len(kept)} of {len(groups)} train groups ({len(d.pairs['train'])} labelled pairs)")
    splits = ["train", "dev", *(["test"] if args.test else [])]
    started = time.perf_counter()
    q = stock_vectors(d.prompts, args.cache)
    p = stock_vectors(d.passages, args.cache)
    print(f"{len(d.prompts)} prompts, {len(d.passages)} passages; stock vectors in "
          f"{time.perf_counter() - started:.1f} s", flush=True)  # fmt: skip
    figures: dict[str, Any] = {"argv": sys.argv[1:], "passages": len(d.passages)}
    name = "stock"
    queries, docs = q, p
    if args.method == "linear":
        started = time.perf_counter()
        m = train_linear(d, q, p, args)
        took = time.perf_counter() - started
        queries = apply(m, q)
        docs = apply(m, p) if args.symmetric else p
        name = f"linear r{args.rank} s{args.steps} d{args.decay}" + (" sym" if args.symmetric else "")
        print(f"trained in {took:.1f} s; ‖M − I‖ = {np.linalg.norm(m - np.eye(DIM)):.3f}; "
              f"sha256 {hashlib.sha256(m.tobytes()).hexdigest()[:16]}", flush=True)  # fmt: skip
        if args.save:
            args.save.parent.mkdir(parents=True, exist_ok=True)
            np.save(args.save, m, allow_pickle=False)
            print(f"wrote {args.save} ({args.save.stat().st_size} bytes)")
    elif args.method == "map":
        from memvault.index import adapter

        path = args.map or adapter.MAP_FILE
        m = adapter.load(DIM, path)
        queries = apply(m, q)
        name = f"map {path.name} {hashlib.sha256(m.tobytes()).hexdigest()[:16]}"
    elif args.method == "finetune":
        started = time.perf_counter()
        model = finetune(d, args)
        print(f"fine-tuned in {time.perf_counter() - started:.0f} s", flush=True)
        if args.save and args.lora:
            np.savez(args.save, **lora_factors(model))
            print(f"wrote the low-rank deltas to {args.save}", flush=True)
        elif args.save:
            model.save(str(args.save))
            print(f"wrote the fine-tuned model to {args.save}", flush=True)
        queries, docs = encode(model, d.prompts), encode(model, d.passages)
        name = f"finetune e{args.epochs} lr{args.lr}" + (f" lora{args.lora}" if args.lora else "")
        name += f" limit{args.limit}" if args.limit else ""
    for split in splits:
        if args.method != "stock":
            show("stock", split, score(d, split, q, p))
        figures[split] = score(d, split, queries, docs)
        show(name, split, figures[split])
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
