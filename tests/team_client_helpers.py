"""What the team-memory client tests share: members with a HOME, a vault, memvault state and a database role each.

Every member runs the real `memvault` command line and hook scripts as subprocesses, logs in over TCP with their
own libpq service and password files, and is a real role of the test PostgreSQL (tests/pg.py).
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


@pytest.fixture(name="team")
def team_fixture(team_db: TeamDb, tmp_path: Path) -> TeamDb:
    with team_db.connect() as conn:
        conn.execute("INSERT INTO memvault.teams (name) VALUES ('backend'), ('frontend') ON CONFLICT DO NOTHING")
        conn.commit()
    return team_db


def prompt_payload(member: Member, prompt: str, session: str = "s-1") -> dict[str, Any]:
    return {
        "session_id": session,
        "transcript_path": str(member.home / f"{session}.jsonl"),
        "cwd": str(member.home),
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    }


def job_log(member: Member) -> list[dict[str, Any]]:
    found = []
    for path in sorted((Path(member.env["MEMVAULT_HOME"]) / "state" / "logs").glob("hooks-*.jsonl")):
        found += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return found


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


def edit_mirror(member: Member, rel: str, old: str, new: str) -> str:
    text = (member.vault / rel).read_text()
    assert old in text
    (member.vault / rel).write_text(text.replace(old, new))
    return text.replace(old, new)
