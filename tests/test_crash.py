"""Crash safety: save, evolve, move and remove killed after every durable step; the next open heals the vault."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memvault import open_vault

from .conftest import git, snapshot

pytestmark = pytest.mark.slow
OLD = "MemoryVault/personal-private/preference/pytest-over-unittest.md"
NEW_SLUG = "MemoryVault/personal-private/preference/pytest-plugins.md"
REVIEW = "MemoryVault/personal-private/_review/alembic-enum-add-value.md"
FIXED = "MemoryVault/personal-private/fix/alembic-enum-add-value.md"
INBOX = "MemoryVault/personal-private/_inbox/dependabot-grouped-updates.md"
LOGGED = "MemoryVault/personal-private/fix/logged-fix.md"

SCRIPTS = {
    "save": "v.save('fix', 'crash-test', 'Restart the worker.\\n', tags=['ops'])",
    "evolve": f"v.evolve({OLD!r}, 'Use pytest with plugins.\\n', reason='crash test')",
    "evolve-new-slug": f"v.evolve({OLD!r}, 'Use pytest with plugins.\\n', reason='crash test', slug='pytest-plugins')",
    "move": f"v.move({REVIEW!r}, {FIXED!r}, meta={{'review': 'approved'}})",
    "remove": f"v.remove({INBOX!r}, reason='crash test')",
    # An entry and its change-log line (the page exists: see the test), killed also between the two files.
    "save-logged": "from memvault.store.changelog import Record\n"
    "v.save('fix', 'logged-fix', 'Restart the worker.\\n', log=[Record('saved', rule='r', session='s')])",
}


def run(vault_dir: Path, op: str, fault_after: int | None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ}
    if fault_after is not None:
        env["MEMVAULT_FAULT_AFTER"] = str(fault_after)
    code = f"from memvault import open_vault\nv = open_vault({str(vault_dir)!r})\n{SCRIPTS[op]}\n"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)


def outcome(vault_dir: Path, op: str, old: dict[str, bytes]) -> str:
    now = snapshot(vault_dir)
    if now == old:
        return "old"
    added, removed = set(now) - set(old), set(old) - set(now)
    changed = {p for p in set(now) & set(old) if now[p] != old[p]}
    vault = open_vault(vault_dir)
    if op == "move":
        assert added == {FIXED} and removed == {REVIEW} and not changed
        assert vault.read(FIXED).note.meta["review"] == "approved"
        return "new"
    if op == "remove":
        assert not added and removed == {INBOX} and not changed
        return "new"
    if op == "save-logged":
        (page,) = changed
        assert added == {LOGGED} and not removed and page.startswith("MemoryVault/_meta/changelog-")
        assert (
            now[page].decode().count("\n- ") == 2
            and "[[MemoryVault/personal-private/fix/logged-fix|" in now[page].decode()
        )
        return "new"
    if op == "save":
        assert added == {"MemoryVault/personal-private/fix/crash-test.md"} and not removed and not changed
        assert vault.read("MemoryVault/personal-private/fix/crash-test.md").note.body == "Restart the worker.\n"
        return "new"
    (archived,) = added - {NEW_SLUG}
    new_path = NEW_SLUG if op == "evolve-new-slug" else OLD
    assert vault.read(archived).note.meta["superseded_by"] == new_path
    assert vault.read(new_path).note.meta["supersedes"] == archived
    assert vault.read(archived).note.body == old[OLD].decode().split("---\n", 2)[2]
    if op == "evolve-new-slug":
        assert removed == {OLD} and not changed
    else:
        assert changed == {OLD} and not removed
    return "new"


@pytest.mark.parametrize("op", list(SCRIPTS))
@pytest.mark.parametrize("with_git", [False, True], ids=["plain", "git"])
def test_killed_at_every_step_leaves_old_or_new_state(tmp_path: Path, vault_dir: Path, op: str, with_git: bool) -> None:
    if op == "save-logged":
        from memvault.store.changelog import Record

        open_vault(vault_dir).record([Record("duplicate", OLD)])  # this month's page exists: it is rewritten
    if with_git:
        git(vault_dir, "init", "-q")
        git(vault_dir, "add", "-A")
        git(vault_dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "initial")
    pristine = tmp_path / "pristine"
    os.rename(vault_dir, pristine)
    old = snapshot(pristine)
    seen = []
    for step in range(1, 30):
        subprocess.run(["cp", "-a", str(pristine), str(vault_dir)], check=True)
        proc = run(vault_dir, op, step)
        crashed = proc.returncode == 86
        assert crashed or proc.returncode == 0, proc.stderr
        open_vault(vault_dir)  # the next open replays or discards the interrupted write
        seen.append(outcome(vault_dir, op, old))
        assert not [p for p in snapshot(vault_dir) if p.endswith(".memvault.tmp")]
        if with_git:
            assert git(vault_dir, "status", "--porcelain") == ""  # on disk == committed
            commits = git(vault_dir, "rev-list", "--count", "HEAD").strip()
            assert commits == ("1" if seen[-1] == "old" else "2")
        subprocess.run(["rm", "-rf", str(vault_dir)], check=True)
        if not crashed:
            break
    else:
        pytest.fail("the operation never completed")
    assert seen[0] == "old" and seen[-1] == "new" and len(seen) >= 4, seen
