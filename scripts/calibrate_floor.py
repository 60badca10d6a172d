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
  - keyword-only recall (service down): coverage ≥ κ and at least m of the prompt's content words in
    the chunk. For m = 1, 2, 3, κ is the lowest value meeting the same bound (or, where none does, the
    lowest within half a point of the lowest rate any κ reaches); the fewest shared words that meet
    the bound win (see `keyword_floor`).
The chosen values are the defaults of `recall.min_relevance`, `recall.coverage_weight`,
`recall.min_coverage` and `recall.min_shared_words` (memvault/config.py). The report also gives the
rates as the hook sees them: it skips prompts shorter than `recall.min_prompt_chars` before recall.
LoCoMo is read from --locomo, else from $MEMVAULT_BENCH_DATA/locomo/locomo10.json; without it that
part is skipped with one line.
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

from memvault import config
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
SHARED_WORDS = (1, 2, 3)  # the grid of recall.min_shared_words for keyword-only recall
POOLED = "all four, pooled"


@dataclass
class Hit:
    cosine: float | None
    coverage: float
    identifier: bool
    keys: frozenset[str]  # evidence keys this hit holds (positives), empty for negatives
    shared_words: int = 0


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
    options = search.Options(k=k, group=group, budget_ms=60_000)
    embedder = (lambda _q, _t: (model, vector)) if vector is not None else None
    result = search.recall(index, text, options, embedder)
    out = []
    for h in result.hits:
        keys = corpus.keys.get(corpus.item(h), frozenset()) if corpus else frozenset()
        out.append(Hit(h.cosine, h.coverage, h.identifier, keys, h.shared_words))
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
    vectors = dict(zip(texts, embedder.encode(texts), strict=True))
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


# ---- fitting -----------------------------------------------------------------------------------------------


def passes(hit: Hit, floor: relevance.Floor, mode: str) -> bool:
    cosine = hit.cosine if mode == "hybrid" else None
    signals = relevance.Signals(cosine, hit.coverage, hit.identifier, hit.shared_words)
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


def injecting(rows: Iterable[Asked], floor: relevance.Floor | None, min_chars: int = 0) -> float:
    """The share of negative rows where at least one hit passes `floor` (None: any hit at all). With
    `min_chars`, as the hook sees it: a prompt shorter than that is skipped and injects nothing."""
    flags = [r.chars >= min_chars and any(floor is None or passes(h, floor, r.mode) for h in r.hits) for r in rows]
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
    kappa, shared = keyword_floor(rows, bound, [c for c in grid if 0 < c <= 1], best[:2])
    return relevance.Floor(best[1], best[0], kappa, shared), table


def keyword_floor(rows: list[Asked], bound: float, grid: list[float], hybrid: tuple[float, float]) -> tuple[float, int]:
    """κ and m for keyword-only recall: coverage ≥ κ and at least m of the prompt's words shared, from the dev rows.

    For each m, κ is the lowest value meeting the bound (or, where none does, the lowest within half a point
    of the lowest rate any κ reaches). The fewest shared words that meet the bound win: a larger m meets it
    with a smaller κ, down to a κ that asks nothing of coverage (m = 3 met it at κ = 0.1, passing long
    prompts that share three everyday words with a chunk), so m is held to what the short prompts need.
    """
    negatives = select(rows, kind="negative", part="dev", mode="keyword")
    positives = [r for r in select(rows, kind="positive", part="dev", mode="keyword") if r.vault != "preference"]
    fitted: list[tuple[int, float, float]] = []
    for shared in SHARED_WORDS:

        def floor(kappa: float, m: int = shared) -> relevance.Floor:
            return relevance.Floor(hybrid[1], hybrid[0], kappa, m)

        kappa = needed(negatives, lambda h, m=shared: h.coverage if h.shared_words >= m else -math.inf, bound, grid)
        if kappa is None:
            rates = {c: injecting(negatives, floor(c)) for c in grid}
            kappa = min(c for c, rate in rates.items() if rate <= min(rates.values()) + 0.005)
        kept, rate = recall_at(positives, floor(kappa)), injecting(negatives, floor(kappa))
        print(f"keyword-only, m = {shared}: κ = {kappa:.3f}, dev unrelated {rate:.3f}, LoCoMo dev R@10 {kept:.3f}")
        fitted.append((shared, kappa, rate))
    meeting = [(m, kappa) for m, kappa, rate in fitted if rate <= bound]
    if meeting:
        return meeting[0][1], meeting[0][0]
    m, kappa, _ = min(fitted, key=lambda f: f[2])
    return kappa, m


# ---- report ------------------------------------------------------------------------------------------------


def report(rows: list[Asked], floor: relevance.Floor) -> dict[str, Any]:
    out: dict[str, Any] = {"floor": floor._asdict(), "negatives": {}, "positives": {}}
    print(f"\nchosen floor: relevance = cosine + {floor.coverage_weight:g} × coverage ≥ {floor.min_relevance:.3f}; "
          f"keyword-only: coverage ≥ {floor.min_coverage:.3f}, {floor.min_shared_words}+ shared words")  # fmt: skip
    min_chars = config.RecallSettings().min_prompt_chars
    negatives = []
    for name in [*sorted({r.vault for r in rows}), POOLED]:
        for mode in ("hybrid", "keyword"):
            parts = []
            for part in ("dev", "heldout"):
                sel = [r for r in select(rows, kind="negative", mode=mode, part=part) if name in (POOLED, r.vault)]
                rates = {"none": injecting(sel, None), "floor": injecting(sel, floor),
                         "hook": injecting(sel, floor, min_chars), "n": len(sel)}  # fmt: skip
                out["negatives"][f"{name}/{mode}/{part}"] = rates
                parts.append(rates)
            negatives.append([name, mode, *(f"{c[key]:.3f}" for key in ("none", "floor", "hook") for c in parts),
                              "/".join(str(c["n"]) for c in parts)])  # fmt: skip
    br.table(
        f"unrelated prompts that inject anything (share of prompts; the hook skips prompts under {min_chars} chars)",
        ["vault", "mode", "dev no floor", "held-out no floor", "dev floor", "held-out floor", "dev hook",
         "held-out hook", "n dev/held-out"],
        negatives,
    )  # fmt: skip
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
