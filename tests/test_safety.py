"""The safety envelope: every reason code triggered by a real attempt against a real vault."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memvault import SafetyError, open_vault
from memvault.config import from_dict

from .conftest import snapshot

CLOUD_KEY = "AKIA" + "Q3X7ZP2M" * 2  # shaped like an AWS access key id


def refused(code: str, fn, *args, **kwargs) -> SafetyError:
    with pytest.raises(SafetyError) as exc:
        fn(*args, **kwargs)
    assert exc.value.code == code, exc.value
    return exc.value


@pytest.mark.parametrize("path", ["../outside.md", "MemoryVault/../../outside.md", "MemoryVault/a/../../../x.md"])
def test_dotdot_is_path_escape(vault, path: str) -> None:
    before = snapshot(vault.root)
    refused("path_escape", vault.update, path, meta={"x": 1})
    refused("path_escape", vault.evolve, path, "new", reason="r")
    assert snapshot(vault.root) == before


def test_absolute_path_is_path_escape(vault) -> None:
    refused("path_escape", vault.update, str(vault.root / "Ideas.md"), meta={"x": 1}, outside=True)
    refused("path_escape", vault.read, "/etc/passwd.md")


def test_symlink_escape_is_refused(vault, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "victim.md").write_text("---\nkind: fix\n---\nkeep me\n")
    os.symlink(outside, vault.memory_dir / "personal-private" / "linked")
    refused("path_escape", vault.update, "MemoryVault/personal-private/linked/victim.md", meta={"x": 1})
    refused("path_escape", vault.save, "linked", "victim", "overwrite", replace=True)
    assert (outside / "victim.md").read_text() == "---\nkind: fix\n---\nkeep me\n"


def test_non_markdown_is_refused(vault) -> None:
    refused("not_markdown", vault.update, "MemoryVault/personal-private/notes.txt", meta={"x": 1})
    refused("not_markdown", vault.read, ".obsidian/app.json")


def test_writes_outside_memoryvault_need_explicit_permission(vault) -> None:
    rel = "Notes/Postgres indexing.md"
    before = (vault.root / rel).read_bytes()
    refused("outside_scope", vault.update, rel, meta={"reviewed": True})
    assert (vault.root / rel).read_bytes() == before
    vault.update(rel, meta={"reviewed": True}, outside=True)
    assert vault.read(rel).note.meta["reviewed"] is True


def test_oversized_body_is_too_large(vault) -> None:
    err = refused("too_large", vault.save, "fix", "huge", "x" * 300_000)
    assert "200 KB" in str(err)
    assert not (vault.memory_dir / "personal-private" / "fix" / "huge.md").exists()


def test_stale_mtime_is_a_conflict(vault) -> None:
    rel = "MemoryVault/personal-private/preference/uv-for-envs.md"
    seen = vault.read(rel)
    path = vault.root / rel
    path.write_text(path.read_text() + "\nEdited in Obsidian meanwhile.\n")
    os.utime(path, ns=(seen.mtime_ns + 1_000_000, seen.mtime_ns + 1_000_000))
    refused("conflict", vault.update, rel, meta={"tags": ["x"]}, expected_mtime_ns=seen.mtime_ns)
    refused("conflict", vault.evolve, rel, "new text", reason="r", expected_mtime_ns=seen.mtime_ns)
    assert "Edited in Obsidian meanwhile." in path.read_text()
    vault.update(rel, meta={"tags": ["x"]}, expected_mtime_ns=vault.read(rel).mtime_ns)


def test_saving_over_an_existing_entry_is_a_conflict(vault) -> None:
    refused("conflict", vault.save, "preference", "uv-for-envs", "something else")


@pytest.mark.parametrize("secret", [CLOUD_KEY, "ghp_" + "aB3dE6gH9j" * 4, "password = 'Tr0ub4dor&3x'"])
def test_secrets_are_refused_by_default(vault, secret: str) -> None:
    err = refused("secret", vault.save, "fix", "deploy-creds", f"Deploy with {secret} in the env.\n")
    assert secret not in str(err)
    assert not (vault.memory_dir / "personal-private" / "fix" / "deploy-creds.md").exists()


def test_secrets_can_be_redacted_instead(vault_dir: Path) -> None:
    vault = open_vault(vault_dir, config=from_dict({"vault": {"secrets": "redact"}}))
    result = vault.save("fix", "deploy-creds", f"Use key {CLOUD_KEY} for the bucket.\n")
    assert result.warning and "redacted" in result.warning
    text = (vault.root / result.path).read_text()
    assert CLOUD_KEY not in text and "[REDACTED:aws_access_key_id]" in text


def test_missing_note_cannot_be_evolved_or_updated(vault) -> None:
    refused("missing", vault.evolve, "MemoryVault/personal-private/fix/nope.md", "x", reason="r")
    refused("missing", vault.update, "MemoryVault/personal-private/fix/nope.md", meta={"x": 1})


def test_private_spans_never_reach_the_disk(vault) -> None:
    body = "Deploy on Fridays.\n<private>my home address is 1 Elm St</private>\nUse the canary.\n<PRIVATE>unclosed"
    result = vault.save("workflow", "deploys", body)
    text = (vault.root / result.path).read_text()
    assert "Elm St" not in text and "unclosed" not in text
    assert "Deploy on Fridays." in text and "Use the canary." in text
