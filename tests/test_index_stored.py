"""What the index stores. Secrets never reach it: a note's title and text are stored redacted, so its keyword rows,
vectors and what recall shows hold none, and a note marked clean is shown without loading the scanner (the prompt
hook). And after a sync that rewrote many notes its keyword rows are merged into one b-tree."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from memvault import open_vault
from memvault.claude.settings import INTERPRETER_FLAGS
from memvault.index import core as ix
from memvault.index import db, schema

from .conftest import REPO, configure

KEY = "AKIA" + "Q7XZ3M2PLK9WRT4B"  # an AWS access key id's shape (made up)
NOTE = f"# Deploy key {KEY}\n\nThe deploy job signs in with {KEY} until the vault role lands.\n"
HOOK = REPO / "memvault" / "hooks" / "user_prompt_submit.py"


def _indexed(vault_dir: Path, memvault_home: Path, name: str = "Notes/deploy-keys.md") -> ix.Index:
    configure(memvault_home, f"vault:\n  root: {vault_dir}\nembedding:\n  warm_service: false\n")
    note = vault_dir / name
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text(NOTE, encoding="utf-8")
    vault = open_vault(vault_dir)
    vault.reindex(vectors="none")
    return ix.open_index(vault.index_file)


def test_a_secret_in_a_note_is_stored_redacted_and_cannot_be_searched(vault_dir: Path, memvault_home: Path) -> None:
    index = _indexed(vault_dir, memvault_home)
    title, clean = index.conn.execute("SELECT title, clean FROM notes WHERE path = 'Notes/deploy-keys.md'").fetchone()
    sql = "SELECT c.text FROM chunks c JOIN notes n ON n.id = c.note_id WHERE n.path = 'Notes/deploy-keys.md'"
    texts = [row[0] for row in index.conn.execute(sql)]
    assert KEY not in title and "[REDACTED:aws_access_key_id]" in title and clean == 1
    assert texts and all(KEY not in t for t in texts) and "[REDACTED:" in "".join(texts)
    found = index.conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (f'"{KEY}"',)).fetchone()
    assert found == (0,)
    assert (vault_dir / "Notes/deploy-keys.md").read_text(encoding="utf-8") == NOTE  # the note itself is the user's


def test_a_note_whose_path_holds_a_secret_is_not_clean(vault_dir: Path, memvault_home: Path) -> None:
    index = _indexed(vault_dir, memvault_home, name=f"Notes/{KEY}.md")
    assert index.conn.execute("SELECT clean FROM notes WHERE path = ?", (f"Notes/{KEY}.md",)).fetchone() == (0,)


def test_an_index_of_before_is_redacted_by_the_next_sync(vault_dir: Path, memvault_home: Path) -> None:
    """An older index (no `clean` column, the text as written): the migration has the next sync read every note."""
    index = _indexed(vault_dir, memvault_home)
    with db.transaction(index.conn):
        index.conn.execute("UPDATE chunks SET text = ? WHERE note_id = (SELECT id FROM notes WHERE path = ?)",
                           (NOTE, "Notes/deploy-keys.md"))  # fmt: skip
        index.conn.execute("ALTER TABLE notes DROP COLUMN clean")
        index.conn.execute("DELETE FROM _memvault_migrations WHERE name = '0011_redacted'")
    index.close()
    again = ix.open_index(open_vault(vault_dir).index_file)  # migrates
    assert "0011_redacted" in db.applied(again.conn)
    assert again.conn.execute("SELECT max(clean) FROM notes").fetchone() == (0,)
    again.close()
    open_vault(vault_dir).reindex(vectors="none")
    synced = ix.open_index(open_vault(vault_dir).index_file)
    texts = "".join(r[0] for r in synced.conn.execute("SELECT text FROM chunks"))
    assert KEY not in texts and synced.conn.execute("SELECT min(clean) FROM notes").fetchone() == (1,)
    assert schema.MIGRATIONS[-1][0] == "0011_redacted"


def _hook_imports(prompt: str) -> tuple[str, str]:
    """The real prompt hook, keyword-only (no service), run with `-X importtime`: its output and its imports."""
    event = '{"session_id": "s-%s", "prompt": "%s", "hook_event_name": "UserPromptSubmit", "cwd": "/tmp"}'
    done = subprocess.run([sys.executable, *INTERPRETER_FLAGS, "-X", "importtime", str(HOOK)],
                          input=event % (abs(hash(prompt)), prompt), capture_output=True, text=True, timeout=120,
                          env=dict(os.environ))  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, done.stderr


def test_the_keyword_only_hook_shows_clean_notes_without_the_scanner(vault_dir: Path, memvault_home: Path) -> None:
    _indexed(vault_dir, memvault_home).close()
    shown, imports = _hook_imports("how should we roll out a database migration")
    assert "db-migration-rollout" in shown, shown  # something was injected ...
    assert "memvault.store.secrets" not in imports  # ... and nothing had to be scanned
    shown, imports = _hook_imports("how does the deploy job sign in until the vault role lands")
    assert "deploy-keys.md" in shown and KEY not in shown and "[REDACTED:aws_access_key_id]" in shown, shown
    assert "memvault.store.secrets" not in imports
    # a prompt the scanner must read (a digit: a PIN, a card number could be there) still loads it, for the log
    _, imports = _hook_imports("how should we roll out database migration 42")
    assert "memvault.store.secrets" in imports


def _fts_digest(index: ix.Index) -> str:
    import hashlib

    rows = index.conn.execute("SELECT id, block FROM chunks_fts_data ORDER BY id")
    return hashlib.sha256(repr(rows.fetchall()).encode()).hexdigest()


def test_a_sync_that_rewrote_many_notes_leaves_the_keyword_index_merged(vault_dir: Path, memvault_home: Path) -> None:
    """After a re-read of every note (this release's migration does one) the keyword rows sit in many segments;
    a sync of MERGE_AFTER notes or more merges them, so an `optimize` afterwards has nothing left to do."""
    from memvault.index import sync

    _indexed(vault_dir, memvault_home).close()
    folder = vault_dir / "Notes" / "many"
    folder.mkdir(parents=True)
    for n in range(sync.MERGE_AFTER + 20):
        (folder / f"n{n}.md").write_text(f"# Note {n}\n\nDeploy log entry about service {n} and its rollout.\n")
    vault = open_vault(vault_dir)
    vault.reindex(vectors="none")
    for n in range(sync.MERGE_AFTER + 20):  # every note again: deletions and new rows
        (folder / f"n{n}.md").write_text(f"# Note {n}\n\nRollback log entry about service {n}, reverted.\n")
    vault.reindex(vectors="none")
    index = ix.open_index(vault.index_file)
    before = _fts_digest(index)
    with db.transaction(index.conn):
        index.conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('optimize')")
    assert _fts_digest(index) == before
