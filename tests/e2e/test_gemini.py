"""Gemini CLI (the real client from npm) with memvault's hooks and MCP server, against a local Gemini-API stub.

Installed the way a user installs them (`memvault install --host gemini --mcp gemini --approve-tools`);
run headless (`gemini -p`), where the CLI glues SessionStart's context onto the prompt.
"""

from __future__ import annotations

import html
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memvault import runtime
from memvault.cli import cli

from . import clients, vaults
from .stubs.gemini import GeminiStub

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("gemini_bin")]  # skips before any set-up without the client


class Gemini:
    """A throwaway Gemini CLI home wired to a stub, with memvault installed into it as a user would."""

    def __init__(self, tmp: Path, memvault_home: Path, stub: GeminiStub, monkeypatch: pytest.MonkeyPatch) -> None:
        self.exe = clients.gemini()
        self.home, self.project = tmp / "home", tmp / "project"
        self.project.mkdir()
        clients.write_gemini_home(self.home)
        monkeypatch.setenv("GEMINI_CLI_HOME", str(self.home))
        result = CliRunner().invoke(cli, ["install", "--host", "gemini", "--mcp", "gemini", "--approve-tools"])
        assert result.exit_code == 0, result.output
        self.env = clients.environment(
            self.home, memvault_home, GEMINI_API_KEY="x", GOOGLE_GEMINI_BASE_URL=stub.base_url,
            GEMINI_CLI_TRUST_WORKSPACE="true",
        )  # fmt: skip

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.exe), "-m", clients.GEMINI_MODEL, "--approval-mode", "yolo", *args]
        return subprocess.run(cmd, cwd=self.project, env=self.env, capture_output=True, text=True, timeout=180,
                              stdin=subprocess.DEVNULL)  # fmt: skip


def texts(body: dict[str, Any]) -> str:
    """The request's text parts; Gemini CLI escapes `<` and `>` in hook context inside its <hook_context> tag."""
    return html.unescape(
        "\n".join(p.get("text", "") for c in body["contents"] for p in c.get("parts", []) if isinstance(p, dict))
    )


def test_a_gemini_session_gets_what_a_claude_code_session_taught_by_hook_and_by_mcp(
    tmp_path: Path, memvault_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = vaults.make_vault(tmp_path, memvault_home)
    taught = vaults.claude_session(tmp_path, vault)
    script = [{"text": "Checking your notes.", "call": "mcp_memvault_recall", "args": {"query": "logging"}},
              "I will use structlog."]  # fmt: skip
    with GeminiStub(script) as stub:
        gemini = Gemini(tmp_path, memvault_home, stub, monkeypatch)
        result = gemini.run("-p", vaults.CLAUDE_ASKED)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "I will use structlog." in result.stdout
    first, second = stub.bodies()[:2]
    context = texts(first)
    assert "<memoryvault-always-load" in context and "Core dev flow" in context  # SessionStart
    assert "<memoryvault-recall" in context and taught in context  # BeforeAgent: Claude's lesson
    declared = [f["name"] for t in first.get("tools", []) for f in t.get("functionDeclarations", [])]
    assert "mcp_memvault_recall" in declared
    responses = [p["functionResponse"] for c in second["contents"] for p in c["parts"] if "functionResponse" in p]
    assert responses and taught in json.dumps(responses[-1])  # the MCP recall, scripted through the stub
    prompt = next(r for r in vaults.host_log("gemini") if r["hook"] == "UserPromptSubmit")["prompt"]
    assert prompt == vaults.CLAUDE_ASKED  # the SessionStart text glued onto the prompt was cut off again
    assert [r["hook"] for r in vaults.host_log("gemini")][:2] == ["SessionStart", "UserPromptSubmit"]


def test_a_preference_stated_in_gemini_is_reflected_and_recalled_in_claude_code(
    tmp_path: Path, memvault_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = vaults.make_vault(tmp_path, memvault_home)
    with GeminiStub(["Noted: httpx from now on.", "You said httpx."]) as stub:
        gemini = Gemini(tmp_path, memvault_home, stub, monkeypatch)
        result = gemini.run("-p", vaults.HTTPX_SAID)
        assert result.returncode == 0, result.stderr[-2000:]
        session = vaults.host_log("gemini")[0]["session"]
        written = vaults.reflected(session)  # AfterAgent scheduled it (SessionEnd too)
        learned = next(p for p in written if "httpx" in vaults.note_text(vault, p))

        resumed = gemini.run("--resume", "latest", "-p", "And which HTTP client did I say to use?")
        assert resumed.returncode == 0, resumed.stderr[-2000:]
    starts = [r for r in vaults.host_log("gemini") if r["hook"] == "SessionStart"]
    assert [r["source"] for r in starts] == ["startup", "resume"] and starts[1]["session"] == session
    chats = sorted((gemini.home / ".gemini" / "tmp").glob(f"*/chats/session-*-{session[:8]}.jsonl"))
    assert 1 <= len(chats) <= 2  # a resume in a later minute makes a second, nearly empty file for the session
    marker = runtime.read_json(runtime.marker(session, "start")) or runtime.read_json(
        runtime.marker(session, "reflected")
    )
    real = Path(marker["transcript_path"])  # never the stray file, which SessionStart is handed on resume
    assert real in chats and "which HTTP client did I say" in real.read_text(encoding="utf-8")

    context = vaults.claude_recall(vaults.CLAUDE_ASKS_HTTP)
    assert learned in context  # Claude Code now knows what was said in Gemini CLI


def test_with_the_warm_service_up_gemini_hooks_are_run_by_it(
    tmp_path: Path, memvault_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As for Codex: Gemini CLI's session start, BeforeAgent, AfterAgent and session end are handed to the warm
    # service, started here in the environment the client gives its hooks (the service answers only those).
    vaults.make_vault(tmp_path, memvault_home)
    vaults.use_warm_service(memvault_home)
    with GeminiStub(["Noted."]) as stub:
        gemini = Gemini(tmp_path, memvault_home, stub, monkeypatch)
        with vaults.warm_service(gemini.env):
            result = gemini.run("-p", vaults.CLAUDE_ASKED)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Core dev flow" in texts(stub.bodies()[0])
    assert {"SessionStart", "UserPromptSubmit", "Stop"} <= vaults.served_hooks("gemini"), vaults.host_log("gemini")
