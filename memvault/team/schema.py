"""The team database's schema: versioned SQL migrations (memvault/team/migrations) applied in order, once each."""

from __future__ import annotations

import re
from importlib import resources
from typing import Any

from memvault.errors import MemvaultError

SCHEMA = "memvault"
MEMBER_ROLE = "memvault_member"
_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")
# One lock for every init-db of a database: two admins running it at once apply each migration once.
_INIT_LOCK = 7306228473920041730


class SchemaError(MemvaultError):
    """The database's schema cannot be made or is newer than this memvault knows."""

    code = "team-schema"


def migrations() -> list[tuple[int, str, str]]:
    """(version, file name, SQL) of every packaged migration, oldest first."""
    found = []
    for item in resources.files("memvault.team").joinpath("migrations").iterdir():
        match = _NAME.match(item.name)
        if match:
            found.append((int(match.group(1)), item.name, item.read_text(encoding="utf-8")))
    found.sort()
    versions = [v for v, _, _ in found]
    if versions != list(range(1, len(versions) + 1)):
        raise SchemaError(f"the packaged migrations are not numbered 1..n: {versions}")
    return found


def version(conn: Any) -> int:
    """The schema version the database is at (0: memvault's schema is not there)."""
    row = conn.execute("SELECT to_regclass('memvault.schema_version') IS NOT NULL").fetchone()
    if not row[0]:
        return 0
    return int(conn.execute("SELECT coalesce(max(version), 0) FROM memvault.schema_version").fetchone()[0])


def init_db(conn: Any) -> list[int]:
    """Apply the migrations the database lacks, each in one transaction; the versions applied ([]: up to date).

    Run by the team's admin (who then owns the tables; creating the `vector` extension and the member group
    role may need a superuser the first time: wiki/how-to/team-admin.md). Safe to run again, and at the same
    time from two places: an advisory lock makes the second wait, then find nothing to do.
    """
    from psycopg import errors as pg_errors

    if conn.info.transaction_status != 0:  # idle: nothing of the caller's is half done in this connection
        conn.commit()
    known = migrations()
    applied: list[int] = []
    try:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_INIT_LOCK,))
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {SCHEMA}.schema_version ("
                "version integer PRIMARY KEY, name text NOT NULL, "
                "applied_at timestamptz NOT NULL DEFAULT now(), applied_by text NOT NULL DEFAULT current_user)"
            )
        for number, name, sql in known:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_INIT_LOCK,))
                if version(conn) >= number:
                    continue
                conn.execute(sql)
                conn.execute(f"INSERT INTO {SCHEMA}.schema_version (version, name) VALUES (%s, %s)", (number, name))
                applied.append(number)
    except pg_errors.InsufficientPrivilege as exc:
        raise SchemaError(
            f"init-db needs the database's admin (to create the schema, roles and tables): {exc}"
        ) from exc
    at = version(conn)
    conn.commit()
    if at > len(known):
        raise SchemaError(f"the team database is at schema version {at}, newer than this memvault knows ({len(known)})")
    return applied
