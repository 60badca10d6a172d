"""Entries of listed notes, cheaply: from the index's rows when a note is unchanged since indexed, else read.

Listing a large vault by parsing every note's YAML takes seconds; the index already holds what an
`Entry` needs, so only notes added or changed since the last reindex are read from disk.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from memvault.store import disk
from memvault.store.model import Entry

from . import db
from .core import CorruptIndex, open_reader
from .schema import MIGRATIONS, NoteRow


def freshness(root: Path, rows: dict[str, NoteRow], notes: Sequence[str]) -> tuple[list[str], dict[str, Entry]]:
    """Notes added, changed (mtime or size) or deleted since they were indexed; entries of the unchanged ones."""
    present = set(notes)
    stale = [rel for rel in rows if rel not in present]
    fresh: dict[str, Entry] = {}
    for rel in notes:
        if disk.is_conflict_copy(rel):  # sync never indexes these
            continue
        row = rows.get(rel)
        try:
            st = os.stat(root / rel)
        except OSError:
            continue
        if row is None or (row.mtime_ns, row.size) != (st.st_mtime_ns, st.st_size):
            stale.append(rel)
        else:
            fresh[rel] = entry_of(row)
    return sorted(stale), fresh


def fresh_entries(root: Path, index_path: Path, notes: Sequence[str]) -> dict[str, Entry]:
    """The entries of `notes` the index can answer for (none when there is no usable, current index)."""
    try:
        index = open_reader(index_path)
    except CorruptIndex:
        return {}
    try:
        if MIGRATIONS[-1][0] not in db.applied(index.conn):
            return {}  # an index from an older release: the next reindex migrates it
        return freshness(root, index.rows(in_memory=False), notes)[1]
    except db.dbapi().DatabaseError:
        return {}
    finally:
        index.close()


def entry_of(row: NoteRow) -> Entry:
    """The entry of an indexed note, as `Vault.entry` would read it from the file."""
    return Entry(
        row.path, row.title, row.kind, row.status, row.group, row.tags, row.always_load, row.private,
        row.updated, row.in_memory, row.error, row.created,
    )  # fmt: skip
