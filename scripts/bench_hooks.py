"""Benchmark every hook as the host runs it: a fresh process fed the event's JSON, on a 20k-note vault.

    python scripts/bench_hooks.py [--installs regular,checkout] [--locomo FILE] [--size 20000] [--runs 30]
                                  [--keep DIR] [--venv DIR] [--json OUT]

By default it measures what users have first: a regular install (a plain venv with `pip install
.[embeddings]` of this checkout, made once under --venv and refreshed with the checkout's code on every
run), then this checkout's own venv (an editable install) as a second column. Each is measured by a
worker (`--worker`) run with that install's interpreter: the hooks, the warm service and `reindex` all
come from that install. The profile below the table splits the warm prompt hook's time from the hook log
of the regular install's run: the hook process until the service took the request, the service's op
(recall's stages: `search.Stages`), and the hook process after the answer.

Reports p50/p95 wall time per hook, from the hook process's spawn to its exit (what the host waits
for), each hook run as `memvault install` registers it (`python -S <script>`), warm (embedding
service up) and cold (service down: keyword-only recall, as in a session's first seconds). A bare
`python -c pass` runs right before every hook run, so each run has its own ratio on a machine whose
load drifts; the table gives p50/p95 of the times and of the ratios. The ratios depend on the Python
that runs this script: a development checkout's venv (editable install) starts in about 40 ms, a
regular install's in about 17, so run it from the venv you mean to measure. For UserPromptSubmit it
also gives recall's own time inside the process that ran it (the service, or the hook when
keyword-only), from the hook log; "served" in a result means the warm service ran the event for the
hook process (`memvault.hooks.fast`). The first UserPromptSubmit after the service starts (it then
loads the index's vectors into memory) has a row of its own; the warm rows start once the vectors
are in memory, as SessionStart's job has them in a session. Plus UserPromptSubmit right after a
config edit (the settings cache is rebuilt from YAML). The vault is bench_latency.py's synthetic one
plus 20 always-load notes; its notes get copies of real vectors from an embedded 1,000-note vault
(KNN cost does not depend on the vectors' content). Background jobs the hooks start are waited for
between runs, so one run's job never slows the next run; their own durations are reported from the
hook log. The notes' text comes from LoCoMo (--locomo FILE, or $MEMVAULT_BENCH_DATA/locomo/).
Last, the prompt hook's physical floor in the same run (`hook_floor.py`): a `python -S` hand-over with nothing
of memvault in it, the query's encoding, and a keyword-only search with nothing around it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_latency as bl  # the synthetic vault and its helpers are shared
import hook_floor

import memvault
from memvault.claude.settings import INTERPRETER_FLAGS

RUN = time.strftime("%Y%m%d%H%M%S")

REPO = bl.REPO
HOOKS = Path(memvault.__file__).resolve().parent / "hooks"  # the install's own hook scripts (the worker's)
PYTHON = [sys.executable, *INTERPRETER_FLAGS]  # a hook's command line, as `memvault install` registers it
TRANSCRIPT = REPO / "tests" / "data" / "transcripts" / "spotter" / "short.jsonl"  # a real one, carried in the repo
TARGETS = {"UserPromptSubmit warm": "p50 ≤ 2×, p95 ≤ 3× bare", "UserPromptSubmit cold": "p50 ≤ 3× bare",
           "SessionStart": "p50 ≤ 2× bare (as the client reports it)", "Stop": "p50 ≤ 1.5× bare"}  # fmt: skip
TORCH_SPEC = os.environ.get("MEMVAULT_TORCH_SPEC", "torch==2.13.0")  # as scripts/test.sh: the CPU build first


def hook(name: str, payload: dict, env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(
        [*PYTHON, str(HOOKS / f"{name}.py")], input=json.dumps(payload), env=env, capture_output=True, text=True
    )
    elapsed = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise SystemExit(f"{name} exited {done.returncode}: {done.stderr[-2000:]}")
    return elapsed, done.stdout


def log_records(home: Path) -> list[dict]:
    out = []
    for path in sorted((home / "state" / "logs").glob("hooks-*.jsonl")):
        out += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return out


def wait_jobs(home: Path, expected: int, timeout: float = 300) -> None:
    """Until the hook log holds `expected` background-job records (each job logs one line when it ends)."""
    deadline = time.monotonic() + timeout
    while sum(r["hook"].startswith("job:") for r in log_records(home)) < expected:
        if time.monotonic() > deadline:
            raise SystemExit("a background job did not finish")
        time.sleep(0.05)


def wait_in_memory(index: Path, timeout: float = 300) -> None:
    """Until the warm service lists `index` among those whose vectors it holds in memory."""
    from memvault.recall import client

    deadline = time.monotonic() + timeout
    while str(index) not in ((client.status() or {}).get("in_memory") or []):
        if time.monotonic() > deadline:
            raise SystemExit("the service did not load the index's vectors")
        time.sleep(0.1)


def measure(
    label: str, name: str, event: str, env: dict[str, str], home: Path, runs: int, extra: dict, touch: bool = False,
    turn: dict | None = None,
) -> dict:  # fmt: skip
    """Run one hook `runs` times (a new session id each time), each right after a bare `python -c pass`;
    `touch` edits the config before every run; `turn` (a Stop event) ends an agent turn before every run, and its
    background job (reflection, which also counts the session's recalls into the index) is waited for."""
    times, ratios, recall_ms, results = [], [], [], {}
    jobs = sum(r["hook"].startswith("job:") for r in log_records(home))
    for i in range(runs):
        if turn is not None:
            hook("stop", {"session_id": f"bench-{label}-{RUN}-{i}", "hook_event_name": "Stop", "cwd": str(REPO),
                          **turn}, env)  # fmt: skip
            jobs += 1
            wait_jobs(home, jobs)
        fields = {k: (v[i % len(v)] if isinstance(v, list) else v) for k, v in extra.items()}
        session = f"bench-{label}-{RUN}-{i}"  # new in every run too: a kept home remembers what each session was given
        payload = {"session_id": session, "hook_event_name": event, "cwd": str(REPO), **fields}
        if touch:
            os.utime(home / "config.yaml")
        bare = bl.bare(env, 1)[0]
        elapsed, _ = hook(name, payload, env)
        times.append(elapsed)
        ratios.append(elapsed / bare)
        record = [r for r in log_records(home) if r["hook"] == event][-1]
        key = f"{record['result']}/{record.get('mode', '-')}/{'injected' if record.get('injected') else 'nothing'}"
        key += "/served" if record.get("served") else ""  # run by the warm service for the hook (hooks.fast)
        results[key] = results.get(key, 0) + 1
        if isinstance(record.get("recall_ms"), (int, float)):
            recall_ms.append(record["recall_ms"])
        if name != "user_prompt_submit":
            jobs += 1
            wait_jobs(home, jobs)
    return {"label": label, "p50": statistics.median(times), "p95": bl.pct(times, 0.95), "max": max(times),
            "ratio_p50": statistics.median(ratios), "ratio_p95": bl.pct(ratios, 0.95), "results": results,
            "recall_ms_p50": statistics.median(recall_ms) if recall_ms else None,
            "recall_ms_p95": bl.pct(recall_ms, 0.95) if recall_ms else None}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, help="locomo10.json (default: $MEMVAULT_BENCH_DATA/locomo/)")
    parser.add_argument("--size", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--keep", type=Path, help="keep (and reuse) the vaults and state under this folder")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument(
        "--budget-ms", type=int, default=300, help="recall.prompt_budget_ms; raise it on a loaded machine"
    )
    parser.add_argument("--installs", default="regular,checkout", help="which installs to measure, in order")
    parser.add_argument("--venv", type=Path, default=Path.home() / ".cache" / "memvault" / "bench-regular-venv",
                        help="the regular install's venv (made once, its memvault refreshed every run)")  # fmt: skip
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)  # measure with this interpreter
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    bl.use_locomo(args.locomo)  # before any venv is made: without the data, one `skipped:` line
    base = (args.keep or Path(tempfile.mkdtemp(prefix="mv-bench-hooks-"))).resolve()
    base.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict] = {}
    try:
        for name in [n.strip() for n in args.installs.split(",") if n.strip()]:
            python = regular_install(args.venv) if name == "regular" else Path(sys.executable)
            out = base / f"result-{name}.json"
            command = [str(python), __file__, "--worker", "--keep", str(base), "--json", str(out), "--size",
                       str(args.size), "--runs", str(args.runs), "--budget-ms", str(args.budget_ms)]  # fmt: skip
            command += ["--locomo", str(bl.LOCOMO)]
            print(f"== {name}: {python}", flush=True)
            subprocess.run(command, check=True, cwd=base)  # not the checkout: `python -m` would import its memvault
            results[name] = json.loads(out.read_text())
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    print_both(results, args.size)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


def regular_install(venv: Path) -> Path:
    """A plain venv with this checkout installed as a user installs it (not editable); its Python."""
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    quiet = {**os.environ, "PYTHONWARNINGS": "ignore"}
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([*pip, TORCH_SPEC], check=True, env=quiet)
        subprocess.run([*pip, f"{REPO}[embeddings]"], check=True, env=quiet)
    # this checkout's code, as a wheel would install it: the dependencies are already there
    subprocess.run([*pip, "--no-deps", "--force-reinstall", str(REPO)], check=True, env=quiet)
    return python


def worker(args: argparse.Namespace) -> int:
    """Measure every hook with this interpreter's memvault; write the rows, the bare starts and the profile."""
    bl.use_locomo(args.locomo)
    if Path(memvault.__file__).resolve().is_relative_to(REPO):
        bl.compile_package()  # an install has its bytecode written; the checkout gets it here
    base = args.keep or Path(tempfile.mkdtemp(prefix="mv-bench-hooks-"))
    home = base / "home"
    vault, donor = base / f"vault-{args.size}", base / "vault-1000"
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(
        f"vault:\n  root: {vault}\nrecall:\n  prompt_budget_ms: {args.budget_ms}\n", encoding="utf-8"
    )
    env = {**os.environ, "MEMVAULT_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    for var in ("MEMVAULT_VAULT", "MEMVAULT_CONFIG", "MEMVAULT_ENABLED"):
        env.pop(var, None)
    os.environ.update(env)
    from memvault.recall import client

    client.start("default", 30)
    if client.wait_ready(180) is None:
        raise SystemExit("the embedding service did not start")
    rows = []
    try:
        for folder, size in ((donor, 1000), (vault, args.size)):
            if not folder.exists():
                bl.write_vault(folder, size)
        always = vault / "MemoryVault" / "personal-private" / "_always-load"
        always.mkdir(parents=True, exist_ok=True)
        for n in range(20):
            (always / f"rule-{n:02d}.md").write_text(f"# Rule {n}\n\n" + " ".join(bl.sentences()[n * 5 : n * 5 + 4]))
        _, _, donor_report = bl.reindex(donor, {**env, "MEMVAULT_VAULT": str(donor)}, keyword_only=False)
        _, _, report = bl.reindex(vault, env, keyword_only=True)
        bl.fill_vectors(Path(report["index"]), Path(donor_report["index"]), env)
        transcript = base / "transcript.jsonl"
        shutil.copy(TRANSCRIPT, transcript)
        bare = bl.bare(env, args.runs)
        bare_s = bl.bare(env, args.runs, INTERPRETER_FLAGS)  # the hooks' own start, for comparison
        prompt = {"prompt": bl.PROMPTS}
        reflect = {"transcript_path": str(transcript), "stop_hook_active": False}
        # The service loads an index's vectors into memory on its first recall of it (then reloads them in the
        # background after writes): that first prompt is reported on its own row, the warm rows come after it.
        rows.append(measure("UserPromptSubmit, first after the service started", "user_prompt_submit",
                            "UserPromptSubmit", env, home, 1, prompt))  # fmt: skip
        # Warm means the service holds the index's vectors in memory, as a session's SessionStart job has it do
        # (hooks.jobs.load_vectors); until then recall scans with sqlite-vec while a thread loads them.
        wait_in_memory(Path(report["index"]))
        for state in ("warm", "cold"):
            if state == "cold":
                client.stop()
            rows.append(measure(f"UserPromptSubmit {state}", "user_prompt_submit", "UserPromptSubmit", env, home,
                                args.runs, prompt))  # fmt: skip
            if state == "warm":  # as in a session: the turn before ended, and its job wrote the index meanwhile
                rows.append(measure("UserPromptSubmit warm, after a turn's job", "user_prompt_submit",
                                    "UserPromptSubmit", env, home, args.runs, prompt, turn=reflect))  # fmt: skip
            start = {"source": "startup", "transcript_path": str(transcript)}
            rows.append(measure(f"SessionStart {state}", "session_start", "SessionStart", env, home, args.runs, start))
            rows.append(measure(f"Stop {state}", "stop", "Stop", env, home, args.runs, reflect))
        rows.append(measure("UserPromptSubmit after a config edit", "user_prompt_submit", "UserPromptSubmit", env,
                            home, max(5, args.runs // 3), prompt, touch=True))  # fmt: skip
        few = max(5, args.runs // 3)
        rows.append(measure("SessionEnd", "session_end", "SessionEnd", env, home, few, reflect))
        idle = {"notification_type": "idle_prompt", "message": "Claude is waiting for your input", **reflect}
        rows.append(measure("Notification idle_prompt", "idle", "Notification", env, home, few, idle))
        jobs: dict[str, list[float]] = {}
        for r in log_records(home):
            if r["hook"].startswith("job:"):
                jobs.setdefault(r["hook"], []).append(r["duration_ms"])
        profile = prompt_profile(log_records(home))
        floor = hook_floor.measure(env, args.runs, Path(report["index"]), bl.PROMPTS)
    finally:
        client.stop()
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    print_table(rows, statistics.median(bare), statistics.median(bare_s), args.size, jobs)
    print_profile(profile)
    hook_floor.print_floor(floor, statistics.median(bare))
    if args.json:
        out = {"rows": rows, "bare_p50": statistics.median(bare), "bare_no_site_p50": statistics.median(bare_s)}
        out |= {"jobs": jobs, "profile": profile, "floor": floor, "python": sys.executable}
        args.json.write_text(json.dumps(out, indent=2))
    return 0


def prompt_profile(records: list[dict]) -> dict[str, float]:
    """p50 of each part of the warm prompt hook's time, from its log records (the hook's and the service's marks)."""
    warm = [r for r in records if r["hook"] == "UserPromptSubmit" and r.get("served")  # a hand-run hook has no session
            # this run's warm row only (a kept home's log holds the runs before it too)
            and (r.get("session") or "").startswith(f"bench-UserPromptSubmit warm-{RUN}-")
            and isinstance(r.get("service_ms"), dict)]  # fmt: skip
    if not warm:
        return {}
    parts: dict[str, list[float]] = {}
    for r in warm:
        reached, ran = r["service_ms"]["reached"], r["service_ms"]["ran"]
        recall = float(r.get("recall_ms") or 0.0)
        split = {"hook process: start, imports, request sent, op taken": reached,
                 **{f"service: recall {k}": float(v) for k, v in (r.get("recall_stages") or {}).items()},
                 "service: the rest of the op (settings, injected text, log record)": ran - recall
                 - float((r.get("recall_stages") or {}).get("open", 0.0)),
                 "answer back to the hook process": r.get("answered_ms", reached + ran) - reached - ran,
                 "hook process: writes, output, exit": r["duration_ms"] - r.get("answered_ms", r["duration_ms"]),
                 "total (the hook's own duration_ms)": r["duration_ms"]}  # fmt: skip
        for key, value in split.items():
            parts.setdefault(key, []).append(value)
    return {key: round(statistics.median(values), 2) for key, values in parts.items()}


def print_profile(profile: dict[str, float]) -> None:
    if not profile:
        return
    print("\nwhere the warm prompt hook's time goes (p50 of each part over the warm runs, from the hook log):\n")
    print("| part | p50 |\n|---|---|")
    for key, value in profile.items():
        print(f"| {key} | {value:.1f} ms |")


def print_both(results: dict[str, dict], size: int) -> None:
    """One table, a column per install (the first is the regular install)."""
    names = list(results)
    print(f"\n{size:,} notes; p50 / p95 ms, and p50 / p95 of hook ÷ a bare `python -c pass` run right before it\n")
    print("| hook | " + " | ".join(f"{n} (bare {results[n]['bare_p50']:.0f} ms)" for n in names) + " | target |")
    print("|---" * (len(names) + 2) + "|")
    for i, row in enumerate(results[names[0]]["rows"]):
        cells = []
        for n in names:
            r = results[n]["rows"][i]
            cells.append(f"{r['p50']:.0f} / {r['p95']:.0f} ms: {r['ratio_p50']:.2f}× / {r['ratio_p95']:.2f}×")
        target = next((t for key, t in TARGETS.items() if row["label"].startswith(key)), "")
        print(f"| {row['label']} | " + " | ".join(cells) + f" | {target} |")
    for n in names:
        if results[n].get("profile"):
            print(f"\nprofile, {n}:")
            print_profile(results[n]["profile"])
        if results[n].get("floor"):
            print(f"\nfloor, {n}:")
            hook_floor.print_floor(results[n]["floor"], results[n]["bare_p50"])


def print_table(rows: list[dict], bare: float, bare_s: float, size: int, jobs: dict[str, list[float]]) -> None:
    print(f"\n{size:,} notes; bare `python -c pass` p50 {bare:.0f} ms (one before every hook run; the ratios)")
    flags = " ".join(INTERPRETER_FLAGS)
    print(f"bare `python {flags} -c pass` p50 {bare_s:.0f} ms (the hooks run with {flags}, as installed)\n")
    print("| hook | p50 | p95 | max | p50 / p95 of hook ÷ bare | recall in process p50 / p95 | results | target |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        target = next((t for key, t in TARGETS.items() if r["label"].startswith(key)), "")
        inside = f"{r['recall_ms_p50']:.0f} / {r['recall_ms_p95']:.0f} ms" if r.get("recall_ms_p50") is not None else ""
        print(f"| {r['label']} | {r['p50']:.0f} ms | {r['p95']:.0f} ms | {r['max']:.0f} ms | "
              f"{r['ratio_p50']:.2f}× / {r['ratio_p95']:.2f}× | {inside} | {r['results']} | {target} |")  # fmt: skip
    print("\nbackground jobs (not waited for by the hooks): " + ", ".join(
        f"{name} p50 {statistics.median(v):.0f} ms (n={len(v)})" for name, v in sorted(jobs.items())))  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
