"""SQLite connections for the index: one DB-API binding per process, vec0 loaded by path, WAL, migrations."""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from memvault import paths
from memvault.errors import ConfigError, MemvaultError

TYPE_CHECKING = False  # typing.TYPE_CHECKING (mypy reads it so) without importing typing at run time
if TYPE_CHECKING:
    from sqlite3 import Connection
    from typing import Any
else:
    Connection = object  # the real class depends on the binding picked at run time; annotations only

# Tried in this order; the first that can load extensions wins. `MEMVAULT_SQLITE_BINDING` forces one.
BINDINGS = {"stdlib": "sqlite3", "pysqlite3": "pysqlite3.dbapi2", "sqlean": "sqlean"}
BUSY_TIMEOUT_MS = 5000
INSTALL_HINT = "pip install sqlean.py (Linux, macOS) or pysqlite3-binary (Linux x86_64)"


class VectorUnavailable(MemvaultError):
    """sqlite-vec cannot be loaded in this Python; callers fall back to keyword-only recall."""

    code = "vector_unavailable"


# (name, module, can_load_extensions), picked once per process. Every connection in a process uses
# the same binding: two SQLite copies touching one file in one process break POSIX locking.
_binding: tuple[str, Any, bool] | None = None


def _pick() -> tuple[str, Any, bool]:
    global _binding
    if _binding is None:
        forced = os.environ.get("MEMVAULT_SQLITE_BINDING", "").strip().lower()
        if forced and forced not in BINDINGS:
            raise ConfigError(f"MEMVAULT_SQLITE_BINDING={forced!r}: expected one of {', '.join(BINDINGS)}")
        for name in [forced] if forced else BINDINGS:
            try:
                module = importlib.import_module(BINDINGS[name])
            except ImportError:
                continue
            can_load = hasattr(module.Connection, "enable_load_extension")
            if can_load or forced:
                _binding = (name, module, can_load)
                break
        else:  # nothing can load extensions: plain sqlite3 still serves keyword-only use
            import sqlite3

            _binding = ("stdlib", sqlite3, hasattr(sqlite3.Connection, "enable_load_extension"))
    return _binding


def binding_name() -> str:
    """Which DB-API module this process uses: "stdlib", "pysqlite3" or "sqlean" (for health output)."""
    return _pick()[0]


def dbapi() -> Any:
    """The DB-API module behind `connect()`; catch `dbapi().Error` / `.OperationalError` from it."""
    return _pick()[1]


def _vec0_path() -> str:
    """The vec0 library path without suffix (SQLite adds .so/.dylib/.dll); no `import sqlite_vec` (numpy)."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise VectorUnavailable("sqlite-vec is not installed; run: pip install sqlite-vec")
    return os.path.join(next(iter(spec.submodule_search_locations)), "vec0")


def connect(path: Path | str, *, vector: bool = True, readonly: bool = False, shared: bool = False) -> Connection:
    """Open `path` in autocommit mode (use `transaction()`), with WAL, busy timeout and, if `vector`, vec0.

    `shared`: the connection may be used from another thread than this one (one thread at a time: `readers`).
    Raises VectorUnavailable when `vector` is asked for but no binding here can load sqlite-vec.
    """
    name, module, can_load = _pick()
    if vector and not can_load:
        raise VectorUnavailable(
            f"this Python's sqlite3 ({name}) cannot load extensions, so vector search is off; {INSTALL_HINT}"
        )
    target = str(path)
    if target == ":memory:":
        readonly = False
    elif readonly:
        target = Path(path).resolve().as_uri() + "?mode=ro"
    else:  # user-only from birth (its -wal and -shm files take the same mode); SQLite would use the umask
        paths.create_private_file(Path(path))
    conn: Connection = module.connect(
        target, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, uri=readonly, check_same_thread=not shared
    )
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if vector:
            _load_vec0(conn)
        if not readonly:
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
    except BaseException:
        conn.close()
        raise
    return conn


def _load_vec0(conn: Connection) -> None:
    lib = _vec0_path()
    conn.enable_load_extension(True)
    try:
        conn.load_extension(lib)
    except dbapi().Error as exc:
        raise VectorUnavailable(f"cannot load sqlite-vec from {lib}: {exc}; reinstall: pip install sqlite-vec") from exc
    finally:
        conn.enable_load_extension(False)


def is_busy(exc: BaseException) -> bool:
    """Whether a database error means another connection holds the write lock ("database is locked")."""
    text = str(exc).lower()
    return isinstance(exc, dbapi().OperationalError) and ("locked" in text or "busy" in text)


@contextmanager
def busy_timeout(conn: Connection, ms: int) -> Iterator[Connection]:
    """Wait at most `ms` for the write lock inside the block (the connection's usual wait is BUSY_TIMEOUT_MS)."""
    conn.execute(f"PRAGMA busy_timeout = {int(ms)}")
    try:
        yield conn
    finally:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")


def vec_version(conn: Connection) -> str | None:
    """sqlite-vec's version ("v0.1.9") on this connection, or None when vec0 is not loaded."""
    try:
        return str(conn.execute("SELECT vec_version()").fetchone()[0])
    except dbapi().OperationalError:
        return None


def has_fts5(conn: Connection) -> bool:
    """Whether the FTS5 module is available on this connection (keyword side of recall)."""
    try:
        return conn.execute("SELECT 1 FROM pragma_module_list WHERE name = 'fts5'").fetchone() is not None
    except dbapi().OperationalError:  # pragma_module_list needs SQLite >= 3.30 (or introspection pragmas)
        return bool(conn.execute("SELECT sqlite_compileoption_used('ENABLE_FTS5')").fetchone()[0])


def knn_sql(table: str) -> str:
    """A vec0 KNN query; parameters (query vector, k). SQLite 3.40 needs `k = ?`, not ORDER BY … LIMIT."""
    if not (table.isascii() and table.isidentifier()):
        raise ValueError(f"not a plain SQL identifier: {table!r}")
    return f"SELECT rowid, distance FROM {table} WHERE embedding MATCH ? AND k = ?"  # noqa: S608 (checked above)


def serialize_f32(vector: Sequence[float]) -> bytes:
    """A vector as the little-endian float32 blob vec0 expects (what `sqlite_vec.serialize_float32` does)."""
    from struct import pack

    return pack(f"<{len(vector)}f", *vector)


@contextmanager
def transaction(conn: Connection, *, immediate: bool = True) -> Iterator[Connection]:
    """BEGIN [IMMEDIATE] … COMMIT, or ROLLBACK when the block raises. IMMEDIATE takes the write lock up front."""
    conn.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
    try:
        yield conn
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    if not conn.in_transaction:
        raise RuntimeError("the transaction was committed inside the block (executescript commits; use execute)")
    conn.execute("COMMIT")


Migration = tuple[str, Callable[[Connection], object]]  # the return value is ignored


def applied(conn: Connection) -> list[str]:
    """Names of the migrations already applied to this database, oldest first (read-only)."""
    exists = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", ("_memvault_migrations",))
    if exists.fetchone() is None:
        return []
    return [row[0] for row in conn.execute("SELECT name FROM _memvault_migrations ORDER BY rowid")]


def migrate(conn: Connection, migrations: Sequence[Migration]) -> list[str]:
    """Apply the pending `(name, fn)` migrations in order, each in its own transaction; return the names applied.

    A failing migration is rolled back and its error re-raised; the ones before it stay applied.
    Migration functions must use `conn.execute` (not `executescript`, which commits) and must not commit.
    """
    names = [name for name, _ in migrations]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate migration names: {names}")
    conn.execute("CREATE TABLE IF NOT EXISTS _memvault_migrations (name TEXT PRIMARY KEY, applied_at TEXT)")
    already = set(applied(conn))
    done: list[str] = []
    for name, fn in migrations:
        if name in already:
            continue
        with transaction(conn):
            if conn.execute("SELECT 1 FROM _memvault_migrations WHERE name = ?", (name,)).fetchone():
                continue  # another process applied it while we waited for the write lock
            fn(conn)
            if not conn.in_transaction:  # committed midway, so it cannot be atomic: do not record it
                raise RuntimeError(f"migration {name!r} committed by itself (executescript commits; use execute)")
            conn.execute(
                "INSERT INTO _memvault_migrations (name, applied_at) VALUES (?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
                (name,),
            )
        done.append(name)
    return done
