"""Benchmark reflection on real transcripts of every host: reader coverage, miner quality, end-to-end speed.

    python scripts/bench_reflect.py [--data DIR] [--labels FILE] [--miner offline|claude] [--verbose] [--json]
    python scripts/bench_reflect.py --corpus DIR [--report-test] [--verbose] [--json]

Over 400 lines: two benchmarks that share their reading and mining, the labelled Claude Code
transcripts (the shared real sessions) and the hand-labelled corpus of all three hosts.

DIR holds the transcripts the labels name, megabytes of real sessions not carried in the repository:
--data DIR, else $MEMVAULT_BENCH_DATA/claude-code-transcripts (the sources are listed in
tests/data/README.md). Without it the benchmark prints one `skipped:` line and exits 0.

1. Reader: for every transcript, lines read, lines parsed into turns, lines skipped by reason, turns,
   candidates; then the time to parse and mine all of them.
2. Miner quality, for the development part and the held-out part of the labels separately
   (scripts/data/reflect_labels.json, `split`): precision and recall per category and per route
   (high → saved, medium → review, low → inbox, ideas → incubator), and the labelled negatives
   captured. Matching is in scripts/reflect_score.py: same transcript and category, evidence within
   ±3 lines, the quoted words when several labels share a line, one-to-one; disputed labels are
   optional. --verbose lists the development part's false positives and misses (never the held-out
   part's: the held-out part is for reporting, not tuning; --heldout-details shows it anyway).
3. End to end (offline miner): `memvault.reflect.runner.reflect_transcript` over the seven real
   interactive sessions, then over every transcript, into a fresh copy of examples/vault
   (MEMVAULT_HOME in a temp dir): wall time, entries written, and second runs that must add nothing.

4. Corpus mode (`--corpus DIR`, DIR = what `scripts/reflect_corpus.py export` wrote, else
   $MEMVAULT_BENCH_DATA/reflect-corpus; one `skipped:` line without it): every session of the
   hand-labelled corpus (scripts/data/reflect_corpus/*.json) read by memvault's own reader for its
   host (memvault.reflect.readers) and mined by the offline miner; per split (by source repository,
   scripts/reflect_corpus.py) and per host: MUST and NICE recall, note precision, HIGH precision,
   negatives saved, time per session and per MB (matching: reflect_score.score_corpus). A host whose
   files the reader cannot read (it raises, or gives no user turn) is reported as `unreadable: N`.
   The test split is read, mined and printed only with --report-test: it is for reporting, never
   for tuning.

The offline miner is the shipped one (`miner.OFFLINE`: the rules, and the lexical statement judge on the
lines they leave alone); `--rules` mines with the rules alone, `--judge` with the trained statement judge
instead of the preference and workflow rules (`miner.mine(using="judge")`, with sentence vectors: the warm
service's, else the model loaded in this process; `--judge-lexical` without them). `--miner claude` mines with
headless Claude Code instead (the user's own `claude`, one call per window of each transcript: it costs
tokens); `--windows` only prints how many windows and characters each transcript would send, without calling
anything.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

import bench_data  # noqa: E402
import reflect_corpus  # noqa: E402
from reflect_score import CATEGORIES, ROUTES, score, score_corpus  # noqa: E402

from memvault.reflect import gemini_chat, miner, readers, transcript  # noqa: E402
from memvault.reflect.mine import judge  # noqa: E402

LABELS = REPO / "scripts" / "data" / "reflect_labels.json"
EXAMPLE_VAULT = REPO / "examples" / "vault"
SEVEN = ("tonyandrewmeyer-charming-with-claude", "M-Thisness-M-Claude")  # the real interactive sessions' folders
TARGET_SECONDS = 5.0  # reflecting the seven sessions, offline
CORPUS_DATA = "reflect-corpus"  # under $MEMVAULT_BENCH_DATA: the corpus export


def files(data: Path) -> list[Path]:
    return sorted(data.rglob("*.jsonl"))


def interactive(data: Path) -> list[Path]:
    return [p for p in files(data) if p.relative_to(data).parts[0] in SEVEN]


USING: list[str | None] = [None]  # --rules / --judge: which offline miner (miner.mine's `using`; None: the shipped)


def _mine_offline(turns: list[transcript.Turn]) -> list[miner.Candidate]:
    return miner.mine(turns, using=USING[0])


def _mine_claude(turns: list[transcript.Turn]) -> list[miner.Candidate]:
    from memvault.config import load

    return miner.mine_llm(turns, load().reflection)


def reader_table(data: Path, mine: Any) -> tuple[list[dict[str, Any]], dict[str, list[miner.Candidate]], float]:
    rows, mined = [], {}
    start = time.perf_counter()
    for path in files(data):
        t = transcript.read(path, tools=True)
        cands = mine(t.turns)
        rel = path.relative_to(data).as_posix()
        mined[rel] = cands
        rows.append(
            {
                "transcript": rel,
                "bytes": path.stat().st_size,
                "lines": t.lines,
                "parsed": t.parsed,
                "skipped": sum(t.skipped.values()),
                "skipped_by": dict(sorted(t.skipped.items(), key=lambda kv: (-kv[1], kv[0]))),
                "turns": sum(1 for turn in t.turns if turn.role not in transcript.TOOL_ROLES),
                "candidates": len(cands),
            }
        )
    return rows, mined, time.perf_counter() - start


def quality(mined: dict[str, list[miner.Candidate]], labels: dict[str, Any]) -> dict[str, Any]:
    """Scores for the development part and the held-out part of the labels, apart."""
    heldout = set(labels.get("split", {}).get("heldout", []))
    out = {}
    for part, keep in (("dev", lambda rel: rel not in heldout), ("heldout", lambda rel: rel in heldout)):
        out[part] = score(
            {rel: cands for rel, cands in mined.items() if keep(rel)},
            [label for label in labels["labels"] if keep(label["transcript"])],
            [n for n in labels.get("negatives", []) if keep(n["transcript"])],
        )
        out[part]["transcripts"] = sum(1 for rel in mined if keep(rel))
    return out


def _service_cpu(client: Any) -> float | None:
    """CPU seconds the warm embedding service has used so far (Linux /proc), or None."""
    pid = (client.read_info() or {}).get("pid")
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def _reflect_all(reflect_mod: Any, vault: Any, paths: list[Path], data: Path) -> dict[str, Any]:
    from memvault.recall import client

    start, cpu, service = time.perf_counter(), time.process_time(), _service_cpu(client)
    written, routes, errors = 0, Counter(), []
    for path in paths:
        try:
            report = reflect_mod.reflect_transcript(vault, path, final=True)
        except Exception as exc:  # a crash is a result here, not a reason to stop the benchmark
            errors.append(f"{path.relative_to(data).as_posix()}: {type(exc).__name__}: {exc}")
            continue
        written += len(report.written)
        routes.update(str(r.get("action")) for r in report.routes)
    service_after = _service_cpu(client)
    return {
        "seconds": round(time.perf_counter() - start, 3),
        "cpu_seconds": round(time.process_time() - cpu, 3),  # this process: reading, mining, routing, writing
        "service_cpu_seconds": round(service_after - service, 3) if None not in (service, service_after) else None,
        "written": written,
        "routes": dict(routes),
        "errors": errors,
    }


def _stop_service(client: Any) -> None:
    """Stop the embedding service this run started under its temp MEMVAULT_HOME (and only that one)."""
    info = client.read_info() or {}
    client.stop(timeout=10.0)
    pid = info.get("pid")
    if not isinstance(pid, int):
        return
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
        time.sleep(0.1)
    if Path(f"/proc/{pid}").exists():  # busy or wedged: it would idle for 30 minutes with its home deleted
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)


def python_startup_ms(runs: int = 5) -> float:
    """Median wall time of a bare `python -c pass` on this machine now: the yardstick for how loaded it is."""
    import statistics
    import subprocess

    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(times), 1)


def end_to_end(data: Path) -> dict[str, Any]:
    """Reflect the seven interactive sessions, then every transcript, into a fresh copy of the example vault.

    The vault's index (and the embedding service it uses for duplicate detection) is warmed first
    and timed apart: a real vault has its index already. Each set is reflected, then reflected again
    with the saved cursors (must add nothing); finally the reflection state (cursors, candidate
    ledger) is forgotten, so only duplicate detection against what was written stands between the
    candidates and the vault.
    """
    from memvault import open_vault
    from memvault.recall import client
    from memvault.reflect import runner as reflect_mod

    seven, every = interactive(data), files(data)
    result: dict[str, Any] = {
        "seven": {"transcripts": len(seven), "bytes": sum(p.stat().st_size for p in seven)},
        "all": {"transcripts": len(every), "bytes": sum(p.stat().st_size for p in every)},
    }
    with tempfile.TemporaryDirectory(prefix="bench-reflect-") as tmp:
        old_home = os.environ.get("MEMVAULT_HOME")
        os.environ["MEMVAULT_HOME"] = str(Path(tmp) / "home")
        (Path(tmp) / "home").mkdir()
        (Path(tmp) / "home" / "config.yaml").write_text("reflection:\n  miner: offline\n", encoding="utf-8")
        try:
            root = Path(tmp) / "vault"
            shutil.copytree(EXAMPLE_VAULT, root)
            vault = open_vault(root)
            start = time.perf_counter()
            vault.reindex()
            vault.recall("warm up the query path", wait_service=180.0)  # the model loads slowly on a busy machine
            result["warm_up_seconds"] = round(time.perf_counter() - start, 3)
            result["python_startup_ms_before"] = python_startup_ms()
            result["seven"]["first_run"] = _reflect_all(reflect_mod, vault, seven, data)
            result["seven"]["second_run"] = _reflect_all(reflect_mod, vault, seven, data)
            result["all"]["first_run"] = _reflect_all(reflect_mod, vault, every, data)
            result["all"]["second_run"] = _reflect_all(reflect_mod, vault, every, data)
            shutil.rmtree(vault.state_dir / "reflect", ignore_errors=True)
            result["all"]["state_forgotten_run"] = _reflect_all(reflect_mod, vault, every, data)
            result["python_startup_ms_after"] = python_startup_ms()
        finally:
            _stop_service(client)
            if old_home is None:
                os.environ.pop("MEMVAULT_HOME", None)
            else:
                os.environ["MEMVAULT_HOME"] = old_home
    return result


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _print_table(name: str, groups: tuple[str, ...], table: dict[str, dict[str, Any]]) -> None:
    print(f"{name:<11} {'labels':>6} {'captured':>8} {'recall':>7} {'cands':>6} {'TP':>4} {'precision':>9}")
    for group in (*groups, "all"):
        s = table[group]
        print(
            f"{group:<11} {s['labels']:>6} {s['captured']:>8} {_fmt(s['recall']):>7} {s['candidates']:>6} "
            f"{s['true_positives']:>4} {_fmt(s['precision']):>9}"
        )


def print_quality(result: dict[str, Any], miner_name: str, verbose: bool, heldout_details: bool) -> None:
    for part, title in (("dev", "development part"), ("heldout", "held-out part (not tuned on)")):
        q = result["quality"][part]
        print(f"\n## {miner_name} miner, {title}: {q['transcripts']} transcripts\n")
        _print_table("category", CATEGORIES, q["per_category"])
        print()
        _print_table("route", ROUTES, q["per_route"])
        print(
            f"\nnegatives captured: {len(q['negatives_captured'])} of {q['negatives']}; "
            f"disputed labels matched (optional, not counted): {len(q['optional'])}"
        )
        if verbose and (part == "dev" or heldout_details):
            print("\nfalse positives:")
            for f in q["false_positives"]:
                print(f"  {f['transcript']} {f['category']}/{f['confidence']} {','.join(f['evidence'][:4])} "
                      f"[{f['why']}] {f['rule']}: {f['title']}")  # fmt: skip
            print("misses:")
            for m in q["misses"]:
                print(f"  {m['transcript']} {m['category']}/{m['confidence']} {m['lines']} {m['summary'][:110]}")


def print_report(result: dict[str, Any], miner_name: str, verbose: bool, heldout_details: bool) -> None:
    rows = result["reader"]["files"]
    width = max(len(r["transcript"]) for r in rows)
    print("## Reader: every line parsed into a turn or skipped by reason\n")
    print(f"{'transcript':<{width}}  {'KB':>6} {'lines':>6} {'parsed':>6} {'skipped':>7} {'turns':>5} {'cands':>5}")
    for r in rows:
        print(
            f"{r['transcript']:<{width}}  {r['bytes'] / 1024:>6.0f} {r['lines']:>6} {r['parsed']:>6} "
            f"{r['skipped']:>7} {r['turns']:>5} {r['candidates']:>5}"
        )
    tot = result["reader"]["totals"]
    print(
        f"{'TOTAL':<{width}}  {tot['bytes'] / 1024:>6.0f} {tot['lines']:>6} {tot['parsed']:>6} "
        f"{tot['skipped']:>7} {tot['turns']:>5} {tot['candidates']:>5}"
    )
    if verbose:
        print("\nskipped by reason, per transcript:")
        for r in rows:
            print(f"  {r['transcript']}: " + ", ".join(f"{k} {v}" for k, v in r["skipped_by"].items()))
    print(f"\nunaccounted lines (lines - parsed - skipped): {tot['unaccounted']}")
    print("skipped by reason: " + ", ".join(f"{k} {v}" for k, v in tot["skipped_by"].items()))
    print(f"parse + mine ({miner_name}), all files: {result['reader']['seconds'] * 1000:.0f} ms")
    print_quality(result, miner_name, verbose, heldout_details)
    e2e = result["end_to_end"]
    if "skipped" in e2e:
        print(f"\nend to end skipped: {e2e['skipped']}")
        return
    print("\n## End to end (offline miner): reflect_transcript into a copy of examples/vault\n")
    print(f"index and embedding service warm-up (not reflection): {e2e['warm_up_seconds']:.2f} s")
    base = (e2e["python_startup_ms_before"] + e2e["python_startup_ms_after"]) / 2
    print(
        f"machine load yardstick: `python -c pass` {e2e['python_startup_ms_before']:.0f} ms before, "
        f"{e2e['python_startup_ms_after']:.0f} ms after (about 20 ms on an idle machine)"
    )
    names = {
        "first_run": "first run",
        "second_run": "second run (same state)",
        "state_forgotten_run": "third run (cursors and ledger forgotten)",
    }
    for part, title in (("seven", "the seven interactive sessions"), ("all", "every transcript")):
        block = e2e[part]
        print(f"{title} ({block['transcripts']} files, {block['bytes'] / 1e6:.1f} MB):")
        for name, label in names.items():
            if name in block:
                run = block[name]
                ratio = run["seconds"] * 1000 / base
                cpu = run["cpu_seconds"] + (run["service_cpu_seconds"] or 0.0)
                print(f"  {label}: {run['seconds']:.2f} s (= {ratio:.0f}× python -c pass; CPU {cpu:.2f} s, of which "
                      f"the embedding service {run['service_cpu_seconds']} s), {run['written']} entries written, "
                      f"routes {run['routes']}")  # fmt: skip
                for problem in run["errors"]:
                    print(f"    error: {problem}")
    seven = e2e["seven"]
    ok = seven["first_run"]["seconds"] <= TARGET_SECONDS and seven["second_run"]["written"] == 0
    ok = ok and e2e["all"]["second_run"]["written"] == 0
    print(f"target: the seven sessions in ≤ {TARGET_SECONDS:g} s, second runs add 0: {'yes' if ok else 'NO'}")


def windows_report(data: Path) -> None:
    """What `--miner claude` would send: windows and characters per transcript (no call is made)."""
    total_windows = total_chars = 0
    for path in files(data):
        turns = transcript.read(path, tools=True).turns
        windows = miner.windows(turns)
        chars = sum(len(w.text) for w in windows)
        total_windows += len(windows)
        total_chars += chars
        print(f"{path.relative_to(data).as_posix()}: {len(windows)} windows, {chars:,} characters")
    print(f"total: {total_windows} windows (one Claude call each), {total_chars:,} characters")


def read_session(path: Path, host: str) -> tuple[list[transcript.Turn] | None, int, str]:
    """The session's turns through memvault's reader for its file, every bounded read mined like the product does
    (see `mine_session`), in the corpus's line numbers; None and why when the reader cannot read it.

    Gemini corpus lines of a one-object chat file (`session-*.json`) are 0-based indexes into its "messages"; a
    turn is placed there by its message id (Turn.uuid). In a line-per-record chat file (`session-*.jsonl`, Gemini
    CLI 0.39 and later) they are 1-based line numbers, as the reader's. The int is how many turns could not be
    placed.
    """
    turns: list[transcript.Turn] = []
    cursor = transcript.Cursor()
    try:
        for _ in range(10_000):
            read = readers.read(path, cursor, tools=True)
            turns += read.turns
            if not read.more or read.cursor == cursor:
                break
            cursor = read.cursor
    except Exception as exc:  # a reader that raises is a result: "unreadable"
        return None, 0, f"{type(exc).__name__}: {exc}"
    if not any(t.role == "user" for t in turns):
        return None, 0, "no user turn read"
    if host != "gemini" or not gemini_chat.whole_object(path):
        return turns, 0, ""
    index = _gemini_index(path)
    placed = [replace(t, line=index[t.uuid]) for t in turns if t.uuid in index]
    return placed, len(turns) - len(placed), ""


def _gemini_index(path: Path) -> dict[str, int]:
    """Message id → its 0-based index in a Gemini chat file's "messages" (the corpus's line numbers)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    messages = data.get("messages") if isinstance(data, dict) else None
    return {m["id"]: i for i, m in enumerate(messages or []) if isinstance(m, dict) and isinstance(m.get("id"), str)}


def bench_corpus(out: Path, corpus: Path, report_test: bool) -> dict[str, Any]:
    """Read, mine and score every exported corpus session of the splits asked for; see the module docstring."""
    parts = reflect_corpus.SPLITS if report_test else ("train", "dev")
    every = [s for s in reflect_corpus.sessions(corpus) if s["split"] in parts]
    rows: list[dict[str, Any]] = []
    for s in every:
        path = reflect_corpus.exported_path(out, s)
        row: dict[str, Any] = {"id": s["id"], "host": s["host"], "split": s["split"], "bytes": s["bytes"]}
        rows.append(row)
        if not path.is_file() or path.stat().st_size != s["bytes"]:
            row["status"] = "missing"
            continue
        start = time.perf_counter()
        turns, unplaced, why = read_session(path, s["host"])
        if turns is None:
            row.update(status="unreadable", why=why)
            continue
        judge.LAST_SOURCE[0] = "none"
        cands = miner.mine(turns, using=USING[0])
        row.update(status="ok", seconds=time.perf_counter() - start, candidates=cands, unplaced=unplaced,
                   vectors=judge.LAST_SOURCE[0])  # fmt: skip
        seen = {t.line for t in turns if t.role == "user"}
        row["turns_seen"] = sum(1 for line in s["turns"] if line in seen)
        row["turns_labelled"] = len(s["turns"])
    by_id = {s["id"]: s for s in every}
    result: dict[str, Any] = {"splits": {}, "held_out": None if report_test else
                              sum(1 for s in reflect_corpus.sessions(corpus) if s["split"] == "test")}  # fmt: skip
    for part in parts:
        table = {}
        for host in (*reflect_corpus.HOSTS, "all"):
            group = [r for r in rows if r["split"] == part and host in (r["host"], "all")]
            if not group:
                continue
            ok = [r for r in group if r["status"] == "ok"]
            scored = score_corpus({r["id"]: _in_line_space(r["candidates"]) for r in ok}, [by_id[r["id"]] for r in ok])
            seconds = sum(r["seconds"] for r in ok)
            mb = sum(r["bytes"] for r in ok) / 1e6
            table[host] = {
                "sessions": len(group),
                "read": len(ok),
                "unreadable": sum(1 for r in group if r["status"] == "unreadable"),
                "missing": sum(1 for r in group if r["status"] == "missing"),
                "turns_seen": f"{sum(r['turns_seen'] for r in ok)}/{sum(r['turns_labelled'] for r in ok)}",
                "unplaced_turns": sum(r["unplaced"] for r in ok),
                "seconds_per_session": round(seconds / len(ok), 3) if ok else None,
                "seconds_per_mb": round(seconds / mb, 3) if mb else None,
                **scored,
            }
        result["splits"][part] = table
    result["judge_vectors"] = dict(Counter(r["vectors"] for r in rows if r["status"] == "ok"))
    result["unreadable"] = [f"{r['id']}: {r['why']}" for r in rows if r["status"] == "unreadable"]
    result["missing"] = [r["id"] for r in rows if r["status"] == "missing"]
    return result


def _in_line_space(cands: list[miner.Candidate]) -> list[miner.Candidate]:
    return cands  # read_session already put the turns (and so the evidence) in the corpus's line numbers


def print_corpus(result: dict[str, Any], verbose: bool) -> None:
    cols = (
        f"{'host':<12} {'sess':>4} {'read':>4} {'unrd':>4} {'MUST':>9} {'NICE':>9} {'notes right':>13} "
        f"{'HIGH right':>11} {'neg saved':>12} {'s/sess':>7} {'s/MB':>6}"
    )
    for part, table in result["splits"].items():
        print(f"\n## corpus, {part} split (offline miner)\n")
        print(cols)
        for host, t in table.items():
            must, nice, notes, high, neg = t["MUST"], t["NICE"], t["notes"], t["high"], t["negatives"]
            print(
                f"{host:<12} {t['sessions']:>4} {t['read']:>4} {t['unreadable']:>4} "
                f"{must['captured']:>3}/{must['labels']:<3}{_fmt(must['recall']):>5} "
                f"{nice['captured']:>3}/{nice['labels']:<3}{_fmt(nice['recall']):>5} "
                f"{notes['right']:>4}/{notes['candidates']:<4}{_fmt(notes['precision']):>5} "
                f"{high['right']:>3}/{high['candidates']:<3}{_fmt(high['precision']):>5} "
                f"{neg['saved']:>4}/{neg['labels']:<4}{_fmt(neg['rate']):>5} "
                f"{_fmt(t['seconds_per_session']):>7} {_fmt(t['seconds_per_mb']):>6}"
            )
        for host, t in table.items():
            if t["unreadable"] and host != "all":
                print(f"{host}: unreadable: {t['unreadable']}")
        seen = ", ".join(f"{h} {t['turns_seen']}" for h, t in table.items() if h != "all")
        print(f"labelled user turns the reader returned as user turns: {seen}")
        if verbose and part != "test":
            a = table["all"]
            print("\nfalse positives:")
            for f in a["false_positives"]:
                print(f"  {f['transcript']} {f['category']}/{f['confidence']} {','.join(f['evidence'][:3])} "
                      f"[{f['why']}] {f['rule']}: {f['title'][:90]}")  # fmt: skip
            print("misses:")
            for m in a["misses"]:
                print(f"  {m['transcript']} {m['confidence']} {m['lines']} {m['quote'][:100]}")
    for line in result["unreadable"]:
        print(f"unreadable: {line}")
    if set(result["judge_vectors"]) - {"none"}:
        print(f"the judge's sentence vectors, by session: {result['judge_vectors']}")
    if result["missing"]:
        print(f"missing from the export (run scripts/reflect_corpus.py export): {', '.join(result['missing'])}")
    if result["held_out"] is not None:
        print(f"\ntest split: {result['held_out']} sessions held out, not read (--report-test reports them; "
              "never tune on them)")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, help="the transcripts folder (default: $MEMVAULT_BENCH_DATA/…)")
    parser.add_argument("--labels", type=Path, default=LABELS)
    parser.add_argument("--miner", choices=("offline", "claude"), default="offline")
    parser.add_argument("--windows", action="store_true", help="print what the Claude miner would send; no call")
    parser.add_argument("--verbose", action="store_true", help="list the development part's false positives and misses")
    parser.add_argument("--heldout-details", action="store_true", help="with --verbose, list the held-out part's too")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--no-e2e", action="store_true", help="skip the end-to-end reflection run")
    parser.add_argument("--corpus", type=Path, help="corpus mode: the folder `reflect_corpus.py export` wrote")
    parser.add_argument("--corpus-labels", type=Path, default=reflect_corpus.CORPUS, help="the corpus *.json folder")
    parser.add_argument("--report-test", action="store_true", help="corpus mode: also read and report the test split")
    parser.add_argument("--rules", action="store_true", help="offline: the rules alone (no statement judge)")
    parser.add_argument("--judge", action="store_true", help="offline: the statement judge instead of the rules")
    parser.add_argument("--judge-lexical", action="store_true", help="--judge without sentence vectors")
    args = parser.parse_args(argv)
    USING[0] = "judge" if args.judge or args.judge_lexical else "rules" if args.rules else None
    if args.judge_lexical:
        judge.VECTORS = False
    if args.corpus is not None or (args.data is None and bench_data.find(None, CORPUS_DATA, "--corpus")):
        found = bench_data.require(args.corpus, CORPUS_DATA, "--corpus", "the exported reflection corpus")
        corpus = bench_corpus(found, args.corpus_labels, args.report_test)
        if args.json:
            for table in corpus["splits"].values():
                for t in table.values():
                    t.pop("false_positives"), t.pop("misses")
            print(json.dumps(corpus, indent=2, default=str))
        else:
            print_corpus(corpus, args.verbose)
        return 0
    args.data = bench_data.require(args.data, bench_data.TRANSCRIPTS, "--data", "the Claude Code transcripts")
    if args.windows:
        windows_report(args.data)
        return 0
    mine = _mine_claude if args.miner == "claude" else _mine_offline
    rows, mined, seconds = reader_table(args.data, mine)
    skipped_by: Counter[str] = Counter()
    for r in rows:
        skipped_by.update(r["skipped_by"])
    totals = {k: sum(r[k] for r in rows) for k in ("bytes", "lines", "parsed", "skipped", "turns", "candidates")}
    totals["unaccounted"] = totals["lines"] - totals["parsed"] - totals["skipped"]
    totals["skipped_by"] = dict(skipped_by.most_common())
    labels = json.loads(args.labels.read_text(encoding="utf-8"))
    result: dict[str, Any] = {
        "miner": args.miner,
        "reader": {"files": rows, "totals": totals, "seconds": round(seconds, 4)},
        "quality": quality(mined, labels),
        "end_to_end": {"skipped": "--no-e2e"} if args.no_e2e else end_to_end(args.data),
    }
    unlabelled = sorted(set(mined) - set(labels["reviewed"]))
    result["not_reviewed"] = unlabelled
    if args.json:
        if not args.heldout_details:  # the held-out part's details stay out of sight unless asked for
            for key in ("false_positives", "misses", "optional"):
                result["quality"]["heldout"].pop(key, None)
        print(json.dumps(result, indent=2, default=str))
    else:
        print_report(result, args.miner, args.verbose, args.heldout_details)
        if unlabelled:
            print(f"\nwarning: transcripts without a review label: {unlabelled}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
