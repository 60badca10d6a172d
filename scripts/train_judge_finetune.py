"""Fine-tune the packaged MiniLM itself as the statement judge's classifier; measured on dev, not shipped.

    python scripts/train_judge_finetune.py --corpus DIR [--mode lora|top] [--rank R] [--top N] [--pair]
                                           [--messages W] [--epochs N] [--lr X] [--head-lr X] [--save FILE.npz]
                                           [--json FILE] [--timing]

The classifier: the packaged all-MiniLM-L6-v2 (its tokenizer and BERT, loaded as the product loads it,
`embed.load`), whose mean-pooled, L2-normalised output of the unit (`judge.vector_text`, at most --max-len
tokens) goes with the frozen stock vector of the agent message the unit answers (`judge.CONTEXT_CHARS`, from
train_judge's vector cache; zeros without one) and the cue features (0/1, train_judge's CUE_PREFIXES) into a
linear head over the six kinds. `--pair` reads the unit as "[CLS] context tail [SEP] unit [SEP]" (the context's
last tokens, --pair-len in all) and pools the unit's tokens only. Trained: with `--mode lora` a rank-R delta of
every Linear of the transformer (train_adapter.add_lora), with `--mode top` the top N layers in full; the head
always. The head starts at the weighted multinomial LR (train_judge.fit, the vector model's L2) over the model's
own frozen features ("epoch 0"), so training starts from the frozen-vector judge.

Data, labels and weights are train_judge's own (its functions are imported): the TRAIN split's units + the
hand-written sentences (+ the hand-written messages at weight --messages), each weighted by
train_judge.example_weights (statement weight, late files, messages; hard negatives 2×, pasted ones left out).
Loss: the weighted cross-entropy (mean over the batch by weight) + the head's L2 as train_judge.fit puts it.
Every epoch is scored on DEV (average precision of P(statement) = 1 − P(none) as train_judge computes it,
alone and blended in log-probability with the lexical model refitted with train_judge's chosen settings); the
best epoch is kept. The TEST split is never read. Deterministic on CPU: fixed seed, --threads torch threads.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

import numpy as np  # noqa: E402
import train_judge as tj  # noqa: E402
from scipy import sparse  # noqa: E402

from memvault.index import embed  # noqa: E402
from memvault.reflect.mine import judge  # noqa: E402

KINDS = {k: i for i, k in enumerate(judge.KINDS)}
BLEND_GRID = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def lexical_settings(messages: float) -> dict[str, float]:
    """train_judge's chosen lexical settings on this corpus (its dev grid, reproduced by its own run)."""
    if messages:
        return {"dim": 4096, "l2": 10.0, "pos": 1.0, "late": 0.0, "msg": 0.3}
    return {"dim": 4096, "l2": 1.0, "pos": 1.0, "late": 0.0, "msg": 1.0}


def tokenized(examples: list[dict[str, Any]], tok: Any, pair: bool, max_len: int, pair_len: int) -> list[tuple]:
    """(input ids, token types, pooling mask) per example."""
    out = []
    cls, sep = tok.cls_token_id, tok.sep_token_id
    for e in examples:
        ids = tok(judge.vector_text(e["unit"]), add_special_tokens=False)["input_ids"][: max_len - 2]
        if not pair:
            full = [cls, *ids, sep]
            out.append((full, [0] * len(full), [1] * len(full)))
            continue
        room = pair_len - len(ids) - 3
        ctx = tok(e["unit"].context, add_special_tokens=False)["input_ids"] if e["unit"].context else []
        ctx = ctx[-room:] if room > 0 and ctx else []
        full = [cls, *ctx, sep, *ids, sep]
        types = [0] * (len(ctx) + 2) + [1] * (len(ids) + 1)
        pool = [0] * (len(ctx) + 2) + [1] * (len(ids) + 1)
        out.append((full, types, pool))
    return out


def collate(items: list[tuple]) -> dict[str, Any]:
    import torch

    n = max(len(i[0]) for i in items)
    ids = torch.zeros(len(items), n, dtype=torch.long)
    types = torch.zeros(len(items), n, dtype=torch.long)
    att = torch.zeros(len(items), n, dtype=torch.long)
    pool = torch.zeros(len(items), n)
    for r, (a, t, p) in enumerate(items):
        ids[r, : len(a)] = torch.tensor(a)
        types[r, : len(a)] = torch.tensor(t)
        att[r, : len(a)] = 1
        pool[r, : len(a)] = torch.tensor(p, dtype=torch.float)
    return {"input_ids": ids, "token_type_ids": types, "attention_mask": att, "pool": pool}


def pooled(bert: Any, batch: dict[str, Any]) -> Any:
    import torch

    hidden = bert(input_ids=batch["input_ids"], token_type_ids=batch["token_type_ids"],
                  attention_mask=batch["attention_mask"]).last_hidden_state  # fmt: skip
    m = batch["pool"].unsqueeze(-1)
    v = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(v, dim=1)


def encode_all(bert: Any, toks: list[tuple], batch: int = 64) -> np.ndarray:
    import torch

    order = sorted(range(len(toks)), key=lambda i: len(toks[i][0]))
    out = np.zeros((len(toks), 384), dtype=np.float32)
    with torch.no_grad():
        for s in range(0, len(order), batch):
            chunk = order[s : s + batch]
            out[chunk] = pooled(bert, collate([toks[i] for i in chunk])).numpy()
    return out


def scores(z: np.ndarray, positive: np.ndarray) -> float:
    return tj.average_precision(tj.statement_p(tj.from_logs(z, 1.0)), positive)


def blended(z: np.ndarray, lex: np.ndarray, positive: np.ndarray, grid: tuple = BLEND_GRID) -> tuple[float, float]:
    """(best dev AP, its blend) over `grid`: blend · z + (1 − blend) · lexical, as train_judge blends."""
    best = max((scores(b * z + (1 - b) * lex, positive), b) for b in grid)
    return best


def operating(z: np.ndarray, y: np.ndarray, positive: np.ndarray, must: np.ndarray) -> dict[str, Any]:
    """At the temperature of least dev log loss (train_judge.calibrate's), the lowest P(statement) where dev
    precision is still >= 0.80 / >= 0.60 (train_judge.threshold, support 5), and the units, statements and
    MUST statements at or above it."""
    temps = [round(0.5 + 0.05 * i, 2) for i in range(51)]
    nll = [-np.log(tj.from_logs(z, t)[np.arange(len(y)), y] + 1e-12).mean() for t in temps]
    t = temps[int(np.argmin(nll))]
    score = tj.statement_p(tj.from_logs(z, t))
    out: dict[str, Any] = {"temperature": t, "statements": int(positive.sum()), "must": int(must.sum())}
    for target in (0.8, 0.6):
        cut = tj.threshold(score, positive, target, tj.MIN_SUPPORT["medium"])
        sel = score >= cut if cut < 1.0 else np.zeros(len(score), bool)
        out[f"p>={target}"] = {"threshold": round(cut, 4), "units": int(sel.sum()), "right": int(positive[sel].sum()),
                               "must": int(must[sel].sum())}  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--vector-cache", type=Path, help="train_judge's vector cache (default: in the export)")
    ap.add_argument("--mode", choices=("lora", "top"), default="lora")
    ap.add_argument("--rank", type=int, default=8, help="lora: the delta's rank")
    ap.add_argument("--top", type=int, default=2, help="top: train this many top layers in full")
    ap.add_argument("--pair", action="store_true", help='read "context [SEP] unit" as one input')
    ap.add_argument("--messages", type=float, default=0.0, help="weight of the hand-written messages (0: left out)")
    ap.add_argument("--statement-weight", type=float, default=1.0)
    ap.add_argument("--l2", type=float, default=3.0, help="the head's L2 (train_judge's chosen vector L2)")
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=2e-4, help="the encoder's learning rate (lora 2e-4, top 3e-5)")
    ap.add_argument("--head-lr", type=float, default=1e-3)
    ap.add_argument("--max-len", type=int, default=64)
    ap.add_argument("--pair-len", type=int, default=96)
    ap.add_argument("--seed", type=int, default=28)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--save", type=Path, help="the best epoch's trained weights (.npz, float16)")
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--timing", action="store_true", help="time inference per sentence on one thread at the end")
    args = ap.parse_args(argv)

    import torch
    from train_adapter import add_lora

    started = time.perf_counter()
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)

    # data: exactly train_judge's units, labels and weights
    rng = random.Random(args.seed)  # noqa: S311
    train = tj.corpus_examples(args.corpus, "train", None) + tj.hand_examples()
    train += tj.message_examples() if args.messages else []  # as train_judge builds (and shuffles) its list
    dev = tj.corpus_examples(args.corpus, "dev", None)
    rng.shuffle(train)
    y_train = np.array([KINDS[e["kind"]] for e in train])
    y_dev = np.array([KINDS[e["kind"]] for e in dev])
    pos_dev = y_dev != KINDS["none"]
    must_dev = np.array([e["tier"] == "MUST" for e in dev])

    # the lexical model to blend with: train_judge's chosen settings, refitted here on its own data
    lx = lexical_settings(args.messages)
    w_lex = tj.example_weights(train, lx["pos"], lx["late"], lx["msg"])
    wt, b = tj.fit(tj.matrix(train, int(lx["dim"])), y_train, w_lex, lx["l2"])
    lex_dev = tj.log_probs(tj.matrix(dev, int(lx["dim"])), wt, b)
    ap_lex = scores(lex_dev, pos_dev)

    # the fine-tune's examples: weight 0 (late files, messages when not used) left out
    w_all = tj.example_weights(train, args.statement_weight, 0.0, args.messages)
    keep = w_all > 0
    ft_train = [e for e, k in zip(train, keep, strict=True) if k]
    y = y_train[keep]
    w = w_all[keep]
    print(f"train units {len(ft_train)} ({int((y != KINDS['none']).sum())} statements; messages weight "
          f"{args.messages}), dev units {len(dev)} ({int(pos_dev.sum())} statements, {int(must_dev.sum())} MUST); "
          f"lexical (refit) dev AP {ap_lex:.4f}", flush=True)  # fmt: skip

    # side features: frozen stock context vector + cues (train_judge.dense without the unit's vector)
    vecs = tj.embedded(train + dev, args.vector_cache or args.corpus / "judge-vectors.npz", print)
    assert vecs is not None
    cues = sorted({f for e in train for f in judge.features(e["unit"]) if f.split(":")[0] in tj.CUE_PREFIXES})
    full_train, full_dev = tj.dense(ft_train, vecs, cues), tj.dense(dev, vecs, cues)
    side_train, side_dev = full_train[:, 384:].astype(np.float32), full_dev[:, 384:].astype(np.float32)

    # the baseline: train_judge's vector model on the cached stock vectors, same data and weights (fitted, as
    # train_judge fits it, over every train row: the zero-weight ones count in its L2's 1/n)
    l2_kept = args.l2 * len(ft_train) / len(train)  # the same L2 per kept row
    wl = tj.example_weights(train, args.statement_weight, 0.0, lx["msg"] if args.messages else 1.0)
    bw, bb = tj.fit(sparse.csr_matrix(tj.dense(train, vecs, cues)), y_train, wl, args.l2)
    base_dev = tj.log_probs(full_dev, bw, bb)
    ap_base = scores(base_dev, pos_dev)
    ap_base_bl, base_blend = blended(base_dev, lex_dev, pos_dev, tj.BLENDS)
    ap_base_fine, base_blend_fine = blended(base_dev, lex_dev, pos_dev)
    print(f"baseline frozen vectors (cache): dev AP {ap_base:.4f}; blended with lexical {ap_base_bl:.4f} "
          f"(blend {base_blend}; finer grid {ap_base_fine:.4f} at {base_blend_fine})", flush=True)  # fmt: skip

    # the model
    st = embed.load(threads=args.threads).model
    bert = st[0].auto_model
    tok = st.tokenizer
    t_train = tokenized(ft_train, tok, args.pair, args.max_len, args.pair_len)
    t_dev = tokenized(dev, tok, args.pair, args.max_len, args.pair_len)
    for p in bert.parameters():
        p.requires_grad = False
    if args.mode == "lora":
        add_lora(st, args.rank, args.seed)
    else:
        for layer in bert.encoder.layer[-args.top :]:
            for p in layer.parameters():
                p.requires_grad = True
    trained = [p for p in bert.parameters() if p.requires_grad]
    names = [n for n, p in bert.named_parameters() if p.requires_grad]
    print(f"trainable encoder parameters: {sum(p.numel() for p in trained):,} ({len(names)} tensors)", flush=True)

    # epoch 0: the head = weighted LR over the model's own frozen features
    bert.eval()
    t0 = time.perf_counter()
    u_train, u_dev = encode_all(bert, t_train), encode_all(bert, t_dev)
    hw, hb = tj.fit(sparse.csr_matrix(np.hstack([u_train, side_train])), y, w, l2_kept)
    z0 = tj.log_probs(np.hstack([u_dev, side_dev]), hw, hb)
    ap0 = scores(z0, pos_dev)
    bl0 = blended(z0, lex_dev, pos_dev)
    print(f"epoch 0 (frozen, own features, head fit in {time.perf_counter() - t0:.0f} s): dev AP {ap0:.4f}; "
          f"blended {bl0[0]:.4f} at {bl0[1]}", flush=True)  # fmt: skip

    head = torch.nn.Linear(384 + side_train.shape[1], len(KINDS))
    with torch.no_grad():
        head.weight.copy_(torch.tensor(hw.T, dtype=torch.float32))
        head.bias.copy_(torch.tensor(hb, dtype=torch.float32))
    n = len(ft_train)
    side_t = torch.tensor(side_train)
    side_d = torch.tensor(side_dev)
    y_t = torch.tensor(y)
    w_t = torch.tensor(w, dtype=torch.float32)
    groups = [{"params": trained, "lr": args.lr}, {"params": head.parameters(), "lr": args.head_lr}]
    optimiser = torch.optim.AdamW(groups, weight_decay=0.0)
    steps = args.epochs * ((n + args.batch - 1) // args.batch)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimiser, lambda s: max(0.0, 1 - s / steps))
    gen = torch.Generator().manual_seed(args.seed)

    def dev_logs() -> np.ndarray:
        bert.eval()
        with torch.no_grad():
            u = torch.tensor(encode_all(bert, t_dev))
            z = torch.log_softmax(head(torch.cat([u, side_d], 1)), 1).numpy()
        return z.astype(np.float64)

    def state() -> dict[str, np.ndarray]:
        out = {"head.weight": head.weight.detach().numpy().copy(), "head.bias": head.bias.detach().numpy().copy()}
        for name, p in bert.named_parameters():
            if p.requires_grad:
                out[name] = p.detach().numpy().copy()
        return out

    history = [{"epoch": 0, "dev_ap": round(ap0, 4), "blended_ap": round(bl0[0], 4), "blend": bl0[1], "seconds": 0}]
    best = {"ap": ap0, "epoch": 0, "z": z0, "state": state()}
    for epoch in range(1, args.epochs + 1):
        bert.train()
        t0 = time.perf_counter()
        order = torch.randperm(n, generator=gen).tolist()
        total = 0.0
        for s in range(0, n, args.batch):
            idx = order[s : s + args.batch]
            u = pooled(bert, collate([t_train[i] for i in idx]))
            logits = head(torch.cat([u, side_t[idx]], 1))
            ce = torch.nn.functional.cross_entropy(logits, y_t[idx], reduction="none")
            loss = (ce * w_t[idx]).sum() / w_t[idx].sum() + 0.5 * l2_kept * (head.weight**2).sum() / n
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            schedule.step()
            total += loss.item() * len(idx)
        took = time.perf_counter() - t0
        z = dev_logs()
        a = scores(z, pos_dev)
        bl = blended(z, lex_dev, pos_dev)
        history.append({"epoch": epoch, "train_loss": round(total / n, 4), "dev_ap": round(a, 4),
                        "blended_ap": round(bl[0], 4), "blend": bl[1], "seconds": round(took, 1)})  # fmt: skip
        print(f"epoch {epoch}: train loss {total / n:.4f}, {took:.0f} s; dev AP {a:.4f}; blended {bl[0]:.4f} at "
              f"{bl[1]}", flush=True)  # fmt: skip
        if a > best["ap"] + 1e-9:
            best = {"ap": a, "epoch": epoch, "z": z, "state": state()}

    # the best epoch (by dev AP of the fine-tune alone)
    z = best["z"]
    bl_coarse = blended(z, lex_dev, pos_dev, tj.BLENDS)
    bl_fine = blended(z, lex_dev, pos_dev)
    result: dict[str, Any] = {
        "argv": sys.argv[1:],
        "train_units": n,
        "dev_units": len(dev),
        "lexical_dev_ap": round(ap_lex, 4),
        "baseline_vectors_dev_ap": round(ap_base, 4),
        "baseline_blended_dev_ap": round(ap_base_bl, 4),
        "baseline_blend": base_blend,
        "baseline_blended_fine_dev_ap": round(ap_base_fine, 4),
        "history": history,
        "best_epoch": best["epoch"],
        "best_dev_ap": round(best["ap"], 4),
        "best_blended_dev_ap": round(bl_coarse[0], 4),
        "best_blend": bl_coarse[1],
        "best_blended_fine_dev_ap": round(bl_fine[0], 4),
        "best_blend_fine": bl_fine[1],
        "operating": {
            "baseline_blended": operating(base_blend * base_dev + (1 - base_blend) * lex_dev, y_dev, pos_dev, must_dev),
            "finetune": operating(z, y_dev, pos_dev, must_dev),
            "finetune_blended": operating(bl_fine[1] * z + (1 - bl_fine[1]) * lex_dev, y_dev, pos_dev, must_dev),
        },
    }
    if args.save:
        saved = {k: v.astype(np.float16) for k, v in best["state"].items()}
        np.savez_compressed(args.save, **saved)
        result["saved"] = str(args.save)
        result["saved_bytes"] = args.save.stat().st_size
        result["saved_parameters"] = int(sum(v.size for v in saved.values()))
        print(f"wrote {args.save} ({args.save.stat().st_size:,} bytes, {result['saved_parameters']:,} parameters)")

    if args.timing:  # one thread; the deltas merged into the weights (the stock model's cost) plus the head
        torch.set_num_threads(1)
        with torch.no_grad():
            sd = best["state"]
            for name, p in bert.named_parameters():
                if name in sd:
                    p.copy_(torch.tensor(sd[name]))
            texts = [judge.vector_text(e["unit"]) for e in dev[:256]]
            ctx = [e["unit"].context for e in dev[:256]]
            probe = [{"unit": e["unit"]} for e in dev[:256]]

            def run(chunk: list[int]) -> None:
                toks = tokenized([probe[i] for i in chunk], tok, args.pair, args.max_len, args.pair_len)
                u = pooled(bert, collate(toks))
                head(torch.cat([u, side_d[chunk]], 1)).softmax(1)

            bert.eval()
            run(list(range(32)))  # warm
            t0 = time.perf_counter()
            for s in range(0, 256, 32):
                run(list(range(s, s + 32)))
            batch_ms = (time.perf_counter() - t0) * 1000 / 256
            t0 = time.perf_counter()
            for i in range(128):
                run([i])
            single_ms = (time.perf_counter() - t0) * 1000 / 128
        result["inference_ms_per_sentence_1thread"] = {"batch32": round(batch_ms, 2), "single": round(single_ms, 2),
                                                       "mean_chars": round(float(np.mean([len(t) for t in texts])), 1),
                                                       "with_context": sum(bool(c) for c in ctx)}  # fmt: skip
        print(f"inference, one thread: {batch_ms:.2f} ms/sentence in batches of 32, {single_ms:.2f} ms single",
              flush=True)  # fmt: skip
    result["seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps({k: v for k, v in result.items() if k != "history"}, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
