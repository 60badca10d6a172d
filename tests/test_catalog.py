"""Listing answers from the index for unchanged notes and reads the rest: the same entries either way."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from memvault import open_vault
from memvault.vault import indexing


def normalised(entries) -> list:
    # The index keeps its own wording of a frontmatter error; the entry is the same otherwise.
    return sorted((e.path, e.title, e.kind, e.status, e.group, e.always_load, e.private, e.updated, e.created,
                   e.in_memory, bool(e.error)) for e in entries)  # fmt: skip


def test_list_is_the_same_from_the_index_and_from_the_files(vault_dir: Path) -> None:
    vault = open_vault(vault_dir)
    from_files = vault.list(scope="all")
    vault.reindex(vectors="none")
    assert normalised(vault.list(scope="all")) == normalised(from_files)
    assert [e.path for e in vault.list(kind="fix")] == [e.path for e in from_files if e.kind == "fix" and e.in_memory]


def test_a_note_edited_after_indexing_is_read_from_the_file(vault_dir: Path) -> None:
    vault = open_vault(vault_dir)
    vault.reindex(vectors="none")
    note = vault_dir / "MemoryVault" / "personal-private" / "preference" / "uv-for-envs.md"
    text = note.read_text(encoding="utf-8")
    note.write_text(text.replace("kind: preference", "kind: workflow", 1), encoding="utf-8")
    entry = next(e for e in vault.list() if e.path.endswith("uv-for-envs.md"))
    assert entry.kind == "workflow"


def test_unchanged_notes_come_from_the_index_unless_it_is_from_an_older_release(vault_dir: Path) -> None:
    vault = open_vault(vault_dir)
    vault.reindex(vectors="none")
    path = indexing.index_file(vault.root, vault.config)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE notes SET kind = 'from-the-index'")  # marks what was answered from the index
    assert all(e.kind == "from-the-index" for e in vault.list())
    with sqlite3.connect(path) as conn:
        conn.execute("ALTER TABLE notes DROP COLUMN created")
        conn.execute("DELETE FROM _memvault_migrations WHERE name = '0005_created'")
    assert not any(e.kind == "from-the-index" for e in vault.list())
