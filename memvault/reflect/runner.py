"""Reflection: a session transcript → mined candidates → routed → written to the vault, incrementally.

`reflect_transcript` reads what is new in a transcript since its saved cursor (plus a few turns of
context before it), runs the configured miner, finds each candidate's nearest existing note with
recall, asks `router` where it goes, and writes it through the Vault (atomic, journalled, indexed)
with provenance frontmatter. It is idempotent: the cursor, a per-transcript record of the candidate
keys already routed, and duplicate detection all make a second pass add nothing.

State lives under `vault.state_dir / "reflect"` (never in the vault): one JSON file per transcript
(cursor, routed keys), `ledger.json` (candidate key → the sessions that produced it), `last_run.json`
and `reflect.lock`. Concurrent reflections of one vault are serialised by that lock: a second one
waits up to LOCK_WAIT_S and then returns a report with `busy` set, having done nothing.

The STOP file (`paths.stop_file()`) halts reflection at once: checked before starting and before
every candidate; a halted pass writes nothing more and keeps its cursor, so the next pass resumes.

This module is the public surface (the lock, last run, corpus walk); one pass over one transcript is
`reflect_pass.TranscriptPass`, and the cursor and ledger files are `reflect_state`.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memvault import paths, runtime
from memvault.errors import VaultBusy
from memvault.store import disk
from memvault.vault.core import Vault

from . import miner
from .session import Report, TranscriptPass
from .state import Failures, TranscriptState, read_json, state_dir, sweep_temp_files, write_json

__all__ = [
    "CorpusReport",
    "Report",
    "corpus_files",
    "last_miner",
    "last_run",
    "pending_bytes",
    "project_folder",
    "projects_dir",
    "reflect_corpus",
    "reflect_transcript",
    "stop_file",
]

LOCK_WAIT_S = 30.0  # a second reflection of the same vault waits this long, then reports busy
WAIT_SERVICE_S = 5.0  # how long reflection waits for the warm embedding service (background work)

Progress = Callable[[int, int, str], None]  # (files done, files total, current file)


@dataclass
class CorpusReport:
    folder: str
    files: int = 0
    reflected: int = 0  # files with new content this pass
    unchanged: int = 0  # files already reflected to their end
    candidates: int = 0
    written: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    quarantined: list[str] = field(default_factory=list)  # left alone after failing again and again
    halted: bool = False
    busy: bool = False
    dry_run: bool = False
    ms: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# ---- public ----------------------------------------------------------------------------------


def stop_file() -> Path:
    """While this file exists reflection halts at once (`touch` it to pause, delete it to resume)."""
    return paths.stop_file()


def last_run(vault: Vault) -> float | None:
    """Epoch seconds of the last successful reflection of this vault on this machine."""
    data = read_json(state_dir(vault) / "last_run.json")
    value = data.get("time") if isinstance(data, dict) else None
    return float(value) if isinstance(value, (int, float)) else None


def pending_bytes(vault: Vault, transcript: Path) -> int:
    """Transcript bytes not reflected yet (0 = nothing new)."""
    try:
        size = transcript.stat().st_size
    except OSError:
        return 0
    offset = TranscriptState.load(vault, transcript).offset
    return size if offset > size else size - offset  # a shorter file was rewritten: all of it is new


def reflect_transcript(
    vault: Vault,
    transcript: Path,
    *,
    session_id: str | None = None,
    dry_run: bool = False,
    final: bool = False,
    show_prompt: Callable[[list[Any]], None] | None = None,
    retry: bool = False,
) -> Report:
    """Reflect what is new in one transcript; see the module docstring.

    `show_prompt`, when given, gets the windows the Claude miner would send (see `miner.windows`) and
    nothing is mined or written (a dry run that prints the prompt).

    A pass that fails is recorded (`state.Failures`) and its error re-raised; after
    `state.QUARANTINE_AFTER` failures in a row the transcript is quarantined and later calls return
    at once with `quarantined` set, unless `retry` (an explicit request from the user).
    """
    started = time.monotonic()
    settings = vault.config.reflection
    dry_run = dry_run or show_prompt is not None
    report = Report(str(transcript), session_id, settings.miner, dry_run=dry_run)
    if stop_file().exists():
        report.halted = True
        return _done(report, started)
    if settings.miner != "offline" and not final and not dry_run:
        name, _ = miner.choose(settings, probe=False, host=miner.host_of(transcript))
        if name in miner.HOSTS:  # one headless run of the host's model per session end, not one per turn
            report.deferred, report.miner = True, name
            report.miner_reason = (f"the {miner.HOSTS[name]} miner runs only on final passes "
                                   "(session end, crash recovery, reflect)")  # fmt: skip
            return _done(report, started)
    with disk.try_lock(paths.ensure_private_dir(state_dir(vault)) / "reflect.lock", LOCK_WAIT_S) as held:
        if not held:
            report.busy = True
            return _done(report, started)
        sweep_temp_files(vault)  # left by a reflection killed mid-write; no other reflection runs now
        failures = Failures.load(vault)
        if failures.quarantined(transcript) and not retry:
            report.quarantined = True
            return _done(report, started)
        try:
            TranscriptPass(
                vault, transcript, report, final=final, wait_service=WAIT_SERVICE_S, show_prompt=show_prompt
            ).run()
        except (KeyboardInterrupt, VaultBusy):
            raise  # not the transcript's fault
        except Exception as exc:
            if not dry_run:
                row = failures.record(transcript, report.session_id or session_id, f"{type(exc).__name__}: {exc}")
                report.quarantined = bool(row["quarantined"])
            raise
        if not dry_run:
            failures.clear(transcript)
        if not (dry_run or report.halted):  # under the lock, as every write in the state folder
            write_json(
                state_dir(vault) / "last_run.json",
                {"time": time.time(), "transcript": str(transcript), "miner": report.miner,
                 "miner_reason": report.miner_reason},
            )  # fmt: skip
    return _done(report, started)


def last_miner(vault: Vault) -> tuple[str, str] | None:
    """(miner, why) of the last reflection of this vault on this machine that wrote its record."""
    data = read_json(state_dir(vault) / "last_run.json")
    if isinstance(data, dict) and isinstance(data.get("miner"), str):
        return data["miner"], str(data.get("miner_reason") or "")
    return None


def reflect_corpus(
    vault: Vault, folder: Path, *, progress: Progress | None = None, dry_run: bool = False
) -> CorpusReport:
    """Reflect every `*.jsonl` under `folder`, oldest first, one at a time (each saves its cursor).

    Interrupted (STOP file, Ctrl-C, a crash), the next pass resumes: finished files have nothing
    pending and a file halted midway resumes from its cursor. `progress(done, total, path)` is called
    before each file and once at the end.
    """
    started = time.monotonic()
    report = CorpusReport(str(folder), dry_run=dry_run)
    files = corpus_files(folder)
    report.files = len(files)
    for done, path in enumerate(files):
        if progress:
            progress(done, len(files), str(path))
        if stop_file().exists():
            report.halted = True
            break
        if not dry_run and pending_bytes(vault, path) == 0:
            report.unchanged += 1
            continue
        try:
            one = reflect_transcript(vault, path, dry_run=dry_run, final=True)
        except VaultBusy:
            raise
        except Exception as exc:  # this file only: the corpus goes on
            report.errors[str(path)] = f"{type(exc).__name__}: {exc}"[:500]
            continue
        if one.quarantined:
            report.quarantined.append(str(path))
            continue
        report.reflected += 1
        report.candidates += one.candidates
        report.written += one.written
        if one.halted or one.busy:
            report.halted, report.busy = one.halted, one.busy
            break
    else:
        if progress:
            progress(len(files), len(files), "")
    report.ms = round((time.monotonic() - started) * 1000, 1)
    return report


def corpus_files(folder: Path) -> list[Path]:
    """The transcripts under `folder` (subagent files included), oldest first.

    Also Gemini CLI's one-object chats (`chats/session-*.json`, releases 0.4–0.38), unless a newer
    release resumed one and moved it to `<name>.jsonl`.
    """
    found = [p for p in folder.rglob("*.jsonl") if p.is_file()]
    found += [p for p in folder.rglob("session-*.json")
              if p.parent.name == "chats" and p.is_file() and not p.with_name(p.name + "l").exists()]  # fmt: skip
    return sorted(found, key=lambda p: (p.stat().st_mtime, str(p)))


def projects_dir() -> Path:
    """Claude Code's transcript folder: `$CLAUDE_CONFIG_DIR/projects`, else `~/.claude/projects`."""
    base = os.environ.get("CLAUDE_CONFIG_DIR")
    return (Path(base).expanduser() if base else Path.home() / ".claude") / "projects"


def project_folder(cwd: Path) -> Path:
    """The folder Claude Code keeps a project's transcripts in: the cwd with every non-alphanumeric → `-`."""
    name = "".join(c if c.isalnum() else "-" for c in str(cwd))
    return projects_dir() / name


def _done(report: Report, started: float) -> Report:
    report.ms = round((time.monotonic() - started) * 1000, 1)
    return report


def stale_warning(config: Any, last: float | None, now: float) -> str | None:
    """The warning when no reflection has run for `reflection.stale_days` although sessions happened."""
    days = config.reflection.stale_days
    if last is not None:
        idle_days = int((now - last) / 86400)
        return f"no MemoryVault reflection for {idle_days} days (see memvault inspect)" if idle_days >= days else None
    oldest = min((_mtime(p) for p in runtime.markers("start") + runtime.markers("reflected")), default=now)
    if now - oldest < days * 86400:
        return None
    return f"no MemoryVault reflection has run in {days}+ days of sessions (see memvault inspect)"


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
