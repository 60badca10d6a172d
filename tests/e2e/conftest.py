"""Fixtures for tests that run the real Claude Code client against a scripted Messages API stub on 127.0.0.1.

- `claude_bin`: the pinned client, installed once per machine into the cache (`claude_client.install`);
  every test using it is skipped, with one line saying why, where npm or the install is unavailable.
- `stub`: a fresh `StubServer` per test, logging every request body to `<tmp>/requests.jsonl`.
- `claude_home`: a throwaway HOME for the client, and the process environment pointed at the stub
  (dummy key, telemetry, updates and non-essential traffic off), so any `claude` started by the test
  or by memvault in the test process talks to the stub only.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from . import claude_client
from .stub import StubServer


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    try:
        return claude_client.install()
    except claude_client.Unavailable as exc:
        pytest.skip(f"real Claude Code client unavailable: {exc}")


@pytest.fixture
def stub(tmp_path: Path) -> Iterator[StubServer]:
    with StubServer(log_path=tmp_path / "requests.jsonl") as server:
        yield server


@pytest.fixture
def claude_home(tmp_path: Path, stub: StubServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "claude-home"
    for name, value in claude_client.offline_env(home, stub.url).items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)  # the client's own folder is HOME/.claude here
    return home
