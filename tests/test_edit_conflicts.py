"""An edit saved in Obsidian while memvault writes the same note is never overwritten: the write refuses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memvault import open_vault

from .conftest import git, snapshot

pytestmark = pytest.mark.slow
OLD = "MemoryVault/personal-private/preference/pytest-over-unittest.md"
ELSEWHERE = "MemoryVault/personal-private/preference/pytest-elsewhere.md"
SCRIPTS = {
    "evolve": f"v.evolve({OLD!r}, 'Use pytest with plugins.\\n', reason='edit race')",
    "evolve-new-slug": f"v.evolve({OLD!r}, 'Use pytest with plugins.\\n', reason='edit race', slug='pytest-plugins')",
    "update": f"v.update({OLD!r}, meta={{'confidence': 'high'}})",
    "save-replace": "v.save('preference', 'pytest-over-unittest', 'Prefer pytest.\\n', replace=True)",
    "move": f"v.move({OLD!r}, {ELSEWHERE!r}, meta={{'moved': True}})",
    "remove": f"v.remove({OLD!r}, reason='edit race')",
}
RUNNER = """
import json, sys
from memvault import open_vault, MemvaultError
v = open_vault(sys.argv[1])
try:
    {script}
    print(json.dumps({{"ok": True}}))
except MemvaultError as exc:
    print(json.dumps({{"ok": False, "code": exc.code, "message": str(exc)}}))
"""
EDIT = "\nA line I typed in Obsidian while memvault was writing.\n"


def paused_write(vault_dir: Path, op: str, folder: Path, moment: str) -> subprocess.Popen[str]:
    env = {**os.environ, "MEMVAULT_FAULT_PAUSE": f"{moment}@{folder}"}
    code = RUNNER.format(script=SCRIPTS[op])
    return subprocess.Popen([sys.executable, "-c", code, str(vault_dir)], env=env, stdout=subprocess.PIPE, text=True)


def wait_paused(proc: subprocess.Popen[str], folder: Path) -> None:
    deadline = time.monotonic() + 60
    while not (folder / "paused").exists():
        assert proc.poll() is None, "the write finished without pausing where the test edits the note"
        assert time.monotonic() < deadline
        time.sleep(0.02)


@pytest.mark.parametrize("op", list(SCRIPTS))
@pytest.mark.parametrize("moment", ["temp file written", "journal written"])
def test_an_edit_saved_while_memvault_writes_is_kept_and_the_write_refused(
    vault_dir: Path, tmp_path: Path, op: str, moment: str
) -> None:
    git(vault_dir, "init", "-q")
    git(vault_dir, "add", "-A")
    git(vault_dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "initial")
    folder = tmp_path / "handshake"
    folder.mkdir()
    proc = paused_write(vault_dir, op, folder, moment)
    wait_paused(proc, folder)
    note = vault_dir / OLD
    note.write_text(note.read_text() + EDIT)  # Obsidian saves the note at exactly this moment
    edited = snapshot(vault_dir)
    (folder / "resume").touch()
    out, _ = proc.communicate(timeout=60)
    result = json.loads(out)
    assert result == {"ok": False, "code": "conflict", "message": result["message"]}
    assert "changed on disk" in result["message"]
    assert snapshot(vault_dir) == edited  # the edit is there, and nothing else changed
    vault = open_vault(vault_dir)  # nothing is left to replay either
    assert snapshot(vault_dir) == edited and not list(vault.journal_dir.glob("*.json"))
    assert git(vault_dir, "rev-list", "--count", "HEAD").strip() == "1"
