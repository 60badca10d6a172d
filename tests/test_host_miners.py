"""The Codex CLI and Gemini CLI miners without their clients: stand-in executables (real processes) in their place.

What each child is told (no tools, no hooks, no MCP, no session kept), the shared strict answer check,
each host's own daily cap, the fallback that says why, and `auto` choosing the transcript's host.
Runs of the real clients against scripted APIs are in tests/e2e/test_host_miners.py.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from memvault.config import ReflectionSettings
from memvault.reflect import miner
from memvault.reflect.mine import codex, gemini
from memvault.reflect.transcript import Turn

pytestmark = pytest.mark.skipif(os.name == "nt", reason="the stand-in clients are POSIX scripts")

TURNS = [
    Turn("user", "add retries to the webhook sender", 1, "u1", None, False),
    Turn("assistant", "I added tenacity with pip install tenacity.", 2, "u2", None, False),
    Turn("user", "no, in this repo we never run pip, dependencies go through uv add", 3, "u3", None, False),
]
RULE = {"category": "preference", "title": "Dependencies are added with uv add, never pip",
        "quote": "in this repo we never run pip, dependencies go through uv add", "body": "",
        "evidence": ["L3"], "confidence": "high", "rule": "correction"}  # fmt: skip
INVENTED = dict(RULE, title="Always use poetry", quote="always use poetry")

FAKE = '''
import json, os, sys
if sys.argv[1:] in (["--version"], ["-v"]):
    print("1.0.0")
    sys.exit(0)
log = os.environ["FAKE_LOG"]
stdin = sys.stdin.read()
with open(log, "a") as out:
    out.write(json.dumps({"argv": sys.argv[1:], "stdin": stdin, "env": {k: v for k, v in os.environ.items()
                          if k.startswith(("GEMINI", "MEMVAULT"))}}) + "\\n")
mode, answer = os.environ["FAKE_MODE"], os.environ.get("FAKE_ANSWER", "")
argv = sys.argv[1:]
if os.path.basename(sys.argv[0]) == "codex":
    if mode == "refused":
        print("ERROR: stream disconnected: error sending request: Connection refused", file=sys.stderr)
        sys.exit(1)
    with open(argv[argv.index("--output-last-message") + 1], "w") as out:
        out.write(answer)
    sys.exit(0)
session = "a1b2c3d4-0000-4000-8000-000000000000"  # gemini: records the chat in its home, as the real client does
chats = os.path.join(os.environ["GEMINI_CLI_HOME"], ".gemini", "tmp", "gemini-miner", "chats")
os.makedirs(chats, exist_ok=True)
with open(os.path.join(chats, f"session-2026-01-01T10-00-{session[:8]}.jsonl"), "w") as out:
    out.write(json.dumps({"sessionId": session, "projectHash": "x"}) + "\\n")
if mode == "refused":
    print(json.dumps({"session_id": session, "error": {"type": "Error", "message": "fetch failed: ECONNREFUSED"}}))
    sys.exit(1)
print(json.dumps({"session_id": session, "response": answer, "stats": {}}))
'''


def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, mode: str, answer: object = None) -> Path:
    exe = tmp_path / "bin" / name
    exe.parent.mkdir(exist_ok=True)
    exe.write_text(f"#!{sys.executable}\n{FAKE}", encoding="utf-8")
    exe.chmod(0o755)
    monkeypatch.setenv("FAKE_LOG", str(tmp_path / "calls.jsonl"))
    monkeypatch.setenv("FAKE_MODE", mode)
    monkeypatch.setenv("FAKE_ANSWER", json.dumps(answer) if answer is not None else "")
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "gemini-home"))
    monkeypatch.setenv("PATH", str(exe.parent))
    return exe


def calls(tmp_path: Path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]


@pytest.mark.usefixtures("today")
def test_codex_mines_with_no_tools_hooks_mcp_or_session_and_counts_its_own_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake(tmp_path, monkeypatch, "codex", "answer", {"candidates": [RULE, INVENTED]})
    cands, ran = miner.run(TURNS, ReflectionSettings(miner="auto"), host="codex")
    assert ran.miner == "codex" and "the transcript is Codex CLI's" in ran.reason
    assert [c.title for c in cands] == ["Dependencies are added with uv add, never pip"]
    assert "— the user, L3" in cands[0].body
    assert ran.notes and "not the user's words" in ran.notes[0]  # the invented quote was dropped
    (call,) = calls(tmp_path)
    argv = call["argv"]
    assert argv[0] == "exec" and "--ephemeral" in argv and argv[argv.index("--sandbox") + 1] == "read-only"
    assert 'web_search="disabled"' in argv
    disabled = {argv[i + 1] for i, a in enumerate(argv) if a == "--disable"}
    assert {"hooks", "shell_tool", "unified_exec", "unbounded_connection_retries"} <= disabled
    assert argv[-1].startswith("You extract long-term memory") and "L3 [user]: no, in this repo" in call["stdin"]
    assert call["env"]["MEMVAULT_ENABLED"] == "0"
    assert (miner.calls_today("codex"), miner.calls_today("claude")) == (1, 0)
    assert not list((tmp_path / "state").glob("**/answer-*.txt"))


@pytest.mark.usefixtures("today")
def test_codex_that_reaches_no_api_falls_back_says_why_and_costs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake(tmp_path, monkeypatch, "codex", "refused")
    cands, ran = miner.run(TURNS, ReflectionSettings(miner="codex"))
    assert ran.miner == "offline" and ran.reason.startswith("the Codex miner failed")
    assert "Connection refused" in ran.reason and cands == miner.mine(TURNS)
    assert miner.calls_today("codex") == 0 and ran.calls == 0
    fell = miner.last_fallback()
    assert fell is not None and fell[1].startswith("the Codex miner failed")
    miner.record_success("codex")
    assert miner.last_fallback() is None


@pytest.mark.usefixtures("today")
def test_gemini_mines_with_no_tools_hooks_mcp_and_its_chat_file_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake(tmp_path, monkeypatch, "gemini", "answer", {"candidates": [RULE]})
    cands, ran = miner.run(TURNS, ReflectionSettings(miner="auto"), host="gemini")
    assert ran.miner == "gemini" and [c.title for c in cands] == ["Dependencies are added with uv add, never pip"]
    (call,) = calls(tmp_path)
    argv, env = call["argv"], call["env"]
    assert argv[argv.index("--allowed-mcp-server-names") + 1] == "none" and "--extensions" in argv
    assert argv[argv.index("--model") + 1] == "gemini-2.5-flash"
    assert Path(env["GEMINI_CLI_HOME"]).parent == tmp_path / "memvault-home" / "state" / "gemini-miner"
    assert env["GEMINI_SYSTEM_MD"] == str(Path(env["GEMINI_CLI_HOME"]) / "system.md")
    assert gemini.SETTINGS["tools"]["core"] == [] and gemini.SETTINGS["mcpServers"] == {}
    assert gemini.SETTINGS["hooksConfig"]["enabled"] is False
    assert not Path(env["GEMINI_CLI_HOME"]).exists()  # the child's own home, its chat with it, is gone
    assert not (tmp_path / "gemini-home").exists()  # and the user's was never written
    assert miner.calls_today("gemini") == 1 and miner.calls_today("codex") == 0


@pytest.mark.usefixtures("today")
def test_gemini_refused_falls_back_and_the_cap_is_per_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake(tmp_path, monkeypatch, "gemini", "refused")
    _, ran = miner.run(TURNS, ReflectionSettings(miner="gemini"))
    assert ran.miner == "offline" and "the Gemini miner failed" in ran.reason and "ECONNREFUSED" in ran.reason
    assert not list((tmp_path / "memvault-home").glob("state/gemini-miner/home-*"))  # removed, answered or not
    miner.count_call("gemini")
    _, ran = miner.run(TURNS, ReflectionSettings(miner="gemini", gemini_calls_per_day=1))
    assert ran.miner == "offline" and "daily cap of 1 Gemini calls (reflection.gemini_calls_per_day)" in ran.reason
    assert len(calls(tmp_path)) == 1


def test_auto_picks_the_transcripts_host_and_says_why_it_cannot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no client at all
    rollout = tmp_path / "rollout.jsonl"
    rollout.write_text(json.dumps({"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta", "payload": {}}) + "\n")
    chat = tmp_path / "chat.jsonl"
    chat.write_text(json.dumps({"sessionId": "s", "projectHash": "p"}) + "\n")
    claude_file = tmp_path / "claude.jsonl"
    claude_file.write_text(json.dumps({"type": "user", "message": {"role": "user", "content": "hi"}}) + "\n")
    assert [miner.host_of(p) for p in (rollout, chat, claude_file)] == ["codex", "gemini", "claude"]
    auto = ReflectionSettings(miner="auto")
    assert miner.choose(auto, host="codex") == (
        "offline", "'codex' was not found (reflection.miner is auto and the transcript is Codex CLI's)")  # fmt: skip
    assert miner.choose(auto, host="gemini") == (
        "offline", "'gemini' was not found (reflection.miner is auto and the transcript is Gemini CLI's)")  # fmt: skip
    assert miner.choose(ReflectionSettings(miner="codex"), host="gemini") == (
        "offline", "'codex' was not found (reflection.miner is codex)")  # fmt: skip
    assert miner.choose(ReflectionSettings(miner="auto", codex_calls_per_day=0), host="codex")[1].startswith(
        "reflection.codex_calls_per_day is 0")  # fmt: skip
    exe = fake(tmp_path, monkeypatch, "codex", "answer", {"candidates": []})
    assert miner.choose(auto, host="codex")[0] == "codex"
    fake(tmp_path, monkeypatch, "gemini", "answer", {"candidates": []})
    assert miner.choose(auto, host=miner.host_of(chat))[0] == "gemini"  # a Gemini chat: the Gemini miner
    assert miner.choose(auto, host="claude")[0] == "offline"  # a Claude Code transcript needs claude
    assert codex.command(str(exe), "", "out.txt")[1] == "exec" and gemini.SETTINGS["tools"] == {"core": []}
