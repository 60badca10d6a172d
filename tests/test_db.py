"""db.py: binding fallback, vec0 loaded by path, WAL pragmas, migrations, and a numpy-free import path."""

from __future__ import annotations

import importlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from memvault.errors import MemvaultError
from memvault.index import db

REPO = Path(__file__).resolve().parent.parent


def pragma(conn: db.Connection, name: str) -> object:
    return conn.execute(f"PRAGMA {name}").fetchone()[0]


def test_connect_creates_a_wal_database_with_the_pragmas(tmp_path: Path) -> None:
    path = tmp_path / "state" / "index.db"  # the parent folder does not exist yet
    conn = db.connect(path, vector=False)
    try:
        assert path.is_file()
        assert pragma(conn, "journal_mode") == "wal"
        assert pragma(conn, "busy_timeout") == 5000
        assert pragma(conn, "foreign_keys") == 1
        assert pragma(conn, "synchronous") == 1  # NORMAL
        assert isinstance(conn, db.dbapi().Connection)
        conn.execute("CREATE TABLE t (x)")
        conn.execute("INSERT INTO t VALUES (1)")  # autocommit: visible to a second connection at once
    finally:
        conn.close()
    other = db.connect(path, vector=False)
    assert other.execute("SELECT x FROM t").fetchall() == [(1,)]
    other.close()


def test_binding_fallback_is_chosen_on_this_machine() -> None:
    name = db.binding_name()
    assert name in {"stdlib", "pysqlite3", "sqlean"}
    if not hasattr(sqlite3.Connection, "enable_load_extension"):
        assert name != "stdlib"
    assert hasattr(db.dbapi().Connection, "enable_load_extension")  # sqlite-vec is a dependency, so this must hold


def test_vec0_loads_and_knn_with_k_returns_the_nearest_first(tmp_path: Path) -> None:
    conn = db.connect(tmp_path / "vec.db")
    try:
        assert str(db.vec_version(conn)).startswith("v0.")
        conn.execute("CREATE VIRTUAL TABLE vec_notes USING vec0(embedding float[4] distance_metric=cosine)")
        rows = {1: [1.0, 0.0, 0.0, 0.0], 2: [0.0, 1.0, 0.0, 0.0], 3: [0.7, 0.7, 0.1, 0.0], 4: [0.0, 0.0, 0.0, 1.0]}
        with db.transaction(conn):
            for rowid, vec in rows.items():
                conn.execute("INSERT INTO vec_notes (rowid, embedding) VALUES (?, ?)", (rowid, db.serialize_f32(vec)))
        hits = conn.execute(db.knn_sql("vec_notes"), (db.serialize_f32([0.1, 0.9, 0.0, 0.0]), 2)).fetchall()
        assert [rowid for rowid, _ in hits] == [2, 3]
        assert hits[0][1] < hits[1][1] and hits[0][1] == pytest.approx(1 - 0.9 / (0.82**0.5), abs=1e-5)
        # the blob helper produces what vec0 reads as float32
        as_json = conn.execute("SELECT vec_to_json(?)", (db.serialize_f32([1.0, -0.5]),)).fetchone()[0]
        assert json.loads(as_json) == [1.0, -0.5]
    finally:
        conn.close()


def test_knn_sql_only_takes_identifiers() -> None:
    assert db.knn_sql("vec_notes") == "SELECT rowid, distance FROM vec_notes WHERE embedding MATCH ? AND k = ?"
    for bad in ("vec; DROP TABLE notes", "a b", "", "1vec", "vëc", 'x"'):
        with pytest.raises(ValueError):
            db.knn_sql(bad)


def test_vector_false_has_fts5_and_no_vec0(tmp_path: Path) -> None:
    conn = db.connect(tmp_path / "kw.db", vector=False)
    try:
        assert db.has_fts5(conn)
        assert db.vec_version(conn) is None
        conn.execute("CREATE VIRTUAL TABLE fts USING fts5(title, body, tokenize='porter unicode61')")
        conn.execute("INSERT INTO fts VALUES ('Parser', 'we handled generator exceptions')")
        conn.execute("INSERT INTO fts VALUES ('Deploy', 'the release checklist')")
        assert conn.execute("SELECT title FROM fts WHERE fts MATCH 'exception' ORDER BY bm25(fts)").fetchall() == [
            ("Parser",)
        ]
    finally:
        conn.close()


def test_readonly_reads_with_vec0_but_cannot_write(tmp_path: Path) -> None:
    path = tmp_path / "dir with space#1" / "ro.db"
    conn = db.connect(path)
    conn.execute("CREATE TABLE t (x)")
    conn.execute("INSERT INTO t VALUES (42)")
    conn.close()
    ro = db.connect(path, readonly=True)
    try:
        assert ro.execute("SELECT x FROM t").fetchall() == [(42,)]
        assert db.vec_version(ro) is not None
        with pytest.raises(db.dbapi().OperationalError, match="readonly"):
            ro.execute("INSERT INTO t VALUES (1)")
    finally:
        ro.close()


def _run(
    code: str, args: tuple[str, ...] = (), *, env: dict[str, str] | None = None, importtime: bool = False
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, *(["-X", "importtime"] if importtime else []), "-c", code, *args]
    return subprocess.run(
        command, cwd=REPO, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=60, check=True
    )


PROBE = """
import json, sys
from memvault.index import db
from memvault.errors import MemvaultError
out = {"binding": db.binding_name()}
kw = db.connect(sys.argv[1], vector=False)
out["fts5"] = db.has_fts5(kw)
kw.close()
try:
    conn = db.connect(sys.argv[1])
    out["vec"] = db.vec_version(conn)
    conn.close()
except db.VectorUnavailable as exc:
    out["error"] = [exc.code, str(exc), isinstance(exc, MemvaultError)]
print(json.dumps(out))
"""


@pytest.mark.parametrize("binding", ["stdlib", "pysqlite3", "sqlean"])
def test_each_binding_when_forced(binding: str, tmp_path: Path) -> None:
    """MEMVAULT_SQLITE_BINDING pins the binding; stdlib here cannot load vec0 and must degrade cleanly."""
    module = {"stdlib": "sqlite3", "pysqlite3": "pysqlite3.dbapi2", "sqlean": "sqlean"}[binding]
    if binding == "pysqlite3":
        pytest.importorskip(module)  # optional: not a declared dependency (sqlean.py is)
    args = (str(tmp_path / f"{binding}.db"),)
    out = json.loads(_run(PROBE, args, env={"MEMVAULT_SQLITE_BINDING": binding}).stdout)
    assert out["binding"] == binding
    assert out["fts5"] is True  # keyword-only works on every binding, plain stdlib included
    can_load = hasattr(importlib.import_module(module).Connection, "enable_load_extension")
    if can_load:
        assert out["vec"].startswith("v")
    else:
        code_, message, is_memvault_error = out["error"]
        assert code_ == "vector_unavailable" and is_memvault_error
        assert "pip install sqlean.py" in message and "pysqlite3-binary" in message


def test_unknown_forced_binding_is_a_config_error() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", "from memvault.index import db; db.binding_name()"],
        env={**os.environ, "MEMVAULT_SQLITE_BINDING": "apsw"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0 and "ConfigError" in proc.stderr and "MEMVAULT_SQLITE_BINDING" in proc.stderr


def test_vector_connect_imports_neither_numpy_nor_the_sqlite_vec_package(tmp_path: Path) -> None:
    code = (
        "import sys, memvault.index.db as d\n"
        f"c = d.connect({str(tmp_path / 'hook.db')!r})\n"
        "print(d.vec_version(c), 'numpy' in sys.modules, 'sqlite_vec' in sys.modules)\n"
    )
    proc = _run(code, importtime=True)
    assert proc.stdout.split()[1:] == ["False", "False"] and proc.stdout.startswith("v")
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "memvault.index.db" in imported  # the importtime output is really there
    assert not {name for name in imported if name.split(".")[0] in {"numpy", "sqlite_vec"}}
    assert "numpy" not in proc.stderr


# --- migrations ---------------------------------------------------------------------------------


def _create(table: str):
    def step(conn: db.Connection) -> None:
        conn.execute(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY)")

    return step


def tables(conn: db.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_migrations_apply_once_in_order_and_are_idempotent(tmp_path: Path) -> None:
    conn = db.connect(tmp_path / "m.db", vector=False)
    order: list[str] = []

    def first(c: db.Connection) -> None:
        order.append("first")
        _create("notes")(c)

    def second(c: db.Connection) -> None:
        order.append("second")
        c.execute("ALTER TABLE notes ADD COLUMN title TEXT")

    assert db.applied(conn) == []
    assert "_memvault_migrations" not in tables(conn)  # applied() only reads
    steps = [("001_notes", first), ("002_title", second)]
    assert db.migrate(conn, steps) == ["001_notes", "002_title"]
    assert order == ["first", "second"]
    assert db.migrate(conn, steps) == [] and order == ["first", "second"]
    assert db.applied(conn) == ["001_notes", "002_title"]
    stamps = [row[0] for row in conn.execute("SELECT applied_at FROM _memvault_migrations")]
    assert all(s.endswith("Z") and "T" in s for s in stamps)
    conn.close()
    # a new connection (a later run) sees the record and applies only what is new
    again = db.connect(tmp_path / "m.db", vector=False)
    assert db.migrate(again, [*steps, ("003_tags", _create("tags"))]) == ["003_tags"]
    assert db.applied(again) == ["001_notes", "002_title", "003_tags"]
    again.close()


def test_a_failing_migration_rolls_back_its_own_changes_only(tmp_path: Path) -> None:
    conn = db.connect(tmp_path / "m.db", vector=False)

    def broken(c: db.Connection) -> None:
        _create("half_done")(c)
        c.execute("INSERT INTO half_done VALUES (1)")
        raise RuntimeError("boom")

    steps = [("001_notes", _create("notes")), ("002_broken", broken), ("003_never", _create("never"))]
    with pytest.raises(RuntimeError, match="boom"):
        db.migrate(conn, steps)
    assert db.applied(conn) == ["001_notes"]
    assert "notes" in tables(conn) and "half_done" not in tables(conn) and "never" not in tables(conn)
    assert not conn.in_transaction
    fixed = [steps[0], ("002_broken", _create("half_done")), steps[2]]
    assert db.migrate(conn, fixed) == ["002_broken", "003_never"]
    conn.close()


def test_a_migration_that_commits_by_itself_is_refused(tmp_path: Path) -> None:
    conn = db.connect(tmp_path / "m.db", vector=False)
    with pytest.raises(RuntimeError, match="executescript"):
        db.migrate(conn, [("001", lambda c: c.executescript("CREATE TABLE t (x);"))])
    assert db.applied(conn) == []
    with pytest.raises(ValueError, match="duplicate"):
        db.migrate(conn, [("a", _create("a")), ("a", _create("b"))])
    conn.close()


def test_vector_unavailable_is_a_memvault_error() -> None:
    err = db.VectorUnavailable("x")
    assert isinstance(err, MemvaultError) and err.code == "vector_unavailable" and str(err) == "x [vector_unavailable]"
