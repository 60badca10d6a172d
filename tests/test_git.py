"""Git vaults: exactly one commit per mutation, only memvault's paths, and undo by git revert."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from memvault import health, open_vault
from memvault.config import from_dict
from memvault.errors import GitError

from .conftest import git, snapshot

REL = "MemoryVault/personal-private/preference/pytest-over-unittest.md"


def log(root: Path) -> list[str]:
    return git(root, "log", "--format=%s").splitlines()


def test_each_mutation_is_one_commit_with_trailers(git_vault) -> None:
    root = git_vault.root
    saved = git_vault.save("fix", "redis-timeouts", "Raise socket_timeout to 5s.\n")
    evolved = git_vault.evolve(REL, "pytest + xdist.\n", reason="parallel CI")
    git_vault.update(saved.path, meta={"tags": ["redis"]})
    assert log(root) == [
        "memvault: update personal-private/fix/redis-timeouts",
        "memvault: evolve personal-private/preference/pytest-over-unittest",
        "memvault: save personal-private/fix/redis-timeouts",
        "initial",
    ]
    body = git(root, "log", "-1", "--skip=1", "--format=%B")
    assert "Memvault-Op: evolve" in body and "Memvault-Reason: parallel CI" in body
    assert f"Memvault-Path: {evolved.archived}" in body
    assert saved.commit and evolved.commit and git(root, "status", "--porcelain") == ""


def test_user_work_in_progress_is_never_committed(git_vault) -> None:
    root = git_vault.root
    (root / "Notes" / "draft.md").write_text("half a thought")
    git(root, "add", "Notes/draft.md")
    (root / "Ideas.md").write_text((root / "Ideas.md").read_text() + "\nunsaved edit\n")
    git_vault.save("fix", "one", "text\n")
    assert git(root, "show", "--name-only", "--format=", "HEAD").split() == ["MemoryVault/personal-private/fix/one.md"]
    status = git(root, "status", "--porcelain")
    assert "A  Notes/draft.md" in status and " M Ideas.md" in status


def test_undo_reverts_the_last_memvault_commit(git_vault) -> None:
    root = git_vault.root

    def notes() -> dict[str, bytes]:  # what undo restores: all but the user's commit and the (append-only) change log
        return {k: v for k, v in snapshot(root).items() if k != "Notes/mine.md" and "/_meta/" not in k}

    before = notes()
    git_vault.save("fix", "one", "text\n")
    after_save = notes()
    git_vault.evolve(REL, "new\n", reason="r")
    (root / "Notes" / "mine.md").write_text("a user commit in between")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "user change")
    result = git_vault.undo()
    assert result.op == "undo" and result.commit
    assert notes() == after_save
    assert log(root)[:2] == ["memvault: log _meta/changelog",  # the line saying what was undone
                             "memvault: undo evolve personal-private/preference/pytest-over-unittest"]  # fmt: skip
    git_vault.undo()
    assert notes() == before
    with pytest.raises(GitError, match="nothing to undo"):
        git_vault.undo()
    assert "user change" in log(root)  # never a reset: history only grows


def test_undo_refuses_when_the_note_changed_since(git_vault) -> None:
    result = git_vault.save("fix", "one", "text\n")
    path = git_vault.root / result.path
    path.write_text("edited by hand")
    git(git_vault.root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "hand edit")
    with pytest.raises(GitError) as exc:
        git_vault.undo()
    assert exc.value.code == "conflict"
    assert path.read_text() == "edited by hand" and git(git_vault.root, "status", "--porcelain") == ""


def test_undo_without_git_is_a_clear_error(vault) -> None:
    with pytest.raises(GitError, match="git repository"):
        vault.undo()


def test_commits_can_be_switched_off(vault_dir: Path) -> None:
    git(vault_dir, "init", "-q")
    vault = open_vault(vault_dir, config=from_dict({"git": {"commit": "never"}}))
    assert vault.save("fix", "one", "text\n").commit is None
    assert git(vault_dir, "rev-list", "--all").strip() == ""


def test_a_configured_identity_is_kept(vault_dir: Path) -> None:
    git(vault_dir, "init", "-q")
    git(vault_dir, "config", "user.name", "Dana Kim")
    git(vault_dir, "config", "user.email", "dana@example.org")
    open_vault(vault_dir).save("fix", "one", "text\n")
    assert git(vault_dir, "log", "-1", "--format=%an <%ae>").strip() == "Dana Kim <dana@example.org>"


def test_a_missing_identity_has_a_fallback(vault_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "empty-gitconfig"))  # a fresh HOME: no identity at all
    for var in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"):
        monkeypatch.delenv(var, raising=False)
    git(vault_dir, "init", "-q")
    assert subprocess.run(["git", "config", "user.name"], cwd=vault_dir, capture_output=True).returncode == 1
    assert open_vault(vault_dir).save("fix", "one", "text\n").commit
    assert git(vault_dir, "log", "-1", "--format=%an <%ae>").strip() == "memvault <memvault@localhost>"


# ---- a lock file git left behind (issue 27, item 6) ------------------------------------------------

LOCKS = ["index.lock", "HEAD.lock", "refs/heads/main.lock"]


def clean(root: Path) -> bool:
    return git(root, "status", "--porcelain") == ""


@pytest.mark.parametrize("lock", LOCKS)
def test_a_lock_left_by_a_dead_git_is_removed_and_the_write_committed(git_vault, lock: str) -> None:
    stale = git_vault.root / ".git" / lock
    stale.write_text("")  # no git process runs in this repository: nothing holds it
    result = git_vault.save("fix", "after-lock", "text\n")
    assert result.warning is None and result.commit == git(git_vault.root, "rev-parse", "HEAD").strip()
    assert not stale.exists() and clean(git_vault.root)
    assert git_vault.undo().commit and not (git_vault.root / result.path).exists()


def held_lock(root: Path, rel: str) -> subprocess.Popen[bytes]:
    """A real `git commit <path>` waiting in its editor: it holds .git/index.lock all that time."""
    (root / rel).write_text("the user's own edit\n")
    env = {**os.environ, "GIT_EDITOR": "sleep 60;:", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
    proc = subprocess.Popen(["git", "commit", "--", rel], cwd=root, env=env, start_new_session=True)
    deadline = time.monotonic() + 10
    while not (root / ".git" / "index.lock").exists():
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    return proc


@pytest.mark.skipif(not Path("/proc/self/cwd").exists(), reason="running processes are read from /proc")
def test_a_live_git_keeps_its_lock_and_a_killed_one_is_recovered_from(git_vault) -> None:
    root, lock = git_vault.root, git_vault.root / ".git" / "index.lock"
    proc = held_lock(root, "Ideas.md")
    try:
        first = git_vault.save("fix", "while-locked", "text\n")
        assert lock.exists() and proc.poll() is None  # never taken from a running git
        assert first.commit is None and str(lock) in (first.warning or "")
        assert f"process {proc.pid}" in (first.warning or "")
        with pytest.raises(GitError, match=f"rm {lock}") as refused:
            git_vault.undo()
        assert "memvault" in str(refused.value)
        problems = health.check(git_vault, service=False).problems
        assert any(str(lock) in p and "not committed" in p for p in problems), problems
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # kill -9 mid-commit: git cannot remove its lock
        proc.wait()
    assert lock.exists()
    problems = health.check(git_vault, service=False).problems
    assert any(str(lock) in p for p in problems) and not any("notes changed" in p for p in problems), problems
    second = git_vault.save("fix", "after-kill", "text\n")
    assert second.warning is None and not lock.exists()
    committed = git(root, "log", "--format=%s", "-3").splitlines()
    assert committed[:2] == ["memvault: save personal-private/fix/after-kill",
                             "memvault: save personal-private/fix/while-locked"]  # fmt: skip
    assert git(root, "status", "--porcelain") == " M Ideas.md\n"  # the user's own edit is never committed
    assert not health.check(git_vault, service=False).problems


def test_a_stale_lock_is_cleared_by_the_next_command_and_the_history_catches_up(git_vault, vault_dir: Path) -> None:
    lock = vault_dir / ".git" / "HEAD.lock"
    before = git(vault_dir, "rev-parse", "HEAD")
    proc = held_lock(vault_dir, "Ideas.md") if Path("/proc/self/cwd").exists() else None
    try:
        lock.write_text("")
        git_vault.save("fix", "while-locked", "text\n")
    finally:
        if proc:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert git(vault_dir, "rev-parse", "HEAD") == before
    open_vault(vault_dir)  # any command: the locks of dead gits go, the write is committed
    assert not lock.exists() and git(vault_dir, "log", "-1", "--format=%s").strip().endswith("fix/while-locked")


def test_without_proc_only_an_old_lock_is_taken_as_stale(git_vault, monkeypatch: pytest.MonkeyPatch) -> None:
    from memvault.store import gitops

    monkeypatch.setattr(gitops, "PROC", git_vault.root / "no-proc-here")  # as on macOS or Windows
    lock = git_vault.root / ".git" / "index.lock"
    lock.write_text("")
    young = git_vault.save("fix", "young-lock", "text\n")
    assert lock.exists() and young.commit is None and f"rm {lock}" in (young.warning or "")
    assert "age" in (young.warning or "")
    old = time.time() - gitops.STALE_LOCK_S - 60
    os.utime(lock, (old, old))
    assert git_vault.save("fix", "old-lock", "text\n").warning is None and not lock.exists()
    assert clean(git_vault.root)
