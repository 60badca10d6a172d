"""Benchmark the prompt path and indexing on synthetic vaults: hook latency p50/p95, reindex throughput, memory.

    python scripts/bench_latency.py [--locomo FILE] [--sizes 1000,20000] [--runs 30] [--embed-max 20000] [--json OUT]

For each size it writes a vault of short notes (sentences from the LoCoMo conversations, with
frontmatter and tags), runs `memvault reindex` as a real subprocess (throughput and peak RSS),
then times fresh processes running scripts/prompt_probe.py — what the UserPromptSubmit hook does —
with the warm service (hybrid) and without it (keyword-only), next to a bare `python -c pass`
timed in the same run. Sizes above --embed-max are not embedded: their notes get copies of real
vectors from the largest embedded size (KNN cost does not depend on the vectors' content); the
table says so. Finally it measures save → searchable through the warm service.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_data

REPO = Path(__file__).resolve().parent.parent
LOCOMO: Path | None = None  # locomo10.json, found by main() (--locomo or $MEMVAULT_BENCH_DATA)
PROBE = REPO / "scripts" / "prompt_probe.py"
TAGS = ["python", "postgres", "billing", "search", "ci", "docker", "testing", "frontend", "infra", "oncall"]
PROMPTS = [
    "how did we fix the flaky integration tests last time",
    "what do I prefer for formatting python code",
    "remind me how the billing migration was rolled out",
    "where did she go hiking with her kids",
    "which painting did he finish last summer",
]


def use_locomo(given: Path | None) -> None:
    """Find LoCoMo (its sentences fill the synthetic vaults), or print one `skipped:` line and exit."""
    global LOCOMO
    LOCOMO = bench_data.require(given, bench_data.LOCOMO, "--locomo", "LoCoMo (locomo10.json)")


def sentences() -> list[str]:
    assert LOCOMO is not None, "use_locomo() first"
    data = json.loads(LOCOMO.read_text(encoding="utf-8"))
    out = []
    for sample in data:
        conv = sample["conversation"]
        for key, turns in conv.items():
            if key.startswith("session_") and isinstance(turns, list):
                out.extend(t["text"] for t in turns if t.get("text"))
    return out


def write_vault(root: Path, count: int, seed: int = 7) -> None:
    rng = random.Random(seed)  # noqa: S311 (reproducible test data, not security)
    pool = sentences()
    for i in range(count):
        group = "personal-private" if i % 3 else "personal-projects"
        folder = root / "MemoryVault" / group / ("fix", "preference", "workflow", "domain")[i % 4] / f"{i // 1000:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        body = " ".join(rng.sample(pool, 3))
        title = " ".join(body.split()[:6]).strip(".,!?")
        tags = "\n".join(f"  - {t}" for t in rng.sample(TAGS, 2))
        text = f"---\nkind: fix\nstatus: active\ntags:\n{tags}\n---\n# {title}\n\n{body}\n"
        (folder / f"note-{i:06d}.md").write_text(text, encoding="utf-8")


def run(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    elapsed = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise SystemExit(f"{cmd} failed: {done.stderr[-2000:]}")
    return elapsed, done.stdout


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def reindex(vault: Path, env: dict[str, str], keyword_only: bool) -> tuple[float, float, dict]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    cmd = [sys.executable, "-m", "memvault", "--vault", str(vault), "reindex", "--json"]
    elapsed, out = run([*cmd, "--keyword-only"] if keyword_only else cmd, env)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return elapsed / 1000, max(peak, before) / 1024, json.loads(out)


def fill_vectors(index_file: Path, donor_file: Path, env: dict[str, str]) -> int:
    """Give every note without vectors a copy of a real vector from `donor_file` (sizes above --embed-max)."""
    os.environ.update(env)
    from memvault.index import core as ix
    from memvault.index import db

    donor = ix.open_index(donor_file)
    donors = [bytes(r[0]) for r in donor.conn.execute("SELECT embedding FROM vec_chunks LIMIT 20000")]
    model = donor.vector_model()
    donor.close()
    assert model and donors, "embed a smaller size first"
    index = ix.open_index(index_file)
    index.use_model(*model)
    filled = 0
    while True:
        batch = index.pending(2000)
        if not batch:
            break
        with db.transaction(index.conn):
            for note_id, parts in batch:
                index.store_vectors(note_id, [(cid, donors[(cid * 7) % len(donors)]) for cid, _ in parts], model[0])
                filled += 1
    index.close()
    return filled


def latency(index_file: Path, env: dict[str, str], runs: int, keyword_only: bool) -> tuple[list[float], dict]:
    times, modes = [], {}
    for i in range(runs):
        prompt = PROMPTS[i % len(PROMPTS)]
        cmd = [sys.executable, str(PROBE), str(index_file), prompt] + (["--keyword-only"] if keyword_only else [])
        elapsed, out = run(cmd, env)
        mode = json.loads(out)["probe"]["mode"]
        modes[mode] = modes.get(mode, 0) + 1
        times.append(elapsed)
    return times, modes


def compile_package(checkout: Path = REPO) -> None:
    """Write the package's bytecode before timing anything, as an install does. Otherwise, with
    PYTHONDONTWRITEBYTECODE set or a read-only checkout, every timed process compiles again each module
    changed since its bytecode was last written (9 ms for recall.search alone)."""
    compileall.compile_dir(str(checkout / "memvault"), quiet=1)


def bare(env: dict[str, str], runs: int, flags: tuple[str, ...] = ()) -> list[float]:
    """`runs` timings of a bare `python [flags] -c pass`."""
    return [run([sys.executable, *flags, "-c", "pass"], env)[0] for _ in range(runs)]


def save_to_searchable(vault: Path, env: dict[str, str]) -> float:
    os.environ.update(env)
    from memvault import open_vault
    from memvault.recall import client, search

    v = open_vault(vault)
    started = time.perf_counter()
    saved = v.save("fix", "zz-bench-probe", "# Quokka cache\n\nThe quokka cache must be flushed after a deploy.\n")
    query = "marsupial cache flush after deploy"
    result = search.recall_file(v.index_file, query, search.Options(k=5), client.query_vector)
    elapsed = (time.perf_counter() - started) * 1000
    hit = next((h for h in result.hits if h.path == saved.path), None)
    if hit is None or hit.vec_score <= 0:
        return float("nan")
    return elapsed


def service_peak_mb() -> float:
    from memvault.recall import client

    info = client.status() or {}
    try:
        status = Path(f"/proc/{info.get('pid')}/status").read_text()
    except OSError:
        return 0.0
    line = next((x for x in status.splitlines() if x.startswith("VmHWM:")), "VmHWM: 0 kB")
    return int(line.split()[1]) / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, help="locomo10.json (default: $MEMVAULT_BENCH_DATA/locomo/)")
    parser.add_argument("--sizes", default="1000,20000", help="ascending; sizes above --embed-max need a smaller one")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--embed-max", type=int, default=20000)
    parser.add_argument("--keep", type=Path, help="keep the vaults and state under this folder")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    use_locomo(args.locomo)
    compile_package()
    base = args.keep or Path(tempfile.mkdtemp(prefix="mv-bench-"))
    home = base / "home"
    env = {**os.environ, "MEMVAULT_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    os.environ.update(env)
    from memvault.recall import client

    client.start("default", 30)
    if client.wait_ready(180) is None:
        raise SystemExit("the embedding service did not start")
    rows = []
    donor_file: Path | None = None
    try:
        for size in (int(s) for s in args.sizes.split(",")):
            vault = base / f"vault-{size}"
            if not vault.exists():
                write_vault(vault, size)
            kw_s, _, kw_report = reindex(vault, env, keyword_only=True)
            index_file = Path(kw_report["index"])
            embedded, emb_s, peak_mb = 0, 0.0, 0.0
            if size <= args.embed_max:
                emb_s, peak_mb, _ = reindex(vault, env, keyword_only=False)
                embedded, donor_file = size, index_file
            else:  # copies of real vectors from the largest size embedded so far
                fill_vectors(index_file, donor_file, env)
            base_ms = bare(env, args.runs)
            warm, warm_modes = latency(index_file, env, args.runs, keyword_only=False)
            kw, _ = latency(index_file, env, args.runs, keyword_only=True)
            b50 = statistics.median(base_ms)
            rows.append(
                {
                    "notes": size,
                    "bare_p50": b50,
                    "warm_p50": statistics.median(warm),
                    "warm_p95": pct(warm, 0.95),
                    "warm_modes": warm_modes,
                    "kw_p50": statistics.median(kw),
                    "kw_p95": pct(kw, 0.95),
                    "keyword_sync_notes_s": size / kw_s,
                    "embedded_real": embedded,
                    "embed_notes_s": embedded / emb_s if emb_s else None,
                    "reindex_peak_mb": peak_mb,
                    "index_mb": index_file.stat().st_size / 1e6,
                    "service_peak_mb": service_peak_mb(),
                }
            )
            print_row(rows[-1])
        save_ms = save_to_searchable(base / f"vault-{args.sizes.split(',')[0]}", env)
    finally:
        client.stop()
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    print_table(rows, save_ms)
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "save_to_searchable_ms": save_ms}, indent=2))
    return 0


def print_row(r: dict) -> None:
    print(f"[{r['notes']} notes] warm p50 {r['warm_p50']:.0f} ms, keyword p50 {r['kw_p50']:.0f} ms", flush=True)


def print_table(rows: list[dict], save_ms: float) -> None:
    head = (
        "| notes | bare python p50 | warm p50 / p95 (× bare) | keyword-only p50 / p95 (× bare) "
        "| keyword sync notes/s | embed notes/s | reindex peak RSS | index size |"
    )
    print()
    print(head)
    print("|" + "---|" * 8)
    for r in rows:
        b = r["bare_p50"]
        embed_rate = f"{r['embed_notes_s']:.1f}" if r["embed_notes_s"] else "copies of real vectors"
        print(
            f"| {r['notes']:,} | {b:.0f} ms | {r['warm_p50']:.0f} / {r['warm_p95']:.0f} ms "
            f"({r['warm_p50'] / b:.1f}× / {r['warm_p95'] / b:.1f}×) | {r['kw_p50']:.0f} / {r['kw_p95']:.0f} ms "
            f"({r['kw_p50'] / b:.1f}× / {r['kw_p95'] / b:.1f}×) | {r['keyword_sync_notes_s']:.0f} | {embed_rate} "
            f"| {r['reindex_peak_mb']:.0f} MB | {r['index_mb']:.1f} MB |"
        )
    print(f"\nwarm-run modes: {[r['warm_modes'] for r in rows]}")
    print(f"embedding service peak RSS: {rows[-1].get('service_peak_mb', 0):.0f} MB (it embeds for reindex)")
    print(f"save → searchable by meaning through the warm service: {save_ms:.0f} ms")


if __name__ == "__main__":
    sys.exit(main())
