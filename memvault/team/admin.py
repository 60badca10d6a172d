"""The team admin's work on the database: members (login roles in the member group), their teams, passwords."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from memvault.errors import MemvaultError

from .schema import MEMBER_ROLE

_ROLE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_TEAM = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")


class AdminError(MemvaultError):
    """An admin action the database refused, or a bad role or team name."""

    code = "team-admin"


def _check(role: str, teams: Iterable[str]) -> list[str]:
    if not _ROLE.match(role) or role.startswith("pg_") or role == MEMBER_ROLE:
        raise AdminError(
            f"a member's role name is lowercase letters, digits and _, not starting with a digit: {role!r}"
        )
    names = list(dict.fromkeys(teams))
    bad = [t for t in names if not _TEAM.match(t)]
    if bad:
        raise AdminError(f"a team name is lowercase letters, digits, - and _: {', '.join(map(repr, bad))}")
    return names


def _hashed(conn: Any, role: str, password: str) -> str:
    """The SCRAM verifier of a password, made here (libpq), so the password itself never reaches the server's log."""
    return conn.pgconn.encrypt_password(password.encode(), role.encode(), b"scram-sha-256").decode()


def add_member(conn: Any, role: str, teams: Iterable[str], password: str | None = None) -> None:
    """Make `role` a member of each of `teams` (created if new): a login role (made if missing, with `password`,
    else it logs in however the server's pg_hba allows) in the member group. Adding again is harmless."""
    from psycopg import errors as pg
    from psycopg import sql

    names = _check(role, teams)
    ident = sql.Identifier(role)
    try:
        with conn.transaction():
            exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
            if not exists:
                conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(ident))
            if password is not None:
                secret = sql.Literal(_hashed(conn, role, password))
                conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(ident, secret))
            conn.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(MEMBER_ROLE), ident))
            conn.execute("INSERT INTO memvault.members (role_name) VALUES (%s) ON CONFLICT DO NOTHING", (role,))
            for team in names:
                conn.execute("INSERT INTO memvault.teams (name) VALUES (%s) ON CONFLICT DO NOTHING", (team,))
                conn.execute(
                    "INSERT INTO memvault.team_members (team, role_name) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                    (team, role),
                )
    except (pg.InsufficientPrivilege, pg.UndefinedTable) as exc:
        raise AdminError(f"cannot add member {role}: {_first_line(exc)} (run init-db, as the admin)") from exc


def remove_member(conn: Any, role: str, teams: Iterable[str] | None = None) -> None:
    """Take `role` out of `teams`, or (None) out of every team and the member group: it then sees nothing.

    The login role itself is kept (it may be used elsewhere on the server); its entries stay, as written.
    """
    from psycopg import errors as pg
    from psycopg import sql

    names = _check(role, teams or [])
    try:
        with conn.transaction():
            if teams is None:
                conn.execute("DELETE FROM memvault.team_members WHERE role_name = %s", (role,))
                conn.execute("DELETE FROM memvault.members WHERE role_name = %s", (role,))
                if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
                    conn.execute(sql.SQL("REVOKE {} FROM {}").format(sql.Identifier(MEMBER_ROLE), sql.Identifier(role)))
            else:
                conn.execute("DELETE FROM memvault.team_members WHERE role_name = %s AND team = ANY(%s)", (role, names))
    except pg.InsufficientPrivilege as exc:
        raise AdminError(f"cannot remove member {role}: {_first_line(exc)}") from exc


def set_password(conn: Any, role: str, password: str) -> None:
    """Rotate a member's password (the old one stops working at once; open sessions stay open)."""
    from psycopg import sql

    _check(role, [])
    with conn.transaction():
        if not conn.execute("SELECT 1 FROM memvault.members WHERE role_name = %s", (role,)).fetchone():
            raise AdminError(f"{role} is not a member of this team database")
        secret = sql.Literal(_hashed(conn, role, password))
        conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(sql.Identifier(role), secret))


def members(conn: Any) -> dict[str, list[str]]:
    """Every member and their teams (as the admin sees them)."""
    rows = conn.execute(
        "SELECT m.role_name, coalesce(array_agg(tm.team ORDER BY tm.team) FILTER (WHERE tm.team IS NOT NULL), '{}') "
        "FROM memvault.members m LEFT JOIN memvault.team_members tm USING (role_name) GROUP BY 1 ORDER BY 1"
    ).fetchall()
    conn.commit()
    return {role: list(teams) for role, teams in rows}


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0]
