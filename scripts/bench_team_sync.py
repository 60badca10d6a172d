"""Team memory, the member's side of a pull: the real `memvault team pull` into a fresh vault, timed.

    python scripts/bench_team_sync.py [--first 10000] [--changes 1000] [--runs 3]

A throwaway PostgreSQL with pgvector (tests/pg.py, removed at the end); one member publishes `--first` entries
(real paragraphs of this repository's wiki, as workflow notes of one or two chunks) through `team.server.publish`;
a second member, with a HOME, a vault and memvault state of their own and a password login over TCP, runs:

- the first pull: every entry into `MemoryVault/team/<team>/` (journalled vault changes of 500 files, the index
  refreshed for them), `--runs` times into a new vault each;
- an incremental pull: `--changes` entries edited by the first member, pulled after a first pull;
- then, with the server stopped, the SessionStart and UserPromptSubmit hook processes of that member (team memory
  configured, the mirror in the vault) against the same vault and config without the team section (`--hooks`).

Each figure is the wall clock of the `memvault team pull` process, with a bare `python -c pass` from the same
run for scale. The server's side alone (changes_since at 100,000 entries) is in scripts/bench_team.py.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memvault.store import privacy, secrets  # noqa: E402
from memvault.team import admin, envelope, server  # noqa: E402
from tests.pg import TeamDb, new_database, start_server  # noqa: E402  (the throwaway server)


def paragraphs(limit: int) -> list[str]:
    """Real prose of the wiki, cycled to `limit` bodies made distinct by their number."""
    found: list[str] = []
    for name in sorted((ROOT / "wiki").rglob("*.md")):
        for para in re.split(r"\n\s*\n", name.read_text(encoding="utf-8")):
            flat = " ".join(para.split())
            prose = 120 <= len(flat) <= 1500 and not flat.startswith(("|", "```", "<", "#", "-"))
            if prose and not privacy.has_private_span(flat) and not secrets.scan(flat):  # what a publish refuses
                found.append(flat)
    return [f"{found[n % len(found)]}\n\nEntry {n}." for n in range(limit)]


def member_env(db: TeamDb, home: Path, role: str, password: str) -> dict[str, str]:
    vault = home / "vault"
    (vault / ".obsidian").mkdir(parents=True)
    (vault / "MemoryVault").mkdir()
    state = home / ".memvault"
    state.mkdir()
    (state / "config.yaml").write_text(
        f"vault:\n  root: {vault}\nembedding:\n  warm_service: false\nteam:\n  service: team\n  teams: [backend]\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PG", "MEMVAULT_", "XDG_"))}
    env.update(HOME=str(home), MEMVAULT_HOME=str(state), MEMVAULT_VAULT=str(vault))
    env.update(db.member_home(home, role, password))
    return env


def pull(env: dict[str, str]) -> float:
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "memvault", "team", "pull"], env=env, capture_output=True, text=True)
    took = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"the pull failed:\n{result.stdout}\n{result.stderr}")
    return took


def publish(db: TeamDb, role: str, bodies: list[str]) -> list[str]:
    uids = []
    with db.connect(role) as conn:
        for n, body in enumerate(bodies):
            text = f"# Team rule {n}\n\n{body}\n"
            fm = {"kind": "workflow"}
            uid = str(uuid.uuid4())
            entry = server.EntryIn(uid, "team", "backend", "workflow", f"Team rule {n}", f"team-rule-{n}", text, fm,
                                   envelope.content_hash(text, fm))  # fmt: skip
            server.publish(conn, entry)
            uids.append(uid)
    return uids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--first", type=int, default=10_000)
    parser.add_argument("--changes", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--hooks", type=int, default=30, help="hook runs per case with the server down (0: none)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="memvault-bench-team-"))
    pg = start_server()
    try:
        db = new_database(pg)
        roles = {name: db.role(name) for name in ("author", "reader")}
        with db.connect() as conn:
            for name, role in roles.items():
                admin.add_member(conn, role, ["backend"], password=f"pw-{name}")
        started = time.perf_counter()
        uids = publish(db, roles["author"], paragraphs(args.first))
        print(f"published {len(uids):,} entries in {time.perf_counter() - started:.1f} s")
        bare = []
        for _ in range(5):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            bare.append(time.perf_counter() - t)
        base = statistics.median(bare)
        print(f"python -c pass: {base * 1000:.0f} ms (median of 5)")
        firsts = []
        for run in range(args.runs):
            env = member_env(db, root / f"reader{run}", roles["reader"], "pw-reader")
            firsts.append(pull(env))
            print(f"first pull of {args.first:,}: {firsts[-1]:.1f} s (run {run + 1})")
        mirror = Path(env["MEMVAULT_VAULT"]) / "MemoryVault" / "team" / "backend"
        assert len(list(mirror.glob("*.md"))) == args.first
        with db.connect(roles["author"]) as conn:
            conn.execute(
                "UPDATE memvault.entries SET body = body || %s WHERE uid = ANY(%s::uuid[])",
                ("\nRevised.\n", uids[: args.changes]),
            )
            conn.commit()
        incremental = pull(env)
        print(f"incremental pull of {args.changes:,} changes: {incremental:.1f} s")
        print(
            f"RESULT first pull {args.first:,}: median {statistics.median(firsts):.1f} s "
            f"({statistics.median(firsts) / args.first * 1000:.2f} ms/entry, {len(firsts)} runs); "
            f"incremental {args.changes:,}: {incremental:.1f} s ({incremental / args.changes * 1000:.2f} ms/change); "
            f"python -c pass {base * 1000:.0f} ms"
        )
        if args.hooks:
            pg.stop("immediate")  # the server absent: the hooks of a session with team memory configured
            hook_figures(env, args.hooks, base)
    finally:
        pg.stop("immediate")
        shutil.rmtree(pg.root, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)


HOOKS = ROOT / "memvault" / "hooks"
PROMPT = "how do I keep the team's notes in sync when the database server is down?"


def hook_figures(env: dict[str, str], runs: int, base: float) -> None:
    """SessionStart and UserPromptSubmit hook processes with team memory configured and its server down, against
    the same vault with the team section taken out of the config: p50/p95 over `runs` each, interleaved."""
    import json

    config = Path(env["MEMVAULT_HOME"]) / "config.yaml"
    plain = config.with_name("plain.yaml")
    plain.write_text(config.read_text().split("team:")[0])
    cases = {"team, server down": {**env}, "no team": {**env, "MEMVAULT_CONFIG": str(plain)}}
    times: dict[tuple[str, str], list[float]] = {}
    for n in range(runs):
        for case, case_env in cases.items():
            for hook, event in (("session_start", "SessionStart"), ("user_prompt_submit", "UserPromptSubmit")):
                payload = {"session_id": f"bench-{n}", "transcript_path": "/nonexistent", "cwd": env["HOME"],
                           "hook_event_name": event, "prompt": PROMPT, "source": "startup"}  # fmt: skip
                started = time.perf_counter()
                subprocess.run([sys.executable, str(HOOKS / f"{hook}.py")], input=json.dumps(payload), env=case_env,
                               capture_output=True, text=True, check=True)  # fmt: skip
                times.setdefault((case, hook), []).append((time.perf_counter() - started) * 1000)
    for (case, hook), ms in sorted(times.items()):
        ms.sort()
        p50, p95 = statistics.median(ms), ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
        print(f"RESULT hook {hook} ({case}): p50 {p50:.0f} ms, p95 {p95:.0f} ms, p50 {p50 / (base * 1000):.2f}x "
              f"python -c pass ({len(ms)} runs)")  # fmt: skip


if __name__ == "__main__":
    main()
