"""Read connections to index files kept open between queries, for the warm service's recalls.

Opening an index for reading (the connection, sqlite-vec loaded, the migrations checked) costs about a
millisecond and closing it half of one, on every prompt. The service keeps its connections instead: each
query takes one that is idle (one query at a time uses a connection; a second query at once opens another),
and gives it back. A connection kept idle holds no read transaction (autocommit), so every query sees the
index as it is then. One opened on a file since replaced (another inode) is closed, not used; so is one idle
for longer than `max_idle` seconds (`expire`, and at every take), so that an idle service does not hold
the files open. On Windows none is kept: a file held open there cannot be renamed or deleted, and setting a
damaged index aside renames it.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from . import db
from .core import Index, open_reader

# idle connections kept per index file (the service answers a few requests at once); none on Windows (above)
KEEP_PER_FILE = 0 if os.name == "nt" else 2
MAX_IDLE_SECONDS = 60.0
# SQLite's page cache per kept connection (its default is 2 MB): the keyword side's FTS5 pages stay in it between
# prompts (0.3–0.5 ms of a 6 ms keyword side at 20,000 notes); the memory is taken only as pages are read
CACHE_KIB = 16384

Identity = tuple[int, int]  # (st_dev, st_ino) of the file a connection was opened on


class Readers:
    """Idle read connections per index file, handed out one query at a time (thread-safe)."""

    def __init__(self, keep_per_file: int = KEEP_PER_FILE, max_idle: float = MAX_IDLE_SECONDS) -> None:
        self.keep_per_file, self.max_idle = keep_per_file, max_idle
        self._lock = threading.Lock()
        self._idle: dict[str, list[tuple[Identity, float, Index]]] = {}

    @contextlib.contextmanager
    def reader(self, path: Path) -> Iterator[Index]:
        """An open reader of `path` for one query: `open_reader`'s errors and fallbacks, without its cost."""
        name = str(path)
        try:
            st = os.stat(path)
            identity: Identity | None = (st.st_dev, st.st_ino)
        except OSError:  # missing: `open_reader` says so in its own words
            identity = None
        index = self._take(name, identity) if identity is not None else None
        opened = index is None
        if index is None:
            index = open_reader(path, shared=True)  # the service answers each request on its own thread
        broken = False
        try:
            if opened:
                index.conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
            yield index
        except db.dbapi().Error:
            broken = True  # a connection that failed a query is not trusted again
            raise
        finally:
            if broken or identity is None:
                index.close()
            else:
                self._give(name, identity, index)

    def expire(self) -> None:
        """Close the connections idle for longer than `max_idle`."""
        self._close(self._expired(time.monotonic()))

    def close(self) -> None:
        """Close every idle connection."""
        with self._lock:
            stale = [index for kept in self._idle.values() for _, _, index in kept]
            self._idle.clear()
        self._close(stale)

    def _take(self, name: str, identity: Identity) -> Index | None:
        now = time.monotonic()
        stale = self._expired(now)
        found = None
        with self._lock:
            kept = self._idle.get(name, [])
            while kept and found is None:
                ident, _, index = kept.pop()
                if ident == identity:
                    found = index
                else:  # the file was replaced since: that connection reads the old one
                    stale.append(index)
        self._close(stale)
        return found

    def _give(self, name: str, identity: Identity, index: Index) -> None:
        with self._lock:
            kept = self._idle.setdefault(name, [])
            if len(kept) < self.keep_per_file:
                kept.append((identity, time.monotonic(), index))
                return
        index.close()

    def _expired(self, now: float) -> list[Index]:
        with self._lock:
            out: list[Index] = []
            for name, kept in list(self._idle.items()):
                fresh = [entry for entry in kept if now - entry[1] <= self.max_idle]
                out.extend(entry[2] for entry in kept if now - entry[1] > self.max_idle)
                if fresh:
                    self._idle[name] = fresh
                else:
                    del self._idle[name]
            return out

    @staticmethod
    def _close(indexes: list[Index]) -> None:
        for index in indexes:
            with contextlib.suppress(Exception):
                index.close()
