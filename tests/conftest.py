"""Shared fixtures: the run gets its own HOME and temp folder, every test its own MEMVAULT_HOME and vault copy."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

# Property tests replay the same draws on every run of the test command (derived from each test's code), so a
# run judges the change and not the luck of a draw; MEMVAULT_ADVERSARIAL=long draws new examples every run.
hypothesis_settings.register_profile("replay", derandomize=True, database=None)
hypothesis_settings.register_profile("explore", derandomize=False)
hypothesis_settings.load_profile("explore" if os.environ.get("MEMVAULT_ADVERSARIAL") == "long" else "replay")


def xdg_under(home: Path, runtime: Path) -> dict[str, str]:
    """HOME and every XDG folder in its default place under `home`, the runtime folder at `runtime`."""
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_STATE_HOME": str(home / ".local/state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_RUNTIME_DIR": str(runtime),
    }


def _own_places() -> Path:
    """Give the whole run a HOME, XDG folders, runtime folder and TMPDIR of its own, before anything reads them.

    A test or a program it runs (an agent's CLI, install.sh, a test that drops the XDG variables) then
    writes into these, never into the user's ~/.codex, ~/.gemini, ~/.claude, memvault's folders or the
    runtime folder where the user's own service listens (tests/test_suite_isolation.py checks it). What
    the run still takes from the user, read-only or as a download cache, is named here: the clients the
    end-to-end tests install once per machine, pip's and npm's settings, pip's cache.
    """
    real_home = Path.home()
    real_temp = tempfile.gettempdir()
    import platformdirs

    pip_conf = [p for p in (real_home / ".config/pip/pip.conf", real_home / ".pip/pip.conf") if p.is_file()]
    keep = {
        "MEMVAULT_E2E_CACHE": platformdirs.user_cache_path("memvault", appauthor=False) / "e2e",
        "PIP_CACHE_DIR": platformdirs.user_cache_path("pip", appauthor=False),
        "PIP_CONFIG_FILE": pip_conf[0] if pip_conf else None,
        "NPM_CONFIG_USERCONFIG": real_home / ".npmrc" if (real_home / ".npmrc").is_file() else None,
        # pytest's tmp_path folders stay where pytest keeps them: a longer path would move the tests' sockets
        "PYTEST_DEBUG_TEMPROOT": real_temp,
    }
    for name, value in keep.items():
        if value is not None and not os.environ.get(name):
            os.environ[name] = str(value)
    root = Path(tempfile.mkdtemp(prefix="memvault-tests-", dir=real_temp))
    home, temp, runtime = root / "home", root / "tmp", root / "run"
    for folder in (home, temp, runtime):
        folder.mkdir(mode=0o700)
    for name in [k for k in os.environ if k.startswith("XDG_")] + ["TEMP", "TMP"]:
        os.environ.pop(name, None)  # XDG_CONFIG_DIRS and XDG_DATA_DIRS too: nothing of the user's desktop
    os.environ.update(xdg_under(home, runtime), USERPROFILE=str(home), TMPDIR=str(temp))
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again
    return root


RUN_ROOT = _own_places()

from memvault import open_vault  # noqa: E402  (after the run's own HOME: nothing may read the user's first)

REPO = Path(__file__).resolve().parent.parent
EXAMPLE_VAULT = REPO / "examples" / "vault"
# Small third-party fixtures carried in the repository (sources and licences: tests/data/README.md).
DATA = REPO / "tests" / "data"
TRANSCRIPTS = DATA / "transcripts"
KEPANO = DATA / "kepano-obsidian"


GITCONFIG = """\
[user]
\tname = memvault tests
\temail = tests@memvault.invalid
[init]
\tdefaultBranch = main
[commit]
\tgpgsign = false
"""
MIDNIGHT_MARGIN_S = 60.0  # longer than any one test that reads the date takes


@pytest.fixture(scope="session")
def gitconfig(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tests' own git configuration: an identity (a fresh HOME has none), nothing from the user's."""
    path = tmp_path_factory.mktemp("git") / "gitconfig"
    path.write_text(GITCONFIG, encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def memvault_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gitconfig: Path) -> Iterator[Path]:
    """A private MEMVAULT_HOME and the tests' own git config per test; a service the test started is stopped."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))  # git (and every subprocess) reads no ~/.gitconfig
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    home = tmp_path / "memvault-home"
    monkeypatch.setenv("MEMVAULT_HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-config"))  # never the real ~/.claude
    monkeypatch.delenv("CLAUDE_CODE_DISABLE_AUTO_MEMORY", raising=False)
    for var in (
        "MEMVAULT_VAULT",
        "MEMVAULT_CONFIG",
        "MEMVAULT_ENABLED",
        "MEMVAULT_EMBEDDING_MODEL",
        "AGENT_TOOLKIT_EMBEDDING_MODEL",
        "MEMVAULT_FAULT_AFTER",
        "MEMVAULT_REVIEW_MODE",
        "MEMVAULT_LOG_LEVEL",
        "MEMVAULT_TRANSPARENCY",
    ):
        monkeypatch.delenv(var, raising=False)
    # Reflection's default miner runs the user's `claude` when one is installed: tests choose it explicitly.
    monkeypatch.setenv("MEMVAULT_MINER", "offline")
    yield home
    if (home / "run").is_dir():  # this test's own service, even if the test pointed MEMVAULT_HOME elsewhere
        from memvault.recall import client

        monkeypatch.setenv("MEMVAULT_HOME", str(home))
        client.stop(timeout=10)


@pytest.fixture
def today() -> dt.date:
    """Today's date, the same from the test's start to its end: near midnight the test first waits for it.

    The code under test stamps notes with the date of the moment it runs; a test that read the date earlier
    (at import, or before a midnight) would expect yesterday's.
    """
    now = dt.datetime.now()
    left = (dt.datetime.combine(now.date() + dt.timedelta(days=1), dt.time()) - now).total_seconds()
    if left < MIDNIGHT_MARGIN_S:
        time.sleep(left + 0.5)
    return dt.date.today()


@pytest.fixture
def vault_dir(tmp_path: Path) -> Path:
    """A fresh copy of the bundled example vault."""
    target = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, target)
    return target


@pytest.fixture
def vault(vault_dir: Path):
    return open_vault(vault_dir)


@pytest.fixture
def git_vault(vault_dir: Path):
    """The example vault as a git repository with one initial commit."""
    git(vault_dir, "init", "-q", "-b", "main")
    git(vault_dir, "add", "-A")
    git(vault_dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "initial")
    return open_vault(vault_dir)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The run's own HOME and temp folder go when it ends (a failed test's tmp_path is pytest's, kept apart)."""
    shutil.rmtree(RUN_ROOT, ignore_errors=True)


def configure(memvault_home: Path, text: str) -> None:
    """Merge the YAML `text` into memvault's config.yaml, section by section (appending a section that is
    already there would replace it, dropping its other keys)."""
    import yaml

    config = memvault_home / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    merged = (yaml.safe_load(config.read_text(encoding="utf-8")) if config.exists() else None) or {}
    for section, values in (yaml.safe_load(text) or {}).items():
        if isinstance(values, dict) and isinstance(merged.get(section), dict):
            merged[section].update(values)
        else:
            merged[section] = values
    config.write_text(yaml.safe_dump(merged, sort_keys=False), encoding="utf-8")


def home_env(home: Path, runtime: Path, drop: tuple[str, ...] = (), **extra: str) -> dict[str, str]:
    """This process's environment for a program run as a new user with a throwaway `home`: memvault's, the XDG
    and the agents' variables (and `drop`) removed, every XDG folder in its default place under `home`, and a
    0700 runtime folder of its own (unset, it would be the real user's, where their service listens)."""
    runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
    gone = ("MEMVAULT_", "XDG_", "CLAUDE_", "CODEX_", "GEMINI_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(gone) and k not in ("VIRTUAL_ENV", *drop)}
    env.update(xdg_under(home, runtime), **extra)
    return env


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under `root` (except .git) with its bytes."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


@pytest.fixture(scope="session")
def embedder():
    """The real packaged embedding model, loaded once per test run (about 7 s)."""
    pytest.importorskip("sentence_transformers")
    from memvault.index import embed

    return embed.load()


# The team-memory tests' PostgreSQL with pgvector (a session server, a database per test): tests/pg.py.
from tests.pg import pg_control, pg_server, team_db  # noqa: E402, F401
