"""disk.py: the read scope walk, unreadable files, atomic writes."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from memvault.errors import MemvaultError
from memvault.store import disk


def test_walk_ignores_obsidian_trash_templates_and_configured_globs(vault_dir: Path) -> None:
    (vault_dir / ".trash").mkdir()
    (vault_dir / ".trash" / "old.md").write_text("gone")
    (vault_dir / "Drafts").mkdir()
    (vault_dir / "Drafts" / "wip.md").write_text("wip")
    found = disk.list_markdown(vault_dir, disk.ignore_patterns(vault_dir, ("Drafts",))).notes
    assert "Ideas.md" in found and "Notes/Postgres indexing.md" in found
    assert not [p for p in found if p.startswith((".obsidian", ".trash", "Templates", "Drafts"))]
    # the Templates folder comes from .obsidian/templates.json; renaming it there moves the exclusion
    (vault_dir / ".obsidian" / "templates.json").write_text('{"folder": "Notes"}')
    found = disk.list_markdown(vault_dir, disk.ignore_patterns(vault_dir)).notes
    assert "Templates/Daily note.md" in found and not [p for p in found if p.startswith("Notes/")]


def test_walk_survives_symlink_loops_and_never_leaves_the_vault(vault_dir: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("not part of the vault")
    os.symlink(vault_dir, vault_dir / "Notes" / "loop")
    os.symlink(outside, vault_dir / "escape")
    os.symlink(outside / "secret.md", vault_dir / "linked.md")
    os.symlink(vault_dir / "Ideas.md", vault_dir / "Notes" / "ideas-alias.md")
    listing = disk.list_markdown(vault_dir, disk.ignore_patterns(vault_dir))
    assert not [p for p in listing.notes if "loop/" in p or p.startswith("escape") or p == "linked.md"]
    assert "Notes/ideas-alias.md" in listing.notes  # a link that stays inside is fine
    reasons = dict(listing.skipped)
    assert reasons["escape"] == "symlink leaves the vault" and reasons["linked.md"] == "symlink leaves the vault"
    assert reasons["Notes/loop"] == "symlink loop"


def test_binary_non_utf8_and_huge_files_get_clear_errors(tmp_path: Path) -> None:
    (tmp_path / "bin.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    (tmp_path / "latin1.md").write_bytes("caf\xe9".encode("latin-1"))
    (tmp_path / "big.md").write_bytes(b"a" * 5000)
    with pytest.raises(MemvaultError, match="binary") as exc:
        disk.read_text(tmp_path / "bin.md")
    assert exc.value.code == "unreadable"
    with pytest.raises(MemvaultError, match="not UTF-8"):
        disk.read_text(tmp_path / "latin1.md")
    with pytest.raises(MemvaultError) as exc:
        disk.read_text(tmp_path / "big.md", max_bytes=1000)
    assert exc.value.code == "too_large"
    with pytest.raises(MemvaultError) as exc:
        disk.read_text(tmp_path / "nope.md")
    assert exc.value.code == "missing"


def test_atomic_write_replaces_keeps_mode_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "note.md"
    disk.atomic_write(target, b"one")
    os.chmod(target, 0o640)
    disk.atomic_write(target, b"two")
    assert target.read_bytes() == b"two"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert [p.name for p in target.parent.iterdir()] == ["note.md"]


def test_temp_files_are_swept_and_never_listed(tmp_path: Path) -> None:
    (tmp_path / ".note.md.1234.memvault.tmp").write_text("partial")
    (tmp_path / "note.md").write_text("whole")
    assert disk.list_markdown(tmp_path).notes == ("note.md",)
    assert disk.sweep_temp_files(tmp_path) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["note.md"]


@pytest.mark.parametrize(
    ("name", "conflict"),
    [
        ("note (conflict 2026-11-02 10-11-12).md", True),
        ("note (Dana's conflicted copy 2026-11-02).md", True),
        ("note.sync-conflict-20261102-101112-ABCDEFG.md", True),
        ("note (1).md", False),
        ("conflict resolution.md", False),
        ("Conflict resolution (conflict theory).md", False),
    ],
)
def test_sync_conflict_copies_are_recognised(name: str, conflict: bool) -> None:
    assert disk.is_conflict_copy(f"Notes/{name}") is conflict
