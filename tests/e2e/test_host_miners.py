"""The Codex CLI and Gemini CLI miners through the real clients, against scripted model APIs on 127.0.0.1.

Per host: the note lands with the user's quote, the request offers the model no tool (Codex: only the
built-ins it cannot switch off — its MCP-resource readers, with no server configured, and
`request_user_input`), the client keeps no session file (Gemini: nothing is written in the user's Gemini
home, and the call's own home is gone after it), and an API that refuses falls back to the offline
miner, says why, and costs nothing against the host's daily cap.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from memvault.config import ReflectionSettings
from memvault.reflect import miner
from memvault.reflect.transcript import Turn
from tests.conftest import snapshot

from . import clients
from .stubs.gemini import GeminiStub
from .stubs.openai_responses import ResponsesStub

SAID = [
    ("user", "add retries to the webhook sender"),
    ("assistant", "I added tenacity with pip install tenacity."),
    ("user", "no, that's the wrong tool: in this repo we never run pip, dependencies go through uv add"),
]
TURNS = [Turn(r, t, n, f"u{n}", None, False) for n, (r, t) in enumerate(SAID, 1)]
ANSWER = {"candidates": [{
    "category": "preference", "title": "Dependencies are added with uv add, never pip",
    "quote": "in this repo we never run pip, dependencies go through uv add", "body": "",
    "evidence": ["L3"], "confidence": "high", "rule": "correction",
}]}  # fmt: skip
CODEX_BUILTINS = {"list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource", "request_user_input"}


def spy(mark: Path, what: str = "ran") -> list[str]:
    return [sys.executable, "-c", f"open({str(mark)!r}, 'a').write('{what}\\n')"]


def codex_home(tmp_path: Path, stub: ResponsesStub, monkeypatch: pytest.MonkeyPatch, mark: Path) -> Path:
    """A Codex home wired to the stub, with an MCP server and a hook of the user's that would leave a mark."""
    home = tmp_path / "home" / ".codex"
    home.mkdir(parents=True)
    server = spy(mark)
    extra = f'\n[mcp_servers.spy]\ncommand = {json.dumps(server[0])}\nargs = {json.dumps(server[1:])}\n'
    (home / "config.toml").write_text(clients.codex_config(stub.base_url) + extra, encoding="utf-8")
    hook = {"hooks": [{"type": "command", "command": " ".join(json.dumps(a) for a in spy(mark, "hook"))}]}
    (home / "hooks.json").write_text(json.dumps({"hooks": {"SessionStart": [hook], "Stop": [hook]}}))
    for name, value in clients.environment(tmp_path / "home", tmp_path / "mv", CODEX_HOME=str(home),
                                           STUB_API_KEY="x").items():  # fmt: skip
        if name == "MEMVAULT_HOME":
            continue  # the test's own: the daily count is kept there
        monkeypatch.setenv(name, value)
    return home


@pytest.mark.usefixtures("today", "memvault_home")
def test_codex_miner(tmp_path: Path, codex_bin: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mark = tmp_path / "marks"
    with ResponsesStub([{"json": ANSWER}], log_path=tmp_path / "requests.jsonl") as stub:
        home = codex_home(tmp_path, stub, monkeypatch, mark)
        settings = ReflectionSettings(miner="auto", codex_command=str(codex_bin))
        cands, ran = miner.run(TURNS, settings, host="codex")
        bodies = stub.bodies()
    assert len(bodies) == 1, ran.reason
    (body,) = bodies
    assert ran.miner == "codex" and miner.calls_today("codex") == 1
    (cand,) = cands
    assert cand.title == "Dependencies are added with uv add, never pip" and "— the user, L3" in cand.body
    offered = {t.get("name") or t.get("type") for t in body.get("tools", [])}
    assert offered <= CODEX_BUILTINS, offered  # no shell, no web search, no MCP server's tools
    assert "You extract long-term memory" in json.dumps(body["input"])
    assert not mark.exists(), mark.read_text()  # neither the MCP server nor the hook ran
    assert not list(home.glob("sessions/**/*.jsonl"))  # --ephemeral: no rollout to reflect later

    with ResponsesStub([{"error": {"status": 401, "type": "invalid_request_error", "message": "refused"}}]) as down:
        codex_home(tmp_path / "again", down, monkeypatch, mark)
        cands, ran = miner.run(TURNS, settings, host="codex")
    assert ran.miner == "offline" and ran.reason.startswith("the Codex miner failed") and cands == miner.mine(TURNS)
    assert miner.calls_today("codex") == 1  # the refused call cost nothing


def gemini_home(tmp_path: Path, stub: GeminiStub, monkeypatch: pytest.MonkeyPatch, mark: Path) -> Path:
    """A Gemini CLI home wired to the stub, with an MCP server and a hook of the user's that would leave a mark."""
    home = tmp_path / "home"
    folder = clients.write_gemini_home(home)
    settings: dict[str, Any] = json.loads((folder / "settings.json").read_text())
    server = spy(mark)
    settings["mcpServers"] = {"spy": {"command": server[0], "args": server[1:]}}
    hook = {"hooks": [{"type": "command", "command": " ".join(json.dumps(a) for a in spy(mark, "hook"))}]}
    settings["hooks"] = {"BeforeAgent": [hook], "SessionStart": [hook]}
    (folder / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    for name, value in clients.environment(home, tmp_path / "mv", GEMINI_API_KEY="x", GEMINI_CLI_HOME=str(home),
                                           GOOGLE_GEMINI_BASE_URL=stub.base_url).items():  # fmt: skip
        if name == "MEMVAULT_HOME":
            continue  # the test's own: the daily count is kept there
        monkeypatch.setenv(name, value)
    return home


@pytest.mark.usefixtures("today")
def test_gemini_miner(tmp_path: Path, gemini_bin: Path, monkeypatch: pytest.MonkeyPatch, memvault_home: Path) -> None:
    mark = tmp_path / "marks"
    with GeminiStub([{"json": ANSWER}], log_path=tmp_path / "requests.jsonl") as stub:
        home = gemini_home(tmp_path, stub, monkeypatch, mark)
        before = snapshot(home)
        settings = ReflectionSettings(miner="auto", gemini_command=str(gemini_bin))
        cands, ran = miner.run(TURNS, settings, host="gemini")
        bodies = stub.bodies()
    assert ran.miner == "gemini" and miner.calls_today("gemini") == 1, ran.reason
    (cand,) = cands
    assert cand.title == "Dependencies are added with uv add, never pip" and "— the user, L3" in cand.body
    declared = [f for b in bodies for t in b.get("tools") or [] for f in t.get("functionDeclarations") or []]
    assert bodies and declared == []  # no tool declared at all
    assert "You extract long-term memory" in json.dumps(bodies[-1]["systemInstruction"])
    assert not mark.exists()  # neither the MCP server nor the hooks ran
    assert snapshot(home) == before  # nothing written in the user's Gemini home (no chat, no trust, no project)
    assert not list(memvault_home.glob("state/gemini-miner/home-*"))  # the call's own home, chat and all, is gone

    with GeminiStub([{"error": {"status": 403, "type": "PERMISSION_DENIED", "message": "refused"}}]) as down:
        home = gemini_home(tmp_path / "again", down, monkeypatch, mark)
        before = snapshot(home)
        cands, ran = miner.run(TURNS, settings, host="gemini")
    assert ran.miner == "offline" and ran.reason.startswith("the Gemini miner failed") and cands == miner.mine(TURNS)
    assert miner.calls_today("gemini") == 1
    assert snapshot(home) == before and not list(memvault_home.glob("state/gemini-miner/home-*"))
