"""How the relevance floor behaves with the size of what is searched: unrelated prompts per vault shape and scope.

    python scripts/floor_by_size.py [--locomo PATH] [--cache DIR] [--max-injecting 0.05]

`calibrate_floor.py` asks the unrelated prompts against whole vaults and the LoCoMo questions inside their
conversation. This asks the unrelated prompts inside each LoCoMo conversation too (as the questions are),
keeps the number of chunks N each search ran over, and reports, on dev and held-out (the same split):
  - the share of unrelated prompts that inject anything under the shipped floor, per vault shape
    (examples/vault, the preference notes, one LoCoMo conversation, all of LoCoMo; sessions and turns);
  - a floor that grows with N, τ(N) = a + b·√(2 ln N) (the best of N unrelated scores rises about so), fitted
    on dev with every vault shape held to --max-injecting on its own: for each b on a grid, a is the lowest
    value meeting it; the b keeping the most dev evidence (R@10, mean of the three question sets) wins.
Hybrid recall only (the cosine is what grows with N). LoCoMo comes from --locomo or $MEMVAULT_BENCH_DATA.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_data
import bench_recall as br
import calibrate_floor as cf

from memvault.index import core as ix
from memvault.index import embed
from memvault.recall import relevance

QUESTIONS = ("locomo-turns:conversation", "locomo-sessions:conversation", "preference")
SLOPES = [0.0, 0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.14, 0.16, 0.2]


def chunks_in(index: ix.Index, group: str | None) -> int:
    if group is None:
        return int(index.conn.execute("SELECT count(*) FROM chunks").fetchone()[0])
    sql = "SELECT count(*) FROM chunks c JOIN notes n ON n.id = c.note_id WHERE n.grp = ?"
    return int(index.conn.execute(sql, (group,)).fetchone()[0])


def collect(found: Path, args: argparse.Namespace, embedder: embed.Embedder, work: Path) -> list[dict[str, Any]]:
    """Every prompt's hits (hybrid) with its vault shape, part and the chunk count N of its scope."""
    negatives = [p for p in json.loads(cf.UNRELATED.read_text(encoding="utf-8"))["prompts"] if not p["maybe_related"]]
    samples = json.loads(found.read_text(encoding="utf-8"))
    held = cf.heldout_conversations(samples)
    vaults: list[tuple[str, ix.Index, br.Corpus | None]] = [*cf.locomo_vaults(samples, work, embedder, args.cache)]
    prefs = br.preferences(br.PREFERENCES)
    vaults.append((prefs.name, br.build(prefs, work, embedder, args.cache, "").index, prefs))
    vaults.append(("example-vault", cf.example_vault(work, embedder, args.cache), None))
    held_prefs = cf.heldout_queries(len(prefs.queries))
    texts = [q.text for _, _, c in vaults if c for q in c.queries] + [p["text"] for p in negatives]
    unique = list(dict.fromkeys(texts))
    vectors = dict(zip(unique, embedder.encode(unique), strict=True))
    rows: list[dict[str, Any]] = []

    def add(kind: str, shape: str, part: str, n: int, hits: list[cf.Hit], targets: list[str]) -> None:
        rows.append({"kind": kind, "shape": shape, "part": part, "N": n, "hits": hits, "targets": set(targets)})

    for name, index, corpus in vaults:
        scoped = corpus is not None and name != prefs.name
        groups = [None, *sorted({q.group for q in corpus.queries})] if scoped else [None]
        size = {group: chunks_in(index, group) for group in groups}  # counted once per scope
        for group in groups:
            shape = f"{name}:{'whole' if group is None else 'conversation'}" if scoped else name
            for p in negatives:
                hits = cf.ask(index, None, p["text"], vectors[p["text"]], embedder.name, group, cf.K_NEGATIVE)
                add("negative", shape, p["part"], size[group], hits, [])
        for i, q in enumerate(corpus.queries if corpus is not None else []):
            if scoped and not 1 <= q.category <= 4:
                continue
            part = ("heldout" if q.group in held else "dev") if scoped else ("heldout" if i in held_prefs else "dev")
            group = q.group if scoped else None
            hits = cf.ask(index, corpus, q.text, vectors[q.text], embedder.name, group, cf.K_POSITIVE)
            add("positive", f"{name}:conversation" if scoped else name, part, size[group], hits, q.targets)
        index.close()
    return rows


def passes(hit: cf.Hit, n: int, beta: float, a: float, b: float) -> bool:
    need = a + b * math.sqrt(2 * math.log(n))
    return hit.identifier or (hit.cosine or 0.0) + beta * hit.coverage >= need


def injecting(rows: list[dict[str, Any]], beta: float, a: float, b: float) -> float:
    return sum(any(passes(h, r["N"], beta, a, b) for h in r["hits"]) for r in rows) / max(1, len(rows))


def recall_at(rows: list[dict[str, Any]], beta: float, a: float, b: float) -> float:
    values = []
    for r in rows:
        kept = {k for h in r["hits"][: cf.K_POSITIVE] if passes(h, r["N"], beta, a, b) for k in h.keys}
        values.append(len(kept & r["targets"]) / len(r["targets"]))
    return sum(values) / max(1, len(values))


def pick(rows: list[dict[str, Any]], **what: str) -> list[dict[str, Any]]:
    return [r for r in rows if all(r[k] == v for k, v in what.items())]


def fit(rows: list[dict[str, Any]], beta: float, bound: float) -> tuple[float, float]:
    """(a, b) of the size-aware floor, from the dev rows only (see the module docstring)."""
    shapes = sorted({r["shape"] for r in rows if r["kind"] == "negative"})
    negatives = [pick(rows, kind="negative", part="dev", shape=s) for s in shapes]
    best: tuple[float, float, float] | None = None
    for b in SLOPES:
        low, high = -2.0, 2.0
        for _ in range(40):  # the lowest a at which every shape is within the bound
            mid = (low + high) / 2
            low, high = (low, mid) if all(injecting(n, beta, mid, b) <= bound for n in negatives) else (mid, high)
        a = math.ceil(high * 1000) / 1000
        kept = sum(recall_at(pick(rows, kind="positive", part="dev", shape=q), beta, a, b) for q in QUESTIONS) / 3
        if best is None or kept > best[2] + 1e-9:
            best = (a, b, kept)
    assert best is not None
    return best[0], best[1]


def report(rows: list[dict[str, Any]], beta: float, a: float, b: float, title: str) -> None:
    shapes = sorted({r["shape"] for r in rows if r["kind"] == "negative"})
    lines = []
    for part in ("dev", "heldout"):
        rates = [f"{injecting(pick(rows, kind='negative', part=part, shape=s), beta, a, b):.3f}" for s in shapes]
        kept = [f"{recall_at(pick(rows, kind='positive', part=part, shape=q), beta, a, b):.3f}" for q in QUESTIONS]
        lines.append([part, *rates, *kept])
    br.table(title, ["part", *(f"inject {s}" for s in shapes), *(f"R@10 {q}" for q in QUESTIONS)], lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locomo", type=Path, help="locomo10.json (default: $MEMVAULT_BENCH_DATA/locomo/)")
    parser.add_argument("--cache", type=Path, help="keep the index databases here and reuse them")
    parser.add_argument("--max-injecting", type=float, default=0.05, help="bound on each shape's dev rate")
    args = parser.parse_args(argv)
    found = bench_data.find(args.locomo, bench_data.LOCOMO, "--locomo")
    if found is None:
        bench_data.skip("LoCoMo (locomo10.json)", bench_data.LOCOMO, "--locomo")
    embedder = embed.load()
    with tempfile.TemporaryDirectory(prefix="memvault-floor-size-") as tmp:
        rows = collect(found, args, embedder, Path(tmp))
    sizes: dict[str, set[int]] = {}
    for r in rows:
        sizes.setdefault(r["shape"], set()).add(r["N"])
    print("chunks searched:", "; ".join(f"{s} {min(n)}–{max(n)}" for s, n in sorted(sizes.items())))
    beta, tau = relevance.COVERAGE_WEIGHT, relevance.MIN_RELEVANCE
    report(rows, beta, tau, 0.0, f"shipped floor: cosine + {beta:g} × coverage ≥ {tau}")
    a, b = fit(rows, beta, args.max_injecting)
    at = ", ".join(f"{a + b * math.sqrt(2 * math.log(n)):.3f} at {n}" for n in (40, 140, 600, 1300, 5900))
    report(rows, beta, a, b, f"growing with N: τ(N) = {a:.3f} + {b:g} × √(2 ln N) ({at} chunks)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
