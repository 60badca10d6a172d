"""The warm service's in-memory copy of an index's vectors: the exact nearest chunks with numpy in milliseconds.

sqlite-vec scans every vector on each query (about 27 ms for 20k notes); a float32 matrix product does
the same in 2–3 ms. A copy is keyed by the index file's and its WAL's size and mtime. When either changes,
the index's `vectors_version` says whether its vectors did: most writes are not to them (a background job
counting recalls or marking a reindex done, after every turn of a session), and the copy stays. When they
did (a note was saved or embedded), the copy is reloaded on a background thread, and until it is fresh
`source_for` returns None so recall uses sqlite-vec. A prompt never waits for a reload.
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

from memvault.index.core import Index, open_reader
from memvault.index.readers import Readers
from memvault.index.schema import VEC_TABLE

MAX_INDEXES = 2  # vaults whose vectors are kept (least recently used dropped); 20k notes take about 30 MB

Stamp = tuple[tuple[int, int] | None, ...]


def stamp(path: Path) -> Stamp:
    """What changes when anyone writes the index: the size and mtime of the database and its WAL."""
    out: list[tuple[int, int] | None] = []
    for name in (path, path.with_name(path.name + "-wal")):
        try:
            st = name.stat()
            out.append((st.st_mtime_ns, st.st_size))
        except OSError:
            out.append(None)
    return tuple(out)


class Vectors:
    """One index's vectors as a matrix, with each row's chunk id, note id, group and visibility (`search.VectorSource`).

    A chunk's note never changes while its vector stays (a chunk rewritten is a new vector), so the copy answers
    which note each chunk is of for as long as the index's `vectors_version` holds.
    """

    kind = "memory"

    def __init__(self, key: Stamp, version: str | None, rows: list[tuple[int, bytes, str | None, int, int]]) -> None:
        import numpy as np

        self.key, self.version = key, version  # version: the index's `vectors_version` when these were read
        self.ids = np.array([r[0] for r in rows], dtype=np.int64)
        self.groups = np.array([r[2] for r in rows], dtype=object)
        self.visibility = np.array([r[3] for r in rows], dtype=np.int64)
        self.note_of = {r[0]: r[4] for r in rows}
        self.row_of = {r[0]: i for i, r in enumerate(rows)}
        dim = len(rows[0][1]) // 4 if rows else 0
        self.matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), dim)
        self._masks: dict[tuple[int, str | None], Any] = {}

    def nearest(self, index: Index, blob: bytes, limit: int, cap: int, group: str | None) -> dict[int, float]:
        """Same contract as `recall.sqlite_nearest`: chunk id → cosine distance, nearest first."""
        import numpy as np

        query = np.frombuffer(blob, dtype=np.float32)
        if not len(self.ids) or query.shape[0] != self.matrix.shape[1]:
            return {}
        sims = self.matrix @ query  # the vectors are L2-normalised: the dot product is the cosine
        allowed, count = self._mask(cap, group)
        if count < len(sims):
            sims[~allowed] = -np.inf
        count = min(limit, count)
        if count <= 0:
            return {}
        top = np.argpartition(-sims, count - 1)[:count]
        top = top[np.argsort(-sims[top], kind="stable")]
        return {int(self.ids[i]): float(1.0 - sims[i]) for i in top}

    def notes(self, index: Index, chunk_ids: list[int]) -> dict[int, int]:
        """chunk id → its note id, for the chunks that have a vector."""
        note_of = self.note_of
        return {c: note_of[c] for c in chunk_ids if c in note_of}

    def cosines(self, index: Index, blob: bytes, chunk_ids: list[int]) -> dict[int, float]:
        """chunk id → cosine similarity of its vector to `blob` (`relevance.cosines` over the copy)."""
        import numpy as np

        known = [c for c in dict.fromkeys(chunk_ids) if c in self.row_of]
        query = np.frombuffer(blob, dtype=np.float32)
        if not known or query.shape[0] != self.matrix.shape[1]:
            return {}
        sims = self.matrix[[self.row_of[c] for c in known]] @ query
        return {c: float(v) for c, v in zip(known, sims, strict=True)}

    def _mask(self, cap: int, group: str | None) -> tuple[Any, int]:
        """The rows a recall with this visibility cap and group may return, and how many; kept per (cap, group)."""
        key = (cap, group)
        if key not in self._masks:
            allowed = self.visibility <= cap
            if group:
                allowed &= self.groups == group
            self._masks[key] = (allowed, int(allowed.sum()))
        return self._masks[key]


class VectorCache:
    """In-memory vectors per index file, reloaded in the background when the file changes."""

    def __init__(self, max_indexes: int = MAX_INDEXES) -> None:
        self.max_indexes = max_indexes
        self._lock = threading.Lock()
        self._copies: OrderedDict[str, Vectors] = OrderedDict()
        self._loading: set[str] = set()

    def source_for(self, path: Path, readers: Readers | None = None) -> Vectors | None:
        """The in-memory copy of `path`'s vectors when it is fresh; else None, and a reload is started. `readers`:
        the service's kept connections, to read the index's `vectors_version` through when the file changed."""
        key, name = stamp(path), str(path)
        with self._lock:
            copy = self._copies.get(name)
            if copy is not None and copy.key == key:
                self._copies.move_to_end(name)
                return copy
            if name in self._loading:
                return None
        # The file changed: read after the stamp, an unchanged version means these vectors are still the index's.
        if copy is not None and copy.version is not None and copy.version == _version(path, readers):
            with self._lock:
                copy.key = key
            return copy
        with self._lock:
            if name in self._loading:
                return None
            self._loading.add(name)
        threading.Thread(target=self._reload, args=(path,), daemon=True).start()
        return None

    def loaded(self) -> list[str]:
        """The index files whose vectors are in memory (fresh or not)."""
        with self._lock:
            return list(self._copies)

    def wait_idle(self, timeout: float) -> bool:
        """Until no reload is running (tests and benchmarks); whether that happened in time."""
        import time

        deadline = time.monotonic() + timeout
        while self._loading and time.monotonic() < deadline:
            time.sleep(0.01)
        return not self._loading

    def _reload(self, path: Path) -> None:
        try:
            read = _read(path)
            copy = Vectors(*read) if read is not None else None
            with self._lock:
                if copy is None:
                    self._copies.pop(str(path), None)
                else:
                    self._copies[str(path)] = copy
                    self._copies.move_to_end(str(path))
                    while len(self._copies) > self.max_indexes:
                        self._copies.popitem(last=False)
        finally:
            with self._lock:
                self._loading.discard(str(path))


def _version(path: Path, readers: Readers | None = None) -> str | None:
    """The index's `vectors_version` (None when it keeps none, or cannot be read: then the copy is reloaded)."""
    with contextlib.suppress(Exception):
        if readers is not None:  # a kept connection: no open and close on the prompt's path
            with readers.reader(path) as kept:
                return kept.vectors_version()
        index = open_reader(path)
        try:
            return index.vectors_version()
        finally:
            index.close()
    return None


def _read(path: Path) -> tuple[Stamp, str | None, list[Any]] | None:
    """The index's stamp, its vectors' version and every (chunk id, vector, group, visibility, note id) in it; None
    when it has no vectors.

    The stamp is taken after opening (which may create an empty WAL) and before reading, and the version
    before the vectors, so a write that lands in between only causes one more reload, never a stale copy
    taken for a fresh one.
    """
    with contextlib.suppress(Exception):  # a missing, damaged or keyword-only index: stay with sqlite-vec
        index = open_reader(path)
        try:
            if not index.vector or index.vector_model() is None:
                return None
            key, version = stamp(path), index.vectors_version()
            sql = (
                f"SELECT v.rowid, v.embedding, v.grp, v.visibility, c.note_id FROM {VEC_TABLE} v "  # noqa: S608 (a module constant)
                "JOIN chunks c ON c.id = v.rowid"
            )
            rows = index.conn.execute(sql)
            return key, version, [(int(r[0]), bytes(r[1]), r[2], int(r[3]), int(r[4])) for r in rows]
        finally:
            index.close()
    return None
