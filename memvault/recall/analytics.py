"""Recall analytics: fold the hooks' injection log into the index's `recalls` table; find never-recalled entries.

The hooks never write the index on the prompt path: each SessionStart and UserPromptSubmit already logs
what it injected (with the vault), and background jobs and `memvault health` fold those lines into
`recalls(path, count, last_recalled)`. A per-file byte cursor, committed in the same transaction as the
counts, makes every log line count exactly once. A file is known by its first line, not its name: the log
rolls by renaming the full file and starting a new one under the old name.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from memvault import runtime
from memvault.index import db
from memvault.index.core import Index

INJECTING_HOOKS = ("SessionStart", "UserPromptSubmit")


@dataclass(frozen=True)
class Recalled:
    path: str
    count: int
    last_recalled: str


def fold(index: Index, vault_root: Path, log_dir: Path | None = None) -> int:
    """Count the injections logged since the last fold for this vault; returns how many were added."""
    folder = log_dir or runtime.log_dir()
    files = sorted(folder.glob("hooks-*.jsonl")) if folder.is_dir() else []
    conn, root, now = index.conn, str(Path(vault_root).resolve()), runtime.now_iso()
    counts: dict[str, tuple[int, str]] = {}
    with db.transaction(conn):  # IMMEDIATE: a concurrent fold waits, then starts from this one's cursors
        cursors = {row[0]: int(row[1]) for row in conn.execute("SELECT file, offset FROM recall_cursor")}
        keys = []
        for path in files:
            key = _identity(path)
            if key is None:
                continue  # empty, or its first line is still being written
            keys.append(key)
            end = _read(path, cursors.get(key, 0), root, counts)
            if end is not None:
                conn.execute(
                    "INSERT INTO recall_cursor (file, offset, since) VALUES (?, ?, ?)"
                    " ON CONFLICT(file) DO UPDATE SET offset = excluded.offset",
                    (key, end, now),
                )
        for rel, (n, last) in counts.items():
            conn.execute(
                "INSERT INTO recalls (path, count, last_recalled) VALUES (?, ?, ?) ON CONFLICT(path) DO UPDATE"
                " SET count = count + excluded.count, last_recalled = max(last_recalled, excluded.last_recalled)",
                (rel, n, last),
            )
        conn.execute(  # pruned log files: forget their cursors, but keep the oldest row (its `since`)
            f"DELETE FROM recall_cursor WHERE file NOT IN ({','.join('?' * len(keys))})"  # noqa: S608
            " AND file != (SELECT file FROM recall_cursor ORDER BY since LIMIT 1)",
            keys,
        )
    return sum(n for n, _ in counts.values())


def tracked_since(index: Index) -> str | None:
    """When this index started counting recalls (the first fold that read a log line), or None."""
    row = index.conn.execute("SELECT min(since) FROM recall_cursor").fetchone()
    return row[0] if row and row[0] else None


def recalled(index: Index) -> dict[str, Recalled]:
    rows = index.conn.execute("SELECT path, count, last_recalled FROM recalls")
    return {r[0]: Recalled(r[0], int(r[1]), str(r[2])) for r in rows}


def never_recalled(
    entries: Iterable[tuple[str, dt.datetime | None]], counted: dict[str, Recalled], *, older_than: dt.datetime
) -> list[str]:
    """Paths of entries created before `older_than` that were never injected, oldest first (pure)."""
    old = [(created, rel) for rel, created in entries if created is not None and created < older_than]
    return [rel for created, rel in sorted(old) if rel not in counted]


def _identity(path: Path) -> str | None:
    """A log file's identity: a digest of its first line, which a rename keeps and a new file does not share."""
    try:
        with open(path, "rb") as handle:
            first = handle.readline(64 * 1024)
    except OSError:
        return None
    if not first.endswith(b"\n"):
        return None
    return "sha256:" + hashlib.sha256(first).hexdigest()[:32]


def _read(path: Path, start: int, root: str, counts: dict[str, tuple[int, str]]) -> int | None:
    """Count the complete lines after `start`; the new cursor, or None when nothing new (a half line waits)."""
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size < start:  # rewritten (logs are append-only, so unexpected): read it again from the top
                start = 0
            handle.seek(start)
            data = handle.read(size - start)
    except OSError:
        return None
    complete = data[: data.rfind(b"\n") + 1]
    for line in complete.splitlines():
        _count(line, root, counts)
    return start + len(complete) if complete else None


def _count(line: bytes, root: str, counts: dict[str, tuple[int, str]]) -> None:
    try:
        record = json.loads(line)
    except ValueError:
        return
    if not isinstance(record, dict) or record.get("hook") not in INJECTING_HOOKS or record.get("vault") != root:
        return
    when = _utc(record.get("ts"))
    for item in record.get("injected") or ():
        rel = item.get("path") if isinstance(item, dict) else None
        if isinstance(rel, str) and rel and not os.path.isabs(rel):
            n, last = counts.get(rel, (0, ""))
            counts[rel] = (n + 1, max(last, when))


def _utc(ts: object) -> str:
    try:
        return dt.datetime.fromisoformat(str(ts)).astimezone(dt.timezone.utc).isoformat(timespec="seconds")
    except ValueError:
        return ""
