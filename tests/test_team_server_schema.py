"""The team schema in a real PostgreSQL: migrations once, CHECK constraints, row-level security against raw SQL
from a member's own login, the append-only audit and history."""

from __future__ import annotations

import threading
import uuid

import psycopg
import pytest
from psycopg import errors as pg

from memvault.team import admin, schema
from tests.pg import TeamDb


def _insert(conn: psycopg.Connection, scope: str, team: str | None, slug: str, body: str = "body", **extra: str) -> str:
    uid = str(uuid.uuid4())
    cols = {"uid": uid, "scope": scope, "team": team, "title": slug, "slug": slug, "body": body,
            "content_hash": "h", **extra}  # fmt: skip
    names = ", ".join(cols)
    conn.execute(
        f"INSERT INTO memvault.entries ({names}) VALUES ({', '.join(['%s'] * len(cols))})", list(cols.values())
    )
    conn.commit()
    return uid


@pytest.fixture
def two_teams(team_db: TeamDb) -> tuple[str, str]:
    """alice in team a, bob in team b; alice wrote one entry in a and one for the org, bob one in b."""
    alice, bob = team_db.role("alice"), team_db.role("bob")
    with team_db.connect() as conn:
        admin.add_member(conn, alice, ["a"])
        admin.add_member(conn, bob, ["b"])
    with team_db.connect(alice) as conn:
        _insert(conn, "team", "a", "a-note", "alpha convention")
        _insert(conn, "org", None, "org-note", "org convention")
    with team_db.connect(bob) as conn:
        _insert(conn, "team", "b", "b-note", "bravo secret plan")
    return alice, bob


def test_init_db_applies_each_migration_once_even_when_run_twice_at_once(pg_server) -> None:
    name = "memvault_fresh_init"
    pg_server.sql(f"DROP DATABASE IF EXISTS {name}")
    pg_server.sql(f"CREATE DATABASE {name}")
    try:
        results: list[list[int]] = []

        def run() -> None:
            with pg_server.connect(name) as conn:
                results.append(schema.init_db(conn))

        threads = [threading.Thread(target=run) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        every = [v for v, _, _ in schema.migrations()]
        assert len(every) >= 2 and sorted(v for applied in results for v in applied) == every  # each once
        with pg_server.connect(name) as conn:
            assert schema.init_db(conn) == []
            assert schema.version(conn) == len(schema.migrations())
            rows = conn.execute("SELECT version FROM memvault.schema_version").fetchall()
            assert rows == [(v,) for v in every]
    finally:
        pg_server.sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.mark.parametrize(
    ("scope", "team", "extra"),
    [
        ("team", None, {}),  # a team entry without its team
        ("org", "a", {}),  # an org entry that names a team
        ("personal", None, {}),  # personal entries never leave the machine
        ("org", None, {"model_id": "m"}),  # a model without a vector
        ("org", None, {"slug": "../escape"}),  # a slug that is a path
        ("org", None, {"slug": ".hidden"}),
    ],
)
def test_check_constraints_refuse_a_bad_scope_or_shape(team_db: TeamDb, scope, team, extra) -> None:
    with team_db.connect() as conn:
        admin.add_member(conn, team_db.role("admin"), ["a"])
        with pytest.raises(pg.CheckViolation):
            _insert(conn, scope, team, extra.pop("slug", "s"), **extra)


def test_member_sees_own_teams_and_org_only(team_db: TeamDb, two_teams) -> None:
    alice, bob = two_teams
    with team_db.connect(alice) as conn:
        assert conn.execute("SELECT current_user").fetchone()[0] == alice  # the member's own login, not a superuser
        seen = {r[0] for r in conn.execute("SELECT slug FROM memvault.entries")}
        assert seen == {"a-note", "org-note"}
        assert conn.execute("SELECT count(*) FROM memvault.entries WHERE body LIKE '%bravo%'").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM memvault.history WHERE team = 'b'").fetchone()[0] == 0
        assert {r[0] for r in conn.execute("SELECT team FROM memvault.audit")} == {"a", None}
        assert [r[0] for r in conn.execute("SELECT name FROM memvault.teams")] == ["a"]
        assert {r[0] for r in conn.execute("SELECT role_name FROM memvault.team_members")} == {alice}
    with team_db.connect(bob) as conn:
        assert {r[0] for r in conn.execute("SELECT slug FROM memvault.entries")} == {"b-note", "org-note"}


def test_member_cannot_change_another_teams_entries(team_db: TeamDb, two_teams) -> None:
    alice, _ = two_teams
    with team_db.connect(alice) as conn:
        updated = conn.execute("UPDATE memvault.entries SET body = 'hijacked' WHERE team = 'b'").rowcount
        assert updated == 0
        conn.commit()
        with pytest.raises(pg.InsufficientPrivilege):
            conn.execute("DELETE FROM memvault.entries")
        conn.rollback()
        with pytest.raises(pg.InsufficientPrivilege):  # row-level security: not a member of b
            _insert(conn, "team", "b", "planted")
        conn.rollback()
        with pytest.raises(pg.CheckViolation):  # moving an own entry into b (the trigger; the policy would too)
            conn.execute("UPDATE memvault.entries SET team = 'b' WHERE slug = 'a-note'")
        conn.rollback()
        with pytest.raises(pg.InsufficientPrivilege):
            conn.execute("TRUNCATE memvault.entries")
        conn.rollback()
        with pytest.raises(pg.InsufficientPrivilege):
            conn.execute("INSERT INTO memvault.team_members (team, role_name) VALUES ('b', current_user)")
        conn.rollback()
        with pytest.raises(pg.InsufficientPrivilege):
            conn.execute("ALTER TABLE memvault.entries DISABLE ROW LEVEL SECURITY")
        conn.rollback()
    with team_db.connect() as conn:  # the superuser's view: team b's entry is as bob wrote it
        assert conn.execute("SELECT body, version FROM memvault.entries WHERE team = 'b'").fetchone() == (
            "bravo secret plan",
            1,
        )


def test_the_server_stamps_author_editor_version_and_cursor(team_db: TeamDb, two_teams) -> None:
    alice, bob = two_teams
    with team_db.connect(alice) as conn:
        uid = _insert(conn, "team", "a", "forged", author=bob)
        conn.execute("UPDATE memvault.entries SET version = 99, change_seq = 0, editor = %s WHERE uid = %s",
                     (bob, uid))  # fmt: skip
        conn.commit()
        author, editor, version, seq = conn.execute(
            "SELECT author, editor, version, change_seq FROM memvault.entries WHERE uid = %s", (uid,)
        ).fetchone()
    assert (author, editor, version) == (alice, alice, 2)
    assert seq > 0


def test_audit_and_history_are_append_only(team_db: TeamDb, two_teams) -> None:
    alice, _ = two_teams
    with team_db.connect(alice) as conn:
        conn.execute("UPDATE memvault.entries SET body = 'alpha convention, v2' WHERE slug = 'a-note'")
        conn.commit()
        actions = conn.execute(
            "SELECT action, actor, version FROM memvault.audit WHERE team = 'a' ORDER BY id"
        ).fetchall()
        assert actions == [("publish", alice, 1), ("edit", alice, 2)]
        assert conn.execute("SELECT body FROM memvault.history WHERE team = 'a'").fetchall() == [("alpha convention",)]
        for statement in ("UPDATE memvault.audit SET actor = 'someone'", "DELETE FROM memvault.audit",
                          "INSERT INTO memvault.audit (uid, scope, version, action, actor) "
                          "VALUES (gen_random_uuid(), 'org', 1, 'edit', 'x')",
                          "DELETE FROM memvault.history", "UPDATE memvault.history SET body = ''"):  # fmt: skip
            with pytest.raises(pg.InsufficientPrivilege):
                conn.execute(statement)
            conn.rollback()
    with team_db.connect() as conn:  # not even the owner (a superuser here) rewrites it without dropping the guard
        with pytest.raises(pg.InsufficientPrivilege, match="append-only"):
            conn.execute("DELETE FROM memvault.audit")
        conn.rollback()
        assert conn.execute("SELECT count(*) FROM memvault.audit").fetchone()[0] == 4


def test_removed_member_sees_nothing(team_db: TeamDb, two_teams) -> None:
    alice, _ = two_teams
    with team_db.connect() as conn:
        admin.remove_member(conn, alice)
    with team_db.connect(alice) as conn, pytest.raises(pg.InsufficientPrivilege):
        conn.execute("SELECT * FROM memvault.entries")


def test_admin_rejects_bad_names(team_db: TeamDb) -> None:
    with team_db.connect() as conn:
        for role, teams in (("Robert'); DROP TABLE x;--", ["a"]), ("pg_monitor", ["a"]), ("carol", ["Bad Team"])):
            with pytest.raises(admin.AdminError):
                admin.add_member(conn, role, teams)


def test_search_functions_run_as_owner_but_see_only_the_callers_teams(team_db: TeamDb, two_teams) -> None:
    """The keyword side runs SECURITY DEFINER (so the GIN index serves it); called by hand, asking for another
    team, it still finds and counts nothing of that team."""
    alice, _ = two_teams
    with team_db.connect(alice) as conn:
        for only in (None, ["b"], ["a", "b"]):
            found = conn.execute(
                "SELECT count(*) FROM memvault.keyword_candidates("
                "ARRAY['bravo', 'plan'], false, ARRAY['bravo'], %s, 50)",
                (only,),
            ).fetchone()[0]
            assert found == 0
            stats = conn.execute("SELECT memvault.term_stats(ARRAY['bravo', 'convention'], %s, 1000, 100)", (only,))
            total, bravo, convention = stats.fetchone()[0]
            assert bravo == 0
            assert (total, convention) == ((1, 1) if only == ["b"] else (2, 2))  # org entries always count
        assert conn.execute("SELECT memvault.session_teams(NULL)").fetchone()[0] == ["a"]
        mine = conn.execute(
            "SELECT count(*) FROM memvault.keyword_candidates(ARRAY['alpha'], false, ARRAY['alpha'], NULL, 9)"
        )
        assert mine.fetchone()[0] == 1


def test_an_admin_without_superuser_sets_up_the_database(pg_server, tmp_path, monkeypatch) -> None:
    """As the how-to says: a superuser makes the admin role (CREATEROLE), the database it owns and the extension;
    the admin runs init-db and adds a member with a password; the member logs in over TCP from their own libpq
    files and publishes; the admin's rotation of the password locks the old one out."""
    import psycopg

    from memvault.team import server

    name, boss, member = "memvault_admin_path", "team_boss", "team_dana"
    pg_server.sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    for role in (member, boss):
        pg_server.sql(f"DROP ROLE IF EXISTS {role}")
    pg_server.sql(f"CREATE ROLE {boss} LOGIN CREATEROLE")
    # The member group role is global to the server and exists already (another database's init-db made it):
    # then a superuser lets the new admin hand it out, as the how-to says.
    pg_server.sql(f"GRANT memvault_member TO {boss} WITH ADMIN OPTION")
    pg_server.sql(f"CREATE DATABASE {name} OWNER {boss}")
    pg_server.sql("CREATE EXTENSION IF NOT EXISTS vector", dbname=name)
    try:
        with pg_server.connect(name, boss) as conn:
            assert [v for v, _, _ in schema.migrations()] == schema.init_db(conn)
            admin.add_member(conn, member, ["platform"], password="first-pass")
            assert admin.members(conn) == {member: ["platform"]}
        db = TeamDb(pg_server, name)
        for key, value in db.member_home(tmp_path / "dana", member, "first-pass").items():
            monkeypatch.setenv(key, value)
        with psycopg.connect("service=team") as conn:
            row = server.publish(conn, server.EntryIn(str(uuid.uuid4()), "team", "platform", "convention", "Tabs",
                                                      "tabs", "Indent with four spaces.", {}, "h1"))  # fmt: skip
            assert row.author == member
        with pg_server.connect(name, boss) as conn:
            admin.set_password(conn, member, "second-pass")
            assert conn.execute("SELECT count(*) FROM memvault.entries").fetchone()[0] == 1  # the owner reads all
        with pytest.raises(psycopg.OperationalError, match="password"):
            psycopg.connect("service=team connect_timeout=3")
        with pg_server.connect() as conn:  # the server's log never saw the password: a SCRAM verifier is stored
            stored = conn.execute("SELECT rolpassword FROM pg_authid WHERE rolname = %s", (member,)).fetchone()[0]
            assert stored.startswith("SCRAM-SHA-256$")
        assert "second-pass" not in pg_server.log.read_text(errors="replace")
    finally:
        pg_server.sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        for role in (member, boss):
            pg_server.sql(f"DROP ROLE IF EXISTS {role}")
