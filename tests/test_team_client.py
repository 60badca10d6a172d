"""Team memory, the member's side: the envelope, publish and its outbox, pull into the mirror, push, the hook.

Everything runs against a real PostgreSQL with pgvector (tests/pg.py) and real member roles logging in over
TCP with their own libpq service and password files; members run the real `memvault` command line as
subprocesses, each with a HOME, a vault and a memvault state folder of its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
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
