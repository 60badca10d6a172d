"""An edit saved in Obsidian while memvault writes the same note is never overwritten: the write refuses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memvault import MemvaultError, open_vault
from memvault.store import disk

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


@pytest.mark.parametrize("then", ["nothing else", "the note saved again"])
@pytest.mark.skipif(os.name == "nt", reason="Windows cannot rename over a file an editor holds open")
def test_a_save_that_lands_in_the_file_memvault_just_replaced_is_put_back(
    vault_dir: Path, monkeypatch: pytest.MonkeyPatch, then: str
) -> None:
    """Obsidian opened the note to save it (truncate, write) just before memvault's rename; its bytes land
    in the old file after the rename. Without a second look they would be gone with that file."""
    vault = open_vault(vault_dir)
    note = vault_dir / OLD
    text = note.read_text(encoding="utf-8")
    editor = open(note, "r+", encoding="utf-8")  # noqa: SIM115 - held open across the rename, as an editor's save is
    real_fsync_dir = disk.fsync_dir

    def save_lands(folder: Path) -> None:  # memvault has renamed its text over the note: the save lands now
        if Path(folder) == note.parent and not editor.closed:
            editor.truncate(0)
            editor.write(text + EDIT)
            editor.close()
            if then == "the note saved again":  # and something wrote the path itself too, before memvault looked
                note.write_text(text + "\nAnother save.\n", encoding="utf-8")
        real_fsync_dir(folder)

    monkeypatch.setattr(disk, "fsync_dir", save_lands)
    with pytest.raises(MemvaultError) as refused:
        vault.update(OLD, meta={"confidence": "high"})
    assert refused.value.code == "conflict"
    copies = [p for p in note.parent.iterdir() if disk.is_conflict_copy(p.name)]
    if then == "nothing else":
        assert note.read_text(encoding="utf-8") == text + EDIT and copies == []
    else:
        assert note.read_text(encoding="utf-8") == text + "\nAnother save.\n"
        assert [c.read_text(encoding="utf-8") for c in copies] == [text + EDIT]
        assert copies[0].name in str(refused.value)
