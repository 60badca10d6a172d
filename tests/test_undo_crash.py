"""`undo` survives a crash between `git revert --no-commit` and its commit, the change log stays append-only through
it; `health` checks the repository's state."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memvault import health, open_vault
from memvault.store import changelog, journal
from memvault.store.changelog import Record

from .conftest import git

pytestmark = pytest.mark.slow
NOTE = "MemoryVault/personal-private/fix/undo-me.md"
UNDO = "from memvault import open_vault\nimport sys\nopen_vault(sys.argv[1]).undo()\n"


def saved(vault_dir: Path) -> None:
    git(vault_dir, "init", "-q", "-b", "main")
    git(vault_dir, "add", "-A")
    git(vault_dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "initial")
    open_vault(vault_dir).save("fix", "undo-me", "Restart the worker.\n", log=[Record("saved")])


def log_actions(vault_dir: Path) -> list[str]:
    """The actions of the change log's lines, every page in order."""
    memory = vault_dir / "MemoryVault"
    pages = changelog.pages(memory)
    return [a for name in pages for a in changelog.actions((memory / "_meta" / name).read_text(encoding="utf-8"))]


def undo_process(vault_dir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", UNDO, str(vault_dir)], env={**os.environ, **env}, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip


def assert_clean_undone(vault_dir: Path) -> None:
    assert not (vault_dir / NOTE).exists()
    assert git(vault_dir, "status", "--porcelain") == ""
    assert not (vault_dir / ".git" / "REVERT_HEAD").exists()
    assert "Memvault-Reverts:" in git(vault_dir, "log", "-1", "--skip=1", "--format=%B")  # then its log line
    assert git(vault_dir, "log", "-1", "--format=%s").strip() == "memvault: log _meta/changelog"
    assert git(vault_dir, "rev-list", "--count", "HEAD").strip() == "4"
    assert log_actions(vault_dir) == ["saved", "undone"]  # the change's line kept, the undo's added once


def test_an_undo_killed_before_its_commit_is_finished_by_the_next_command(vault_dir: Path) -> None:
    saved(vault_dir)
    hook = vault_dir / ".git" / "hooks" / "prepare-commit-msg"  # runs even with --no-verify
    hook.write_text('#!/bin/sh\nkill -9 "$(ps -o ppid= -p "$PPID" | tr -d " ")"\nexit 1\n')
    hook.chmod(0o755)
    killed = undo_process(vault_dir)
    hook.unlink()
    assert killed.returncode == -9, killed.stderr  # killed right between the revert and its commit
    assert (vault_dir / ".git" / "REVERT_HEAD").exists()
    open_vault(vault_dir)  # any command: the interrupted undo is finished
    assert_clean_undone(vault_dir)
    assert not [p for p in health.check(open_vault(vault_dir), service=False).problems if "revert" in p]


def test_an_undo_killed_at_every_step_ends_undone_or_not_and_never_stuck(tmp_path: Path, vault_dir: Path) -> None:
    saved(vault_dir)
    pristine = tmp_path / "pristine"
    os.rename(vault_dir, pristine)
    outcomes = []
    for step in range(1, 30):
        subprocess.run(["cp", "-a", str(pristine), str(vault_dir)], check=True)
        proc = undo_process(vault_dir, MEMVAULT_FAULT_AFTER=str(step))
        assert proc.returncode in (0, 86), proc.stderr
        vault = open_vault(vault_dir)
        if (vault_dir / NOTE).exists():
            assert git(vault_dir, "status", "--porcelain") == ""
            assert git(vault_dir, "rev-list", "--count", "HEAD").strip() == "2"
            assert log_actions(vault_dir) == ["saved"]  # the log never loses a line, whatever step the crash hit
            outcomes.append("old")
            vault.undo()  # and the undo still works afterwards
        else:
            outcomes.append("new")
        assert_clean_undone(vault_dir)
        subprocess.run(["rm", "-rf", str(vault_dir)], check=True)
        if proc.returncode == 0:
            break
    assert outcomes[0] == "old" and outcomes[-1] == "new" and len(outcomes) >= 3, outcomes


def test_health_reports_a_half_finished_git_operation(vault_dir: Path) -> None:
    saved(vault_dir)
    sha = git(vault_dir, "rev-parse", "HEAD").strip()
    git(vault_dir, "revert", "--no-commit", sha)  # a revert left half-done (by hand, or by an older release)
    problems = health.check(open_vault(vault_dir), service=False).problems
    assert any("revert was interrupted" in p for p in problems), problems
    git(vault_dir, "revert", "--abort")
    assert not [p for p in health.check(open_vault(vault_dir), service=False).problems if "revert" in p]


@pytest.mark.parametrize(
    "script",
    [
        "v.remove('MemoryVault/personal-private/fix/undo-me.md', reason='crash')",
        "v.move('MemoryVault/personal-private/fix/undo-me.md', 'MemoryVault/personal-private/workflow/undo-me.md')",
    ],
    ids=["remove", "move"],
)
def test_a_change_killed_inside_its_git_commit_is_committed_by_the_next_command(vault_dir: Path, script: str) -> None:
    saved(vault_dir)
    hook = vault_dir / ".git" / "hooks" / "prepare-commit-msg"  # the deletion is staged, the commit not made
    hook.write_text('#!/bin/sh\nkill -9 "$(ps -o ppid= -p "$PPID" | tr -d " ")"\nexit 1\n')
    hook.chmod(0o755)
    code = f"from memvault import open_vault\nimport sys\nv = open_vault(sys.argv[1])\n{script}\n"
    killed = subprocess.run([sys.executable, "-c", code, str(vault_dir)], capture_output=True, text=True, timeout=120)
    hook.unlink()
    assert killed.returncode == -9, killed.stderr
    assert git(vault_dir, "status", "--porcelain") != ""
    open_vault(vault_dir)  # the journal is replayed: its commit is made
    assert git(vault_dir, "status", "--porcelain") == ""
    assert not (vault_dir / NOTE).exists()
    assert git(vault_dir, "rev-list", "--count", "HEAD").strip() == "3"


def test_a_git_still_running_for_a_killed_undo_is_waited_for_before_the_next_command_finishes_it(
    tmp_path: Path, vault_dir: Path
) -> None:
    """SIGKILL ends memvault, not the git it started: recovery must not race that git (a CI run once set the undo
    aside as a conflict when the killed command's `git revert` landed after the next command had finished it)."""
    saved(vault_dir)
    shim, mark = tmp_path / "bin", tmp_path / "revert-started"
    shim.mkdir()
    (shim / "git").write_text(
        '#!/bin/sh\nif [ "$1" = revert ] && [ "$2" = --no-commit ]; then\n  touch "$MARK"; sleep 1.5\n'
        '  "$REAL_GIT" "$@" >>"$MARK.log" 2>&1; s=$?; echo "exit $s" >>"$MARK.log"; exit $s\nfi\n'
        'exec "$REAL_GIT" "$@"\n'
    )  # a git that is slow to start its revert, as one is on a loaded machine
    (shim / "git").chmod(0o755)
    env = {**os.environ, "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}", "MARK": str(mark)}
    env["REAL_GIT"] = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True).stdout.strip()
    proc = subprocess.Popen([sys.executable, "-c", UNDO, str(vault_dir)], env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not mark.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert mark.exists(), proc.stderr.read() if proc.stderr else ""
    proc.kill()  # the undo dies; its `git revert --no-commit` runs on, a second later
    proc.wait()
    open_vault(vault_dir)  # the next command, at once
    ran = tmp_path / "revert-started.log"
    while not (ran.exists() and "exit" in ran.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)  # whatever the killed command's git was going to do is done now
    vault = open_vault(vault_dir)
    assert not journal.conflicts(vault.journal_dir), "a crash alone never makes a conflict"
    assert_clean_undone(vault_dir)
    assert ran.read_text().strip().endswith("exit 0"), "the killed command's git ran before the next one went on"
