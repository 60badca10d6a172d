"""The warm service's kept read connections (`index.readers`): reused, never stale, never kept past their time."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from memvault.index import core as ix
from memvault.index import db, readers


def made(path: Path, value: str) -> Path:
    """A real index file at `path` whose meta row `mark` is `value`."""
    index = ix.open_index(path)
    try:
        with db.transaction(index.conn):
            index.set_meta("mark", value)
    finally:
        index.close()
    return path


def test_a_kept_connection_is_used_again_and_sees_every_write_since(tmp_path: Path) -> None:
    path = made(tmp_path / "index.sqlite3", "one")
    pool = readers.Readers(keep_per_file=2)
    with pool.reader(path) as index:
        first = index
        assert index.get_meta("mark") == "one"
    made(path, "two")  # another process writes between two prompts
    with pool.reader(path) as index:
        assert index is first  # not opened again
        assert index.get_meta("mark") == "two"
    pool.close()


def test_two_queries_at_once_get_two_connections(tmp_path: Path) -> None:
    path = made(tmp_path / "index.sqlite3", "one")
    pool = readers.Readers(keep_per_file=2)
    with pool.reader(path) as a, pool.reader(path) as b:
        assert a is not b
        assert a.get_meta("mark") == b.get_meta("mark") == "one"
    with pool.reader(path) as c:
        assert c in (a, b)
    pool.close()


def test_a_connection_to_a_replaced_file_is_not_used(tmp_path: Path) -> None:
    path = made(tmp_path / "index.sqlite3", "old")
    pool = readers.Readers(keep_per_file=2)
    with pool.reader(path) as index:
        old = index
    new = made(tmp_path / "other.sqlite3", "new")
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    os.replace(new, path)  # what setting a damaged index aside and building a new one does to the path
    with pool.reader(path) as index:
        assert index is not old
        assert index.get_meta("mark") == "new"
    with pytest.raises(db.dbapi().ProgrammingError):  # the old one was closed
        old.conn.execute("SELECT 1")
    pool.close()


def test_idle_connections_are_closed_after_their_time_and_a_failed_one_at_once(tmp_path: Path) -> None:
    path = made(tmp_path / "index.sqlite3", "one")
    pool = readers.Readers(keep_per_file=2, max_idle=0.0)
    with pool.reader(path) as index:
        kept = index
    pool.expire()
    with pytest.raises(db.dbapi().ProgrammingError):
        kept.conn.execute("SELECT 1")

    pool = readers.Readers(keep_per_file=2)
    with pytest.raises(db.dbapi().OperationalError), pool.reader(path) as index:
        failed = index
        index.conn.execute("SELECT * FROM no_such_table")
    with pool.reader(path) as index:
        assert index is not failed
    with pytest.raises(db.dbapi().ProgrammingError):
        failed.conn.execute("SELECT 1")
    pool.close()


def test_a_missing_index_is_reported_as_open_reader_reports_it(tmp_path: Path) -> None:
    pool = readers.Readers(keep_per_file=2)
    with pytest.raises(ix.CorruptIndex, match="no index"), pool.reader(tmp_path / "none.sqlite3"):
        pass


def test_readers_from_many_threads_each_see_the_file(tmp_path: Path) -> None:
    path = made(tmp_path / "index.sqlite3", "one")
    pool = readers.Readers(keep_per_file=2)
    seen: list[str | None] = []

    def ask() -> None:
        for _ in range(20):
            with pool.reader(path) as index:
                seen.append(index.get_meta("mark"))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == ["one"] * 80
    assert sum(len(kept) for kept in pool._idle.values()) <= 2
    pool.close()
