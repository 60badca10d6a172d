"""Team memory as this machine sees it (`memvault team status`, the `health` line), and the session start's sync.

`session_sync` is what the SessionStart background job runs (never the prompt path): send what a person already
queued, then pull, each within a short connect timeout; a server that is down costs the job that timeout and
nothing else, and the reason is kept for `health`.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any

from memvault.config import Config
from memvault.vault.core import Vault

from .outbox import TeamState, age

SESSION_CONNECT_S = 2.0  # the session start's connect timeout: a server that is down costs this, in the background


@dataclass(frozen=True)
class TeamStatus:
    configured: bool
    teams: tuple[str, ...]
    mirror: str
    last_pull: str  # "3 min ago", "never"
    last_error: str | None  # why the last pull failed (None when it worked)
    cursor: int
    queued: int
    conflicts: int
    mirrored: int

    def line(self) -> str:
        """One line for `health`."""
        if not self.configured:
            return "team memory: not configured"
        said = f"team memory ({', '.join(self.teams) or 'org only'}; mirror {self.mirror}): last pull {self.last_pull}"
        if self.last_error:
            said += f", the last attempt failed: {self.last_error}"
        if self.queued:
            said += f"; {self.queued} publish{'es' if self.queued != 1 else ''} queued"
        if self.conflicts:
            said += f"; {self.conflicts} push conflict{'s' if self.conflicts != 1 else ''} to resolve in review"
        return said


def configured(config: Config) -> bool:
    team = getattr(config, "team", None)
    return bool(team is not None and (getattr(team, "service", None) or getattr(team, "conninfo", None)))


def available() -> bool:
    """Whether the team extra (psycopg) is installed (cheap: nothing is imported)."""
    return importlib.util.find_spec("psycopg") is not None


def status(vault: Vault) -> TeamStatus:
    state = TeamState(vault.root)
    pulled = state.pull_state()
    team = getattr(vault.config, "team", None)
    from . import mirror

    return TeamStatus(
        configured=configured(vault.config),
        teams=tuple(getattr(team, "teams", ()) or ()),
        mirror=str(getattr(team, "mirror", "all") or "all"),
        last_pull=age(pulled.get("last_success")),
        last_error=pulled.get("error") or None,
        cursor=int(pulled.get("cursor") or 0),
        queued=len(state.queued()),
        conflicts=len(state.conflicts()),
        mirrored=len(mirror.scan(vault)),
    )


def connector(config: Config, timeout_s: float) -> Any:
    """A function that opens a connection to the team's database with the configured libpq settings."""
    from . import db

    settings = db.settings_from(config)

    def connect() -> Any:
        return db.connect(settings, timeout_s=timeout_s)

    return connect


def session_sync(vault: Vault, *, timeout_s: float = SESSION_CONNECT_S) -> dict[str, Any]:
    """Send the outbox and pull, for the SessionStart job; returns what to log (never raises)."""
    if not configured(vault.config):
        return {}
    if not available():
        return {"team": "skipped: the team extra is not installed (pip install 'memvault[team]')"}
    state = TeamState(vault.root)
    try:
        from . import mirror, push

        connect = connector(vault.config, timeout_s)
        sent = push.flush(vault, state, connect)
        try:
            conn = connect()
        except Exception as exc:
            state.record_pull(cursor=None, error=f"cannot reach the server: {_first_line(exc)}")
            return {"team": "offline", "team_reason": _first_line(exc), "team_queued": len(sent.queued)}
        try:
            report = mirror.pull(vault, conn, state, mirror=vault.config.team.mirror)  # type: ignore[attr-defined]
        finally:
            conn.close()
        if report.busy:
            return {"team": "busy: another pull of this vault runs", "team_sent": len(sent.sent)}
        return {"team": "pulled", "team_changes": report.changes, "team_sent": len(sent.sent)}
    except Exception as exc:
        return {"team": "error", "team_reason": f"{type(exc).__name__}: {_first_line(exc)}"[:300]}


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0][:200] if lines else type(exc).__name__
