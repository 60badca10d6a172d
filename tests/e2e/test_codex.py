"""Codex CLI (the real client from npm) with memvault's hooks and MCP server, against a local Responses-API stub.

Installed the way a user installs them (`memvault install --host codex --trust-hooks --mcp codex`), and
run without `--dangerously-bypass-hook-trust`: the hooks run only because the trust entries are right.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memvault import runtime
from memvault.cli import cli

from . import clients, vaults
from .stubs.openai_responses import ResponsesStub

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("codex_bin")]  # skips before any set-up without the client


class Codex:
    """A throwaway Codex home wired to a stub, with memvault installed into it as a user would."""

    def __init__(self, tmp: Path, memvault_home: Path, stub: ResponsesStub, monkeypatch: pytest.MonkeyPatch) -> None:
        self.exe = clients.codex()
        self.home, self.project = tmp / "home", tmp / "project"
        self.codex_home = self.home / ".codex"
        self.codex_home.mkdir(parents=True)
        self.project.mkdir()
        (self.codex_home / "config.toml").write_text(clients.codex_config(stub.base_url), encoding="utf-8")
        monkeypatch.setenv("CODEX_HOME", str(self.codex_home))
        result = CliRunner().invoke(
            cli, ["install", "--host", "codex", "--trust-hooks", "--mcp", "codex", "--approve-tools"]
        )
        assert result.exit_code == 0, result.output
        self.env = clients.environment(self.home, memvault_home, CODEX_HOME=str(self.codex_home), STUB_API_KEY="x")

    def exec(self, prompt: str, *extra: str) -> subprocess.CompletedProcess[str]:
        # required=true: wait for the MCP server before the first model request (else exec starts without it)
        cmd = [
            str(self.exe),
            "exec",
            "--skip-git-repo-check",
            "-c",
            "mcp_servers.memvault.required=true",
            *extra,
            prompt,
        ]
        return subprocess.run(cmd, cwd=self.project, env=self.env, capture_output=True, text=True, timeout=180,
                              stdin=subprocess.DEVNULL)  # fmt: skip


def developer_texts(body: dict[str, Any]) -> list[str]:
    """What hooks added to a request: Codex sends hook context as developer messages."""
    return [
        c["text"]
        for item in body["input"]
        if item.get("role") == "developer"
        for c in item.get("content", [])
        if isinstance(c, dict) and isinstance(c.get("text"), str)
    ]


def test_a_codex_session_gets_what_a_claude_code_session_taught_by_hook_and_by_mcp(
    tmp_path: Path, memvault_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = vaults.make_vault(tmp_path, memvault_home)
    taught = vaults.claude_session(tmp_path, vault)
    script = [
        {"text": "Checking your notes.", "call": "recall", "namespace": "mcp__memvault", "args": {"query": "logging"}},
        "I will use structlog.",
    ]
    with ResponsesStub(script) as stub:
        codex = Codex(tmp_path, memvault_home, stub, monkeypatch)
        result = codex.exec(vaults.CLAUDE_ASKED)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "I will use structlog." in result.stdout
    first, second = stub.bodies()
    injected = "\n".join(developer_texts(first))
    assert "<memoryvault-always-load" in injected and "Core dev flow" in injected  # SessionStart
    assert "<memoryvault-recall" in injected and taught in injected  # UserPromptSubmit: Claude's lesson
    tools = [t.get("name") for t in first["tools"]]
    assert "mcp__memvault" in tools  # the MCP server's tools, offered to the model
    output = next(i["output"] for i in second["input"] if i.get("type") == "function_call_output")
    assert taught in output  # the MCP recall, scripted through the stub, found it too
    hooks = [r["hook"] for r in vaults.host_log("codex")]
    assert hooks[:2] == ["SessionStart", "UserPromptSubmit"] and "Stop" in hooks
    assert all(r["result"] in ("success", "partial") for r in vaults.host_log("codex")), vaults.host_log("codex")
    assert [r["hook"] for r in runtime.read_log() if r.get("host") == "mcp"] == ["mcp:recall"]


def test_a_preference_stated_in_codex_is_reflected_and_recalled_in_claude_code(
    tmp_path: Path, memvault_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = vaults.make_vault(tmp_path, memvault_home)
    with ResponsesStub(["Noted: httpx from now on."]) as stub:
        codex = Codex(tmp_path, memvault_home, stub, monkeypatch)
        result = codex.exec(vaults.HTTPX_SAID)
        assert result.returncode == 0, result.stderr[-2000:]
        session = vaults.host_log("codex")[0]["session"]
        written = vaults.reflected(session)  # Stop scheduled it; the offline miner ran in the background
        learned = next(p for p in written if "httpx" in vaults.note_text(vault, p))
        assert f"source: {session}" in vaults.note_text(vault, learned)

        resumed = codex.exec("And which HTTP client did I say to use?", "resume", "--last")
        assert resumed.returncode == 0, resumed.stderr[-2000:]
    starts = [r for r in vaults.host_log("codex") if r["hook"] == "SessionStart"]
    assert [r["source"] for r in starts] == ["startup", "resume"] and starts[1]["session"] == session

    context = vaults.claude_recall(vaults.CLAUDE_ASKS_HTTP)
    assert learned in context  # Claude Code now knows what was said in Codex


PROJECT_RULES = """## Project guidelines

- **Always** use the `<.icon>` component for icons, **never** use Heroicons modules or similar
- **Never** use `@apply` when writing raw css
"""


def test_a_prompt_that_pastes_the_projects_agents_md_teaches_only_what_the_user_added(
    tmp_path: Path, memvault_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Codex sends the project's AGENTS.md in the user's name; a user pasting it into the prompt as well must not
    have its rules saved as their preferences (they load in every session anyway): only the words they added."""
    vault = vaults.make_vault(tmp_path, memvault_home)
    with ResponsesStub(["Noted: httpx from now on."]) as stub:
        codex = Codex(tmp_path, memvault_home, stub, monkeypatch)
        (codex.project / "AGENTS.md").write_text(PROJECT_RULES, encoding="utf-8")
        result = codex.exec(PROJECT_RULES + "\n" + vaults.HTTPX_SAID)
        assert result.returncode == 0, result.stderr[-2000:]
    assert any("Heroicons" in text for body in stub.bodies() for text in _user_texts(body))  # the client sent it
    session = vaults.host_log("codex")[0]["session"]
    written = vaults.reflected(session)
    texts = [vaults.note_text(vault, p) for p in written]
    assert any("httpx" in t for t in texts), texts
    assert not any("Heroicons" in t or "@apply" in t for t in texts), texts


def _user_texts(body: dict[str, Any]) -> list[str]:
    return [c["text"] for item in body["input"] if item.get("role") == "user" for c in item.get("content", [])
            if isinstance(c, dict) and isinstance(c.get("text"), str)]  # fmt: skip


def test_with_the_warm_service_up_codex_hooks_are_run_by_it(
    tmp_path: Path, memvault_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The short way (hooks.fast) for Codex's own events: session start, prompt and end of turn are handed to the
    # warm service, started here in the environment the client gives its hooks (the service answers only those).
    vaults.make_vault(tmp_path, memvault_home)
    vaults.use_warm_service(memvault_home)
    with ResponsesStub(["Noted."]) as stub:
        codex = Codex(tmp_path, memvault_home, stub, monkeypatch)
        with vaults.warm_service(codex.env):
            result = codex.exec(vaults.CLAUDE_ASKED)
    assert result.returncode == 0, result.stderr[-2000:]
    injected = "\n".join(developer_texts(stub.bodies()[0]))
    assert "<memoryvault-always-load" in injected and "Core dev flow" in injected
    assert {"SessionStart", "UserPromptSubmit", "Stop"} <= vaults.served_hooks("codex"), vaults.host_log("codex")
