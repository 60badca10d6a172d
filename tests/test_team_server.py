"""memvault.team.server against a real PostgreSQL with pgvector, as member roles: publish (idempotent, optimistic),
tombstones, the incremental pull (safe against out-of-order commits), and the server-side hybrid search."""

from __future__ import annotations

import hashlib
import threading
import time
import uuid
from array import array

import pytest

from memvault.recall import relevance
from memvault.team import admin, server
from memvault.team.server import EntryIn
from tests.pg import TeamDb


def entry(title: str, body: str, *, team: str | None = "a", uid: str | None = None, base: int | None = None,
          vector: list[float] | None = None, model: str | None = None, slug: str | None = None) -> EntryIn:  # fmt: skip
    return EntryIn(
        uid=uid or str(uuid.uuid4()), scope="team" if team else "org", team=team, kind="convention", title=title,
        slug=slug or title.lower().replace(" ", "-"), body=body, frontmatter={"kind": "convention", "tags": ["x"]},
        content_hash=hashlib.sha256(body.encode()).hexdigest(), embedding=vector, model_id=model,
        base_version=base,
    )  # fmt: skip


@pytest.fixture
def members(team_db: TeamDb) -> tuple[str, str, str]:
    """alice and carol in team a, bob in team b."""
    roles = team_db.role("alice"), team_db.role("carol"), team_db.role("bob")
    with team_db.connect() as conn:
        admin.add_member(conn, roles[0], ["a"])
        admin.add_member(conn, roles[1], ["a"])
        admin.add_member(conn, roles[2], ["b"])
    return roles


def count(team_db: TeamDb, where: str = "true") -> int:
    with team_db.connect() as conn:  # the superuser's view of what reached the database
        return int(conn.execute(f"SELECT count(*) FROM memvault.entries WHERE {where}").fetchone()[0])


def test_publish_is_idempotent_on_uid(team_db: TeamDb, members) -> None:
    alice = members[0]
    new = entry("Use uv", "We install Python packages with uv, never pip.")
    with team_db.connect(alice) as conn:
        first = server.publish(conn, new)
        again = server.publish(conn, new)  # a retry whose answer was lost
        assert again == first and first.version == 1 and first.author == alice
        with pytest.raises(server.VersionConflict) as caught:  # the same uid with other content is not a retry
            server.publish(conn, entry("Use uv", "Something else.", uid=new.uid))
        assert caught.value.code == "team-conflict" and caught.value.current.content_hash == first.content_hash
        assert conn.info.transaction_status == 0  # committed, nothing left open
    assert count(team_db) == 1
    with team_db.connect() as conn:
        assert conn.execute("SELECT count(*) FROM memvault.audit").fetchone()[0] == 1


def test_edit_with_optimistic_version_and_history(team_db: TeamDb, members) -> None:
    alice, carol, _ = members
    with team_db.connect(alice) as conn:
        v1 = server.publish(conn, entry("Port", "The dev server listens on 8080."))
    with team_db.connect(carol) as conn:  # any member of the team may edit: a new version, carol named as editor
        v2 = server.publish(conn, entry("Port", "The dev server listens on 8081.", uid=v1.uid, base=1))
        assert (v2.version, v2.author, v2.editor) == (2, alice, carol)
        assert v2.change_seq > v1.change_seq
    with team_db.connect(alice) as conn:
        with pytest.raises(server.VersionConflict) as caught:  # alice edits from version 1: carol's came first
            server.publish(conn, entry("Port", "The dev server listens on 9000.", uid=v1.uid, base=1))
        assert caught.value.current.version == 2 and "8081" in caught.value.current.body
        retried = server.publish(conn, entry("Port", "The dev server listens on 8081.", uid=v1.uid, base=1))
        assert retried.version == 2  # the same content as the server's: nothing to do, no conflict
    with team_db.connect() as conn:
        assert conn.execute("SELECT body FROM memvault.history WHERE uid = %s", (v1.uid,)).fetchall() == [
            ("The dev server listens on 8080.",)]  # fmt: skip


def test_delete_is_a_tombstone(team_db: TeamDb, members) -> None:
    alice = members[0]
    with team_db.connect(alice) as conn:
        v1 = server.publish(conn, entry("Old rule", "Run make lint before pushing."))
        gone = server.delete(conn, v1.uid, 1)
        assert gone.deleted and gone.version == 2
        assert server.delete(conn, v1.uid, 1).version == 2  # a retried delete
        restored = server.publish(conn, entry("Old rule", "Run make lint before pushing.", uid=v1.uid, base=2))
        assert not restored.deleted and restored.version == 3
        with pytest.raises(server.VersionConflict):
            server.delete(conn, v1.uid, 2)


def test_publish_refuses_other_teams_secrets_and_private_notes(team_db: TeamDb, members) -> None:
    alice = members[0]
    with team_db.connect(alice) as conn:
        with pytest.raises(server.MemvaultError) as caught:
            server.publish(conn, entry("Theirs", "planted", team="b"))
        assert caught.value.code == "team-denied"
        with pytest.raises(server.MemvaultError) as caught:
            key = "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEQ"
            server.publish(conn, entry("Key", f"deploy with AWS key AKIAIOSFODNN7EXAMPLQ and secret {key}"))
        assert caught.value.code == "secret"
        with pytest.raises(server.MemvaultError) as caught:
            server.publish(conn, entry("Mine", "shared part <private>my own part</private>"))
        assert caught.value.code == "private"
        with pytest.raises(server.MemvaultError) as caught:
            server.publish(conn, entry("Bad", "x", slug="../../etc/passwd"))
        assert caught.value.code == "team-invalid"
    assert count(team_db) == 0  # checked in the database itself
    with team_db.connect() as conn:
        assert conn.execute("SELECT count(*) FROM memvault.entries WHERE body LIKE '%AKIA%' OR body LIKE "
                            "'%private%'").fetchone()[0] == 0  # fmt: skip


def test_changes_since_is_incremental_and_per_member(team_db: TeamDb, members) -> None:
    alice, carol, bob = members
    with team_db.connect(alice) as conn:
        a1 = server.publish(conn, entry("A one", "first"))
        server.publish(conn, entry("Org one", "for everyone", team=None))
    with team_db.connect(bob) as conn:
        server.publish(conn, entry("B one", "bravo only", team="b"))
    with team_db.connect(carol) as conn:
        rows, cursor = server.changes_since(conn, 0)
        assert [r.title for r in rows] == ["A one", "Org one"]
        assert server.changes_since(conn, cursor) == ([], cursor)
        server.delete(conn, a1.uid, 1)
        rows, cursor2 = server.changes_since(conn, cursor)
        assert [(r.uid, r.deleted) for r in rows] == [(a1.uid, True)] and cursor2 > cursor
        page, mid = server.changes_since(conn, 0, limit=1)  # paging: the cursor of the last row handed out
        rest, _ = server.changes_since(conn, mid, limit=10)
        assert [r.title for r in page + rest] == ["Org one", "A one"]  # a1's change is now the newest
    with team_db.connect(bob) as conn:
        rows, _ = server.changes_since(conn, 0)
        assert {r.title for r in rows} == {"B one", "Org one"}


def test_changes_since_waits_for_an_earlier_write_that_commits_late(team_db: TeamDb, members) -> None:
    """Two writers: the first takes the lower cursor value but commits after the second. A pull in between must
    not hand out the second and move past the first (which would never be pulled)."""
    alice, carol, _ = members
    slow = team_db.connect(alice)
    before = 0  # a fresh database: nothing was written yet
    slow.execute("INSERT INTO memvault.entries (uid, scope, team, title, slug, body, content_hash) "
                 "VALUES (gen_random_uuid(), 'team', 'a', 'Slow', 'slow', 'committed late', 'h')")  # fmt: skip
    done = threading.Event()

    def fast_write() -> None:
        with team_db.connect(carol) as conn:
            server.publish(conn, entry("Fast", "committed first"))
        done.set()

    writer = threading.Thread(target=fast_write)
    writer.start()
    writer.join(10)
    assert done.is_set()  # writers do not wait for each other
    with team_db.connect(carol) as conn:
        with pytest.raises(server.TeamBusy):  # the lower value is still in flight: no answer rather than a wrong one
            server.changes_since(conn, before, lock_timeout_s=0.3)
        result: list = []
        puller = threading.Thread(target=lambda: result.append(server.changes_since(conn, before)))
        puller.start()
        time.sleep(0.5)
        assert not result  # still waiting for the slow writer
        slow.commit()
        puller.join(10)
    slow.close()
    rows, cursor = result[0]
    assert [r.title for r in rows] == ["Slow", "Fast"]
    assert rows[0].change_seq < rows[1].change_seq == cursor


def test_changes_since_never_skips_under_concurrent_writers(team_db: TeamDb, members) -> None:
    """Four writers and a puller at once: every entry is pulled, once, whatever the commit order."""
    alice, carol, _ = members
    stop = threading.Event()
    published: list[str] = []

    def write(role: str, worker: int, n: int) -> None:
        with team_db.connect(role) as conn:
            for i in range(n):
                published.append(server.publish(conn, entry(f"{role} {worker} {i}", f"entry {i} of {role}")).uid)

    seen: list[str] = []

    def pull() -> None:
        cursor = 0
        with team_db.connect(carol) as conn:
            while True:
                final = stop.is_set()
                rows, cursor = server.changes_since(conn, cursor, limit=7)
                seen.extend(r.uid for r in rows)
                if final and not rows:
                    return

    writers = [
        threading.Thread(target=write, args=(role, w, 25)) for w, role in enumerate((alice, carol, alice, carol))
    ]
    puller = threading.Thread(target=pull)
    puller.start()
    for t in writers:
        t.start()
    for t in writers:
        t.join()
    stop.set()
    puller.join(30)
    assert sorted(seen) == sorted(published) and len(published) == 100


def test_search_is_hybrid_floored_and_respects_rls(team_db: TeamDb, members, embedder) -> None:
    alice, carol, bob = members
    model = embedder.name
    texts = {
        "Python packages": ("b", "Install Python packages with uv; pip is not used in this repository."),
        "Release day": ("a", "Releases go out on Tuesdays after the staging soak test passes."),
        "Database migrations": ("a", "Every schema change needs a numbered migration file and a rollback."),
        "Error KX-4471": ("a", "KX-4471 means the cache lock was held too long; restart the worker."),
    }
    for title, (team, body) in texts.items():
        vector = list(array("f", embedder.encode([f"{title}\n{body}"])[0]))
        with team_db.connect(bob if team == "b" else alice) as conn:
            server.publish(conn, entry(title, body, team=team, vector=vector, model=model))

    def ask(role: str, text: str, **kw) -> list[str]:
        qv = list(array("f", embedder.encode_query([text])[0]))
        with team_db.connect(role) as conn:
            return [h.entry.title for h in server.search(conn, text, qv, model, k=3, **kw)]

    assert ask(carol, "which day do we ship a release?")[0] == "Release day"
    assert ask(carol, "how do I add a database migration for a schema change")[0] == "Database migrations"
    assert ask(carol, "what does KX-4471 mean")[0] == "Error KX-4471"
    assert ask(carol, "recipe for a sourdough bread with rye flour") == []  # the floor: nothing related
    assert "Python packages" not in ask(carol, "how do I install python packages")  # team b's: not carol's to see
    assert ask(bob, "how do I install python packages")[0] == "Python packages"
    assert len(ask(carol, "schema change release", floor=relevance.Floor())) >= 2  # floor off: the ranking alone
    with team_db.connect(carol) as conn:  # keyword-only (no query vector): the same floor's keyword rule
        assert server.search(conn, "install python packages with uv not pip", None, None) == []  # team b's
        hits = server.search(conn, "numbered migration file rollback", None, None, k=3)
        assert [h.entry.title for h in hits] == ["Database migrations"] and hits[0].cosine is None


def test_a_database_without_the_schema_or_an_older_one_says_to_run_init_db(team_db: TeamDb, members) -> None:
    alice = members[0]
    with team_db.connect() as conn:  # as if the database were at schema version 1: no search functions yet
        conn.execute("DROP FUNCTION memvault.term_stats(text[], text[], integer, integer)")
        conn.commit()
    with team_db.connect(alice) as conn:
        with pytest.raises(server.SchemaError, match="init-db") as caught:
            server.search(conn, "release day tuesday", None, None)
        assert caught.value.code == "team-schema"
        assert server.changes_since(conn, 0) == ([], 0)  # what the older schema has still works
    with team_db.server.connect("postgres") as conn:  # a database where init-db never ran
        for call in (lambda: server.changes_since(conn, 0), lambda: server.publish(conn, entry("T", "body"))):
            with pytest.raises(server.SchemaError, match="init-db"):
                call()


def test_init_db_refuses_a_database_newer_than_this_memvault(team_db: TeamDb) -> None:
    from memvault.team import schema

    with team_db.connect() as conn:
        conn.execute("INSERT INTO memvault.schema_version (version, name) VALUES (99, '0099_future.sql')")
        conn.commit()
        with pytest.raises(schema.SchemaError, match="newer than this memvault knows"):
            schema.init_db(conn)


def test_a_team_joined_later_is_not_in_the_incremental_pull_but_in_my_teams(team_db: TeamDb, members) -> None:
    """Why a client re-pulls from 0 when `my_teams` grew: the cursor passed the new team's older entries."""
    alice, _, bob = members
    with team_db.connect(bob) as conn:
        server.publish(conn, entry("B rule", "bravo team rule", team="b"))
    with team_db.connect(alice) as conn:
        assert server.my_teams(conn) == ["a"]
        server.publish(conn, entry("A rule", "alpha team rule"))
        rows, cursor = server.changes_since(conn, 0)
        assert [r.title for r in rows] == ["A rule"]
    with team_db.connect() as conn:
        admin.add_member(conn, alice, ["b"])
    with team_db.connect(alice) as conn:
        assert server.my_teams(conn) == ["a", "b"]
        assert server.changes_since(conn, cursor) == ([], cursor)
        assert [r.title for r in server.changes_since(conn, 0)[0]] == ["B rule", "A rule"]
