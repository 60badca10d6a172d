"""Measure a cross-encoder relevance judge: the packaged MiniLM reading prompt and passage together (not shipped).

    nice python scripts/train_cross_encoder.py [--epochs 2] [--lr 6e-5] [--max-len 160] [--plain] [--save FILE]
                                               [--json FILE]
    python scripts/train_cross_encoder.py --sets FILE [--json FILE]   (a --save'd model on the evaluation sets)
    python scripts/train_cross_encoder.py --timing

Every bi-encoder signal recall has (the cosine, the query map, a fine-tune) puts a paraphrase that shares no
word with its note at the cosine an unrelated prompt reaches. A cross-encoder reads the two texts in one
pass, with attention between them, which is how rerankers judge relevance in absolute terms. This script
asks whether one learns that from the team's recall data, and what it would cost per candidate.

The model: the packaged all-MiniLM-L6-v2 (`embed.load`, its tokenizer and BERT) reads "[CLS] prompt [SEP]
passage [SEP]" (at most --max-len word pieces, the longer side cut first); its mean-pooled output goes
into a linear head that starts at 0. Unless --plain, the head's logit is added to a learned a·cosine + b,
the stock query-mapped bi-encoder cosine of the pair, started at 8·cos − 3.2, so that training starts
from the bi-encoder's own judgment. Loss: binary cross-entropy on the label of every train pair of
scripts/data/recall_train (recall_data.py's split), batches of 16, AdamW (the head at 1e-3), linear warm-up
over a tenth of the steps then linear decay, seed 29, two torch threads. Every epoch is scored on DEV; the
test split is never read.

Scored per epoch on dev: pointwise over the labelled pairs, AUC (relevant against not relevant) and "kept at
5 %", the share of relevant pairs above the score that only 5 % of the labelled not-relevant pairs reach (all
of them, and the `unrelated` kind alone); and as the floor sees it, each dev prompt's best non-relevant
passage among its 10 best of the whole data by stock cosine as the negative (a passage nobody labelled counts
as wrong there, though some are relevant). The cosine's figures stand beside each. `--sets`: the issue's
floor target on the preference vault (`evaluation_sets`). `--timing`: the forward pass for 1, 3 and 10 pairs
of 64 and 128 word pieces, p50 of 20, on one and two threads.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import recall_data

from memvault.index import embed

SEED = 29
BATCH = 16
SHORTLIST = 10  # the candidates a floor would judge per prompt
DATA = Path(__file__).resolve().parent / "data"
PREFERENCES, UNRELATED = DATA / "preference_set.json", DATA / "unrelated_prompts.json"


def _rows(blobs: list[bytes]) -> np.ndarray:
    """The embedder's vectors (float32 bytes) as the rows of one matrix."""
    return np.stack([np.frombuffer(b, "<f4") for b in blobs])


def timing(bert: Any) -> None:
    import torch

    for threads in (1, 2):
        torch.set_num_threads(threads)
        for n, length in ((1, 64), (3, 64), (3, 128), (10, 128)):
            ids = torch.randint(1000, 20000, (n, length))
            mask = torch.ones_like(ids)
            spent = []
            with torch.inference_mode():
                for i in range(23):
                    started = time.perf_counter()
                    bert(input_ids=ids, attention_mask=mask)
                    if i >= 3:
                        spent.append(time.perf_counter() - started)
            print(f"threads {threads}: {n} pair(s) of {length} word pieces: p50 {1000 * sorted(spent)[10]:.1f} ms")


def separation(score: np.ndarray, data: list[recall_data.Example]) -> dict[str, Any]:
    """AUC and the share of relevant pairs kept at the score 5 % of the not-relevant (or `unrelated`) pairs reach."""
    label = np.array([e.label for e in data])
    pos, neg = score[label == 1], score[label == 0]
    unrelated = score[np.array([e.kind == "unrelated" for e in data])]
    auc = float((pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean())
    cut, cut_u = np.quantile(neg, 0.95), np.quantile(unrelated, 0.95)
    by_kind = {}
    for kind in sorted(recall_data.KINDS_POSITIVE):
        of_kind = score[np.array([e.kind == kind for e in data])]
        if len(of_kind):
            by_kind[kind] = round(float((of_kind > cut_u).mean()), 3)
    return {"auc": round(auc, 4), "kept@5%": round(float((pos > cut).mean()), 4),
            "kept@5% unrelated": round(float((pos > cut_u).mean()), 4), "kept@5% unrelated, by kind": by_kind}


def stock_shortlists(dev: list[recall_data.Example], embedder: embed.Embedder,
                     k: int = SHORTLIST) -> dict[str, list[tuple[str, float]]]:
    """Each dev prompt's best `k` passages of the whole data not labelled relevant to it, with their stock cosine
    (computed before training: the cross-encoder trains the same BERT)."""
    passages = sorted({e.passage for e in recall_data.examples()})  # every file's passages, as train_adapter ranks
    matrix = _rows(embedder.encode(passages))
    relevant: dict[str, set[str]] = {}
    for e in dev:
        relevant.setdefault(e.prompt, set())
        if e.label:
            relevant[e.prompt].add(e.passage)
    prompts = sorted(relevant)
    queries = _rows(embedder.encode_query(prompts))
    out = {}
    for prompt, q in zip(prompts, queries, strict=True):
        sims = matrix @ q
        top = [i for i in np.argsort(-sims)[:k] if passages[i] not in relevant[prompt]]
        out[prompt] = [(passages[i], float(sims[i])) for i in top]
    return out


def shortlist(dev: list[recall_data.Example], lists: dict[str, list[tuple[str, float]]], logits: Any,
              cosine: dict[str, float]) -> dict[str, Any]:
    """The floor's view: each dev prompt's best `k` passages of the whole data by cosine, judged by the model.

    Negatives: each prompt's best-judged passage not labelled relevant to it (a prompt with no relevant passage
    reaches the floor with its best hit); positives: the labelled relevant pairs. Kept at 5 %: the share of
    positives above the score 5 % of those negatives reach; the same for the cosine on the same shortlists.
    """
    import torch

    best_wrong: dict[str, list[float]] = {"cosine": [], "model": []}
    for prompt, top in lists.items():
        if not top:
            continue
        pairs = [recall_data.Example("shortlist", "", "", prompt, passage, "", 0, "", "", "") for passage, _ in top]
        with torch.inference_mode():
            judged = logits(pairs, [c for _, c in top]).numpy()
        best_wrong["cosine"].append(max(c for _, c in top))
        best_wrong["model"].append(float(judged.max()))
    positives = [e for e in dev if e.label]
    with torch.inference_mode():
        pos_model = np.concatenate([logits(positives[i : i + 32]).numpy() for i in range(0, len(positives), 32)])
    pos_cosine = np.array([cosine[e.id] for e in positives])
    out: dict[str, Any] = {"prompts": len(best_wrong["model"]), "relevant pairs": len(positives)}
    for name, pos in (("cosine", pos_cosine), ("model", pos_model)):
        cut = np.quantile(np.array(best_wrong[name]), 0.95)
        out[f"kept@5% {name}"] = round(float((pos > cut).mean()), 4)
    return out


def evaluation_sets(embedder: embed.Embedder, load: Any, logits: Any, k: int = SHORTLIST) -> dict[str, Any]:
    """The issue's floor target on the preference vault: its 42 notes, the paraphrase queries (each names its
    note) and the unrelated prompts (minus those flagged `maybe_related`). Each prompt's best `k` notes by stock
    cosine are judged; an unrelated prompt injects when its best judged note passes, a paraphrase is kept when
    its own note passes (found among its `k`). The threshold lets 5 % of the unrelated prompts inject. The same
    for the cosine on the same notes: the bi-encoder's floor on this vault alone. `load()` puts the trained weights
    into the model once the stock cosines are computed (the cross-encoder is the same BERT, trained)."""
    import torch

    prefs = json.loads(PREFERENCES.read_text(encoding="utf-8"))
    notes = {n["id"]: f"{n['title']}\n\n{n['body']}" for n in prefs["notes"]}
    ids = sorted(notes)
    matrix = _rows(embedder.encode([notes[i] for i in ids]))
    unrelated = [p["text"] for p in json.loads(UNRELATED.read_text(encoding="utf-8"))["prompts"]
                 if not p.get("maybe_related")]  # fmt: skip
    queries = [(q["query"], q["target"]) for q in prefs["queries"]]

    def shortlists(prompts: list[str]) -> list[tuple[str, Any, list[int]]]:
        vectors = _rows(embedder.encode_query(prompts))
        return [(p, sims, [int(i) for i in np.argsort(-sims)[:k]]) for p, sims in zip(prompts, vectors @ matrix.T,
                                                                                      strict=True)]  # fmt: skip

    def judged(lists: list[tuple[str, Any, list[int]]]) -> list[dict[str, tuple[float, float]]]:
        out = []
        for prompt, sims, top in lists:
            pairs = [recall_data.Example("set", "", "", prompt, notes[ids[i]], "", 0, "", "", "") for i in top]
            with torch.inference_mode():
                z = logits(pairs, [float(sims[i]) for i in top]).numpy()
            out.append({ids[i]: (float(sims[i]), float(zi)) for i, zi in zip(top, z, strict=True)})
        return out

    negative_lists, positive_lists = shortlists(unrelated), shortlists([q for q, _ in queries])
    load()
    negatives, positives = judged(negative_lists), judged(positive_lists)
    result: dict[str, Any] = {"notes": len(ids), "paraphrases": len(queries), "unrelated prompts": len(unrelated)}
    for which, name in ((0, "cosine"), (1, "model")):
        cut = float(np.quantile([max(v[which] for v in d.values()) for d in negatives], 0.95))
        kept = [(d.get(target) or (-np.inf, -np.inf))[which] > cut for d, (_, target) in
                zip(positives, queries, strict=True)]  # fmt: skip
        result[f"paraphrases kept at 5 % unrelated injecting, {name}"] = round(float(np.mean(kept)), 4)
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--lr", type=float, default=6e-5)
    ap.add_argument("--max-len", type=int, default=160)
    ap.add_argument("--plain", action="store_true", help="no cosine term: the cross-encoder alone")
    ap.add_argument("--timing", action="store_true", help="only time the forward pass")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--save", type=Path, help="keep the trained model here (torch state, about 90 MB; not shipped)")
    ap.add_argument("--sets", type=Path, help="with a --save'd model: score the preference paraphrases against the "
                    "unrelated prompts (evaluation sets: read once, for a model already chosen on dev)")  # fmt: skip
    args = ap.parse_args(argv)
    import torch

    random.seed(SEED)
    np.random.seed(SEED)
    torch.manual_seed(SEED)
    embedder = embed.load(embed.DEFAULT, threads=2)
    tokenizer, bert = embedder.model.tokenizer, embedder.model[0].auto_model
    if args.timing:
        timing(bert.eval())
        return 0
    train, dev = list(recall_data.examples("train")), list(recall_data.examples("dev"))

    def cosines(data: list[recall_data.Example]) -> np.ndarray:
        q = _rows(embedder.encode_query([e.prompt for e in data]))
        p = _rows(embedder.encode([e.passage for e in data]))
        return (q * p).sum(axis=1)

    cosine = {e.id: c for part in (train, dev) for e, c in zip(part, cosines(part).tolist(), strict=True)}
    settings = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
    results: dict[str, Any] = {"settings": settings, "train pairs": len(train),
                               "dev pairs": len(dev),
                               "cosine, dev": separation(np.array([cosine[e.id] for e in dev]), dev)}  # fmt: skip
    print("cosine (stock + query map), dev:", results["cosine, dev"], flush=True)
    lists = stock_shortlists(dev, embedder)
    head = torch.nn.Linear(bert.config.hidden_size, 1)
    torch.nn.init.zeros_(head.weight)
    torch.nn.init.zeros_(head.bias)
    scale, shift = torch.nn.Parameter(torch.tensor(8.0)), torch.nn.Parameter(torch.tensor(-3.2))

    def logits(batch: list[recall_data.Example], cosines: list[float] | None = None) -> Any:
        enc = tokenizer([e.prompt for e in batch], [e.passage for e in batch], truncation="longest_first",
                        max_length=args.max_len, padding=True, return_tensors="pt")  # fmt: skip
        out = bert(**enc).last_hidden_state
        mask = enc["attention_mask"].unsqueeze(-1).float()
        z = head((out * mask).sum(1) / mask.sum(1)).squeeze(-1)
        if not args.plain:
            z = z + scale * torch.tensor(cosines or [cosine[e.id] for e in batch]) + shift
        return z

    groups = [{"params": bert.parameters(), "lr": args.lr}, {"params": [*head.parameters(), scale, shift], "lr": 1e-3}]
    if args.sets:

        def load() -> None:
            state = torch.load(args.sets, weights_only=True)
            bert.load_state_dict(state["bert"])
            head.load_state_dict(state["head"])
            scale.data, shift.data = state["scale"], state["shift"]
            bert.eval()

        results["evaluation sets"] = evaluation_sets(embedder, load, logits)
        print(json.dumps(results["evaluation sets"], indent=1))
        if args.json:
            args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
        return 0
    opt = torch.optim.AdamW(groups, weight_decay=0.01)
    steps = args.epochs * -(-len(train) // BATCH)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / (0.1 * steps)) * (steps - s) / steps)
    loss_of = torch.nn.BCEWithLogitsLoss()
    started = time.perf_counter()
    for epoch in range(args.epochs):
        random.shuffle(train)
        bert.train()
        for i in range(0, len(train), BATCH):
            batch = train[i : i + BATCH]
            loss = loss_of(logits(batch), torch.tensor([float(e.label) for e in batch]))
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        bert.eval()
        with torch.inference_mode():
            score = np.concatenate([logits(dev[i : i + 32]).numpy() for i in range(0, len(dev), 32)])
        results[f"epoch {epoch + 1}, dev"] = separation(score, dev)
        print(f"epoch {epoch + 1} ({time.perf_counter() - started:.0f} s), dev:", results[f"epoch {epoch + 1}, dev"],
              flush=True)  # fmt: skip
        results[f"epoch {epoch + 1}, dev, as the floor sees it"] = shortlist(dev, lists, logits, cosine)
        print("  as the floor sees it:", results[f"epoch {epoch + 1}, dev, as the floor sees it"], flush=True)
    if args.save:
        torch.save({"bert": bert.state_dict(), "head": head.state_dict(), "scale": scale.data, "shift": shift.data},
                   args.save)  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
