"""Evaluate recall's relevance floor: the learned judge beside the hand-set floor of before, on the evaluation sets.

    python scripts/calibrate_floor.py [--locomo PATH] [--cache DIR] [--json OUT] [--rows SAVED.json]
                                      [--training-rows ROWS.json]

Nothing is fitted here: the judge (memvault/recall/judge.json) is trained and its floor chosen by
scripts/train_relevance.py on the team's training data; these sets are evaluation only.
Positives are questions with a known answer in a vault: LoCoMo's questions (categories 1–4) against
their conversation, as one note per turn and as one note per session, and the preference paraphrase
set against its notes. Negatives are scripts/data/unrelated_prompts.json (real prompts from public
Claude Code transcripts and written ones, minus those flagged `maybe_related`) against every vault:
the two LoCoMo vaults, the preference notes and examples/vault. Every prompt runs through the real
recall (real index, real model) with the floor off, hybrid and keyword-only, and each hit's signals
(`search.signals_of`) are kept; then each floor is applied to them:
  - "hand floor": cosine + 0.2 × coverage ≥ 0.435, keyword-only coverage ≥ 0.455 with 2+ shared words
    (fitted on LoCoMo dev conversations by the earlier version of this script: no longer allowed);
  - "judge": P(relevant) ≥ the judge's floor probability (judge.json's, chosen on the training data's dev
    split by scripts/train_relevance.py; `relevance.verdict`), whichever the config's default is.
Reported: the share of unrelated prompts injecting anything (per vault and pooled; "hook": as the hook
sees it, skipping prompts shorter than `recall.min_prompt_chars`), R@10 of the positives with each
floor (LoCoMo per category), and the judge's time per query (p50/p95 over the hits of every query).
With --training-rows (saved by `train_relevance.py --rows`) the training data's train/dev/test table too.
The old LoCoMo dev/held-out conversation split and the unrelated prompts' `part` are kept as columns.
LoCoMo is read from --locomo, else from $MEMVAULT_BENCH_DATA/locomo/locomo10.json; without it that
part is skipped with one line.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_data
import bench_recall as br  # the corpora, index building and scoring are shared

from memvault import config
from memvault.index import core as ix
from memvault.index import embed, sync
from memvault.recall import judge, relevance, search
from memvault.store import disk

HERE = Path(__file__).resolve().parent
UNRELATED = HERE / "data" / "unrelated_prompts.json"
EXAMPLE_VAULT = HERE.parent / "examples" / "vault"
SEED = 20260412
HELDOUT_SHARE = 0.3
K_POSITIVE = 10  # LoCoMo R@10, as in bench_recall.py
K_NEGATIVE = 5  # the hook injects recall.k = 5 entries at most
POOLED = "all four, pooled"


@dataclass
class Hit:
    signals: dict[str, Any]  # `search.signals_of(hit)._asdict()`
    keys: frozenset[str]  # evidence keys this hit holds (positives), empty for negatives


@dataclass
class Asked:
    vault: str
    kind: str  # "positive" or "negative"
    part: str  # "dev" or "heldout"
    mode: str  # "hybrid" or "keyword"
    targets: frozenset[str]
    hits: list[Hit] = field(default_factory=list)
    category: int = 0
    source: str = ""
    chars: int = 0  # the prompt's length: the hook skips prompts shorter than recall.min_prompt_chars


# ---- collecting --------------------------------------------------------------------------------------------


def ask(
    index: ix.Index, corpus: br.Corpus | None, text: str, vector: bytes | None, model: str, group: str | None, k: int
) -> list[Hit]:
    # The floor off; each note's judged chunk (the better of its two) chosen by the judge's P, as the judge sees it.
    options = search.Options(k=k, group=group, budget_ms=60_000, min_probability=JUDGE.min_probability)
    embedder = (lambda _q, _t: (model, vector)) if vector is not None else None
    result = search.recall(index, text, options, embedder)
    out = []
    for h in result.hits:
        keys = corpus.keys.get(corpus.item(h), frozenset()) if corpus else frozenset()
        out.append(Hit(search.signals_of(h)._asdict(), keys))
    return out


def heldout_conversations(samples: list[dict[str, Any]]) -> set[str]:
    ids = sorted(s["sample_id"] for s in samples)
    return set(random.Random(SEED).sample(ids, round(len(ids) * HELDOUT_SHARE)))  # noqa: S311 (a fixed split)


def heldout_queries(count: int) -> set[int]:
    return set(random.Random(SEED).sample(range(count), round(count * HELDOUT_SHARE)))  # noqa: S311


def example_vault(work: Path, embedder: embed.Embedder, cache: Path | None) -> ix.Index:
    root = work / "example-vault"
    shutil.copytree(EXAMPLE_VAULT, root)
    db_dir = cache or work
    db_dir.mkdir(parents=True, exist_ok=True)
    index = ix.open_index(db_dir / "example-vault.sqlite3", rebuild=True)
    sync.sync(index, sync.Layout(root, "MemoryVault", disk.ignore_patterns(root)))
    sync.embed_pending(index, embedder, batch_notes=64)
    return index


def locomo_vaults(
    samples: list[dict[str, Any]], work: Path, embedder: embed.Embedder, cache: Path | None
) -> list[tuple[str, ix.Index, br.Corpus]]:
    """LoCoMo as one note per turn and as one note per session: (name, index, corpus) each."""
    out = []
    for section in ("turns", "sessions"):
        corpus = br.locomo(samples, section)
        built = br.build(corpus, work, embedder, cache, "")
        if corpus.unit == "chunk":
            br.chunk_keys(corpus, built.index)
        out.append((corpus.name, built.index, corpus))
    return out


def prompt_vectors(embedder: embed.Embedder, texts: list[str]) -> dict[str, bytes]:
    """Each prompt's query vector, as the warm service makes it: `encode_query`, through the shipped query adapter
    (the notes keep `encode`'s vectors), so the floors are evaluated on what the product sees."""
    return dict(zip(texts, embedder.encode_query(texts), strict=True))


def collect(args: argparse.Namespace, embedder: embed.Embedder, work: Path) -> list[Asked]:
    negatives = [p for p in json.loads(UNRELATED.read_text(encoding="utf-8"))["prompts"] if not p["maybe_related"]]
    vaults: list[tuple[str, ix.Index, br.Corpus | None]] = []
    positives: list[tuple[str, br.Corpus, list[tuple[br.Query, str]]]] = []
    found = bench_data.find(args.locomo, bench_data.LOCOMO, "--locomo")
    if found is not None:
        samples = json.loads(found.read_text(encoding="utf-8"))
        held = heldout_conversations(samples)
        print(f"LoCoMo held-out conversations: {', '.join(sorted(held))}")
        for name, index, corpus in locomo_vaults(samples, work, embedder, args.cache):
            vaults.append((name, index, corpus))
            asked = [(q, "heldout" if q.group in held else "dev") for q in corpus.queries if 1 <= q.category <= 4]
            positives.append((corpus.name, corpus, asked))
    else:
        print(bench_data.skipped("LoCoMo (locomo10.json)", bench_data.LOCOMO, "--locomo"), flush=True)
    prefs = br.preferences(br.PREFERENCES)
    built = br.build(prefs, work, embedder, args.cache, "")
    vaults.append((prefs.name, built.index, prefs))
    held_prefs = heldout_queries(len(prefs.queries))
    positives.append(
        (prefs.name, prefs, [(q, "heldout" if i in held_prefs else "dev") for i, q in enumerate(prefs.queries)])
    )
    vaults.append(("example-vault", example_vault(work, embedder, args.cache), None))

    texts = list(
        dict.fromkeys([q.text for _, _, asked in positives for q, _ in asked] + [p["text"] for p in negatives])
    )
    started = time.perf_counter()
    vectors = prompt_vectors(embedder, texts)
    print(f"embedded {len(texts)} prompts in {time.perf_counter() - started:.0f} s")
    out: list[Asked] = []
    for name, corpus, asked in positives:
        index = next(i for n, i, _ in vaults if n == name)
        for query, part in asked:
            for mode in ("hybrid", "keyword"):
                vector = vectors[query.text] if mode == "hybrid" else None
                hits = ask(index, corpus, query.text, vector, embedder.name, query.group, K_POSITIVE)
                targets, chars = frozenset(query.targets), len(query.text)
                out.append(Asked(name, "positive", part, mode, targets, hits, query.category, "", chars))
    for name, index, _ in vaults:
        for prompt in negatives:
            for mode in ("hybrid", "keyword"):
                vector = vectors[prompt["text"]] if mode == "hybrid" else None
                hits = ask(index, None, prompt["text"], vector, embedder.name, None, K_NEGATIVE)
                part, source, chars = prompt["part"], prompt["category"], len(prompt["text"])
                out.append(Asked(name, "negative", part, mode, frozenset(), hits, 0, source, chars))
        index.close()
    return out


# ---- the floors -------------------------------------------------------------------------------------------

HAND = relevance.Floor(relevance.MIN_RELEVANCE, min_probability=0.0)  # the hand-set constants are its defaults
_SHIPPED = judge.load()
# The judge at the floor it was shipped with (judge.json), whichever of the two the config's default is.
JUDGE = relevance.Floor(relevance.MIN_RELEVANCE, min_probability=_SHIPPED.floor if _SHIPPED else 0.5)
FLOORS = {"hand floor": HAND, "judge": JUDGE}


def passes(hit: Hit, floor: relevance.Floor, mode: str) -> bool:
    signals = relevance.Signals(**hit.signals)
    if mode == "keyword":
        signals = signals._replace(cosine=None)
    return relevance.verdict(signals, floor, hand=floor is HAND)[0]


def recall_at(rows: Iterable[Asked], floor: relevance.Floor | None, k: int = K_POSITIVE) -> float:
    """Mean evidence recall@k over positive rows, counting only hits that pass `floor` (None: no floor)."""
    values = []
    for row in rows:
        found: set[str] = set()
        for hit in row.hits[:k]:
            if floor is None or passes(hit, floor, row.mode):
                found |= hit.keys & row.targets
        values.append(len(found) / len(row.targets))
    return sum(values) / len(values) if values else float("nan")


def injecting(rows: Iterable[Asked], floor: relevance.Floor | None, min_chars: int = 0) -> float:
    """The share of negative rows where at least one hit passes `floor` (None: any hit at all). With
    `min_chars`, as the hook sees it: a prompt shorter than that is skipped and injects nothing."""
    flags = [r.chars >= min_chars and any(floor is None or passes(h, floor, r.mode) for h in r.hits) for r in rows]
    return sum(flags) / len(flags) if flags else float("nan")


def select(rows: list[Asked], **what: str) -> list[Asked]:
    return [r for r in rows if all(getattr(r, key) == value for key, value in what.items())]


def timing(rows: list[Asked]) -> dict[str, float]:
    """The judge's time per query: `relevance.verdict` over every hit of a query (p50, p95, in ms)."""
    times = []
    for row in rows:
        signals = [relevance.Signals(**h.signals) for h in row.hits]
        started = time.perf_counter()
        for s in signals:
            relevance.verdict(s, JUDGE)
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return {"p50_ms": times[len(times) // 2], "p95_ms": times[int(len(times) * 0.95)], "queries": len(times)}


# ---- report ------------------------------------------------------------------------------------------------


def report(rows: list[Asked]) -> dict[str, Any]:
    out: dict[str, Any] = {"judge_floor": JUDGE.min_probability, "negatives": {}, "positives": {}}
    print(f"\nfloors: hand = cosine + {HAND.coverage_weight:g} × coverage ≥ {HAND.min_relevance:.3f} (keyword-only: "
          f"coverage ≥ {HAND.min_coverage:.3f}, {HAND.min_shared_words}+ shared words); "
          f"judge = P(relevant) ≥ {JUDGE.min_probability:.2f}")  # fmt: skip
    min_chars = config.RecallSettings().min_prompt_chars
    negatives = []
    for name in [*sorted({r.vault for r in rows}), POOLED]:
        for mode in ("hybrid", "keyword"):
            sel = [r for r in select(rows, kind="negative", mode=mode) if name in (POOLED, r.vault)]
            rates = {"none": injecting(sel, None), "n": len(sel)}
            for label, floor in FLOORS.items():
                rates[label] = injecting(sel, floor)
                rates[f"{label}, hook"] = injecting(sel, floor, min_chars)
            out["negatives"][f"{name}/{mode}"] = rates
            keys = ("none", "hand floor", "hand floor, hook", "judge", "judge, hook")
            negatives.append([name, mode, *(f"{rates[key]:.3f}" for key in keys), str(len(sel))])
    br.table(
        f"unrelated prompts that inject anything (share of prompts; the hook skips prompts under {min_chars} chars)",
        ["vault", "mode", "no floor", "hand floor", "hand, hook", "judge", "judge, hook", "n"],
        negatives,
    )
    cats = {0: "all", 1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
    lines = []
    for name in sorted({r.vault for r in rows if r.kind == "positive"}):
        for mode in ("hybrid", "keyword"):
            for part in ("dev", "heldout", "all"):
                sel = [r for r in select(rows, kind="positive", vault=name, mode=mode) if part in ("all", r.part)]
                per = {c: [r for r in sel if c == 0 or r.category == c] for c in cats} if name != "preference" else {
                    0: sel}  # fmt: skip
                cells = {c: (recall_at(v, None), recall_at(v, HAND), recall_at(v, JUDGE)) for c, v in per.items()}
                out["positives"][f"{name}/{mode}/{part}"] = {
                    cats[c]: {"none": a, "hand floor": b, "judge": j} for c, (a, b, j) in cells.items()
                }
                nan = (float("nan"),) * 3
                shown = [cells.get(c, nan) for c in cats]
                lines.append([name, mode, part, str(len(sel)), *(f"{a:.3f} / {b:.3f} / {j:.3f}" for a, b, j in shown)])
    br.table("questions with an answer: R@10 without floor / hand floor / judge",
             ["vault", "mode", "part", "n", *cats.values()], lines)  # fmt: skip
    out["judge_time"] = timing(rows)
    t = out["judge_time"]
    print(f"\nthe judge's time per query (verdicts of every hit, {t['queries']} queries): "
          f"p50 {t['p50_ms']:.3f} ms, p95 {t['p95_ms']:.3f} ms")  # fmt: skip
    return out


def load_row(raw: dict[str, Any]) -> Asked:
    hits = [Hit(h["signals"], frozenset(h["keys"])) for h in raw["hits"]]
    return Asked(**{**raw, "targets": frozenset(raw["targets"]), "hits": hits})


def training_table(path: Path) -> list[dict[str, Any]]:
    """The training data's train/dev/test figures of the hand floor and the judge (train_relevance.py's table)."""
    import train_relevance as tr

    raw = json.loads(path.read_text(encoding="utf-8"))
    rows = {s: [tr.Row(**r) for r in got] for s, got in raw.items()}
    shipped = judge.load()
    if shipped is None:
        raise SystemExit("the judge's weights cannot be read")
    figures = tr.table(rows, shipped)
    tr.show(figures)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locomo", type=Path, help="locomo10.json (default: $MEMVAULT_BENCH_DATA/locomo/)")
    parser.add_argument("--cache", type=Path, help="keep the index databases here and reuse them")
    parser.add_argument("--json", type=Path, help="write every number (and every hit's signals) to this file")
    parser.add_argument("--rows", type=Path, help="reuse the signals saved by an earlier --json run (no recall)")
    parser.add_argument("--training-rows", type=Path, help="also the training data's table (train_relevance --rows)")
    parser.add_argument("--model", default=embed.DEFAULT, help="the embedding model (as embedding.model: a folder)")
    args = parser.parse_args(argv)
    if args.rows:
        saved = json.loads(args.rows.read_text(encoding="utf-8"))["rows"]
        rows = [load_row(r) for r in saved]
    else:
        embedder = embed.load(args.model)
        with tempfile.TemporaryDirectory(prefix="memvault-floor-") as tmp:
            rows = collect(args, embedder, Path(tmp))
    out = report(rows)
    if args.training_rows:
        out["training"] = training_table(args.training_rows)
    if args.json:
        out["rows"] = [
            {**r.__dict__, "targets": sorted(r.targets),
             "hits": [{"signals": h.signals, "keys": sorted(h.keys)} for h in r.hits]} for r in rows
        ]  # fmt: skip
        args.json.write_text(json.dumps(out), encoding="utf-8")
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
