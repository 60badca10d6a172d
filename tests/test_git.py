"""Git vaults: exactly one commit per mutation, only memvault's paths, and undo by git revert."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from memvault import open_vault
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
    before = snapshot(root)
    git_vault.save("fix", "one", "text\n")
    after_save = snapshot(root)
    git_vault.evolve(REL, "new\n", reason="r")
    (root / "Notes" / "mine.md").write_text("a user commit in between")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "user change")
    result = git_vault.undo()
    assert result.op == "undo" and result.commit
    assert {k: v for k, v in snapshot(root).items() if k != "Notes/mine.md"} == after_save
    assert log(root)[0] == "memvault: undo evolve personal-private/preference/pytest-over-unittest"
    git_vault.undo()
    assert {k: v for k, v in snapshot(root).items() if k != "Notes/mine.md"} == before
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
