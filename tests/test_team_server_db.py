"""memvault.team.db: the settings from the config, a connection from libpq's own files, a clear error when the
server is down or refuses, and no password ever taken from memvault's config."""

from __future__ import annotations

from pathlib import Path

import pytest

from memvault import config
from memvault.errors import ConfigError
from memvault.team import admin, db
from tests.pg import PgServer, TeamDb


def settings(**team: object) -> db.TeamSettings:
    return db.settings_from(config.from_dict({"team": team}))


def test_settings_from_the_config() -> None:
    s = settings(service="team", teams=["platform"], mirror="recent 200")
    assert (s.service, s.teams, s.mirror, s.mirror_limit, s.publish_queue) == ("team", ("platform",), "recent 200",
                                                                                200, True)  # fmt: skip
    assert settings(mirror="none").mirror_limit == 0 and settings().mirror_limit is None
    assert not settings().configured
    for bad in ({"conninfo": "host=db user=me password=hunter2"}, {"conninfo": "postgresql://me:hunter2@db/x"},
                {"mirror": "recent"}, {"mirror": "some"}):  # fmt: skip
        with pytest.raises(ConfigError):
            settings(**bad)


def test_not_configured_is_a_clear_error() -> None:
    with pytest.raises(db.NotConfigured) as caught:
        db.connect(settings())
    assert caught.value.code == "team-not-configured"


def test_connects_as_the_member_through_the_service_and_password_files(
    team_db: TeamDb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    role = team_db.role("erin")
    with team_db.connect() as conn:
        admin.add_member(conn, role, ["a"], password="erin-pass")
    for key, value in team_db.member_home(tmp_path / "erin", role, "erin-pass", service="ourteam").items():
        monkeypatch.setenv(key, value)
    with db.connect(settings(service="ourteam")) as conn:
        assert conn.execute("SELECT current_user").fetchone()[0] == role
    info = db.conninfo(settings(service="ourteam", conninfo="sslmode=disable"), timeout_s=2)
    assert "service=ourteam" in info and "connect_timeout=2" in info and "password" not in info


def test_a_wrong_password_or_a_stopped_server_says_why(
    team_db: TeamDb, pg_control: PgServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    role = team_db.role("finn")
    with team_db.connect() as conn:
        admin.add_member(conn, role, ["a"], password="right")
    for key, value in team_db.member_home(tmp_path / "finn", role, "wrong").items():
        monkeypatch.setenv(key, value)
    with pytest.raises(db.TeamUnavailable, match="password authentication failed") as caught:
        db.connect(settings(service="team"))
    assert caught.value.code == "team-unavailable"
    pg_control.stop()
    with pytest.raises(db.TeamUnavailable, match="cannot reach the team database"):
        db.connect(settings(service="team"), timeout_s=2)
