"""A throwaway PostgreSQL 16 with pgvector for the team-memory tests: the server binaries of the pgserver wheel.

Why pgserver: Debian's PostgreSQL on these machines has no pgvector package, and building pgvector needs
the server's development headers and a compiler; the pgserver wheel (a dev dependency) bundles a
PostgreSQL 16 server with pgvector built in, so `pip install .[dev]` is the whole setup. Only its binaries
are used, never its Python module (its import starts nothing but warns): the files are found with
`importlib.util.find_spec`, copied with the wheel's layout (the binaries' rpath is relative) to a folder of
the run's own, and started by hand so the test controls the user, socket, port and restarts.

PostgreSQL refuses to run as root (CI runs the tests as root): then the server runs as the `postgres`
user through `runuser`. It listens on a Unix socket in its own folder (trust: the test's superuser and
members connect there) and on 127.0.0.1 at a free port (scram-sha-256: members log in with a password
from their own libpq service and password files, as real members do).

One server per pytest session; every test gets a database of its own, copied from a template that has the
`vector` extension and memvault's schema (CREATE DATABASE ... TEMPLATE is fast). Roles are global to the
server, so a test names its members through `TeamDb.role()`, which makes the name unique to its database.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    import psycopg  # the team extra; imported when a test connects, so the suite runs without it

SUPERUSER = "postgres"
_TEMPLATE = "memvault_template"
_db_numbers = itertools.count(1)


def _wheel_files() -> tuple[Path, Path] | None:
    """The pgserver wheel's `pginstall` folder and its `pgserver.libs` beside it, or None if not installed."""
    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        return None
    package = Path(next(iter(spec.submodule_search_locations)))
    install, libs = package / "pginstall", package.parent / "pgserver.libs"
    if not (install / "bin" / "postgres").is_file():
        return None
    return install, libs


def unavailable() -> str | None:
    """Why no test server can be started here, in one line, or None if one can."""
    if _wheel_files() is None:
        return "no PostgreSQL for the team tests: the pgserver wheel is not installed (pip install .[dev])"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "no PostgreSQL for the team tests: running as root and there is no 'postgres' user to run it as"
        if shutil.which("runuser") is None:
            return "no PostgreSQL for the team tests: running as root and runuser is missing"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PgServer:
    """One PostgreSQL server in a throwaway folder: start, stop, restart, and connect as anyone."""

    root: Path
    port: int = field(default_factory=free_port)
    settings: str = "-c fsync=off -c max_connections=200 -c shared_buffers=64MB"  # postgres -c options

    def __post_init__(self) -> None:
        self.bin = self.root / "pgserver" / "pginstall" / "bin"
        self.data = self.root / "data"
        self.sockdir = self.root / "sock"
        self.log = self.root / "log" / "postgres.log"
        self._as_postgres = os.geteuid() == 0

    # -- lifecycle -------------------------------------------------------------------------------------
    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = list(args)
        if self._as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env["LC_ALL"] = "C"
        return subprocess.run(command, check=check, capture_output=True, text=True, env=env, cwd=self.root)

    def _own(self, *paths: Path) -> None:
        if self._as_postgres:
            pw = pwd.getpwnam("postgres")
            for path in paths:
                os.chown(path, pw.pw_uid, pw.pw_gid)

    def install(self) -> None:
        """Copy the wheel's binaries with their layout and create the cluster (initdb, about a second)."""
        files = _wheel_files()
        assert files is not None, unavailable()
        install, libs = files
        shutil.copytree(install, self.root / "pgserver" / "pginstall", ignore=shutil.ignore_patterns("include"))
        if libs.is_dir():
            shutil.copytree(libs, self.root / "pgserver.libs")
        self.root.chmod(0o755)
        for dirpath, dirnames, filenames in os.walk(self.root):
            for name in dirnames:
                (Path(dirpath) / name).chmod(0o755)
            for name in filenames:
                path = Path(dirpath) / name
                path.chmod(path.stat().st_mode | 0o444 | (0o111 if path.stat().st_mode & 0o100 else 0))
        for folder in (self.sockdir, self.log.parent):
            folder.mkdir(mode=0o755)
        self.data.mkdir(mode=0o700)
        self._own(self.sockdir, self.log.parent, self.data)
        self._run(
            str(self.bin / "initdb"),
            "-D",
            str(self.data),
            "-U",
            SUPERUSER,
            "-E",
            "UTF8",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "--no-sync",
        )

    def start(self) -> None:
        options = f"-k {self.sockdir} -c listen_addresses=127.0.0.1 -p {self.port} {self.settings}"
        result = self._run(
            str(self.bin / "pg_ctl"),
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.log),
            "-w",
            "-t",
            "60",
            "start",
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(f"the test PostgreSQL did not start:\n{result.stdout}{result.stderr}\n{self.tail()}")

    def stop(self, mode: str = "fast") -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop", check=False)

    def remove(self) -> None:
        """Stop the server and delete its folder (binaries, data, socket, log)."""
        self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    def restart(self) -> None:
        self.stop()
        self.start()

    def running(self) -> bool:
        return self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "status", check=False).returncode == 0

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    # -- connecting ------------------------------------------------------------------------------------
    def conninfo(self, dbname: str = "postgres", user: str = SUPERUSER, *, tcp: bool = False) -> str:
        """A libpq connection string: over the socket (trust), or TCP on 127.0.0.1 (a password is needed)."""
        host = f"host=127.0.0.1 port={self.port}" if tcp else f"host={self.sockdir} port={self.port}"
        return f"{host} user={user} dbname={dbname}"

    def connect(self, dbname: str = "postgres", user: str = SUPERUSER, **kwargs: Any) -> psycopg.Connection[Any]:
        import psycopg

        return psycopg.connect(self.conninfo(dbname, user), **kwargs)

    def sql(self, statement: str, dbname: str = "postgres") -> None:
        """Run one statement as the superuser with autocommit (CREATE/DROP DATABASE need it)."""
        with self.connect(dbname, autocommit=True) as conn:
            conn.execute(statement)  # type: ignore[arg-type]


def _init_schema(conn: Any) -> None:
    """memvault's schema in the template, once the package has it (before that: the extension only)."""
    try:
        from memvault.team import schema
    except ImportError:
        return
    schema.init_db(conn)


@dataclass
class TeamDb:
    """A fresh database of one test on the session's server, with pgvector and memvault's schema."""

    server: PgServer
    name: str

    def connect(self, user: str = SUPERUSER, **kwargs: Any) -> psycopg.Connection[Any]:
        return self.server.connect(self.name, user, **kwargs)

    def conninfo(self, user: str = SUPERUSER, *, tcp: bool = False) -> str:
        return self.server.conninfo(self.name, user, tcp=tcp)

    def role(self, name: str) -> str:
        """A role name unique to this database (roles are shared by every database of the server)."""
        return f"{name}_{self.name.rsplit('_', 1)[-1]}"

    def member_home(self, home: Path, role: str, password: str, *, service: str = "team") -> dict[str, str]:
        """Write a member's libpq service and password files under `home`, the way a member configures it.

        Returns the environment variables that point libpq there (PGSERVICEFILE, PGPASSFILE); the member's
        memvault config then names only the service.
        """
        home.mkdir(parents=True, exist_ok=True)
        service_file, pass_file = home / ".pg_service.conf", home / ".pgpass"
        service_file.write_text(
            f"[{service}]\nhost=127.0.0.1\nport={self.server.port}\ndbname={self.name}\nuser={role}\n"
        )
        pass_file.write_text(f"127.0.0.1:{self.server.port}:{self.name}:{role}:{password}\n")
        pass_file.chmod(0o600)
        return {"PGSERVICEFILE": str(service_file), "PGPASSFILE": str(pass_file)}


def start_server(settings: str | None = None) -> PgServer:
    """Install, start and prepare one server with the template database (the session fixture's work)."""
    root = Path(tempfile.mkdtemp(prefix="memvault-pg-", dir="/tmp" if Path("/tmp").is_dir() else None))
    server = PgServer(root) if settings is None else PgServer(root, settings=settings)
    try:
        server.install()
        server.start()
        server.sql(f"CREATE DATABASE {_TEMPLATE}")
        with server.connect(_TEMPLATE) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.commit()
            _init_schema(conn)
        server.sql(f"ALTER DATABASE {_TEMPLATE} WITH ALLOW_CONNECTIONS false")
    except BaseException:
        server.stop("immediate")
        shutil.rmtree(root, ignore_errors=True)
        raise
    return server


def new_database(server: PgServer) -> TeamDb:
    name = f"memvault_t{os.getpid()}_{next(_db_numbers)}"
    server.sql(f"CREATE DATABASE {name} TEMPLATE {_TEMPLATE}")
    return TeamDb(server, name)


# -- fixtures (imported by tests/conftest.py) ----------------------------------------------------------


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """The session's PostgreSQL with pgvector; skipped in one line when it cannot run here."""
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    server = start_server()
    yield server
    server.remove()


@pytest.fixture
def pg_control(pg_server: PgServer) -> Iterator[PgServer]:
    """The session's server for a test that stops or restarts it; running again after the test."""
    yield pg_server
    if not pg_server.running():
        pg_server.start()


@pytest.fixture
def team_db(pg_server: PgServer) -> Iterator[TeamDb]:
    """A fresh database with pgvector and memvault's schema, dropped after the test."""
    db = new_database(pg_server)
    yield db
    if pg_server.running():
        pg_server.sql(f"DROP DATABASE IF EXISTS {db.name} WITH (FORCE)")
