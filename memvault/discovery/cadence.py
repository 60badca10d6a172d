"""Cadence: what the session-start and idle jobs run of discovery — new ideas researched, weekly skill discovery.

Never on the prompt path: only `hooks.jobs` (a detached process) calls `run`. The STOP file and
`memory.enabled: false` stop it before anything is read. Each run:
- researches up to IDEAS_PER_RUN incubating ideas captured (their `created`) in the last NEW_DAYS days
  that have no `research.md` yet, newest first: the local part always, the web part as `research` decides;
- runs skill discovery when `discovery.every_days` have passed since the last one, and never twice on
  one local day (the stamp is written before it runs, so a discovery that crashes is not retried the
  same day); the web whitelist is read only when the user said yes (`web.allowed`).
The stamp is `discovery-cadence.json` in the state folder.
"""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import Any

from memvault import paths
from memvault.ideas import incubator
from memvault.reflect.state import read_json, write_json
from memvault.store import model
from memvault.vault.core import Vault

from . import research, web

STAMP = "discovery-cadence.json"
IDEAS_PER_RUN = 3  # a web run may take minutes: a few ideas per job, the rest at the next one
NEW_DAYS = 14  # an idea older than this without a page was parked before research existed: left to the user


def run(vault: Vault, project: Path | None = None, *, now: float | None = None) -> dict[str, Any]:
    """Research new ideas and run discovery when it is due; what was done, for the job's log line."""
    config = vault.config
    if not config.memory.enabled:
        return {"skipped": "memory.enabled is false (kill switch)"}
    if paths.stop_file().exists():
        return {"skipped": "the STOP file is present"}
    now = time.time() if now is None else now
    out: dict[str, Any] = {"ideas_researched": research_new(vault, now)}
    reason = discovery_due(config.discovery.every_days, paths.state_dir(), now)
    if reason is not None:
        out["discovery"] = reason
        return out
    write_json(paths.state_dir() / STAMP, {"last": now, "day": _day(now)})
    try:  # skill discovery (issue 33, part K), by name so that idea research never depends on it
        from . import sources, watchlist
    except ImportError:
        out["discovery"] = "skill discovery is not available in this version"
        return out
    places = sources.Places.from_config(config, project)
    report = watchlist.discover(vault, places, use_web=web.allowed(config, "discovery"))
    out["discovery"] = {"found": report.found, "written": report.written, "web": getattr(report, "web", None)}
    return out


def research_new(vault: Vault, now: float) -> list[str] | str:
    """Research the newest ideas that have no research page yet (their slugs), or why it failed."""
    cutoff = dt.datetime.fromtimestamp(now - NEW_DAYS * 86400, dt.timezone.utc)
    try:
        waiting = [(created, i) for i in incubator.incubating(vault)
                   if not (vault.root / i.folder / research.PAGE).exists()
                   and (created := _created(vault, i.path)) is not None and created >= cutoff]  # fmt: skip
    except Exception as exc:
        return f"failed: {type(exc).__name__}: {exc}"[:200]
    done: list[str] = []
    for _, idea in sorted(waiting, key=lambda pair: pair[0], reverse=True)[:IDEAS_PER_RUN]:
        if paths.stop_file().exists():
            break
        try:
            research.research_idea(vault, idea.slug, group=idea.group)
            done.append(idea.slug)
        except Exception as exc:  # one idea's failure never stops the rest of the job
            done.append(f"{idea.slug}: failed: {type(exc).__name__}: {exc}"[:200])
    return done


def _created(vault: Vault, rel: str) -> dt.datetime | None:
    """When the idea was captured (its `created`), aware; None when it does not say."""
    nf = vault.read(rel)
    return model.as_datetime(nf.note.meta.get("created")) if nf.note.ok else None


def discovery_due(every_days: int, state: Path, now: float) -> str | None:
    """None when discovery is due, else why not (ran today, or fewer than `every_days` days ago)."""
    stamp = read_json(state / STAMP)
    last = stamp.get("last") if isinstance(stamp, dict) else None
    if not isinstance(last, (int, float)):
        return None
    if _day(last) == _day(now):
        return "already ran today"
    if now - last < every_days * 86400:
        return f"last ran {_day(last)}; due every {every_days} days (discovery.every_days)"
    return None


def _day(epoch: float) -> str:
    return time.strftime("%Y-%m-%d", time.localtime(epoch))
