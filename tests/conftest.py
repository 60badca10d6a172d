"""Shared fixtures: every test gets its own MEMVAULT_HOME and, when asked, a fresh copy of a vault."""

from __future__ import annotations

import datetime as dt
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memvault import open_vault

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
