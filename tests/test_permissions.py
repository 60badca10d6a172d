"""Everything memvault creates in its state folder is user-only from birth, whatever the umask."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from memvault import health, open_vault

from . import transcripts
from .conftest import REPO

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX permission bits")

# The order matters: the journal folder (a save) comes first, then the index, reflection, a hook and its job.
SCRIPT = """
import os, sys, json, subprocess
os.umask(int(sys.argv[3], 8))
from memvault import open_vault
from memvault.reflect import runner
runner.WAIT_SERVICE_S = 0.0
v = open_vault(sys.argv[1])
v.save("fix", "umask-test", "Restart the worker.\\n")
v.reindex(vectors="none")
runner.reflect_transcript(v, __import__("pathlib").Path(sys.argv[2]), final=True)
hook = os.path.join(os.environ["REPO"], "memvault", "hooks", "user_prompt_submit.py")
subprocess.run([sys.executable, hook], input=json.dumps({"session_id": "s", "prompt": "how do I restart the worker"}),
               text=True, check=True)
"""


def open_to_others(root: Path) -> list[str]:
    found = []
    for folder, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = Path(folder) / name
            mode = os.lstat(path).st_mode
            if stat.S_ISSOCK(mode):
                continue
            if mode & 0o077:
                found.append(f"{path.relative_to(root)} {oct(mode & 0o777)}")
    return found


@pytest.mark.parametrize("umask", ["022", "002", "000"])
def test_the_state_folder_is_user_only_from_birth(vault_dir: Path, memvault_home: Path, tmp_path: Path, umask: str):
    memvault_home.mkdir(parents=True, exist_ok=True)
    (memvault_home / "config.yaml").write_text(f"vault:\n  root: {vault_dir}\nembedding:\n  warm_service: false\n")
    transcript = transcripts.write(tmp_path / "s.jsonl", "s")
    subprocess.run(
        [sys.executable, "-c", SCRIPT, str(vault_dir), str(transcript), umask],
        env={**os.environ, "REPO": str(REPO), "PYTHONPATH": str(REPO)}, check=True, timeout=300,
    )  # fmt: skip
    state = memvault_home / "state"
    made = {p.name for p in state.rglob("*")}
    assert {"index.sqlite3", "journal", "logs", "sessions"} <= made, made
    assert open_to_others(state) == []
    assert not [p for p in health.check(open_vault(vault_dir), service=False).problems if "open to" in p]


def test_health_reports_and_a_write_heals_a_state_folder_an_older_release_left_open(
    vault_dir: Path, memvault_home: Path
) -> None:
    vault = open_vault(vault_dir)
    vault.save("fix", "heal", "Restart the worker.\n")
    vault.reindex(vectors="none")
    os.chmod(vault.state_dir, 0o755)  # noqa: S103 - as the previous release left it
    os.chmod(vault.index_file, 0o644)
    problems = health.check(vault, service=False).problems
    assert any("open to other users" in p and str(vault.state_dir) in p for p in problems), problems
    vault.save("fix", "heal-2", "Restart the worker again.\n")  # any change locks the folders down again
    assert stat.S_IMODE(os.stat(vault.state_dir).st_mode) == 0o700
    problems = health.check(vault, service=False).problems
    assert not [p for p in problems if "open to other users" in p and p.endswith(str(vault.state_dir))], problems
    report = json.dumps(health.check(vault, service=False).problems)
    assert "index.sqlite3" in report  # a file left 0644 inside is still named: the folder only hides it
