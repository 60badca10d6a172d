"""Team memory, the member's side: the envelope, publish and its outbox, pull into the mirror, push, the hook.

Everything runs against a real PostgreSQL with pgvector (tests/pg.py) and real member roles logging in over
TCP with their own libpq service and password files; members run the real `memvault` command line as
subprocesses, each with a HOME, a vault and a memvault state folder of its own.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memvault import open_vault
from memvault.errors import SafetyError
from memvault.team import envelope
from memvault.team.outbox import TeamState

from .conftest import REPO, home_env
from .pg import TeamDb

HOOKS = REPO / "memvault" / "hooks"
CONVENTION = """# Database migrations go through alembic revision files

Never edit a production table by hand: write an alembic revision, review it, then run
`alembic upgrade head` from the deploy job. Rollbacks are a new revision, not a downgrade.
"""
PROMPT = "how do I change a production database table? should I write an alembic revision or edit it by hand?"


# ---- members ----------------------------------------------------------------------------------------


@dataclass
class Member:
    """One person on their own machine: a HOME, a vault, memvault's state, a database role with a password."""

    name: str
    role: str
    home: Path
    vault: Path
    env: dict[str, str]

    def run(
        self, *args: str, check: bool = True, timeout: float = 120, **extra: str
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [sys.executable, "-m", "memvault", *args],
            env={**self.env, **extra},
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=self.home,
        )
        if check:
            assert result.returncode == 0, f"{self.name}: memvault {' '.join(args)}\n{result.stdout}\n{result.stderr}"
        return result

    def popen(self, *args: str, **extra: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "memvault", *args],
            env={**self.env, **extra},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=self.home,
            start_new_session=True,
        )

    def note(self, rel: str, text: str) -> str:
        path = self.vault / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return rel

    def mirror(self) -> dict[str, str]:
        base = self.vault / "MemoryVault" / "team"
        if not base.is_dir():
            return {}
        return {p.relative_to(self.vault).as_posix(): p.read_text() for p in sorted(base.rglob("*.md"))}

    def hook(self, event: str, payload: dict[str, Any]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(HOOKS / f"{event}.py")],
            input=json.dumps(payload),
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def state(self) -> TeamState:
        old = os.environ.get("MEMVAULT_HOME")
        os.environ["MEMVAULT_HOME"] = self.env["MEMVAULT_HOME"]
        try:
            return TeamState(self.vault)  # the folder is resolved now, under this member's MEMVAULT_HOME
        finally:
            if old is not None:
                os.environ["MEMVAULT_HOME"] = old


def add_member(db: TeamDb, tmp: Path, name: str, teams: list[str], *, mirror: str = "all", extra: str = "") -> Member:
    from memvault.team import admin

    role, password = db.role(name), f"pw-{name}-secret-{os.getpid()}"
    with db.connect() as conn:
        admin.add_member(conn, role, teams, password=password)
        conn.commit()
    home = tmp / name
    vault = home / "vault"
    (vault / ".obsidian").mkdir(parents=True)
    (vault / "MemoryVault").mkdir()
    pg_env = db.member_home(home, role, password)
    mv_home = home / ".memvault"
    mv_home.mkdir()
    team_list = ", ".join(teams)
    (mv_home / "config.yaml").write_text(
        f"vault:\n  root: {vault}\nembedding:\n  warm_service: false\n"
        f"team:\n  service: team\n  teams: [{team_list}]\n  mirror: {mirror}\n{extra}",
        encoding="utf-8",
    )
    env = home_env(
        home,
        home / "run",
        MEMVAULT_HOME=str(mv_home),
        MEMVAULT_VAULT=str(vault),
        GIT_CONFIG_GLOBAL=os.environ["GIT_CONFIG_GLOBAL"],
        GIT_CONFIG_NOSYSTEM="1",
        **pg_env,
    )
    env = {k: v for k, v in env.items() if not k.startswith("PG") or k in pg_env}
    return Member(name, role, home, vault, env)


def entries(db: TeamDb) -> list[dict[str, Any]]:
    """Every entry as the superuser sees it (RLS does not apply to the owner's view of the truth)."""
    with db.connect() as conn:
        cur = conn.execute(
            "SELECT uid::text, scope, team, author, title, slug, body, frontmatter::text, version, deleted "
            "FROM memvault.entries ORDER BY created_at"
        )
        names = [c.name for c in cur.description or ()]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def everything(db: TeamDb) -> str:
    """Every text the database holds about entries: live rows, earlier versions, the audit."""
    with db.connect() as conn:
        rows = conn.execute(
            "SELECT coalesce(string_agg(e::text, '\n'), '') FROM memvault.entries e "
            "UNION ALL SELECT coalesce(string_agg(h::text, '\n'), '') FROM memvault.history h "
            "UNION ALL SELECT coalesce(string_agg(a::text, '\n'), '') FROM memvault.audit a"
        ).fetchall()
    return "\n".join(r[0] for r in rows)


@pytest.fixture
def team(team_db: TeamDb, tmp_path: Path) -> TeamDb:
    with team_db.connect() as conn:
        conn.execute("INSERT INTO memvault.teams (name) VALUES ('backend'), ('frontend') ON CONFLICT DO NOTHING")
        conn.commit()
    return team_db


# ---- the envelope (no server) -------------------------------------------------------------------------


def test_the_envelope_refuses_private_notes_and_secrets_and_keeps_spans_paths_and_names_home(
    vault_dir: Path, memvault_home: Path
) -> None:
    vault = open_vault(vault_dir)
    (vault_dir / "MemoryVault" / "default" / "domain").mkdir(parents=True, exist_ok=True)
    private = "MemoryVault/default/domain/private-note.md"
    (vault_dir / private).write_text("---\nprivate: yes\n---\n# Mine\n\nNot for the team.\n")
    with pytest.raises(envelope.TeamError) as refused:
        envelope.prepare(vault, private, scope="team", team="backend")
    assert refused.value.code == "team-private"

    secret = "MemoryVault/default/domain/with-key.md"
    key = "sk-ant-api03-" + "a1B2c3D4e5F6g7H8i9J0" * 4
    (vault_dir / secret).write_text(f"# Deploy\n\nexport ANTHROPIC_API_KEY={key}\n")
    with pytest.raises(SafetyError) as leaked:
        envelope.prepare(vault, secret, scope="team", team="backend")
    assert leaked.value.code == "secret" and key not in str(leaked.value)

    mixed = "MemoryVault/default/domain/mixed.md"
    (vault_dir / mixed).write_text(
        "---\nkind: domain\nprotected: true\nsource: manual\ngroup: default\nalways_load: true\n"
        "supersedes: MemoryVault/default/_archive/old.md\nevidence: ['seen in /home/zoltan/work/api']\n---\n"
        "# Run the API tests\n\nRun `pytest` from /home/zoltan/work/api/tests as zoltan does.\n"
        "<private>the staging box is 10.1.2.3</private>\n"
    )
    out = envelope.prepare(vault, mixed, scope="team", team="backend")
    assert "zoltan" not in out.body + json.dumps(out.frontmatter) and "~/work/api/tests" in out.body
    assert "10.1.2.3" not in out.body and "staging" not in out.body
    assert out.frontmatter["protected"] is True and out.frontmatter["source"] == "manual"
    assert not {"group", "always_load", "supersedes"} & set(out.frontmatter)
    assert out.title == "Run the API tests" and out.kind == "domain" and out.slug == "mixed"


# ---- publish, pull, the hook (the "done when") ------------------------------------------------


def prompt_payload(member: Member, prompt: str, session: str = "s-1") -> dict[str, Any]:
    return {
        "session_id": session,
        "transcript_path": str(member.home / f"{session}.jsonl"),
        "cwd": str(member.home),
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    }


def test_a_convention_one_member_publishes_is_injected_at_the_other_members_next_prompt(
    team: TeamDb, tmp_path: Path
) -> None:
    alice = add_member(team, tmp_path, "alice", ["backend"])
    bob = add_member(team, tmp_path, "bob", ["backend"])
    rel = alice.note("MemoryVault/default/workflow/alembic-migrations.md", "---\nkind: workflow\n---\n" + CONVENTION)
    before = bob.hook("user_prompt_submit", prompt_payload(bob, PROMPT, "before"))
    assert before.returncode == 0 and "alembic" not in before.stdout

    published = alice.run("team", "publish", rel, "--team", "backend")
    assert "published" in published.stdout
    [row] = entries(team)
    assert (row["author"], row["team"], row["scope"], row["version"]) == (alice.role, "backend", "team", 1)

    pulled = bob.run("team", "pull")
    assert "1 written" in pulled.stdout, pulled.stdout
    [(mirrored, text)] = bob.mirror().items()
    assert mirrored == "MemoryVault/team/backend/alembic-migrations.md"
    assert f"team_author: {alice.role}" in text and "team_version: 1" in text and "alembic upgrade head" in text

    hook = bob.hook("user_prompt_submit", prompt_payload(bob, PROMPT))
    assert hook.returncode == 0, hook.stderr
    context = json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "alembic revision" in context and mirrored in context

    again = bob.run("team", "pull", "--json")  # incremental: nothing new, nothing rewritten
    assert json.loads(again.stdout)["changes"] == 0


# ---- offline is normal ---------------------------------------------------------------------------------


def job_log(member: Member) -> list[dict[str, Any]]:
    found = []
    for path in sorted((Path(member.env["MEMVAULT_HOME"]) / "state" / "logs").glob("hooks-*.jsonl")):
        found += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return found


def test_server_absent_publish_waits_in_the_outbox_and_the_session_start_says_why_then_sends_it(
    team: TeamDb, pg_control: Any, tmp_path: Path
) -> None:
    alice = add_member(team, tmp_path, "alice", ["backend"])
    rel = alice.note("MemoryVault/default/workflow/alembic-migrations.md", CONVENTION)
    pg_control.stop()
    queued = alice.run("team", "publish", rel, "--team", "backend")
    assert "queued" in queued.stdout and "published" not in queued.stdout
    assert [q.source_path for q in alice.state().queued()] == [rel]
    # the session start's background job: the local work done, the team part offline, and why, for health
    job = subprocess.run(
        [sys.executable, "-m", "memvault.hooks.jobs", "start"],
        env=alice.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert job.returncode == 0, job.stderr
    [record] = [r for r in job_log(alice) if r.get("hook") == "job:start"]
    assert record["result"] == "success" and record["team"] == "offline" and "reindexed" in record
    health = alice.run("health", "--json", check=False)
    team_health = json.loads(health.stdout)["team"]
    assert team_health["queued"] == 1 and team_health["last_pull"] == "never"
    assert "cannot reach" in team_health["last_error"] and "failed" in team_health["line"]

    pg_control.start()
    job = subprocess.run(
        [sys.executable, "-m", "memvault.hooks.jobs", "start"],
        env=alice.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert job.returncode == 0
    [row] = entries(team)
    assert row["slug"] == "alembic-migrations" and row["author"] == alice.role
    assert alice.state().queued() == []
    status = json.loads(alice.run("team", "status", "--json").stdout)
    assert status["last_error"] is None and status["queued"] == 0 and status["mirrored"] == 1


def test_the_prompt_hook_never_loads_team_code_even_with_team_memory_configured(team: TeamDb, tmp_path: Path) -> None:
    alice = add_member(team, tmp_path, "alice", ["backend"])
    probe = (
        "import sys, runpy\n"
        f"sys.argv = [{str(HOOKS / 'user_prompt_submit.py')!r}]\n"
        "try:\n    runpy.run_path(sys.argv[0], run_name='__main__')\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith(('memvault.team', 'psycopg'))), file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], input=json.dumps(prompt_payload(alice, PROMPT)), env=alice.env,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0 and result.stderr.strip().splitlines()[-1] == "[]"


# ---- what never reaches the database ------------------------------------------------------------------


def test_a_secret_or_a_private_note_never_reaches_the_database(team: TeamDb, tmp_path: Path) -> None:
    alice = add_member(team, tmp_path, "alice", ["backend"])
    key = "ghp_" + "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0Lz9Xc8"
    secret = alice.note("MemoryVault/default/workflow/deploy.md", f"# Deploy\n\nUse token {key} for the registry.\n")
    private = alice.note(
        "MemoryVault/default/workflow/mine.md", "---\nprivate: true\n---\n# Mine\n\nZephyrq-only private plan.\n"
    )
    spans = alice.note(
        "MemoryVault/default/workflow/spans.md",
        "# Staging access\n\nAsk ops for access.\n<private>the door code is Quokka-4411</private>\n"
        "Logs are in /home/alicewonder/stage/logs.\n",
    )
    refused = alice.run("team", "publish", secret, "--team", "backend", check=False)
    assert refused.returncode == 1 and "[secret]" in refused.stderr
    refused = alice.run("team", "publish", private, "--team", "backend", check=False)
    assert refused.returncode == 1 and "[team-private]" in refused.stderr
    alice.run("team", "publish", spans, "--team", "backend")
    stored = everything(team)
    assert "Ask ops for access" in stored  # the one that went, went whole
    for leaked in (key, "Zephyrq", "Quokka-4411", "door code", "alicewonder", "/home/"):
        assert leaked not in stored
    assert alice.state().queued() == []  # nothing refused waits to be sent later either


# ---- kill -9 ---------------------------------------------------------------------------------------------


def paused_kill(member: Member, label: str, *args: str) -> None:
    """Run `memvault ARGS`, stop it at the fault checkpoint `label`, and kill -9 it there."""
    folder = member.home / f"pause-{label.replace(':', '-')}"
    folder.mkdir()
    proc = member.popen(*args, MEMVAULT_FAULT_PAUSE=f"{label}@{folder}")
    deadline = time.monotonic() + 60
    while not (folder / "paused").exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


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
    publish_many(team, alice, 1200, prefix="second")  # more than two batches of the pull
    with team.connect(alice.role) as conn:
        conn.execute("UPDATE memvault.entries SET body = body || 'changed' WHERE slug = 'first-3'")
        conn.commit()
    paused_kill(bob, "team-pull:batch-written", "team", "pull")  # after the first batch's files, before the cursor
    bob.run("team", "pull")
    mirror = bob.mirror()
    wanted = {
        f"MemoryVault/team/backend/{p}-{n}.md" for p, count in (("first", 30), ("second", 1200)) for n in range(count)
    }
    assert set(mirror) == wanted  # every entry once, none twice under a second name
    assert mirror[edited] == mine  # bob's edit is kept; the server's change waits for his push
    assert all("team_version: 1" in t for p, t in mirror.items() if p != edited)


def publish_many(team: TeamDb, member: Member, count: int, *, prefix: str, team_name: str = "backend") -> list[str]:
    """`count` entries published by `member` straight through the server API (as their role), for volume."""
    from memvault.team import server

    uids = []
    with team.connect(member.role) as conn:
        for n in range(count):
            body = f"# {prefix.title()} {n}\n\nRule number {n} of the {prefix} batch: keep the {prefix} tests green.\n"
            fm = {"kind": "workflow", "title": f"{prefix} {n}"}
            uid = str(uuid.uuid4())
            entry = server.EntryIn(uid, "team", team_name, "workflow", f"{prefix} {n}", f"{prefix}-{n}", body, fm,
                                   envelope.content_hash(body, fm))  # fmt: skip
            server.publish(conn, entry)
            uids.append(uid)
    return uids


# ---- edits, conflicts, deletions ----------------------------------------------------------------------


def edit_mirror(member: Member, rel: str, old: str, new: str) -> str:
    text = (member.vault / rel).read_text()
    assert old in text
    (member.vault / rel).write_text(text.replace(old, new))
    return text.replace(old, new)


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
    publish_many(team, alice, 1100, prefix="rule")
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
    assert 0 < len(bob.mirror()) < 1100
    assert json.loads(bob.run("team", "status", "--json").stdout)["last_error"]
    bob.run("team", "pull")
    assert len(bob.mirror()) == 1100
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


# ---- search on the server ----------------------------------------------------------------------------------


def test_recall_team_and_the_mcp_recall_tool_search_the_server_within_the_members_teams(
    team: TeamDb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = add_member(team, tmp_path, "alice", ["backend"])
    bob = add_member(team, tmp_path, "bob", ["backend"], mirror="none")
    carol = add_member(team, tmp_path, "carol", ["frontend"])
    rel = alice.note("MemoryVault/default/workflow/alembic-migrations.md", CONVENTION)
    alice.run("team", "publish", rel, "--team", "backend")
    publish_many(team, alice, 20, prefix="unrelated")

    found = json.loads(bob.run("recall", "--team", "--json", PROMPT).stdout)
    assert found["mode"] == "keyword-only" and found["hits"]
    top = found["hits"][0]
    assert top["title"] == "Database migrations go through alembic revision files" and top["author"] == alice.role
    assert top["mirrored"] is None and bob.mirror() == {}  # mirror: none — searched on the server only
    assert "alembic" in bob.run("recall", "--team", PROMPT).stdout
    assert json.loads(carol.run("recall", "--team", "--json", PROMPT).stdout)["hits"] == []  # not her team

    from memvault.mcpserver import tools

    for key in ("MEMVAULT_HOME", "PGSERVICEFILE", "PGPASSFILE"):
        monkeypatch.setenv(key, bob.env[key])
    text, paths = tools.team_recall(open_vault(bob.vault), "alembic revision for a production table", 3)
    assert "alembic upgrade head" in text and paths
    with pytest.raises(tools.Refused) as unset:
        monkeypatch.setenv("MEMVAULT_HOME", str(tmp_path / "nobody"))
        tools.team_recall(open_vault(bob.vault), "alembic revision", 3)
    assert unset.value.code == "team-config"


def test_the_admin_commands_init_db_and_member_add_and_remove(team: TeamDb, tmp_path: Path) -> None:
    admin = add_member(team, tmp_path, "admin", ["backend"])
    superuser = team.conninfo()  # the database's owner, over the local socket
    assert "up to date" in admin.run("team", "init-db", "--conninfo", superuser).stdout  # the schema is there: no-op
    dana = team.role("dana")
    admin.run("team", "member", "add", dana, "--team", "backend", "--team", "ops", "--conninfo", superuser)
    admin.run("team", "member", "remove", dana, "--team", "backend", "--conninfo", superuser)
    with team.connect() as conn:
        teams = [r[0] for r in conn.execute("SELECT team FROM memvault.team_members WHERE role_name = %s", (dana,))]
    assert teams == ["ops"]
    bad = admin.run(
        "team", "member", "add", dana, "--team", "ops", "--conninfo", superuser + " password=x", check=False
    )
    assert bad.returncode == 2 and "no password" in bad.stderr


def test_review_offers_publish_to_team_and_approving_with_it_publishes(team: TeamDb, tmp_path: Path) -> None:
    alice = add_member(team, tmp_path, "alice", ["backend"])
    queued = "MemoryVault/personal-private/_review/alembic-migrations.md"
    alice.note(queued, "---\nkind: workflow\nconfidence: medium\nroute: review\nsource: reflection\n---\n" + CONVENTION)
    result = subprocess.run(
        [sys.executable, "-m", "memvault", "review"], input="t\n", env=alice.env, capture_output=True, text=True,
        timeout=120, cwd=alice.home,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "publish to team" in result.stdout and "published" in result.stdout
    [row] = entries(team)
    assert row["team"] == "backend" and json.loads(row["frontmatter"])["source"] == "reflection"
    assert not (alice.vault / queued).exists()  # approved into its kind folder as well


# ---- vectors come with the entries -----------------------------------------------------------------------


def test_a_pulled_entry_brings_its_vector_when_the_model_matches_and_nothing_is_embedded_again(
    team: TeamDb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import array
    import dataclasses
    import random

    from memvault.index import core, embed
    from memvault.team import mirror, push, server

    alice = add_member(team, tmp_path, "alice", ["backend"])
    bob = add_member(team, tmp_path, "bob", ["backend"])
    monkeypatch.setenv("MEMVAULT_HOME", alice.env["MEMVAULT_HOME"])
    rng = random.Random(7)  # noqa: S311 - test vectors, not secrets
    sent: dict[str, list[float]] = {}
    with team.connect(alice.role) as conn:
        for slug, model in (("one-chunk", embed.DEFAULT_NAME), ("other-model", "someone-elses-model")):
            rel = alice.note(
                f"MemoryVault/default/workflow/{slug}.md", CONVENTION.replace("alembic", f"alembic {slug}")
            )
            out = envelope.prepare(open_vault(alice.vault), rel, scope="team", team="backend")
            text = mirror.embed_text(mirror.render(push._as_row(out)), out.slug)  # what bob's index will embed
            assert text is not None
            raw = [rng.gauss(0, 1) for _ in range(384)]
            vector = [x / sum(v * v for v in raw) ** 0.5 for x in raw]
            fm = {**out.frontmatter, envelope.EMBED_HASH: mirror.text_hash(text)}
            server.publish(
                conn, push.to_entry(dataclasses.replace(out, embedding=vector, model_id=model, frontmatter=fm))
            )
            sent[slug] = vector
    assert "1 vector(s) imported" in bob.run("team", "pull").stdout

    monkeypatch.setenv("MEMVAULT_HOME", bob.env["MEMVAULT_HOME"])
    index = core.open_index(open_vault(bob.vault).index_file)
    try:
        assert index.vector_model() == (embed.DEFAULT_NAME, 384)
        rows = index.conn.execute(
            "SELECT n.path, n.embedded, v.embedding FROM notes n JOIN chunks c ON c.note_id = n.id "
            "LEFT JOIN vec_chunks v ON v.rowid = c.id ORDER BY n.path"
        ).fetchall()
    finally:
        index.close()
    by_path = {path: (embedded, blob) for path, embedded, blob in rows}
    embedded, blob = by_path["MemoryVault/team/backend/one-chunk.md"]
    assert embedded == embed.DEFAULT_NAME  # counts as embedded: the service will not embed it again
    assert array.array("f", blob).tolist() == pytest.approx(sent["one-chunk"], abs=1e-6)
    assert by_path["MemoryVault/team/backend/other-model.md"] == (None, None)  # another model's vector: not used
