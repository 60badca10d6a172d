"""The index's tables and their migrations, the row kept per note, and how far a note may travel (visibility).

Pure definitions: opening, querying and writing the database is `core`.
"""

from __future__ import annotations

import json
import os

from memvault.records import Record

from . import chunking, db
from .db import Connection

VEC_TABLE = "vec_chunks"
VECTORS_VERSION = "vectors_version"  # the meta key of `Index.vectors_version`


def vectors_token() -> str:
    """A fresh `vectors_version` value: random, so one never comes back after the meta table is cleared."""
    return os.urandom(8).hex()

# How far a note may travel into agent context; vectors carry it so KNN can pre-filter.
VISIBLE, INBOX, PRIVATE, HIDDEN = 0, 1, 2, 3
# Memory entries recalled into agent context: active ones, and fixes whose problem is resolved (the
# fix is still the answer when the error comes back). Superseded, archived, incubating and promoted
# entries are not.
RECALLED_STATUSES = ("active", "resolved")
UNREADABLE = "unreadable"  # the status of a file whose text could not be read (too large, binary, not UTF-8, …)


def place(rel: str, folder: str) -> tuple[bool, str | None, str]:
    """(under the memory folder, its group, its special area such as "_inbox" or "") of a vault path."""
    parts = rel.split("/")
    in_memory = parts[0] == folder and len(parts) > 1
    group = parts[1] if in_memory and len(parts) > 2 else None
    area = next((p for p in parts[2:-1] if p.startswith("_")), "") if in_memory else ""
    return in_memory, group, area


class NoteRow(Record):
    """What the index keeps about one note (besides its chunks)."""

    path: str
    mtime_ns: int
    size: int
    hash: str
    title: str
    kind: str | None = None
    status: str = "active"
    group: str | None = None
    tags: tuple[str, ...] = ()
    always_load: bool = False
    private: bool = False
    updated: str | None = None
    in_memory: bool = False
    area: str = ""  # "_inbox", "_review", "_archive", "_always-load", "_idea-incubator" or ""
    error: str | None = None  # unreadable (status UNREADABLE: not indexed), or invalid frontmatter (text indexed)
    created: str | None = None
    # The title and chunks are stored with secrets redacted, and the path has none: what recall shows of the note
    # needs no scan (the scanner costs a keyword-only prompt hook 11 ms to load).
    clean: bool = False

    @property
    def visibility(self) -> int:
        if self.status == UNREADABLE or self.area == "_archive" or self.status in ("superseded", "archived"):
            return HIDDEN
        if self.in_memory and (self.error or self.status not in RECALLED_STATUSES):
            return HIDDEN  # an entry whose frontmatter cannot be read may be superseded or private: never injected
        # A note of the user's own whose frontmatter YAML rejects (Obsidian accepts it) is still recalled by its text.
        if self.private:
            return PRIVATE
        return INBOX if self.area in ("_inbox", "_review") else VISIBLE


def content_hash(data: bytes) -> str:
    import hashlib  # indexing only, not the prompt path

    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _core(conn: Connection) -> None:
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    conn.execute(
        """CREATE TABLE notes (
            id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL,
            hash TEXT NOT NULL, title TEXT NOT NULL, kind TEXT, status TEXT NOT NULL, grp TEXT, tags TEXT NOT NULL,
            always_load INTEGER NOT NULL, private INTEGER NOT NULL, updated TEXT, in_memory INTEGER NOT NULL,
            area TEXT NOT NULL, error TEXT, visibility INTEGER NOT NULL, embedded TEXT)"""
    )
    conn.execute(
        # AUTOINCREMENT: a chunk id is never reused, so a vector left behind can never attach to new text.
        """CREATE TABLE chunks (
            id INTEGER PRIMARY KEY AUTOINCREMENT, note_id INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL, heading TEXT NOT NULL, text TEXT NOT NULL, ehash TEXT NOT NULL)"""
    )
    conn.execute("CREATE INDEX chunks_note ON chunks(note_id)")
    conn.execute(
        "CREATE VIRTUAL TABLE chunks_fts USING fts5(title, tags, heading, body, "
        "tokenize = 'porter unicode61 remove_diacritics 2')"
    )
    conn.execute(
        """CREATE TABLE links (src INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
            target TEXT NOT NULL, dest TEXT)"""
    )
    conn.execute("CREATE INDEX links_src ON links(src)")
    conn.execute("CREATE INDEX links_dest ON links(dest)")


def _recalls(conn: Connection) -> None:
    conn.execute("CREATE TABLE recalls (path TEXT PRIMARY KEY, count INTEGER NOT NULL, last_recalled TEXT NOT NULL)")


def _pending_index(conn: Connection) -> None:
    conn.execute("CREATE INDEX notes_unembedded ON notes(id) WHERE embedded IS NULL AND error IS NULL")


def _recall_cursor(conn: Connection) -> None:
    # How far recall analytics have read each hook log file; kept by a full reindex, like `recalls`.
    conn.execute("CREATE TABLE recall_cursor (file TEXT PRIMARY KEY, offset INTEGER NOT NULL, since TEXT NOT NULL)")


def _created(conn: Connection) -> None:
    conn.execute("ALTER TABLE notes ADD COLUMN created TEXT")
    conn.execute("UPDATE notes SET mtime_ns = 0, hash = ''")  # the next sync re-reads every note to fill it in


def _readable_pending(conn: Connection) -> None:
    # Notes with invalid frontmatter are embedded too (only unreadable files are not): re-read every note.
    conn.execute("DROP INDEX notes_unembedded")
    conn.execute("CREATE INDEX notes_unembedded ON notes(id) WHERE embedded IS NULL AND status != 'unreadable'")
    conn.execute("UPDATE notes SET mtime_ns = 0, hash = ''")


def _reread(conn: Connection) -> None:
    # One definition of "private" (store.privacy): titles lose <private> spans, and `private: yes`,
    # `"true"` or a flag after a comment now hide a note. The next sync re-reads every note.
    conn.execute("UPDATE notes SET mtime_ns = 0, hash = ''")


FTS_COLUMNS = "title, tags, heading, body, context"
FTS_TOKENIZER = "tokenize = 'porter unicode61 remove_diacritics 2'"
FTS_INSERT = f"INSERT INTO chunks_fts (rowid, {FTS_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)"  # noqa: S608 (constants)


def _chunk_context(conn: Connection) -> None:
    """Chunks carry their neighbours: keyword rows gain a `context` column and every chunk the note's title,
    and the embedded text gains the end of the previous chunk. `vhash` records which embedded text a
    chunk's stored vector was made from, so only chunks whose text changed are embedded again.

    The keyword rows are rebuilt here from the stored chunks, so keyword search is complete at once.
    The old vectors stay (same model, slightly different text) until the next reindex replaces them:
    recall keeps finding notes by meaning meanwhile.
    """
    conn.execute("ALTER TABLE chunks ADD COLUMN vhash TEXT")
    conn.execute("DROP TABLE chunks_fts")
    conn.execute(f"CREATE VIRTUAL TABLE chunks_fts USING fts5({FTS_COLUMNS}, {FTS_TOKENIZER})")
    has_vectors = conn.execute("SELECT 1 FROM meta WHERE key = 'vec_model'").fetchone() is not None
    notes = conn.execute("SELECT id, title, tags, embedded FROM notes").fetchall()
    for note_id, title, tags, embedded in notes:
        rows = conn.execute(
            "SELECT id, seq, heading, text, ehash FROM chunks WHERE note_id = ? ORDER BY seq", (note_id,)
        ).fetchall()
        tag_list = json.loads(tags)
        parts = chunking.with_neighbours([chunking.Chunk(seq, heading, text) for _, seq, heading, text, _ in rows])
        for (chunk_id, *_, old_hash), part in zip(rows, parts, strict=True):
            new_hash = content_hash(chunking.embed_text(title, tag_list, part).encode())
            made_from = old_hash if has_vectors and embedded else None
            conn.execute("UPDATE chunks SET ehash = ?, vhash = ? WHERE id = ?", (new_hash, made_from, chunk_id))
            conn.execute(FTS_INSERT, (chunk_id, *chunking.keyword_row(title, tag_list, part)))
    conn.execute("UPDATE notes SET embedded = NULL")


def _always_load_index(conn: Connection) -> None:
    # SessionStart reads the notes flagged `always_load` on every session: a few rows, not a scan of every note.
    conn.execute("CREATE INDEX notes_always_load ON notes(path) WHERE always_load = 1")


def _vectors_version(conn: Connection) -> None:
    # `Index.vectors_version`'s first token: the warm service can tell its copy is current from the next write on.
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (VECTORS_VERSION, vectors_token()))


def _redacted(conn: Connection) -> None:
    # Secrets in a note are redacted before its title and text are stored (sync.Layout.row): the index, its keyword
    # rows and its vectors never hold one, and a note marked `clean` is shown without a scan. The next sync re-reads
    # every note; the vectors of chunks whose text did not change are kept.
    conn.execute("ALTER TABLE notes ADD COLUMN clean INTEGER NOT NULL DEFAULT 0")
    conn.execute("UPDATE notes SET mtime_ns = 0, hash = ''")


MIGRATIONS: list[db.Migration] = [
    ("0001_core", _core),
    ("0002_recalls", _recalls),
    ("0003_unembedded", _pending_index),
    ("0004_recall_cursor", _recall_cursor),
    ("0005_created", _created),
    ("0006_readable_pending", _readable_pending),
    ("0007_privacy_reread", _reread),
    ("0008_chunk_context", _chunk_context),
    ("0009_always_load_index", _always_load_index),
    ("0010_vectors_version", _vectors_version),
    ("0011_redacted", _redacted),
]
