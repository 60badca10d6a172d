"""Vault.move and Vault.remove: one journalled mutation each, indexed, one commit (crash tests: test_crash.py)."""

from __future__ import annotations

import pytest

from memvault.errors import MemvaultError, SafetyError

from .conftest import git

REVIEW = "MemoryVault/personal-private/_review/alembic-enum-add-value.md"
FIXED = "MemoryVault/personal-private/fix/alembic-enum-add-value.md"
INBOX = "MemoryVault/personal-private/_inbox/dependabot-grouped-updates.md"


def test_move_changes_place_and_keys_in_one_commit(git_vault) -> None:
    before = git_vault.read(REVIEW).note
    result = git_vault.move(REVIEW, FIXED, meta={"review": "approved"}, remove=["confidence"], op="approve")
    assert result.path == FIXED and set(result.paths) == {REVIEW, FIXED} and result.commit
    assert not (git_vault.root / REVIEW).exists()
    after = git_vault.read(FIXED).note
    assert after.body == before.body and after.meta["review"] == "approved" and "confidence" not in after.meta
    assert after.meta["source"] == before.meta["source"] and after.meta["created"] == before.meta["created"]
    assert git(git_vault.root, "status", "--porcelain") == ""
    assert git(git_vault.root, "rev-list", "--count", "HEAD").strip() == "2"
    assert "approve" in git(git_vault.root, "log", "-1", "--format=%B")
    hits = git_vault.recall("alembic enum value", 5).hits  # the index follows: found at the new place
    assert [h.path for h in hits if "alembic" in h.path] == [FIXED]


def test_move_with_a_new_body(vault) -> None:
    new = "MemoryVault/personal-private/preference/dependabot.md"
    vault.move(INBOX, new, body="# Dependabot\n\nGroup bumps.\n")
    assert vault.read(new).note.body == "# Dependabot\n\nGroup bumps.\n"


def test_move_refuses_a_taken_target_a_missing_source_and_leaving_the_scope(vault) -> None:
    taken = "MemoryVault/personal-private/preference/uv-for-envs.md"
    with pytest.raises(SafetyError) as exc:
        vault.move(INBOX, taken)
    assert exc.value.code == "conflict" and (vault.root / INBOX).exists()
    with pytest.raises(SafetyError) as exc:
        vault.move("MemoryVault/personal-private/_inbox/nope.md", FIXED)
    assert exc.value.code == "missing"
    with pytest.raises(SafetyError) as exc:
        vault.move(INBOX, "Notes/dependabot.md")
    assert exc.value.code == "outside_scope" and (vault.root / INBOX).exists()


def test_remove_deletes_with_a_reason_and_refuses_outside(git_vault) -> None:
    with pytest.raises(MemvaultError):
        git_vault.remove(INBOX, reason=" ")
    result = git_vault.remove(INBOX, reason="rejected in review", op="reject")
    assert result.paths == (INBOX,) and not (git_vault.root / INBOX).exists()
    assert "Memvault-Reason: rejected in review" in git(git_vault.root, "log", "-1", "--format=%B")
    assert git(git_vault.root, "status", "--porcelain") == ""
    with pytest.raises(SafetyError) as exc:
        git_vault.remove("Notes/Postgres indexing.md", reason="no")
    assert exc.value.code == "outside_scope"
    with pytest.raises(SafetyError) as exc:
        git_vault.remove(INBOX, reason="again")
    assert exc.value.code == "missing"
