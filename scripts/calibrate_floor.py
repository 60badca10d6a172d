"""Calibrate recall's relevance floor: which raw signals separate prompts a vault can answer from unrelated ones.

    python scripts/calibrate_floor.py [--locomo PATH] [--cache DIR] [--json OUT] [--max-injecting 0.05]

Positives are questions with a known answer in a vault: LoCoMo's questions (categories 1–4) against
their conversation, as one note per turn and as one note per session, and the preference paraphrase
set against its notes. Negatives are scripts/data/unrelated_prompts.json (real prompts from public
Claude Code transcripts and written ones, minus those flagged `maybe_related`) against every vault:
the two LoCoMo vaults, the preference notes and examples/vault. Every prompt runs through the real
recall (real index, real model) with the floor off, and each hit's raw signals are kept: cosine,
IDF-weighted keyword coverage, exact identifier.

The floor is fitted on the dev parts only (LoCoMo: seven of the ten conversations; the preference
queries and the unrelated prompts: their seeded 70 % dev split), then reported on dev and held-out:
  - hybrid recall: relevance = cosine + β × coverage ≥ τ. For every β on a grid, τ is the lowest
    value that keeps the share of dev unrelated prompts injecting anything (every prompt against
    every vault, pooled) at or below --max-injecting; the β whose τ keeps the most LoCoMo evidence
    (R@10) wins;
  - keyword-only recall (service down): coverage ≥ κ, the lowest κ meeting the same bound, or, where
    none does, the lowest κ within half a point of the lowest rate any κ reaches.
The chosen values are the defaults of `recall.min_relevance`, `recall.coverage_weight` and
`recall.min_coverage` (memvault/config.py). LoCoMo is read from --locomo, else from
$MEMVAULT_BENCH_DATA/locomo/locomo10.json; without it that part is skipped with one line.
"""

from __future__ import annotations

import argparse
import json
import math
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

from memvault.index import core as ix
from memvault.index import embed, sync
from memvault.recall import relevance, search
from memvault.store import disk

HERE = Path(__file__).resolve().parent
UNRELATED = HERE / "data" / "unrelated_prompts.json"
EXAMPLE_VAULT = HERE.parent / "examples" / "vault"
SEED = 20260412
HELDOUT_SHARE = 0.3
K_POSITIVE = 10  # LoCoMo R@10, as in bench_recall.py
K_NEGATIVE = 5  # the hook injects recall.k = 5 entries at most
BETAS = [round(0.1 * i, 1) for i in range(0, 16)]


@dataclass
class Hit:
    cosine: float | None
    coverage: float
    identifier: bool
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


# ---- collecting --------------------------------------------------------------------------------------------


def ask(
    index: ix.Index, corpus: br.Corpus | None, text: str, vector: bytes | None, model: str, group: str | None, k: int
) -> list[Hit]:
    options = search.Options(k=k, group=group, budget_ms=60_000)
    embedder = (lambda _q, _t: (model, vector)) if vector is not None else None
    result = search.recall(index, text, options, embedder)
    out = []
    for h in result.hits:
        keys = corpus.keys.get(corpus.item(h), frozenset()) if corpus else frozenset()
        out.append(Hit(h.cosine, h.coverage, h.identifier, keys))
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


def collect(args: argparse.Namespace, embedder: embed.Embedder, work: Path) -> list[Asked]:
    negatives = [p for p in json.loads(UNRELATED.read_text(encoding="utf-8"))["prompts"] if not p["maybe_related"]]
    vaults: list[tuple[str, ix.Index, br.Corpus | None]] = []
    positives: list[tuple[str, br.Corpus, list[tuple[br.Query, str]]]] = []
    found = bench_data.find(args.locomo, bench_data.LOCOMO, "--locomo")
    if found is not None:
        samples = json.loads(found.read_text(encoding="utf-8"))
        held = heldout_conversations(samples)
        print(f"LoCoMo held-out conversations: {', '.join(sorted(held))}")
        for section in ("turns", "sessions"):
            corpus = br.locomo(samples, section)
            built = br.build(corpus, work, embedder, args.cache, "")
            if corpus.unit == "chunk":
                br.chunk_keys(corpus, built.index)
            vaults.append((corpus.name, built.index, corpus))
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
    vectors = dict(zip(texts, embedder.encode(texts), strict=True))
    print(f"embedded {len(texts)} prompts in {time.perf_counter() - started:.0f} s")
    out: list[Asked] = []
    for name, corpus, asked in positives:
        index = next(i for n, i, _ in vaults if n == name)
        for query, part in asked:
            for mode in ("hybrid", "keyword"):
                vector = vectors[query.text] if mode == "hybrid" else None
                hits = ask(index, corpus, query.text, vector, embedder.name, query.group, K_POSITIVE)
                out.append(Asked(name, "positive", part, mode, frozenset(query.targets), hits, query.category))
    for name, index, _ in vaults:
        for prompt in negatives:
            for mode in ("hybrid", "keyword"):
                vector = vectors[prompt["text"]] if mode == "hybrid" else None
                hits = ask(index, None, prompt["text"], vector, embedder.name, None, K_NEGATIVE)
                out.append(Asked(name, "negative", prompt["part"], mode, frozenset(), hits, 0, prompt["category"]))
        index.close()
    return out


# ---- fitting -----------------------------------------------------------------------------------------------


def passes(hit: Hit, floor: relevance.Floor, mode: str) -> bool:
    signals = relevance.Signals(hit.cosine if mode == "hybrid" else None, hit.coverage, hit.identifier)
    return relevance.verdict(signals, floor)[0]


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


def injecting(rows: Iterable[Asked], floor: relevance.Floor | None) -> float:
    """The share of negative rows where at least one hit passes `floor` (None: any hit at all)."""
    flags = [any(floor is None or passes(h, floor, r.mode) for h in r.hits) for r in rows]
    return sum(flags) / len(flags) if flags else float("nan")


def select(rows: list[Asked], **what: str) -> list[Asked]:
    return [r for r in rows if all(getattr(r, key) == value for key, value in what.items())]


def needed(rows: list[Asked], score: Any, bound: float, grid: list[float]) -> float | None:
    """The lowest threshold on `grid` at which at most `bound` of the negative `rows` (every prompt against
    every vault, pooled) have a hit scoring at or above it (`score(hit)`; an exact identifier always passes)."""
    tops = sorted(
        (max((math.inf if h.identifier else score(h) for h in r.hits), default=-math.inf) for r in rows),
        reverse=True,
    )
    allowed = int(bound * len(tops))  # this many may still inject
    worst = tops[allowed] if allowed < len(tops) else -math.inf
    return next((t for t in grid if t > worst and t > 0), None)


def fit(rows: list[Asked], bound: float) -> tuple[relevance.Floor, list[dict[str, float]]]:
    """β, τ for hybrid recall and κ for keyword-only recall, from the dev rows only (see the module docstring)."""
    grid = [round(0.005 * i, 3) for i in range(0, 401)]
    locomo_dev = [r for r in select(rows, kind="positive", part="dev", mode="hybrid") if r.vault != "preference"]
    prefs_dev = select(rows, kind="positive", part="dev", mode="hybrid", vault="preference")
    negatives = select(rows, kind="negative", part="dev", mode="hybrid")
    table = []
    best: tuple[float, float, float] | None = None
    for beta in BETAS:
        tau = needed(negatives, lambda h, b=beta: (h.cosine or 0.0) + b * h.coverage, bound, grid)
        if tau is None:
            continue
        floor = relevance.Floor(tau, beta)
        kept = recall_at(locomo_dev or prefs_dev, floor)
        table.append({"beta": beta, "tau": tau, "locomo_dev_R@10": kept, "prefs_dev_R@10": recall_at(prefs_dev, floor)})
        if best is None or kept > best[2] + 1e-9:
            best = (beta, tau, kept)
    if best is None:
        raise SystemExit("no floor on the grid meets the bound")
    keyword = select(rows, kind="negative", part="dev", mode="keyword")
    kappa = needed(keyword, lambda h: h.coverage, bound, [c for c in grid if c <= 1])  # coverage is at most 1
    if kappa is None:  # coverage alone cannot meet the bound: the lowest κ within 0.5 point of the best rate
        rates = {c: injecting(keyword, relevance.Floor(1.0, best[0], c)) for c in grid if 0 < c <= 1}
        kappa = min(c for c, rate in rates.items() if rate <= min(rates.values()) + 0.005)
        print(f"keyword-only: no coverage threshold meets {bound:.0%}; κ = {kappa} (dev {rates[kappa]:.3f})")
    return relevance.Floor(best[1], best[0], kappa), table


# ---- report ------------------------------------------------------------------------------------------------


def report(rows: list[Asked], floor: relevance.Floor) -> dict[str, Any]:
    out: dict[str, Any] = {"floor": floor._asdict(), "negatives": {}, "positives": {}}
    print(f"\nchosen floor: relevance = cosine + {floor.coverage_weight:g} × coverage ≥ {floor.min_relevance:.3f}; "
          f"keyword-only: coverage ≥ {floor.min_coverage:.3f}")  # fmt: skip
    br.table(
        "unrelated prompts that inject anything (share of prompts; per vault)",
        ["vault", "mode", "dev no floor", "dev floor", "held-out no floor", "held-out floor", "n dev/held-out"],
        [
            [name, mode]
            + [f"{injecting(select(rows, kind='negative', vault=name, mode=mode, part=p), f):.3f}"
               for p in ("dev", "heldout") for f in (None, floor)]
            + [f"{len(select(rows, kind='negative', vault=name, mode=mode, part='dev'))}/"
               f"{len(select(rows, kind='negative', vault=name, mode=mode, part='heldout'))}"]
            for name in sorted({r.vault for r in rows})
            for mode in ("hybrid", "keyword")
        ],
    )  # fmt: skip
    for name in sorted({r.vault for r in rows}):
        for mode in ("hybrid", "keyword"):
            for part in ("dev", "heldout"):
                sel = select(rows, kind="negative", vault=name, mode=mode, part=part)
                out["negatives"][f"{name}/{mode}/{part}"] = {
                    "none": injecting(sel, None),
                    "floor": injecting(sel, floor),
                }
    cats = {0: "all", 1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
    lines = []
    for name in sorted({r.vault for r in rows if r.kind == "positive"}):
        for mode in ("hybrid", "keyword"):
            for part in ("dev", "heldout"):
                sel = select(rows, kind="positive", vault=name, mode=mode, part=part)
                per = (
                    {c: [r for r in sel if c == 0 or r.category == c] for c in cats}
                    if name != "preference"
                    else {0: sel}
                )
                cells = {c: (recall_at(v, None), recall_at(v, floor)) for c, v in per.items()}
                out["positives"][f"{name}/{mode}/{part}"] = {
                    cats[c]: {"none": a, "floor": b} for c, (a, b) in cells.items()
                }
                shown = [cells.get(c, (float("nan"), float("nan"))) for c in cats]
                lines.append([name, mode, part, str(len(sel)), *(f"{a:.3f} → {b:.3f}" for a, b in shown)])
    br.table("questions with an answer: R@10 without → with the floor",
             ["vault", "mode", "part", "n", *cats.values()], lines)  # fmt: skip
    return out


def load_row(raw: dict[str, Any]) -> Asked:
    hits = [Hit(**{**h, "keys": frozenset(h["keys"])}) for h in raw["hits"]]
    return Asked(**{**raw, "targets": frozenset(raw["targets"]), "hits": hits})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locomo", type=Path, help="locomo10.json (default: $MEMVAULT_BENCH_DATA/locomo/)")
    parser.add_argument("--cache", type=Path, help="keep the index databases here and reuse them")
    parser.add_argument("--json", type=Path, help="write every number (and every hit's signals) to this file")
    parser.add_argument("--max-injecting", type=float, default=0.05, help="bound on dev unrelated prompts injecting")
    parser.add_argument("--rows", type=Path, help="reuse the signals saved by an earlier --json run (no recall)")
    args = parser.parse_args(argv)
    if args.rows:
        saved = json.loads(args.rows.read_text(encoding="utf-8"))["rows"]
        rows = [load_row(r) for r in saved]
    else:
        embedder = embed.load()
        with tempfile.TemporaryDirectory(prefix="memvault-floor-") as tmp:
            rows = collect(args, embedder, Path(tmp))
    floor, table = fit(rows, args.max_injecting)
    br.table("β grid (dev): the lowest τ meeting the bound, and what it keeps",
             ["β", "τ", "LoCoMo R@10", "preference R@10"],
             [[f"{t['beta']:g}", f"{t['tau']:.3f}", f"{t['locomo_dev_R@10']:.3f}", f"{t['prefs_dev_R@10']:.3f}"]
              for t in table])  # fmt: skip
    out = report(rows, floor) | {"grid": table}
    if args.json:
        out["rows"] = [
            {**r.__dict__, "targets": sorted(r.targets),
             "hits": [{**h.__dict__, "keys": sorted(h.keys)} for h in r.hits]} for r in rows
        ]  # fmt: skip
        args.json.write_text(json.dumps(out), encoding="utf-8")
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
