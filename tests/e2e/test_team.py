"""Team memory inside the real Claude Code: a convention one member publishes reaches the other member's model.

Alice publishes with the `memvault` command line; Bob is the end-to-end user (memvault installed by install.sh,
the real Claude Code against the Anthropic stub). Bob's pull runs this checkout's memvault (the team extra is not
part of install.sh's install) on his vault, his index and his warm service; then his next prompt in Claude Code
carries the convention to the model, and a prompt about something else does not.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from tests.e2e.claude import Scenario
from tests.e2e.stubs.anthropic import messages_text
from tests.pg import TeamDb
from tests.team_client_helpers import (
    CONVENTION,
    add_member,
    entries,
    team_fixture,  # noqa: F401 - `team`: a database with teams backend and frontend
)

PROMPT = "We need to change a production database table today: do we write an alembic revision or edit it by hand?"
MIRRORED = "MemoryVault/team/backend/alembic-migrations.md"


def test_a_published_convention_reaches_the_other_members_model_at_the_next_prompt(
    scenario: Scenario, session_id: str, team: TeamDb, tmp_path: Path
) -> None:
    alice = add_member(team, tmp_path, "alice", ["backend"])
    rel = alice.note("MemoryVault/default/workflow/alembic-migrations.md", "---\nkind: workflow\n---\n" + CONVENTION)
    alice.run("team", "publish", rel, "--team", "backend")
    assert len(entries(team)) == 1

    bob_role, password = team.role("bob"), "pw-bob-e2e"
    from memvault.team import admin

    with team.connect() as conn:
        admin.add_member(conn, bob_role, ["backend"], password=password)
    libpq = team.member_home(tmp_path / "bob-libpq", bob_role, password)
    user_config = scenario.user.home / ".config" / "memvault" / "config.yaml"
    config = yaml.safe_load(user_config.read_text(encoding="utf-8")) or {}
    config["team"] = {"service": "team", "teams": ["backend"]}
    bob_config = tmp_path / "bob-config.yaml"  # the shared e2e user's own config file stays as it is
    bob_config.write_text(yaml.safe_dump(config), encoding="utf-8")
    pulled = subprocess.run(
        [sys.executable, "-m", "memvault", "team", "pull"],
        env=scenario.user.env(MEMVAULT_VAULT=str(scenario.vault), MEMVAULT_CONFIG=str(bob_config), **libpq),
        capture_output=True, text=True, timeout=300, cwd=scenario.project,
    )  # fmt: skip
    assert pulled.returncode == 0 and "1 written" in pulled.stdout, pulled.stdout + pulled.stderr
    assert (scenario.vault / MIRRORED).is_file()

    scenario.stub.reply({"text": "Write an alembic revision."}, {"text": "Banana bread: flour, bananas, eggs."})
    scenario.claude("-p", PROMPT, "--session-id", session_id).check()
    scenario.claude("-p", "--continue", "What is a good recipe for banana bread?").check()
    first, second = scenario.stub.bodies()
    assert MIRRORED in messages_text(first) and "alembic upgrade head" in messages_text(first)
    [prompt, unrelated] = scenario.records(session_id, "UserPromptSubmit")
    assert MIRRORED in [e["path"] for e in prompt["injected"]]
    assert MIRRORED not in [e["path"] for e in unrelated["injected"]]
    assert messages_text(second).count("alembic upgrade head") == messages_text(first).count("alembic upgrade head")
