"""Background work the hooks start and never wait for: warm-up and reindex, reflection, the idle sweep.

Run as `python -m memvault.hooks.jobs start | reflect --session ID --transcript PATH [--final] | idle`.
Each run logs one line to the hook log (hook `job:<name>`), exactly like the hooks do.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path
from typing import Any

from memvault import paths, runtime
from memvault.config import load
from memvault.store import disk
from memvault.vault.core import Vault, open_vault

ORPHAN_S = 3600  # a `.start` marker with no activity for an hour: the session crashed before SessionEnd
FINAL_WAIT_S = 600  # a final reflection waits this long for an incremental one of the same session


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memvault.hooks.jobs")
    parser.add_argument("job", choices=("start", "reflect", "idle"))
    parser.add_argument("--session")
    parser.add_argument("--transcript")
    parser.add_argument("--final", action="store_true")
    parser.add_argument("--project", help="the session's working directory (its .claude/skills are indexed)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    record: dict[str, Any] = {"hook": f"job:{args.job}", "session": args.session, "result": "success"}
    try:
        config = load()
        if not config.memory.enabled:
            record.update(result="skipped", reason="memory.enabled is false (kill switch)")
        else:
            vault = open_vault(config=config)
            record["recalls_counted"] = fold_recalls(vault)  # before the sweep prunes old log files
            if args.job == "start":
                record.update(warm_up(vault, Path(args.project) if args.project else None))
            elif args.job == "reflect":
                transcript = Path(args.transcript or "")
                record.update(reflect_session(vault, args.session or "unknown", transcript, args.final))
            else:
                if args.session and args.transcript and not runtime.marker(args.session, "start").exists():
                    runtime.write_start_marker(args.session, {"transcript_path": args.transcript})
                record.update(sweep(vault, idle_s=config.reflection.idle_minutes * 60))
            if args.job in ("start", "idle"):  # last: a web run may take minutes, and nothing waits for this job
                record["discovery"] = discovery(vault, Path(args.project) if args.project else None)
    except Exception as exc:
        record.update(result="error", reason=f"{type(exc).__name__}: {exc}"[:500])
    record["duration_ms"] = round((time.monotonic() - started) * 1000, 1)
    with contextlib.suppress(OSError):
        runtime.log_event(record)
    return 0


def discovery(vault: Vault, project: Path | None) -> dict[str, Any] | str:
    """New ideas researched and the weekly skill discovery (`discovery.cadence`); never fails the job."""
    from memvault.discovery import cadence

    try:
        return cadence.run(vault, project)
    except Exception as exc:
        return f"failed: {type(exc).__name__}: {exc}"[:200]


def fold_recalls(vault: Vault) -> int | str:
    """Count the injections the hooks logged into the index's recall analytics (never fails the job)."""
    from memvault.recall import analytics
    from memvault.vault import indexing

    try:
        index, _ = indexing.open_index(vault.root, vault.config)
        try:
            return analytics.fold(index, vault.root)
        finally:
            index.close()
    except Exception as exc:
        return f"failed: {type(exc).__name__}: {exc}"[:200]


def warm_up(vault: Vault, project: Path | None = None) -> dict[str, Any]:
    """SessionStart's background half: the embedding service, an incremental reindex, crashed sessions, skills."""
    from memvault.errors import MemvaultError
    from memvault.vault import indexing

    warm = vault.config.embedding.warm_service
    if warm:
        indexing.ensure_service(vault.config)
    out: dict[str, Any] = {}
    try:  # another session's warm-up may be reindexing this vault right now: that one is enough
        report = indexing.reindex(vault.root, vault.config, vectors="service" if warm else "none")
        out.update(reindexed=report.changed, embedded=report.embedded, warnings=report.warnings or None)
    except MemvaultError as exc:
        out.update(reindexed=None, reason=str(exc))
    out.update(team_sync(vault))  # after the local reindex: a team server that is down delays nothing local
    try:  # whatever a crashed session's transcript holds, the skills are still indexed
        out.update(sweep(vault, idle_s=None))
    except Exception as exc:
        out["sweep"] = f"failed: {type(exc).__name__}: {exc}"[:200]
    out["skills"] = index_skills(vault, project)
    if warm:  # last: the reindex and the skills index may have just changed the index
        out["vectors_loading"] = load_vectors(vault)
    return out


def team_sync(vault: Vault) -> dict[str, Any]:
    """Team memory, when configured: send publishes a person queued, pull the team's changes (short timeout)."""
    if not (vault.config.team.service or vault.config.team.conninfo):
        return {}
    from memvault.team import status

    return status.session_sync(vault)


def load_vectors(vault: Vault) -> bool:
    """Have the warm service load this vault's vectors into memory now (one small recall starts it), so the
    session's first prompt does not search with sqlite-vec while they load; whether the service answered."""
    from memvault.recall import client

    return client.recall(str(vault.index_file), "warm up", {"k": 1}, timeout=2.0) is not None


def index_skills(vault: Vault, project: Path | None) -> dict[str, int] | str:
    """Keep `personal-skills/` in step with the installed skills (a write only when one changed)."""
    from memvault.claude import skills_index

    try:
        report = skills_index.index_skills(vault, project=project or paths.state_dir())
    except Exception as exc:  # a broken skill folder must not stop the rest of the warm-up
        return f"failed: {type(exc).__name__}: {exc}"[:200]
    return {k: len(v) for k, v in report.as_dict().items() if isinstance(v, list) and v}


def reflect_session(vault: Vault, session: str, transcript: Path, final: bool) -> dict[str, Any]:
    """Reflect what is new in one session's transcript; a final pass marks the session reflected."""
    if paths.stop_file().exists():
        return {"result": "skipped", "reason": "the STOP file halts reflection"}
    if not transcript.is_file():
        if final:
            runtime.mark_reflected(session)
        return {"result": "skipped", "reason": f"no transcript at {transcript}"}
    # An incremental pass gives way to one already running (the next Stop picks up what it missed);
    # the final pass waits for it, or the session would never be marked reflected.
    lock_file = paths.ensure_private_dir(runtime.sessions_dir()) / f"{runtime.session_name(session)}.lock"
    with disk.try_lock(lock_file, FINAL_WAIT_S if final else 0) as held:
        if not held:
            return {"result": "skipped", "reason": "a reflection of this session is already running"}
        from memvault.reflect import runner

        report = runner.reflect_transcript(vault, transcript, session_id=session, final=final)
    if report.quarantined:  # failed again and again: `health` reports it, `memvault reflect --session` retries
        runtime.mark_quarantined(session)
        return {"result": "skipped", "reason": "the transcript is quarantined after failing repeatedly"}
    if report.halted:
        return {"result": "partial", "reason": "the STOP file halted reflection", "written": report.written}
    if report.busy:  # the vault's reflection lock stayed taken: try again on the next Stop or idle sweep
        return {"result": "skipped", "reason": "another reflection held the vault for too long"}
    if final:
        runtime.mark_reflected(session)
    return {"written": report.written, "candidates": report.candidates, "miner": report.miner,
            "miner_reason": report.miner_reason or None, "claude_calls": report.claude_calls or None,
            "cost_usd": report.cost_usd, "deferred": report.deferred or None}  # fmt: skip


def sweep(vault: Vault, *, idle_s: float | None) -> dict[str, Any]:
    """Reflect idle and crashed sessions, prune old markers and logs, warn when reflection has stalled.

    `idle_s=None` (at SessionStart) only recovers crashed sessions; the idle hook also reflects
    sessions idle for `reflection.idle_minutes` that hold unreflected content.
    """
    from memvault.reflect import runner

    now = time.time()
    done: list[str] = []
    failed: dict[str, str] = {}
    for path in runtime.markers("start"):
        info = runtime.read_json(path)
        if not isinstance(info, dict) or not isinstance(info.get("session_id"), str):
            continue
        session = info["session_id"]
        try:  # one session's failure never stops the sweep: it is recorded, and quarantined if it keeps failing
            transcript = Path(info.get("transcript_path") or "")
            quiet = now - max(_mtime(transcript), _mtime(path))
            orphan = quiet >= ORPHAN_S
            due = idle_s is not None and quiet >= idle_s and transcript.is_file()
            if orphan or (due and runner.pending_bytes(vault, transcript) > 0):
                outcome = reflect_session(vault, session, transcript, final=orphan)
                if outcome.get("result") not in ("skipped", "partial"):
                    done.append(session)
        except Exception as exc:
            failed[session] = f"{type(exc).__name__}: {exc}"[:200]
    gc = vault.config.gc
    pruned = runtime.prune(log_days=gc.log_days, marker_days=gc.marker_days, now=now)
    runtime.set_warning("stale_reflection", runner.stale_warning(vault.config, runner.last_run(vault), now))
    return {"reflected_sessions": done, "pruned": pruned, **({"failed_sessions": failed} if failed else {})}


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


if __name__ == "__main__":
    sys.exit(main())
