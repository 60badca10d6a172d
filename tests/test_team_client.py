"""Team memory, the member's side: the envelope, publish and its outbox, pull into the mirror, push, the hook.

Everything runs against a real PostgreSQL with pgvector (tests/pg.py) and real member roles logging in over
TCP with their own libpq service and password files; members run the real `memvault` command line as
subprocesses, each with a HOME, a vault and a memvault state folder of its own.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memvault import open_vault
from memvault.errors import SafetyError
from memvault.team import envelope

from .pg import TeamDb
from .team_client_helpers import (
    CONVENTION,
    HOOKS,
    PROMPT,
    Member,
    add_member,
    entries,
    everything,
    job_log,
    prompt_payload,
    publish_many,
    team_fixture,  # noqa: F401 - `team`: a database with teams backend and frontend
)


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
        "supersedes: MemoryVault/default/_archive/old.md\nevidence: ['seen in /home/zoltan/src/api']\n---\n"
        "# Run the API tests\n\nRun `pytest` from /home/zoltan/src/api/tests as zoltan does.\n"
        "<private>the staging box is 10.1.2.3</private>\n"
    )
    out = envelope.prepare(vault, mixed, scope="team", team="backend")
    assert "zoltan" not in out.body + json.dumps(out.frontmatter) and "~/src/api/tests" in out.body
    assert "10.1.2.3" not in out.body and "staging" not in out.body
    assert out.frontmatter["protected"] is True and out.frontmatter["source"] == "manual"
    assert not {"group", "always_load", "supersedes"} & set(out.frontmatter)
    assert out.title == "Run the API tests" and out.kind == "domain" and out.slug == "mixed"
    own_kind = "MemoryVault/default/decision/locked.md"
    (vault_dir / own_kind).parent.mkdir(parents=True)
    (vault_dir / own_kind).write_text("---\nkind: decision\n---\n# Postgres 16 everywhere\n\nDecided in March.\n")
    assert envelope.prepare(vault, own_kind, scope="org", team=None).kind == "decision"  # a vault's own kind travels


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
    assert json.loads(bob.run("team", "push", "--json").stdout)["sent"] == []  # a pulled file is not an edit


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
    job = start_job(alice)
    assert job.returncode == 0, job.stderr
    [record] = [r for r in job_log(alice) if r.get("hook") == "job:start"]
    assert record["result"] == "success" and record["team"] == "offline" and "reindexed" in record
    health = alice.run("health", "--json", check=False)
    team_health = json.loads(health.stdout)["team"]
    assert team_health["queued"] == 1 and team_health["last_pull"] == "never"
    assert "cannot reach" in team_health["last_error"] and "failed" in team_health["line"]

    pg_control.start()
    job = start_job(alice)
    assert job.returncode == 0
    [row] = entries(team)
    assert row["slug"] == "alembic-migrations" and row["author"] == alice.role
    assert alice.state().queued() == []
    status = json.loads(alice.run("team", "status", "--json").stdout)
    assert status["last_error"] is None and status["queued"] == 0 and status["mirrored"] == 1


@pytest.mark.parametrize("hook", ["session_start", "user_prompt_submit"])
def test_the_hooks_never_load_team_code_even_with_team_memory_configured(
    team: TeamDb, tmp_path: Path, hook: str
) -> None:
    alice = add_member(team, tmp_path, "alice", ["backend"])
    probe = (
        "import sys, runpy\n"
        f"sys.argv = [{str(HOOKS / f'{hook}.py')!r}]\n"
        "try:\n    runpy.run_path(sys.argv[0], run_name='__main__')\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith(('memvault.team', 'psycopg'))), file=sys.stderr)\n"
    )
    payload = {
        **prompt_payload(alice, PROMPT),
        "hook_event_name": "SessionStart" if hook == "session_start" else "UserPromptSubmit",
    }
    result = subprocess.run(
        [sys.executable, "-c", probe], input=json.dumps(payload), env=alice.env,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0 and result.stderr.strip().splitlines()[-1] == "[]"  # the pull is the job's, detached


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

    elsewhere = alice.run(
        "team", "publish", spans, "--team", "frontend", check=False
    )  # not her team: the server says no
    assert elsewhere.returncode == 1 and "[team-refused]" in elsewhere.stderr and "frontend" in elsewhere.stderr
    assert alice.state().queued() == []  # a refusal does not wait in the outbox to be retried forever


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
            text = mirror.embed_text(mirror.render(push.as_row(out)), out.slug)  # what bob's index will embed
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


def start_job(member: Member) -> subprocess.CompletedProcess[str]:
    """The session start's background job, as SessionStart starts it, for `member`."""
    return subprocess.run([sys.executable, "-m", "memvault.hooks.jobs", "start"], env=member.env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
