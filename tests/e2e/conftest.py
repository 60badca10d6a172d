"""End-to-end tests with real clients: every test here is marked `e2e`; fixtures for the real clients.

- `claude_code`, `memvault_user`, `vault_template`, `scenario`, `session_id`: the client from npm, one
  throwaway HOME with memvault installed by `./install.sh` for all the tests here (removed after them
  unless one failed), and per test a copy of an indexed vault, a project folder and an Anthropic stub
  (`tests/e2e/claude.py`).
- `codex_bin`, `gemini_bin`: the pinned Codex CLI and Gemini CLI (`clients.py`); their tests name them in
  `usefixtures`, so they skip before any set-up.
- `claude_bin`, `stub`, `claude_home`: the same Claude Code's binary, a fresh `AnthropicStub` per test logging
  every request body to `<tmp>/requests.jsonl`, and a throwaway HOME with the process environment pointed
  at the stub, so any `claude` started by the test or by memvault in the test process talks to the stub only.

Every test of a client that cannot be had (no npm, its registry unreachable: `npm.require`) skips, and
all of them are reported in one summary line; the run's summary ends with the hook durations Claude
Code reported.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.e2e import clients, npm
from tests.e2e.claude import Client, Scenario, User, indexed_vault, offline_env
from tests.e2e.stubs.anthropic import AnthropicStub

HERE = Path(__file__).resolve().parent
TIMINGS = pytest.StashKey[list[str]]()  # lines for the run's summary: hook timings as the client reported them
E2E_PROMPT_BUDGET_MS = 3000  # see memvault_user: what reaches the model is under test here, not latency


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.e2e)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[pytest.TestReport]:
    """Every test skipped for want of a client is reported at one place (`npm.require`), so the summary has one line.

    pytest reports a skip raised in a fixture at each test's own location; the same place and reason fold them.
    """
    report: pytest.TestReport = yield
    reason = report.longrepr[2] if report.skipped and isinstance(report.longrepr, tuple) else ""
    if reason.startswith(f"Skipped: {npm.NO_CLIENT}") or reason.startswith(npm.NO_CLIENT):
        report.longrepr = (npm.__file__, npm.require.__code__.co_firstlineno, reason)
    return report


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    lines = config.stash.get(TIMINGS, [])
    if lines:
        terminalreporter.write_sep("-", "hook durations reported by Claude Code")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def claude_code() -> Client:
    """The pinned Claude Code from npm (cached between runs); every Claude Code test skips, in one line, without npm."""
    return Client(npm.require(npm.CLAUDE_CODE))


@pytest.fixture(scope="package")
def memvault_user(
    claude_code: Client, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[User]:
    """One throwaway HOME for the end-to-end tests, with memvault installed by `./install.sh` as a user would.

    The vault given to install.sh is the user's; each test points the hooks at its own copy with
    MEMVAULT_VAULT. The warm embedding service is started once here, so the prompt hooks find it loaded.
    When the last end-to-end test has run, the HOME (about 1.5 GB: a venv with torch) is removed unless a
    test failed, so the rest of the run has that disk back.
    """
    failed_before = request.session.testsfailed
    root = tmp_path_factory.mktemp("claude-user")
    user = User(root, claude_code)
    (root / "Obsidian").mkdir()
    installed = user.install_memvault("--vault", str(root / "Obsidian"), "--no-demo")
    assert installed.returncode == 0, f"install.sh failed:\n{installed.stdout[-3000:]}\n{installed.stderr[-3000:]}"
    # What reaches the model is under test here, not latency (scripts/bench_hooks.py and the timing test
    # measure that): a patient prompt budget keeps recall hybrid on a busy 2-core machine, where a 300 ms
    # budget counted from the process's start can be gone before the query vector is asked for.
    config_file = user.home / ".config" / "memvault" / "config.yaml"
    config = yaml.safe_load(config_file.read_text(encoding="utf-8")) or {}
    config.setdefault("recall", {})["prompt_budget_ms"] = E2E_PROMPT_BUDGET_MS
    config_file.write_text(yaml.safe_dump(config), encoding="utf-8")
    started = user.run_memvault("serve", "--background")
    assert started.returncode == 0, started.stderr
    yield user
    user.run_memvault("serve", "--stop")  # the throwaway HOME's service; ./install.sh --uninstall is tested itself
    if request.session.testsfailed == failed_before:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="package")
def vault_template(memvault_user: User) -> tuple[Path, Path]:
    """The example vault with `<private>` spans, indexed once; each test gets a copy of it and of its index."""
    return indexed_vault(memvault_user, memvault_user.root / "template-vault")


@pytest.fixture
def scenario(memvault_user: User, vault_template: tuple[Path, Path], tmp_path: Path) -> Iterator[Scenario]:
    """This test's own vault (a copy of the indexed example vault), project folder and Anthropic stub."""
    with AnthropicStub(log_path=tmp_path / "requests.jsonl") as stub:
        yield Scenario(memvault_user, tmp_path / "scenario", stub, vault_template)


@pytest.fixture
def session_id() -> str:
    """A fresh Claude Code session id (`claude --session-id`), so a test finds its own hook log lines."""
    return str(uuid.uuid4())


@pytest.fixture(scope="session")
def claude_bin(claude_code: Client) -> Path:
    """The pinned client's binary, for settings that name the `claude` command."""
    return claude_code.binary


@pytest.fixture(scope="session")
def codex_bin() -> Path:
    """The pinned Codex CLI from npm; a test that uses it skips (in the one summary line) without npm."""
    return clients.codex()


@pytest.fixture(scope="session")
def gemini_bin() -> Path:
    """The pinned Gemini CLI from npm; a test that uses it skips (in the one summary line) without npm."""
    return clients.gemini()


@pytest.fixture
def stub(tmp_path: Path) -> Iterator[AnthropicStub]:
    """This test's own Anthropic stub, logging every request to `<tmp>/requests.jsonl`."""
    with AnthropicStub(log_path=tmp_path / "requests.jsonl") as server:
        yield server


@pytest.fixture
def claude_home(tmp_path: Path, stub: AnthropicStub, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A throwaway HOME, with this process's environment pointed at the stub (for the `claude` memvault starts)."""
    home = tmp_path / "claude-home"
    for name, value in offline_env(home, stub).items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)  # the client's own folder is HOME/.claude here
    return home
