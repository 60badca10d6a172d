"""Connecting to the team's PostgreSQL: settings from the config's `team:` section, credentials only from libpq."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memvault.errors import MemvaultError

if TYPE_CHECKING:
    import psycopg

    from memvault.config import Config


class TeamUnavailable(MemvaultError):
    """The team database cannot be reached or refused the login (the reason is in the message)."""

    code = "team-unavailable"


class NotConfigured(MemvaultError):
    """Team memory is not set up: neither `team.service` nor `team.conninfo` is in the config."""

    code = "team-not-configured"


@dataclass(frozen=True)
class TeamSettings:
    service: str | None
    conninfo: str | None
    teams: tuple[str, ...]
    mirror: str  # "all" | "recent N" | "none"
    publish_queue: bool = True

    @property
    def configured(self) -> bool:
        return bool(self.service or self.conninfo)

    @property
    def mirror_limit(self) -> int | None:
        """How many entries the mirror keeps: None for all, 0 for none, N for "recent N"."""
        if self.mirror == "all":
            return None
        if self.mirror == "none":
            return 0
        return int(self.mirror.split()[1])


def settings_from(config: Config) -> TeamSettings:
    team = config.team
    return TeamSettings(team.service, team.conninfo, tuple(team.teams), team.mirror, team.publish_queue)


def conninfo(settings: TeamSettings, *, timeout_s: float = 3.0, application: str = "memvault") -> str:
    """The libpq connection string: the service and/or the configured string, a connect timeout, never a password.

    Everything else (host, TLS mode, user, the password) libpq takes from its usual places: the service file
    (PGSERVICEFILE or ~/.pg_service.conf), the password file (PGPASSFILE or ~/.pgpass) and PG* variables.
    """
    from psycopg import conninfo as pg_conninfo

    if not settings.configured:
        raise NotConfigured("team memory is not configured: set team.service (a libpq service) or team.conninfo")
    try:
        base = pg_conninfo.conninfo_to_dict(settings.conninfo or "")
    except Exception as exc:  # psycopg.ProgrammingError: the string does not parse
        raise NotConfigured(f"team.conninfo does not parse: {exc}") from exc
    if "password" in base:
        raise NotConfigured("team.conninfo must not hold a password: use the libpq password file (PGPASSFILE)")
    extra: dict[str, Any] = {"connect_timeout": max(1, round(timeout_s)), "application_name": application}
    if settings.service:
        extra["service"] = settings.service
    return pg_conninfo.make_conninfo(settings.conninfo or "", **extra)


def connect(settings: TeamSettings, *, timeout_s: float = 3.0) -> psycopg.Connection[Any]:
    """A connection to the team database, or TeamUnavailable saying why (down, unreachable, refused, no such db)."""
    import psycopg

    info = conninfo(settings, timeout_s=timeout_s)
    try:
        return psycopg.connect(info)
    except psycopg.OperationalError as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise TeamUnavailable(f"cannot reach the team database: {reason}") from exc
