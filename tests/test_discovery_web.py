"""The web runner without a real client: the yes the user gave, the child's command line, budget, daily cap, ledger.

The stand-in `claude` below is a real process that records how it was started and prints what the real
client prints with `--output-format stream-json`; the real client against a stub and a local web
server is in tests/e2e/test_discovery.py.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from memvault import paths, runtime
from memvault.config import Config, DiscoverySettings, IdeasSettings, MemorySettings, ReflectionSettings
from memvault.discovery import web

pytestmark = pytest.mark.skipif(os.name == "nt", reason="the stand-in client is a POSIX script")

FAKE = r"""
import json, os, sys, time
stdin = sys.stdin.read()
with open(os.environ["FAKE_WEB_LOG"], "a") as out:
    out.write(json.dumps({"argv": sys.argv[1:], "stdin": stdin}) + "\n")
mode = os.environ.get("FAKE_WEB_MODE", "ok")
if mode == "refused":
    print("API Error: Connection error. (cause: connect ECONNREFUSED 127.0.0.1:9)", file=sys.stderr)
    sys.exit(1)
if mode == "hang":
    time.sleep(600)
calls = int(os.environ.get("FAKE_WEB_CALLS", "2"))
for n in range(calls):
    url = os.environ.get("FAKE_WEB_URL", "https://example.org/") + str(n)
    block = {"type": "tool_use", "name": "WebFetch", "input": {"url": url, "prompt": "read"}}
    print(json.dumps({"type": "assistant", "message": {"content": [block]}}))
answer = os.environ.get("FAKE_WEB_ANSWER", "- Findings (https://example.org/0)")
print(json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": answer,
                  "total_cost_usd": 0.0123, "usage": {"output_tokens": 40}}))
"""


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    exe = tmp_path / "bin" / "claude"
    exe.parent.mkdir()
    exe.write_text(f"#!{sys.executable}\n{FAKE}", encoding="utf-8")
    exe.chmod(0o755)
    monkeypatch.setenv("FAKE_WEB_LOG", str(tmp_path / "started.jsonl"))
    return exe


def said_yes(exe: Path, **discovery: object) -> Config:
    return Config(
        reflection=ReflectionSettings(claude_command=str(exe), codex_command="no-codex-here",
                                      gemini_command="no-gemini-here"),
        discovery=DiscoverySettings(web=True, **discovery),  # type: ignore[arg-type]
        ideas=IdeasSettings(research="web"),
    )  # fmt: skip


def started(tmp_path: Path) -> list[dict[str, object]]:
    log = tmp_path / "started.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_the_web_is_off_until_the_user_says_yes_and_stop_or_the_kill_switch_end_it() -> None:
    config = Config()
    assert not web.allowed(config, "discovery") and not web.allowed(config, "research")
    assert "discovery.web is false" in (web.why_not(config, "discovery") or "")
    assert "ideas.research is local" in (web.why_not(config, "research") or "")
    yes = replace(config, discovery=DiscoverySettings(web=True), ideas=IdeasSettings(research="web"))
    assert web.allowed(yes, "discovery") and web.allowed(yes, "research")
    off = replace(yes, memory=MemorySettings(enabled=False))
    assert web.why_not(off, "research") == "memory.enabled is false (kill switch)"
    paths.ensure_private_dir(paths.state_dir())
    paths.stop_file().touch()
    assert web.why_not(yes, "discovery") == "the STOP file is present"


def test_the_claude_child_has_only_its_web_tools_no_hooks_no_mcp_no_saved_session() -> None:
    argv = web.claude_command("claude", "haiku", web.Budget(fetches=3))
    assert argv[argv.index("--tools") + 1] == "WebFetch,WebSearch"
    assert argv[argv.index("--allowedTools") + 1] == "WebFetch,WebSearch"
    assert json.loads(argv[argv.index("--settings") + 1])["disableAllHooks"] is True
    assert {"--strict-mcp-config", "--no-session-persistence", "--disable-slash-commands"} <= set(argv)
    assert argv[argv.index("--max-turns") + 1] == "4"  # one turn per web call and one to answer
    assert "at most 3 web calls" in argv[argv.index("--system-prompt") + 1]


def test_the_codex_and_gemini_children_offer_only_their_web_tools(tmp_path: Path) -> None:
    argv = web.codex_command("codex", "", web.Budget(), str(tmp_path / "last.txt"))
    assert 'web_search="live"' in argv and "--ephemeral" in argv and argv[argv.index("--sandbox") + 1] == "read-only"
    disabled = {argv[i + 1] for i, a in enumerate(argv) if a == "--disable"}
    assert {"shell_tool", "unified_exec", "hooks", "plugins", "skill_search", "memories"} <= disabled
    settings = web.gemini_settings(tmp_path / "missing-settings.json")
    assert settings["tools"]["core"] == ["google_web_search", "web_fetch"]
    assert settings["mcpServers"] == {} and settings["hooksConfig"] == {"enabled": False}


def test_a_user_who_said_no_starts_no_agent(tmp_path: Path, fake: Path) -> None:
    config = replace(said_yes(fake), discovery=DiscoverySettings(web=False), ideas=IdeasSettings())
    for purpose in ("discovery", "research"):
        result = web.research("q", host=None, budget=web.Budget(), purpose=purpose, state_dir=tmp_path, config=config)
        assert not result.ok and not result.started and "did not say yes" in result.why
    assert started(tmp_path) == [] and web.runs_today(tmp_path) == 0 and web.last_run(tmp_path) is None


@pytest.mark.usefixtures("today")
def test_a_run_returns_the_answer_its_sources_and_cost_counted_against_the_cap(
    tmp_path: Path, fake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = said_yes(fake, daily_cap=1)
    result = web.research("What exists for flaky tests?", host=None, budget=web.Budget(), purpose="research",
                          state_dir=tmp_path, config=config)  # fmt: skip
    assert result.ok and result.host == "claude" and result.fetches == 2 and result.cost_usd == 0.0123
    assert result.sources == ["https://example.org/0", "https://example.org/1"]
    assert result.text == "- Findings (https://example.org/0)"
    (run,) = started(tmp_path)
    assert run["stdin"] == "What exists for flaky tests?" and "--model" in run["argv"]  # type: ignore[operator]
    assert web.runs_today(tmp_path) == 1
    last = web.last_run(tmp_path)
    assert last is not None and last["ok"] and last["purpose"] == "research" and last["fetches"] == 2
    logged = [json.loads(line) for f in runtime.log_dir().glob("hooks-*.jsonl") for line in f.read_text().splitlines()]
    (line,) = [r for r in logged if r.get("hook") == "web:research"]
    assert line["host"] == "claude" and line["fetches"] == 2 and line["cost_usd"] == 0.0123 and line["ok"]
    again = web.research("q", host=None, budget=web.Budget(), purpose="research", state_dir=tmp_path, config=config)
    assert not again.ok and not again.started and "daily cap of 1" in again.why and len(started(tmp_path)) == 1
    assert not list((tmp_path / "web-run").iterdir())  # the run's empty folder is gone


@pytest.mark.usefixtures("today")
def test_a_run_that_reaches_no_model_is_not_counted(
    tmp_path: Path, fake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_WEB_MODE", "refused")
    result = web.research("q", host="claude", budget=web.Budget(), purpose="discovery", state_dir=tmp_path,
                          config=said_yes(fake))  # fmt: skip
    assert not result.ok and result.started and "ECONNREFUSED" in result.why and not result.counted
    assert web.runs_today(tmp_path) == 0
    last = web.last_run(tmp_path)
    assert last is not None and not last["ok"] and "ECONNREFUSED" in last["why"]


@pytest.mark.usefixtures("today")
def test_an_answer_over_the_fetch_budget_is_discarded_and_a_long_one_cut(
    tmp_path: Path, fake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_WEB_CALLS", "4")
    over = web.research("q", host=None, budget=web.Budget(fetches=3), purpose="research", state_dir=tmp_path,
                        config=said_yes(fake))  # fmt: skip
    assert not over.ok and over.text == "" and "4 web calls, over the budget of 3" in over.why and over.counted
    monkeypatch.setenv("FAKE_WEB_CALLS", "1")
    monkeypatch.setenv("FAKE_WEB_ANSWER", "word " * 2000)
    long = web.research("q", host=None, budget=web.Budget(tokens=200), purpose="research", state_dir=tmp_path,
                        config=said_yes(fake))  # fmt: skip
    assert long.ok and len(long.text) < 200 * web.CHARS_PER_TOKEN + 40 and long.text.endswith("length budget]")
    assert web.runs_today(tmp_path) == 2


def test_a_run_past_its_wall_clock_is_killed(tmp_path: Path, fake: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_WEB_MODE", "hang")
    result = web.research("q", host=None, budget=web.Budget(seconds=1), purpose="research", state_dir=tmp_path,
                          config=said_yes(fake))  # fmt: skip
    assert not result.ok and "did not answer within 1 s" in result.why and result.seconds < 30
    assert result.counted and web.runs_today(tmp_path) == 1  # the model was most likely answering: it counts


def test_no_agent_found_says_so(tmp_path: Path) -> None:
    config = said_yes(tmp_path / "no-claude")
    result = web.research("q", host=None, budget=web.Budget(), purpose="research", state_dir=tmp_path, config=config)
    assert not result.ok and not result.started and "no agent to run" in result.why


@pytest.mark.usefixtures("today")
def test_health_says_whether_the_web_may_be_used_and_what_the_last_run_cost(
    tmp_path: Path, fake: Path, vault_dir: Path, memvault_home: Path
) -> None:
    from click.testing import CliRunner

    from memvault import health, open_vault
    from memvault.cli import cli

    vault = open_vault(vault_dir)
    report = health.check(vault, service=False)
    assert report.web["discovery"] == "discovery.web is false (the user did not say yes to the web)"
    assert report.web["runs_today"] == 0 and "last" not in report.web
    web.research("q", host=None, budget=web.Budget(), purpose="research", state_dir=paths.state_dir(),
                 config=said_yes(fake))  # fmt: skip
    report = health.check(vault, service=False)
    assert report.web["runs_today"] == 1 and report.web["last"]["cost_usd"] == 0.0123
    shown = CliRunner().invoke(cli, ["--vault", str(vault_dir), "health"]).output
    assert "web: discovery off (discovery.web is false" in shown and "1 of 6 runs today" in shown
    assert "research by claude, answered, 2 web calls" in shown and "$0.0123" in shown
