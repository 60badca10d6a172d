"""What the prompt path imports, and what that costs: a real UserPromptSubmit hook under `python -X importtime`.

    python scripts/bench_imports.py [--runs 21] [--against CHECKOUT]

Runs this checkout's UserPromptSubmit launcher (and, with --against, another checkout's, alternating
run by run) on a copy of examples/vault with a keyword index, no embedding service, and reports per
checkout the median over runs of: the import time of every module the hook process loaded (the sum
of `-X importtime`'s self column), the part spent in memvault's own modules, how many modules it
loaded, and the process's wall time; `python -c pass` is timed in the same run for scale.
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
import bench_latency

REPO = bench_latency.REPO
PROMPT = "how should I write tests for the billing service?"


def run_hook(checkout: Path, env: dict[str, str], vault: Path) -> dict[str, float]:
    session = f"bench-{time.monotonic_ns()}"  # a new session each run: nothing deduplicated away
    payload = {"hook_event_name": "UserPromptSubmit", "session_id": session, "prompt": PROMPT, "cwd": str(vault)}
    launcher = checkout / "memvault" / "hooks" / "user_prompt_submit.py"
    env = {**env, "PYTHONPATH": str(checkout)}  # this checkout's memvault, whatever is installed
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-X", "importtime", str(launcher)], input=json.dumps(payload), env=env,
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    wall = (time.perf_counter() - started) * 1000
    total = own = count = 0
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _cumulative, name = line.split(":", 1)[1].split("|")
        total, count = total + int(self_us), count + 1
        own += int(self_us) if name.strip().startswith("memvault") else 0
    if '"additionalContext"' not in done.stdout:
        raise SystemExit(f"the hook in {checkout} injected nothing: {done.stdout[:500]} {done.stderr[-500:]}")
    return {"imports_ms": total / 1000, "memvault_ms": own / 1000, "modules": count, "wall_ms": wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--against", type=Path, help="another checkout (e.g. a git worktree of an older commit)")
    args = parser.parse_args()
    checkouts = {"this": REPO} | ({"against": args.against.resolve()} if args.against else {})
    for checkout in checkouts.values():
        bench_latency.compile_package(checkout)
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "vault"
        shutil.copytree(REPO / "examples" / "vault", vault)
        env = {**os.environ, "MEMVAULT_HOME": str(Path(tmp) / "home"), "MEMVAULT_VAULT": str(vault)}
        env.pop("PYTHONPATH", None)
        memvault = [sys.executable, "-m", "memvault"]
        subprocess.run([*memvault, "init", str(vault)], env=env, check=True, capture_output=True)
        subprocess.run([*memvault, "reindex", "--keyword-only"], env=env, check=True, capture_output=True)
        for checkout in checkouts.values():  # first run fills the settings cache and the bytecode
            run_hook(checkout, env, vault)
        results: dict[str, list[dict[str, float]]] = {name: [] for name in checkouts}
        bares = []
        for _ in range(args.runs):
            bares.append(bench_latency.bare(env, 1)[0])
            for name, checkout in checkouts.items():
                results[name].append(run_hook(checkout, env, vault))
    print(f"python -c pass: p50 {statistics.median(bares):.1f} ms ({args.runs} runs)")
    print(f"{'checkout':<10} {'imports ms':>11} {'memvault ms':>12} {'modules':>8} {'wall ms':>8}")
    for name, rows in results.items():
        med = {key: statistics.median(r[key] for r in rows) for key in rows[0]}
        cells = f"{med['imports_ms']:>11.1f} {med['memvault_ms']:>12.1f} {med['modules']:>8.0f} {med['wall_ms']:>8.1f}"
        print(f"{name:<10} {cells}")


if __name__ == "__main__":
    main()
