"""Team memory, the member's side under stress: kill -9 mid-publish and mid-pull, the server restarted mid-pull,
push conflicts, deletions and supersedes, eight members at once — a real PostgreSQL, real members, real processes.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from memvault.team import envelope

from .pg import TeamDb
from .team_client_helpers import (
    CONVENTION,
    add_member,
    edit_mirror,
    entries,
    paused_kill,
    publish_many,
    team_fixture,  # noqa: F401 - `team`: a database with teams backend and frontend
)


@pytest.mark.parametrize("label", ["team-publish:queued", "team-publish:sent"])
def test_kill_9_mid_publish_leaves_no_partial_entry_and_the_publish_goes_out_once(
    team: TeamDb, tmp_path: Path, label: str
) -> None:
    alice = add_member(team, tmp_path, "alice", ["backend"])
    rel = alice.note("MemoryVault/default/workflow/alembic-migrations.md", CONVENTION)
    paused_kill(alice, label, "team", "publish", rel, "--team", "backend")
    rows = entries(team)
    assert len(rows) == (1 if label.endswith("sent") else 0)  # committed whole or not at all
    assert [q.source_path for q in alice.state().queued()] == [rel]  # still journalled: it goes out later
    alice.run("team", "pull")
    [row] = entries(team)  # once, whatever the kill: the uid made the retry idempotent
    assert row["version"] == 1 and "alembic upgrade head" in row["body"]
    assert alice.state().queued() == [] and alice.state().published()[rel]["version"] == 1


def test_kill_9_mid_pull_loses_no_entry_and_no_edit_and_duplicates_nothing(team: TeamDb, tmp_path: Path) -> None:
    alice = add_member(team, tmp_path, "alice", ["backend"])
    bob = add_member(team, tmp_path, "bob", ["backend"])
    publish_many(team, alice, 30, prefix="first")
    bob.run("team", "pull")
    edited = "MemoryVault/team/backend/first-3.md"
    mine = (bob.vault / edited).read_text().replace("Rule number 3", "Rule number 3, as bob reads it")
    (bob.vault / edited).write_text(mine)  # an edit bob has not pushed yet
    publish_many(team, alice, 600, prefix="second")  # more than one batch of the pull
    with team.connect(alice.role) as conn:
        conn.execute("UPDATE memvault.entries SET body = body || 'changed' WHERE slug = 'first-3'")
        conn.commit()
    paused_kill(bob, "team-pull:batch-written", "team", "pull")  # after the first batch's files, before the cursor
    bob.run("team", "pull")
    mirror = bob.mirror()
    wanted = {
        f"MemoryVault/team/backend/{p}-{n}.md" for p, count in (("first", 30), ("second", 600)) for n in range(count)
    }
    assert set(mirror) == wanted  # every entry once, none twice under a second name
    assert mirror[edited] == mine  # bob's edit is kept; the server's change waits for his push
    assert all("team_version: 1" in t for p, t in mirror.items() if p != edited)


def test_push_proposes_an_edit_and_a_conflict_keeps_both_and_asks(team: TeamDb, tmp_path: Path) -> None:
    alice = add_member(team, tmp_path, "alice", ["backend"])
    bob = add_member(team, tmp_path, "bob", ["backend"])
    rel = alice.note("MemoryVault/default/workflow/alembic-migrations.md", CONVENTION)
    alice.run("team", "publish", rel, "--team", "backend")
    alice.run("team", "pull")
    bob.run("team", "pull")
    mirrored = "MemoryVault/team/backend/alembic-migrations.md"

    edit_mirror(alice, mirrored, "Rollbacks are a new revision", "Rollbacks are a new revision (alice)")
    edit_mirror(bob, mirrored, "from the deploy job", "from the deploy job, never a laptop (bob)")
    assert "version 2" in alice.run("team", "push").stdout
    [row] = entries(team)
    assert row["version"] == 2 and "(alice)" in row["body"]
    assert "team_version: 2" in (alice.vault / mirrored).read_text()  # no longer an unpushed edit

    conflict = bob.run("team", "push", check=False)
    assert conflict.returncode == 1 and "conflict" in conflict.stderr
    [row] = entries(team)
    assert row["version"] == 2 and "(bob)" not in row["body"]  # the server keeps alice's version
    mirror_text = (bob.vault / mirrored).read_text()
    assert "(alice)" in mirror_text and "team_version: 2" in mirror_text  # bob's mirror follows the server
    [copy] = (bob.vault / "MemoryVault").glob("*/_review/team-conflict-*.md")
    kept = copy.read_text()
    assert "(bob)" in kept and "team_conflict:" in kept and "route: review" in kept  # his edit, kept to decide
    assert json.loads(bob.run("team", "status", "--json").stdout)["conflicts"] == 1
    assert (
        "1 to resolve" in bob.run("health", check=False).stdout or "conflict" in bob.run("health", check=False).stdout
    )

    edit_mirror(bob, mirrored, "from the deploy job", "from the deploy job, never a laptop (bob)")  # he merges
    bob.run("team", "push")
    [row] = entries(team)
    assert row["version"] == 3 and "(alice)" in row["body"] and "(bob)" in row["body"]
    assert json.loads(bob.run("team", "status", "--json").stdout)["conflicts"] == 0


def test_deletions_and_supersedes_propagate_to_the_mirror_and_recent_n_keeps_the_newest(
    team: TeamDb, tmp_path: Path
) -> None:
    from memvault.team import server

    alice = add_member(team, tmp_path, "alice", ["backend"])
    bob = add_member(team, tmp_path, "bob", ["backend"], mirror="recent 3")
    uids = publish_many(team, alice, 5, prefix="rule")
    bob.run("team", "pull")
    assert sorted(bob.mirror()) == [f"MemoryVault/team/backend/rule-{n}.md" for n in (2, 3, 4)]
    with team.connect(alice.role) as conn:
        server.delete(conn, uids[4], 1)
        body, fm = "# Rule 3, revised\n\nKeep the rule tests green and fast.\n", {"kind": "workflow"}
        new = server.EntryIn(str(uuid.uuid4()), "team", "backend", "workflow", "Rule 3, revised", "rule-3-revised",
                             body, fm, envelope.content_hash(body, fm), supersedes=uids[3])  # fmt: skip
        server.publish(conn, new)
    bob.run("team", "pull")
    mirror = bob.mirror()
    assert "MemoryVault/team/backend/rule-4.md" not in mirror  # deleted on the server
    assert "MemoryVault/team/backend/rule-3.md" not in mirror  # superseded
    assert "MemoryVault/team/backend/rule-3-revised.md" in mirror and len(mirror) <= 3


def test_the_server_restarted_mid_pull_fails_that_pull_cleanly_and_the_next_one_completes(
    team: TeamDb, pg_control: Any, tmp_path: Path
) -> None:
    alice = add_member(team, tmp_path, "alice", ["backend"])
    bob = add_member(team, tmp_path, "bob", ["backend"])
    publish_many(team, alice, 700, prefix="rule")
    folder = bob.home / "pause"
    folder.mkdir()
    proc = bob.popen("team", "pull", MEMVAULT_FAULT_PAUSE=f"team-pull:batch-written@{folder}")
    deadline = time.monotonic() + 60
    while not (folder / "paused").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    pg_control.restart()  # the pull's connection is gone; its first batch is written
    (folder / "resume").touch()
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 1 and "Traceback" not in stderr, stderr
    assert 0 < len(bob.mirror()) < 700
    assert json.loads(bob.run("team", "status", "--json").stdout)["last_error"]
    bob.run("team", "pull")
    assert len(bob.mirror()) == 700
    assert json.loads(bob.run("team", "status", "--json").stdout)["last_error"] is None


def test_eight_members_publish_pull_and_edit_at_once(team: TeamDb, tmp_path: Path) -> None:
    members = [add_member(team, tmp_path, f"m{n}", ["backend"]) for n in range(8)]
    for m in members:
        for topic in ("lint", "deploy"):
            m.note(
                f"MemoryVault/default/workflow/{m.name}-{topic}.md",
                f"# {m.name} {topic}\n\n{m.name} says: {topic} early.\n",
            )

    def together(args_of: Any) -> list[tuple[int, str, str]]:
        procs = [m.popen(*args_of(m)) for m in members]
        return [(p.wait(timeout=300), *p.communicate()) for p in procs]

    for topic in ("lint", "deploy"):
        done = together(
            lambda m, t=topic: ("team", "publish", f"MemoryVault/default/workflow/{m.name}-{t}.md", "--team", "backend")
        )
        assert all(code == 0 for code, _, _ in done), done
    assert len(entries(team)) == 16
    assert all(code == 0 for code, _, _ in together(lambda m: ("team", "pull")))
    assert all(len(m.mirror()) == 16 for m in members)

    shared = "MemoryVault/team/backend/m0-lint.md"
    for m in members:
        edit_mirror(m, shared, "lint early.", f"lint early. Edited by {m.name}.")
    results = together(lambda m: ("team", "push"))
    winners = [m for m, (code, _, _) in zip(members, results, strict=True) if code == 0]
    losers = [m for m, (code, _, _) in zip(members, results, strict=True) if code == 1]
    assert len(winners) == 1 and len(losers) == 7, results
    row = next(r for r in entries(team) if r["slug"] == "m0-lint")
    assert row["version"] == 2 and f"Edited by {winners[0].name}." in row["body"]
    for m in losers:  # no edit lost: each loser's text waits in their review queue
        [copy] = (m.vault / "MemoryVault").glob("*/_review/team-conflict-*.md")
        assert f"Edited by {m.name}." in copy.read_text()
        assert f"Edited by {winners[0].name}." in (m.vault / shared).read_text()


def test_two_pulls_of_one_vault_at_once_write_each_entry_once(team: TeamDb, tmp_path: Path) -> None:
    alice = add_member(team, tmp_path, "alice", ["backend"])
    bob = add_member(team, tmp_path, "bob", ["backend"])
    publish_many(team, alice, 600, prefix="rule")
    procs = [bob.popen("team", "pull") for _ in range(2)]  # two sessions starting together, say
    assert [p.wait(timeout=300) for p in procs] == [0, 0], [p.communicate() for p in procs]
    assert set(bob.mirror()) == {f"MemoryVault/team/backend/rule-{n}.md" for n in range(600)}


def test_the_mirror_stays_inside_the_vault_whatever_the_names_and_links(team: TeamDb, tmp_path: Path) -> None:
    alice = add_member(team, tmp_path, "alice", ["con"])  # a name Windows reserves: a folder name still
    bob = add_member(team, tmp_path, "bob", ["con"])
    publish_many(team, alice, 2, prefix="aux", team_name="con")
    bob.run("team", "pull")
    assert set(bob.mirror()) == {f"MemoryVault/team/con-note/aux-{n}.md" for n in range(2)}

    carol = add_member(team, tmp_path, "carol", ["con"])
    outside = tmp_path / "outside"
    outside.mkdir()
    (carol.vault / "MemoryVault" / "team").symlink_to(outside, target_is_directory=True)
    pulled = carol.run("team", "pull")
    assert "not mirrored" in pulled.stderr and "path_escape" in pulled.stderr
    assert list(outside.rglob("*")) == []  # nothing written through the link


def test_a_member_deletes_a_team_note_for_everyone_unless_it_changed_since_their_pull(
    team: TeamDb, tmp_path: Path
) -> None:
    alice = add_member(team, tmp_path, "alice", ["backend"])
    bob = add_member(team, tmp_path, "bob", ["backend"])
    publish_many(team, alice, 2, prefix="rule")
    alice.run("team", "pull")
    bob.run("team", "pull")
    gone, kept = "MemoryVault/team/backend/rule-0.md", "MemoryVault/team/backend/rule-1.md"
    with team.connect(alice.role) as conn:  # alice changes rule-1 after bob's pull
        conn.execute("UPDATE memvault.entries SET body = body || 'changed' WHERE slug = 'rule-1'")
        conn.commit()
    stale = bob.run("team", "delete", kept, check=False)
    assert stale.returncode == 1 and "[team-conflict]" in stale.stderr
    bob.run("team", "delete", gone)
    assert gone not in bob.mirror() and kept in bob.mirror()
    rows = {r["slug"]: r for r in entries(team)}
    assert rows["rule-0"]["deleted"] and not rows["rule-1"]["deleted"]
    alice.run("team", "pull")
    assert gone not in alice.mirror()  # the tombstone reaches every member


def test_a_team_joined_after_a_pull_brings_its_older_entries(team: TeamDb, tmp_path: Path) -> None:
    from memvault.team import admin

    alice = add_member(team, tmp_path, "alice", ["backend", "frontend"])
    bob = add_member(team, tmp_path, "bob", ["backend"])
    publish_many(team, alice, 2, prefix="front", team_name="frontend")  # before bob is in frontend
    publish_many(team, alice, 2, prefix="back")
    bob.run("team", "pull")
    assert sorted(bob.mirror()) == ["MemoryVault/team/backend/back-0.md", "MemoryVault/team/backend/back-1.md"]
    with team.connect() as conn:
        admin.add_member(conn, bob.role, ["backend", "frontend"])
        conn.commit()
    bob.run("team", "pull")
    assert "MemoryVault/team/frontend/front-0.md" in bob.mirror() and len(bob.mirror()) == 4
