"""The derived SQLite index of one vault: note metadata, chunks, FTS5 keywords, sqlite-vec vectors, wikilinks.

Everything here can be rebuilt from the markdown, so a corrupt or missing database is replaced,
never repaired. Imports only `db`, `chunking`, `schema` and the standard library: recall on the hook
path reads this index without loading YAML, the vault layer or the embedding model.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from memvault.errors import MemvaultError

from . import chunking, db
from .db import Connection
from .schema import (
    FTS_INSERT,
    MIGRATIONS,
    UNREADABLE,
    VEC_TABLE,
    VECTORS_VERSION,
    NoteRow,
    content_hash,
    vectors_token,
)


class CorruptIndex(MemvaultError):
    """The database file is unreadable; callers rebuild it (`open_index(rebuild=True)`)."""

    code = "index_corrupt"


def open_index(path: Path, *, vector: bool = True, rebuild: bool = False) -> Index:
    """Open (creating and migrating) the index at `path`. With `rebuild`, a corrupt file is moved aside first.

    Raises CorruptIndex when the file is not a usable database and `rebuild` is False, and
    db.VectorUnavailable when `vector` is asked for where sqlite-vec cannot load.
    """
    try:
        return _open(path, vector)
    except db.dbapi().DatabaseError as exc:
        if not rebuild:
            raise CorruptIndex(f"the index {path} is damaged ({exc}); run `memvault reindex --full`") from exc
        _set_aside(path)
        index = _open(path, vector)
        index.rebuilt = f"the index was damaged ({exc}) and has been rebuilt from the notes"
        return index


def open_reader(path: Path, *, shared: bool = False) -> Index:
    """Open an existing index for queries on the prompt path: no integrity check, no migrations, no writes.

    Falls back to keyword-only (no vec0) when sqlite-vec cannot load here. Raises CorruptIndex when
    the file is missing, damaged or was never migrated, so the caller can use its own fallback.
    `shared`: usable from other threads, one at a time (`readers`).
    """
    if not path.is_file():
        raise CorruptIndex(f"no index at {path} yet; run `memvault reindex`", code="no_index")
    try:
        try:
            conn, vector = db.connect(path, readonly=True, shared=shared), True
        except db.VectorUnavailable:
            conn, vector = db.connect(path, vector=False, readonly=True, shared=shared), False
        if "0001_core" not in db.applied(conn):
            conn.close()
            raise CorruptIndex(f"the index {path} is not initialised; run `memvault reindex`", code="no_index")
    except db.dbapi().DatabaseError as exc:
        raise CorruptIndex(f"the index {path} is damaged ({exc}); run `memvault reindex --full`") from exc
    return Index(conn, path, vector)


def _open(path: Path, vector: bool) -> Index:
    conn = db.connect(path, vector=vector)
    try:
        conn.execute("PRAGMA quick_check(1)").fetchone()  # fails fast on a file that is not a database
        db.migrate(conn, MIGRATIONS)
    except BaseException:
        conn.close()
        raise
    return Index(conn, path, vector)


def _set_aside(path: Path) -> None:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for suffix in ("", "-wal", "-shm"):
        part = Path(f"{path}{suffix}")
        if part.exists():
            os.replace(part, f"{path}.corrupt-{stamp}{suffix}")


class Index:
    def __init__(self, conn: Connection, path: Path, vector: bool) -> None:
        self.conn = conn
        self.path = path
        self.vector = vector
        self.rebuilt: str | None = None

    def close(self) -> None:
        self.conn.close()

    # ---- meta -----------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def vectors_version(self) -> str | None:
        """A token that changes with every write of the vectors (their values, groups or visibility), and only
        then: the warm service's in-memory copy stays valid through the index's other writes. None before the
        first vector write of a release that keeps it."""
        return self.get_meta(VECTORS_VERSION)

    def vector_model(self) -> tuple[str, int] | None:
        """The (model name, dimension) the stored vectors were made with, or None before the first vector."""
        name, dim = self.get_meta("vec_model"), self.get_meta("vec_dim")
        return (name, int(dim)) if name and dim else None

    def use_model(self, name: str, dim: int) -> bool:
        """Make `name`/`dim` the index's vector space; a change drops every vector (re-embedded later).

        Returns True when the space changed. Until re-embedding finishes, recall sees the new
        model name against partial vectors and the old ones are gone, so spaces never mix.
        """
        if self.vector_model() == (name, dim):
            return False
        with db.transaction(self.conn):
            self.conn.execute(f"DROP TABLE IF EXISTS {VEC_TABLE}")
            self.conn.execute(
                f"CREATE VIRTUAL TABLE {VEC_TABLE} USING vec0(embedding float[{int(dim)}] distance_metric=cosine, "
                "grp text, visibility integer)"
            )
            self.conn.execute("UPDATE notes SET embedded = NULL")
            self.conn.execute("UPDATE chunks SET vhash = NULL")
            self.set_meta("vec_model", name)
            self.set_meta("vec_dim", str(int(dim)))
            self._vectors_written()
        return True

    # ---- notes ----------------------------------------------------------------------------

    def known(self) -> dict[str, tuple[int, int, int, str]]:
        """path → (id, mtime_ns, size, hash) of every indexed note."""
        rows = self.conn.execute("SELECT path, id, mtime_ns, size, hash FROM notes")
        return {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}

    def rows(self, in_memory: bool = True) -> dict[str, NoteRow]:
        """path → the indexed row of every note (under the memory folder by default), without chunks."""
        query = (
            "SELECT path, mtime_ns, size, hash, title, kind, status, grp, tags, always_load, private, updated,"
            " in_memory, area, error, created FROM notes" + (" WHERE in_memory = 1" if in_memory else "")
        )
        return {
            r[0]: NoteRow(
                path=r[0],
                mtime_ns=r[1],
                size=r[2],
                hash=r[3],
                title=r[4],
                kind=r[5],
                status=r[6],
                group=r[7],
                tags=tuple(json.loads(r[8])),
                always_load=bool(r[9]),
                private=bool(r[10]),
                updated=r[11],
                in_memory=bool(r[12]),
                area=r[13],
                error=r[14],
                created=r[15],
            )
            for r in self.conn.execute(query)
        }

    def touch(self, path: str, mtime_ns: int, size: int) -> None:
        """Record a new mtime/size for a note whose content hash did not change."""
        self.conn.execute("UPDATE notes SET mtime_ns = ?, size = ? WHERE path = ?", (mtime_ns, size, path))

    def upsert(self, row: NoteRow, parts: Sequence[chunking.Chunk], links: Iterable[str]) -> int:
        """Replace a note's row, chunks, keywords and links (call inside a transaction).

        Vectors of chunks whose embedded text did not change are kept; the rest wait for `pending()`. A
        chunk whose own text is unchanged but whose neighbours changed keeps its old vector meanwhile.
        """
        conn = self.conn
        old = conn.execute("SELECT id FROM notes WHERE path = ?", (row.path,)).fetchone()
        reusable, stale = self._old_vectors(old[0]) if old else ({}, {})
        if old:
            self._drop_chunks(old[0])
            conn.execute("DELETE FROM links WHERE src = ?", (old[0],))
        values = (
            row.path, row.mtime_ns, row.size, row.hash, row.title, row.kind, row.status, row.group,
            json.dumps(list(row.tags), ensure_ascii=False), int(row.always_load), int(row.private), row.updated,
            int(row.in_memory), row.area, row.error, row.visibility, row.created, int(row.clean),
        )  # fmt: skip
        if old:
            note_id = int(old[0])
            conn.execute(
                """UPDATE notes SET path=?, mtime_ns=?, size=?, hash=?, title=?, kind=?, status=?, grp=?, tags=?,
                   always_load=?, private=?, updated=?, in_memory=?, area=?, error=?, visibility=?, created=?,
                   clean=? WHERE id = ?""",
                (*values, note_id),
            )
        else:
            cur = conn.execute(
                """INSERT INTO notes (path, mtime_ns, size, hash, title, kind, status, grp, tags, always_load,
                   private, updated, in_memory, area, error, visibility, created, clean)
                   VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)""",
                values,
            )
            note_id = int(cur.lastrowid or 0)
        complete = self.vector_model() is not None
        for part in parts:
            ehash = content_hash(chunking.embed_text(row.title, row.tags, part).encode())
            vector = reusable.get(ehash)
            vhash = ehash if vector is not None else None  # the text the chunk's stored vector was made from
            if vector is None:  # the same text with new neighbours: its old vector serves until re-embedded
                complete = False
                vector, vhash = stale.get(part.text, (None, None))
            cur = conn.execute(
                "INSERT INTO chunks (note_id, seq, heading, text, ehash, vhash) VALUES (?, ?, ?, ?, ?, ?)",
                (note_id, part.seq, part.heading, part.text, ehash, vhash),
            )
            chunk_id = int(cur.lastrowid or 0)
            conn.execute(FTS_INSERT, (chunk_id, *chunking.keyword_row(row.title, row.tags, part)))
            if vector is not None:
                self._insert_vector(chunk_id, vector, row.group, row.visibility)
        if old and self._has_vectors():  # the old chunks' vectors went with them (the good ones are back, new ids)
            self._vectors_written()
        conn.execute("UPDATE notes SET embedded = ? WHERE id = ?", (self._model_name() if complete else None, note_id))
        conn.executemany("INSERT INTO links (src, target) VALUES (?, ?)", [(note_id, t) for t in links])
        return note_id

    def delete(self, paths: Iterable[str]) -> int:
        """Drop notes (call inside a transaction); returns how many were indexed."""
        count = 0
        for path in paths:
            row = self.conn.execute("SELECT id FROM notes WHERE path = ?", (path,)).fetchone()
            if row:
                self._drop_chunks(row[0])
                self.conn.execute("DELETE FROM notes WHERE id = ?", (row[0],))
                count += 1
        if count and self._has_vectors():
            self._vectors_written()
        return count

    def resolve_links(self) -> None:
        """Re-resolve every wikilink against the current set of notes (Obsidian's rules, see chunking)."""
        by_path: dict[str, str] = {}
        by_name: dict[str, list[str]] = {}
        for (path,) in self.conn.execute("SELECT path FROM notes"):
            stem = path[:-3] if path.lower().endswith(".md") else path
            by_path[stem.lower()] = path
            by_name.setdefault(stem.rsplit("/", 1)[-1].lower(), []).append(path)
        sql = "SELECT l.rowid, l.target, n.path FROM links l JOIN notes n ON n.id = l.src"
        rows = self.conn.execute(sql).fetchall()
        updates = [(chunking.resolve_link(target, src, by_path, by_name), rowid) for rowid, target, src in rows]
        self.conn.executemany("UPDATE links SET dest = ? WHERE rowid = ?", updates)

    def outlinks(self, path: str) -> list[tuple[str, str | None]]:
        """(target as written, resolved path or None) for each wikilink in `path`."""
        sql = "SELECT l.target, l.dest FROM links l JOIN notes n ON n.id = l.src WHERE n.path = ? ORDER BY l.rowid"
        return [(r[0], r[1]) for r in self.conn.execute(sql, (path,))]

    def backlinks(self, path: str) -> list[str]:
        """Paths of the notes that link to `path`."""
        sql = "SELECT DISTINCT n.path FROM links l JOIN notes n ON n.id = l.src WHERE l.dest = ? ORDER BY n.path"
        return [r[0] for r in self.conn.execute(sql, (path,))]

    # ---- vectors --------------------------------------------------------------------------

    def pending(self, limit: int, first: Iterable[str] = ()) -> list[tuple[int, list[tuple[int, str]]]]:
        """Up to `limit` notes still needing vectors: (note id, [(chunk id, text to embed), …]).

        Only the chunks without a vector of their current text are listed, so an edit to one part of
        a long note embeds that part and its neighbours, not the whole note. Notes at the paths in
        `first` come first, then memory entries, then the user's own notes.
        """
        model = self._model_name()
        wanted = list(first)[:500]
        rows = self.conn.execute(
            "SELECT id, title, tags FROM notes WHERE status != ? AND (embedded IS NULL OR embedded != ?) "
            f"ORDER BY path IN ({','.join('?' * len(wanted))}) DESC, in_memory DESC, id LIMIT ?",
            (UNREADABLE, model or "", *wanted, limit),
        ).fetchall()
        out = []
        for note_id, title, tags in rows:
            parts = self.conn.execute(
                "SELECT id, seq, heading, text, ehash, vhash FROM chunks WHERE note_id = ? ORDER BY seq", (note_id,)
            ).fetchall()
            tag_list = json.loads(tags)
            whole = chunking.with_neighbours([chunking.Chunk(seq, h, t) for _, seq, h, t, _, _ in parts])
            texts = [
                (row[0], chunking.embed_text(title, tag_list, chunk))
                for row, chunk in zip(parts, whole, strict=True)
                if row[5] is None or row[5] != row[4]  # no vector yet, or one made from other text
            ]
            out.append((int(note_id), texts))
        return out

    def has_pending(self) -> bool:
        """Whether some note still waits for its first vectors (cheap: a partial index; for the prompt path)."""
        sql = "SELECT 1 FROM notes WHERE embedded IS NULL AND status != 'unreadable' LIMIT 1"  # the partial index
        return self.conn.execute(sql).fetchone() is not None

    def pending_count(self) -> int:
        row = self.conn.execute(
            "SELECT count(*) FROM notes WHERE status != ? AND (embedded IS NULL OR embedded != ?)",
            (UNREADABLE, self._model_name() or ""),
        ).fetchone()
        return int(row[0])

    def store_vectors(self, note_id: int, vectors: Sequence[tuple[int, bytes]], model: str) -> None:
        """Store one note's chunk vectors (call inside a transaction) and mark the note embedded by `model`."""
        if model != self._model_name():
            raise ValueError(f"vectors from {model!r} do not belong in an index of {self._model_name()!r}")
        grp, vis = self.conn.execute("SELECT grp, visibility FROM notes WHERE id = ?", (note_id,)).fetchone()
        for chunk_id, blob in vectors:
            self.conn.execute(f"DELETE FROM {VEC_TABLE} WHERE rowid = ?", (chunk_id,))
            self._insert_vector(chunk_id, blob, grp, vis)
            self.conn.execute("UPDATE chunks SET vhash = ehash WHERE id = ?", (chunk_id,))
        self._vectors_written()
        self.conn.execute("UPDATE notes SET embedded = ? WHERE id = ?", (model, note_id))

    def clear(self) -> None:
        """Forget every note and vector (`reindex --full`); the next sync rebuilds from the files."""
        with db.transaction(self.conn):
            for table in ("links", "chunks_fts", "chunks", "notes", "meta"):
                self.conn.execute(f"DELETE FROM {table}")
            if self.vector:  # without vec0 loaded the table cannot be dropped; use_model() replaces it later
                self.conn.execute(f"DROP TABLE IF EXISTS {VEC_TABLE}")
            self._vectors_written()

    # ---- reporting ------------------------------------------------------------------------

    def stats(self) -> dict[str, object]:
        one = self.conn.execute
        model = self.vector_model()
        vectors = one(f"SELECT count(*) FROM {VEC_TABLE}").fetchone()[0] if model and self.vector else 0
        size = sum(Path(f"{self.path}{s}").stat().st_size for s in ("", "-wal") if Path(f"{self.path}{s}").exists())
        return {
            "path": str(self.path),
            "notes": one("SELECT count(*) FROM notes").fetchone()[0],
            "chunks": one("SELECT count(*) FROM chunks").fetchone()[0],
            "vectors": vectors,
            "pending": self.pending_count(),
            "model": model[0] if model else None,
            "dim": model[1] if model else None,
            "last_sync": self.get_meta("last_sync"),
            "bytes": size,
        }

    # ---- internals ------------------------------------------------------------------------

    def _model_name(self) -> str | None:
        return self.get_meta("vec_model")

    def _has_vectors(self) -> bool:
        return self.vector and self.vector_model() is not None

    def _vectors_written(self) -> None:
        """Mark the vectors changed (`vectors_version`): a new random token, never one seen before."""
        self.set_meta(VECTORS_VERSION, vectors_token())

    def _insert_vector(self, chunk_id: int, blob: bytes, grp: str | None, vis: int) -> None:
        self.conn.execute(
            f"INSERT INTO {VEC_TABLE} (rowid, embedding, grp, visibility) VALUES (?, ?, ?, ?)",
            (chunk_id, blob, grp or "", vis),
        )

    def _old_vectors(self, note_id: int) -> tuple[dict[str, bytes], dict[str, tuple[bytes, str]]]:
        """A note's current vectors by the hash of the text they were made from, and every stored vector by
        its chunk's own text (with that hash)."""
        if not self._has_vectors():
            return {}, {}
        rows = self.conn.execute(
            f"SELECT c.vhash, c.text, v.embedding FROM chunks c JOIN {VEC_TABLE} v ON v.rowid = c.id "
            "WHERE c.note_id = ? AND c.vhash IS NOT NULL",
            (note_id,),
        ).fetchall()
        current = {vhash: bytes(blob) for vhash, _, blob in rows}
        return current, {text: (bytes(blob), vhash) for vhash, text, blob in rows}

    def _drop_chunks(self, note_id: int) -> None:
        ids = [r[0] for r in self.conn.execute("SELECT id FROM chunks WHERE note_id = ?", (note_id,))]
        for chunk_id in ids:
            self.conn.execute("DELETE FROM chunks_fts WHERE rowid = ?", (chunk_id,))
            if self._has_vectors():
                self.conn.execute(f"DELETE FROM {VEC_TABLE} WHERE rowid = ?", (chunk_id,))
        self.conn.execute("DELETE FROM chunks WHERE note_id = ?", (note_id,))
