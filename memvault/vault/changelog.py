"""The change-log line of a change: the `MemoryVault/_meta/changelog-YYYY-MM.md` file operation journalled with it.

The page's format is `store.changelog`; this module reads the page as it is now and returns the file
operation that appends the change's lines, so an entry and its line land (or are replayed) together,
and words the line `memvault undo` adds (the log is append-only: an undo never takes a line back).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path

from memvault.errors import MemvaultError
from memvault.store import changelog, disk, journal, notes
from memvault.store.changelog import Record

__all__ = ["Record", "is_page", "log_op", "undone"]

is_page = changelog.is_page


def log_op(
    root: Path, folder: str, records: Sequence[Record], target: str, when: dt.datetime | None = None
) -> journal.FileOp | None:
    """The operation appending one line per record to this month's page (None when there is nothing to log).

    `target` is the change's own entry, for records that name no path. A full page, or one memvault
    cannot read as text, is left alone: the lines go to the month's next page (`…-2.md`).
    """
    if not records:
        return None
    when = when or notes.now()
    lines = [changelog.line(r, when, r.path if r.path is not None else target) for r in records]
    n = 1
    while True:
        rel = f"{changelog.folder_rel(folder)}/{changelog.page_name(when, n)}"
        path = root / rel
        try:
            current = disk.read_text(path, changelog.PAGE_MAX_BYTES) if path.exists() else None
        except MemvaultError:  # too large, binary or not UTF-8
            n += 1
            continue
        return journal.FileOp(rel, changelog.appended(current, lines, when), journal.digest(path))


def undone(target: str, subject: str, sha: str, when: dt.datetime, files: int) -> Record:
    """The line `memvault undo` adds: which change it took back (what, when, which commit)."""
    what = subject.removeprefix("memvault: ")
    more = f"; {files} files restored" if files > 1 else ""
    return Record(changelog.UNDID, target or None, f"the change of {when:%Y-%m-%d %H:%M} ({what}, commit {sha[:8]}), "
                  f"by you{more}")  # fmt: skip
