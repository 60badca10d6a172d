"""The vault's health as data: counts, index, embedding, service, reflection, recall analytics, problems, warnings.

Does NOT render anything; the CLI turns a `Health` into tables or JSON. Problems make the vault
unhealthy (exit 1); warnings are things to look at (exit 1 only with `--strict`).

Just over 400 lines: each check is a few lines feeding the one `Health` report, and splitting them
would scatter what `memvault health` looks at.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memvault import runtime
from memvault.claude import registrations
from memvault.errors import MemvaultError
from memvault.index import catalog, db, embed
from memvault.index.schema import UNREADABLE
from memvault.recall import analytics
from memvault.reflect import review as review_mod
from memvault.reflect import runner
from memvault.reflect.state import Failures
from memvault.store import disk, journal
from memvault.store.model import ALWAYS_LOAD, ARCHIVE, INBOX, INCUBATOR, REVIEW, Entry, as_datetime
from memvault.text import plural
from memvault.vault import indexing, protection
from memvault.vault.core import Vault

# Entries that are never injected by design: queues, the archive, ideas (incubating), and superseded ones.
_NOT_RECALLED_AREAS = (INBOX, REVIEW, ARCHIVE, INCUBATOR)


@dataclass(frozen=True)
class Health:
    vault: str
    folder: str
    config: str | None
    git: bool
    entries: int  # notes under MemoryVault/
    user_notes: int  # notes elsewhere in the read scope
    by_group: dict[str, int]
    by_kind: dict[str, int]
    by_status: dict[str, int]
    inbox: int
    review: int
    incubator: int = 0
    last_reflection: str | None = None  # ISO time of the last successful reflection on this machine
    miner: dict[str, Any] = field(default_factory=dict)  # which reflection miner runs next and why, the last one
    index: dict[str, Any] = field(default_factory=dict)  # stats, stale notes, recall tracking
    embedding: dict[str, Any] = field(default_factory=dict)  # configured model, index model, service
    never_recalled: list[str] = field(default_factory=list)  # clean-up candidates: old, never injected
    claude_memory: dict[str, Any] = field(default_factory=dict)  # Claude Code's own auto memory, this project
    web: dict[str, Any] = field(default_factory=dict)  # web research and discovery: allowed or why not, the last run
    team: dict[str, Any] = field(default_factory=dict)  # team memory: last pull and why it failed, queued publishes
    invalid: list[str] = field(default_factory=list)  # "path: reason"
    conflict_copies: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # make the vault unhealthy (exit 1)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _team(vault: Vault, warnings: list[str]) -> dict[str, Any]:
    """Team memory's line (no network: what the last pull recorded); a failed last pull is a warning."""
    from memvault.team import status

    if not status.configured(vault.config):
        return {}
    report = status.status(vault)
    if report.last_error:
        warnings.append(f"the last team pull failed ({report.last_error}); last good pull {report.last_pull}")
    return {**dataclasses.asdict(report), "line": report.line()}


def check(vault: Vault, *, service: bool = True, now: dt.datetime | None = None, project: Path | None = None) -> Health:
    """Look at everything; `service=False` skips asking the warm service (it answers within a second).

    `project` (default: the current directory) is the Claude Code project whose auto memory is checked.
    """
    now = now or dt.datetime.now(dt.timezone.utc)
    listing = disk.list_markdown(vault.root, vault.ignore)
    memory = [rel for rel in listing.notes if vault.in_memory(rel)]
    problems: list[str] = []
    warnings: list[str] = []
    index, counted, fresh = _index(vault, listing.notes, problems, warnings)
    # One walk of the vault serves every count; notes unchanged since the last reindex come from the index.
    entries = [fresh.get(rel) or vault.entry(rel) for rel in memory]
    own = [fresh.get(rel) or vault.entry(rel) for rel in listing.notes
           if not vault.in_memory(rel) and not disk.is_conflict_copy(rel)]  # fmt: skip
    groups: Counter[str] = Counter(e.group or "(none)" for e in entries)
    kinds: Counter[str] = Counter(e.kind or "(none)" for e in entries)
    statuses: Counter[str] = Counter(e.status for e in entries)
    invalid, skipped = _unread(entries + own, listing.skipped)
    if not vault.memory_dir.is_dir():
        problems.append(f"{vault.folder}/ does not exist in the vault: run `memvault init`")
    for path in journal.conflicts(vault.journal_dir):
        problems.append(f"an interrupted write could not be finished because the notes changed since: {path}")
    _reflection_failures(vault, problems, warnings)
    problems += _open_state(vault)
    problems += _git_state(vault)
    problems += registrations.missing_interpreters()  # hooks and MCP servers whose environment is gone
    warnings += _unmatched_protection(vault)
    copies = [rel for rel in listing.notes if disk.is_conflict_copy(rel)]
    if copies:
        warnings.append(f"{plural(len(copies), 'sync conflict copy')}: merge them by hand, then delete the copy")
    if invalid:
        warnings.append(f"{plural(len(invalid), 'note')} with frontmatter YAML rejects: memvault won't edit them")
    if skipped:
        warnings.append(f"{plural(len(skipped), 'file')} skipped: not indexed, never recalled (listed above)")
    queues = review_mod.counts_of(entries, vault.config.reflection)
    warnings += queues.warnings
    last = _last_reflection(vault)
    stale = runner.stale_warning(vault.config, last.timestamp() if last else None, now.timestamp())
    if stale:
        warnings.append(stale)
    miner_state = _miner(vault, warnings)
    embedding = _embedding(vault, index.get("model"), service, warnings)
    unrecalled = _never_recalled(entries, counted, index.get("recall_tracking_since"), vault.config, now)
    auto_memory = _claude_memory(vault, project, warnings)
    web_state = _web(vault)
    team = _team(vault, warnings)
    for key, text in runtime.warnings().items():  # recorded by the hooks' idle sweep
        if text not in warnings and key != "stale_reflection":  # computed above, from the same facts
            warnings.append(text)
    return Health(
        vault=str(vault.root),
        folder=vault.folder,
        config=vault.config.source,
        git=vault.git_repo() is not None,
        entries=len(memory),
        user_notes=len(listing.notes) - len(memory),
        by_group=dict(sorted(groups.items())),
        by_kind=dict(sorted(kinds.items())),
        by_status=dict(sorted(statuses.items())),
        inbox=queues.inbox,
        review=queues.review,
        incubator=queues.incubator,
        last_reflection=last.isoformat(timespec="seconds") if last else None,
        miner=miner_state,
        index=index,
        embedding=embedding,
        never_recalled=unrecalled,
        claude_memory=auto_memory,
        web=web_state,
        team=team,
        invalid=invalid,
        conflict_copies=copies,
        skipped=skipped,
        problems=problems,
        warnings=warnings,
    )


def _unread(entries: Sequence[Entry], walked: Sequence[tuple[str, str]]) -> tuple[list[str], list[str]]:
    """Notes with invalid frontmatter ("path: reason"), and every file recall never sees (the same)."""
    invalid = [
        f"{e.path}: {e.error}" + (" (never injected until it is fixed)" if e.in_memory else " (recalled by its text)")
        for e in entries
        if e.error and e.status != UNREADABLE
    ]
    skipped = [f"{path}: {why}" for path, why in walked]
    skipped += [f"{e.path}: {e.error}" for e in entries if e.error and e.status == UNREADABLE]
    return invalid, skipped


def _miner(vault: Vault, warnings: list[str]) -> dict[str, Any]:
    """The reflection miner: configured, the one the next final pass would use and why, the last one that ran."""
    from memvault.reflect import miner

    settings = vault.config.reflection
    name, why = miner.choose(settings)
    out: dict[str, Any] = {"configured": settings.miner, "next": name, "why": why}
    if name == "claude" or settings.miner != "offline":
        out.update(model=settings.claude_model, calls_today=miner.calls_today(), cap=settings.claude_calls_per_day)
    last = runner.last_miner(vault)
    if last:
        out.update(last=last[0], last_why=last[1])
    if settings.miner == "claude" and name != "claude":
        warnings.append(f"reflection.miner is claude, but the offline miner runs: {why}")
    fell = miner.last_fallback()  # the most recent one, unless the Claude miner has mined since
    if fell and settings.miner != "offline":
        when = dt.datetime.fromtimestamp(fell[0]).astimezone().isoformat(timespec="seconds")
        out["last_fallback"] = {"time": when, "reason": fell[1]}
        warnings.append(f"reflection fell back to offline rules at {when}: {fell[1]}")
    return out


STATE_EXAMPLES = 5  # paths named per permission problem


def _open_state(vault: Vault) -> list[str]:
    """memvault's state (this machine's: index, journals, reflection state, logs) readable by other users."""
    import os
    import stat

    from memvault import paths

    if os.name != "posix":
        return []
    root = paths.state_dir()
    found: list[str] = []
    if root.is_dir():
        for folder, dirs, files in os.walk(root):
            for name in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
                try:
                    mode = os.lstat(name).st_mode
                except OSError:
                    continue
                if mode & 0o077 and not stat.S_ISSOCK(mode) and not stat.S_ISLNK(mode) and name not in found:
                    found.append(name)
    if not found:
        return []
    shown = ", ".join(f"{p} ({oct(os.lstat(p).st_mode & 0o777)})" for p in found[:STATE_EXAMPLES])
    more = f" and {len(found) - STATE_EXAMPLES} more" if len(found) > STATE_EXAMPLES else ""
    return [f"{plural(len(found), 'file or folder', 'files or folders')} in memvault's state folder"
            f" {'is' if len(found) == 1 else 'are'} open to other users: {shown}{more};"
            f" run `chmod -R go-rwx {root}`"]  # fmt: skip


def _git_state(vault: Vault) -> list[str]:
    """A git operation left half-finished in the vault's repository (an interrupted undo, merge, rebase…), a
    lock file a killed git left, and changes written but not committed because of it."""
    from memvault.store import gitops

    repo = gitops.repo_root(vault.root) if vault.config.git.commit == "auto" else None
    if repo is None:
        return []
    found = [f"{what} in {repo}: {hint}" for what, hint in gitops.unfinished(repo)]
    waiting = len(vault.changes.uncommitted())  # written while a lock file was in git's way
    locks = [lock for lock in gitops.locks(repo) if lock.stale or waiting]  # a running git's lock is normal
    if waiting:
        then = "; ".join(lock.advice(repo) for lock in locks) or "the next memvault command commits them"
        found.append(f"{plural(waiting, 'change')} written but not committed to {repo}: {then}")
    else:
        found += [lock.advice(repo) for lock in locks]
    return found


def _unmatched_protection(vault: Vault) -> list[str]:
    """A `vault.protected_folders` pattern no folder under MemoryVault/ matches protects nothing: say which."""
    patterns = vault.config.vault.protected_folders
    left = protection.unmatched(vault.memory_dir, vault.folder, patterns) if patterns else []
    if not left:
        return []
    names = ", ".join(repr(p) for p in left)
    return [f"vault.protected_folders: {names} match{'es' if len(left) == 1 else ''} no folder under "
            f"{vault.folder}/ and protect nothing (a typo, or a folder renamed?)"]  # fmt: skip


def _reflection_failures(vault: Vault, problems: list[str], warnings: list[str]) -> None:
    """Transcripts whose reflection keeps failing: quarantined ones are a problem, others a warning."""
    for row in Failures.load(vault).rows():
        where = f"{row.get('transcript')} (session {row.get('session') or '?'})"
        if row.get("quarantined"):
            problems.append(
                f"reflection of {where} is quarantined after {row.get('failures')} failed passes ({row.get('error')});"
                f" retry with `memvault reflect --session {row.get('transcript')}`"
            )
        else:
            warnings.append(f"reflection of {where} failed {plural(int(row.get('failures') or 0), 'time')}:"
                            f" {row.get('error')}")  # fmt: skip


def _last_reflection(vault: Vault) -> dt.datetime | None:
    last = runner.last_run(vault)
    return dt.datetime.fromtimestamp(last, dt.timezone.utc) if last else None


def _index(
    vault: Vault, notes: Sequence[str], problems: list[str], warnings: list[str]
) -> tuple[dict[str, Any], dict[str, analytics.Recalled] | None, dict[str, Entry]]:
    """Index stats and freshness, the entries of notes unchanged since indexed, and recall analytics (folded)."""
    path = indexing.index_file(vault.root, vault.config)
    if not path.exists():
        warnings.append("no index yet: run `memvault reindex` (recall scans files until then)")
        return {"path": str(path), "exists": False}, None, {}
    try:
        index, _ = indexing.open_index(vault.root, vault.config)
    except MemvaultError as exc:
        problems.append(f"the index cannot be opened: {exc}")
        return {"path": str(path), "exists": True}, None, {}
    try:
        stats = index.stats()
        stale, fresh = catalog.freshness(vault.root, index.rows(in_memory=False), notes)
        try:
            with db.busy_timeout(index.conn, 1000):
                folded: int | None = analytics.fold(index, vault.root)
        except db.dbapi().OperationalError as exc:  # a long write elsewhere (a reindex): count them next time
            if not db.is_busy(exc):
                raise
            folded = None
            warnings.append("another process is writing the index: recall counts were not brought up to date")
        counted = analytics.recalled(index)
        info = {
            **stats,
            "exists": True,
            "rebuilt": index.rebuilt,
            "stale": len(stale),
            "stale_examples": stale[:5],
            "recalls_folded": folded,
            "recalled_entries": len(counted),
            "recall_tracking_since": analytics.tracked_since(index),
        }
    finally:
        index.close()
    if index.rebuilt:
        warnings.append(f"the index was damaged and has been rebuilt empty ({index.rebuilt}): run `memvault reindex`")
    elif stale:
        warnings.append(
            f"the index is stale: {plural(len(stale), 'note')} changed since the last reindex: run `memvault reindex`"
        )
    pending = stats.get("pending")
    if isinstance(pending, int) and pending and embed.available():
        warnings.append(f"{plural(pending, 'note')} not embedded yet (found by keywords only until then)")
    return info, counted, fresh


def _embedding(vault: Vault, index_model: Any, ask_service: bool, warnings: list[str]) -> dict[str, Any]:
    """The configured model against the index's vectors and the running service's model."""
    from memvault.recall import client

    configured = embed.model_name(vault.config.embedding.model)
    info: dict[str, Any] = {
        "configured": configured,
        "installed": embed.available(),
        "index_model": index_model,
        "service": client.status(timeout=1.0) if ask_service else None,
    }
    if not info["installed"]:
        warnings.append("sentence-transformers is not installed: recall is keyword-only (install memvault[embeddings])")
    if index_model and index_model != configured:
        warnings.append(
            f"model mismatch: the index's vectors come from {index_model}, the config names {configured}:"
            " run `memvault reindex` (keyword-only until then)"
        )
    service = info["service"]
    if service and service.get("model") and service["model"] != configured:
        warnings.append(
            f"the running service has {service['model']} loaded, the config names {configured}:"
            " run `memvault serve --stop` (it restarts with the new model on demand)"
        )
    return info


def _web(vault: Vault) -> dict[str, Any]:
    """Web research and discovery: whether each may run (or why not), runs today against the cap, the last run."""
    from memvault import paths
    from memvault.discovery import web

    config = vault.config
    out: dict[str, Any] = {"discovery": web.why_not(config, "discovery"), "research": web.why_not(config, "research")}
    out.update(runs_today=web.runs_today(paths.state_dir()), cap=config.discovery.daily_cap)
    last = web.last_run()
    if last:
        out["last"] = {**last, "time": dt.datetime.fromtimestamp(float(last["time"]), dt.timezone.utc).isoformat(
            timespec="seconds")}  # fmt: skip
    return out


def _claude_memory(vault: Vault, project: Path | None, warnings: list[str]) -> dict[str, Any]:
    """Claude Code's built-in auto memory for the project: when it holds notes too, a fact can live in both."""
    from memvault.claude import auto_memory_files as claude_memory

    info = claude_memory.status(project)
    if info["active"] and info["files"] and vault.config.memory.enabled:
        warnings.append(
            f"Claude Code's auto memory is also active for this project ({plural(info['files'], 'file')} in"
            f" {info['memory_dir']}): `memvault import-claude-memory` brings them in; autoMemoryEnabled: false"
            " in ~/.claude/settings.json leaves MemoryVault as the only memory"
        )
    return info


def _never_recalled(
    entries: list[Entry],
    counted: dict[str, analytics.Recalled] | None,
    since: str | None,
    config: Any,
    now: dt.datetime,
) -> list[str]:
    """Old entries never injected, once injections have been counted for `gc.unrecalled_days` (else nothing)."""
    old = now - dt.timedelta(days=config.gc.unrecalled_days)
    tracked = as_datetime(since)
    if counted is None or tracked is None or tracked > old:
        return []  # "never recalled" means nothing until recalls have been watched for that long
    return analytics.never_recalled(_recallable(entries), counted, older_than=old)


def _recallable(entries: list[Entry]) -> list[tuple[str, dt.datetime | None]]:
    """(path, created) of the entries recall could inject: active, not queued, archived, private or always-load."""
    out = []
    for e in entries:
        if e.error or e.private or e.always_load or e.status not in ("active", "resolved"):
            continue
        if any(f"/{area}/" in e.path for area in _NOT_RECALLED_AREAS) or f"/{ALWAYS_LOAD}/" in e.path:
            continue
        out.append((e.path, as_datetime(e.created)))
    return out
