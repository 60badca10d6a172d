"""The test PostgreSQL (tests/pg.py): it starts unprivileged, has pgvector, gives each test its own database."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from tests.pg import PgServer, TeamDb


def test_server_runs_unprivileged_with_pgvector(team_db: TeamDb) -> None:
    with team_db.connect() as conn:
        user, version = conn.execute("SELECT current_user, current_setting('server_version_num')::int").fetchone()
        assert user == "postgres" and version >= 160000
        assert conn.execute("SELECT '[1,0]'::vector <=> '[0,1]'::vector").fetchone()[0] == pytest.approx(1.0)
    # the data folder belongs to an unprivileged user: PostgreSQL refuses root
    assert team_db.server.data.stat().st_uid != 0


def test_each_test_gets_a_fresh_database(team_db: TeamDb) -> None:
    with team_db.connect() as conn:
        conn.execute("CREATE TABLE scratch (x int)")
        conn.commit()
    with team_db.server.connect() as conn:
        names = [r[0] for r in conn.execute("SELECT datname FROM pg_database")]
    assert team_db.name in names


def test_member_logs_in_over_tcp_with_a_password_from_libpq_files(
    team_db: TeamDb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    role = team_db.role("alice")
    with team_db.connect(autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'pw-alice'")
    env = team_db.member_home(tmp_path / "alice", role, "pw-alice")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with psycopg.connect("service=team") as conn:
        assert conn.execute("SELECT current_user").fetchone()[0] == role
    with pytest.raises(psycopg.OperationalError, match="password"):
        psycopg.connect(team_db.conninfo(role, tcp=True) + " password=wrong connect_timeout=3")


def test_server_can_be_stopped_and_restarted(pg_control: PgServer, team_db: TeamDb) -> None:
    pg_control.stop()
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(team_db.conninfo() + " connect_timeout=2")
    pg_control.start()
    with team_db.connect() as conn:
        assert conn.execute("SELECT 1").fetchone()[0] == 1
