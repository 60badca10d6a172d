"""The Claude miner through the real Claude Code client, against a scripted Messages API stub on 127.0.0.1.

What the child is sent (checked in the request bodies the stub logs): the system prompt, one window
of the transcript, no tools, the configured model. The child runs none of the user's hooks and
writes no transcript; windows, merging, the daily cap, `--show-prompt`, and the fallback to the
offline miner on a malformed or late answer are checked end to end. An API that cannot be reached (the
port refuses, the server accepts and never answers, it answers 5xx) ends the pass within seconds, or
within the pass deadline at worst, uncounted against the daily cap, and `health` names the fallback.
"""

from __future__ import annotations

import json
import re
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memvault import health, open_vault
from memvault.cli import cli
from memvault.config import ReflectionSettings
from memvault.reflect import miner, runner
from memvault.reflect.mine import claude
from memvault.reflect.transcript import Turn
from memvault.vault.core import Vault

from .stubs.anthropic import AnthropicStub

SESSION = "5d1c0e2a-8f3b-4c1e-9a7d-000000000019"
MODEL = "claude-haiku-4-5-20251001"


@pytest.fixture(autouse=True)
def no_service(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "WAIT_SERVICE_S", 0.0)


def configure(memvault_home: Path, claude_bin: Path, **reflection: Any) -> None:
    """Reflection with the Claude miner and the installed client (the file, not the environment, decides)."""
    settings = {"miner": "claude", "claude_command": str(claude_bin), "claude_model": MODEL, **reflection}
    memvault_home.mkdir(parents=True, exist_ok=True)
    lines = "".join(f"  {k}: {json.dumps(v)}\n" for k, v in settings.items())
    (memvault_home / "config.yaml").write_text(f"reflection:\n{lines}", encoding="utf-8")


@pytest.fixture
def vault(vault_dir: Path, memvault_home: Path, monkeypatch: pytest.MonkeyPatch) -> Vault:
    monkeypatch.delenv("MEMVAULT_MINER")  # the config file chooses
    return open_vault(vault_dir)


def hook_settings(home: Path, log: Path) -> None:
    """User settings whose hooks would record that they ran (the miner's child must run none)."""
    hook = [{"hooks": [{"type": "command", "command": sys.executable,
                        "args": ["-c", f"open({str(log)!r}, 'a').write('ran\\n')"]}]}]  # fmt: skip
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    events = ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd")
    (home / ".claude" / "settings.json").write_text(json.dumps({"hooks": {e: hook for e in events}}))


def write_session(path: Path, turns: list[tuple[str, str]]) -> Path:
    rows = []
    for n, (role, text) in enumerate(turns, 1):
        message: dict[str, Any] = {"role": role, "content": text}
        if role == "assistant":
            message = {"id": f"msg{n}", "role": role, "content": [{"type": "text", "text": text}]}
        rows.append({"type": role, "sessionId": SESSION, "uuid": f"u{n}", "cwd": "/home/dana/src/billing",
                     "timestamp": f"2026-03-01T10:{n:02d}:00Z", "message": message})  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


SAID = [
    ("user", "add retries to the webhook sender"),
    ("assistant", "I added tenacity with pip install tenacity."),
    ("user", "no, that's the wrong tool: in this repo we never run pip, dependencies go through uv add"),
    ("assistant", "Understood, I used uv add tenacity instead."),
]
ANSWER = {"candidates": [{
    "category": "preference", "title": "Dependencies are added with uv add, never pip",
    "quote": "in this repo we never run pip, dependencies go through uv add", "body": "",
    "evidence": ["L3"], "confidence": "high", "rule": "correction",
}]}  # fmt: skip


def test_one_window_one_call_no_tools_no_hooks_no_transcript_and_the_capture_saved(
    tmp_path: Path, claude_bin: Path, claude_home: Path, stub: AnthropicStub, vault: Vault, memvault_home: Path
) -> None:
    configure(memvault_home, claude_bin)
    vault = open_vault(vault.root)
    hook_log = tmp_path / "hooks-ran.log"
    hook_settings(claude_home, hook_log)
    stub.reply({"json": ANSWER})
    report = runner.reflect_transcript(vault, write_session(tmp_path / "s.jsonl", SAID), final=True)

    (body,) = stub.bodies()
    assert body["model"] == MODEL and body.get("tools", []) == []
    system = json.dumps(body["system"])
    assert "You extract long-term memory for a coding agent" in system
    asked = json.dumps(body["messages"][0])
    assert "L3 [user]: no, that's the wrong tool" in asked and "L2 [assistant]: I added tenacity" in asked
    assert not hook_log.exists()  # the user's hooks (and so memvault's) did not run in the child
    assert not list((claude_home / ".claude" / "projects").glob("**/*.jsonl"))  # nothing to reflect later
    assert (report.miner, report.claude_calls) == ("claude", 1)
    assert "reflection.miner is claude" in report.miner_reason
    (saved,) = report.written
    text = (vault.root / saved).read_text()
    assert "# Dependencies are added with uv add, never pip" in text and "— the user, L3" in text
    assert "rule: llm:correction" in text

    again = runner.reflect_transcript(vault, tmp_path / "s.jsonl", final=True)
    assert again.written == [] and len(stub.bodies()) == 1  # nothing new: no second call


@pytest.mark.usefixtures("today")  # the calls are counted per local day
def test_a_long_session_is_mined_in_windows_and_their_candidates_merged(
    tmp_path: Path, claude_bin: Path, claude_home: Path, stub: AnthropicStub
) -> None:
    filler = " ".join(["the webhook sender retries with exponential backoff"] * 40)
    turns = [Turn("user" if n % 2 else "assistant", f"{n}: {filler}", n, f"u{n}", None, False) for n in range(1, 41)]
    turns[20] = Turn("user", "from now on, always run the linter before committing", 21, "u21", None, False)
    settings = ReflectionSettings(miner="claude", claude_command=str(claude_bin), claude_model=MODEL,
                                  claude_window_chars=20_000)  # fmt: skip
    windows = miner.windows(turns, settings)
    assert len(windows) >= 3 and sum(21 in w.lines for w in windows) >= 1
    rule = {"category": "preference", "title": "Run the linter before committing", "quote": "always run the linter",
            "body": "", "evidence": ["L21"], "confidence": "high", "rule": "from-now-on"}  # fmt: skip
    for w in windows:  # every window that holds L21 reports it; the others report nothing
        stub.reply({"json": {"candidates": [rule] if 21 in w.lines else []}})
    cands, ran = miner.run(turns, settings)
    bodies = stub.bodies()
    assert len(bodies) == ran.calls == ran.windows == len(windows)
    for n, (w, body) in enumerate(zip(windows, bodies, strict=True), 1):
        assert f"part {n} of {len(windows)}" in json.dumps(body["messages"][0])
        assert f"L{min(w.lines)} [" in json.dumps(body["messages"][0])
    assert [(c.title, c.evidence) for c in cands] == [("Run the linter before committing", ("L21",))]
    assert miner.calls_today() == len(windows)


@pytest.mark.usefixtures("today")  # the cap is per local day
def test_the_daily_cap_keeps_a_session_offline_without_calling(
    tmp_path: Path, claude_bin: Path, claude_home: Path, stub: AnthropicStub
) -> None:
    turns = [Turn("user", "never commit generated files", 1, "u1", None, False)]
    settings = ReflectionSettings(miner="auto", claude_command=str(claude_bin), claude_calls_per_day=1)
    miner.count_call()
    cands, ran = miner.run(turns, settings)
    assert ran.miner == "offline" and "daily cap of 1 Claude calls" in ran.reason and ran.calls == 0
    assert stub.bodies() == [] and [c.title for c in cands] == ["Never commit generated files"]


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ({"text": "Sure! Here is what I found: the user likes uv."}, "the result is not JSON"),
        ({"json": {"memories": []}}, 'the result must be {"candidates": [...]}'),
        ({"json": {"candidates": [dict(ANSWER["candidates"][0], evidence=["L99"])]}}, "is not a turn"),
    ],
)
def test_a_malformed_answer_falls_back_to_the_offline_miner(
    tmp_path: Path, claude_bin: Path, claude_home: Path, stub: AnthropicStub, reply: dict[str, Any], why: str
) -> None:
    turns = [Turn(r, t, n, f"u{n}", None, False) for n, (r, t) in enumerate(SAID, 1)]
    stub.reply(reply)
    settings = ReflectionSettings(miner="claude", claude_command=str(claude_bin), claude_model=MODEL)
    cands, ran = miner.run(turns, settings)
    assert ran.miner == "offline" and "the Claude miner failed" in ran.reason and why in ran.reason
    assert ran.calls == 1 and cands == miner.mine(turns)


def test_a_late_answer_is_cut_off_and_falls_back(
    tmp_path: Path, claude_bin: Path, claude_home: Path, stub: AnthropicStub
) -> None:
    turns = [Turn(r, t, n, f"u{n}", None, False) for n, (r, t) in enumerate(SAID, 1)]
    stub.reply({"json": ANSWER, "delay": 30})
    settings = ReflectionSettings(miner="claude", claude_command=str(claude_bin), claude_timeout_s=4)
    started = time.monotonic()
    cands, ran = miner.run(turns, settings)
    assert time.monotonic() - started < 15
    assert ran.miner == "offline" and "did not answer within 4 s" in ran.reason
    assert cands == miner.mine(turns)


def test_auto_uses_claude_when_it_answers(claude_bin: Path, claude_home: Path, stub: AnthropicStub) -> None:
    name, why = miner.choose(ReflectionSettings(miner="auto", claude_command=str(claude_bin)))
    assert name == "claude" and "answers" in why
    assert stub.bodies() == []  # finding out costs nothing: `claude --version` only


def test_only_final_passes_call_claude(
    tmp_path: Path, claude_bin: Path, claude_home: Path, stub: AnthropicStub, vault: Vault, memvault_home: Path
) -> None:
    configure(memvault_home, claude_bin, miner="auto")
    vault = open_vault(vault.root)
    session = write_session(tmp_path / "s.jsonl", SAID)
    stop = runner.reflect_transcript(vault, session)  # a Stop hook's pass
    assert stop.deferred and stop.written == [] and stub.bodies() == []
    stub.reply({"json": ANSWER})
    end = runner.reflect_transcript(vault, session, final=True)  # SessionEnd
    assert end.miner == "claude" and len(end.written) == 1 and len(stub.bodies()) == 1


def test_show_prompt_prints_what_would_be_sent_and_sends_nothing(
    tmp_path: Path, claude_bin: Path, claude_home: Path, stub: AnthropicStub, vault: Vault, memvault_home: Path
) -> None:
    configure(memvault_home, claude_bin)
    session = write_session(tmp_path / "s.jsonl", SAID)
    result = CliRunner().invoke(
        cli, ["--vault", str(vault.root), "reflect", "--session", str(session), "--dry-run", "--show-prompt"]
    )
    assert result.exit_code == 0, result.output
    assert "--tools ''" in result.output and f"--model {MODEL}" in result.output
    assert "You extract long-term memory" in result.output
    assert "L3 [user]: no, that's the wrong tool" in result.output and "call 1 of 1" in result.output
    assert stub.bodies() == []
    as_json = CliRunner().invoke(
        cli, ["--vault", str(vault.root), "reflect", "--session", str(session), "--dry-run", "--show-prompt", "--json"]
    )
    shown = json.loads(as_json.output)
    assert shown["command"] == claude.command(str(claude_bin), MODEL) and len(shown["windows"]) == 1
    assert shown["windows"][0] == claude.window_input(miner.windows(
        [Turn(r, t, n, f"u{n}", None, False) for n, (r, t) in enumerate(SAID, 1)])[0])  # fmt: skip


# ---- an API that cannot be reached ---------------------------------------------------------------------


def refused_url() -> str:
    """An address on 127.0.0.1 where nothing listens: connecting is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


class Silent:
    """A server on 127.0.0.1 that accepts every connection, reads, and never answers (a hung proxy or API)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.accepted: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted.append(conn)

    def close(self) -> None:
        self.sock.close()
        for conn in self.accepted:
            conn.close()


@pytest.fixture
def silent() -> Iterator[Silent]:
    server = Silent()
    yield server
    server.close()


# (how the API fails, the longest the whole SessionEnd pass may take, words of the reason the fallback gives)
UNREACHABLE = {
    "refused": (15, "Connection refused"),
    "5xx": (15, "API Error: 500"),
    "silent": (45, "timed out|did not answer within"),  # no answer is told from a slow one only by waiting
}


@pytest.mark.usefixtures("today")  # the cap is per local day
@pytest.mark.parametrize("api", list(UNREACHABLE))
def test_an_unreachable_api_falls_back_fast_uncounted_and_health_says_so(
    tmp_path: Path, claude_bin: Path, claude_home: Path, stub: AnthropicStub, silent: Silent, vault: Vault,
    memvault_home: Path, monkeypatch: pytest.MonkeyPatch, api: str
) -> None:  # fmt: skip
    configure(memvault_home, claude_bin, miner="auto")  # the default timeouts and deadline
    vault = open_vault(vault.root)
    if api == "refused":
        monkeypatch.setenv("ANTHROPIC_BASE_URL", refused_url())
    elif api == "silent":
        monkeypatch.setenv("ANTHROPIC_BASE_URL", silent.url)
    else:
        stub.reply(*[{"error": {"status": 500, "type": "api_error", "message": "stub 500"}}] * 20)
    limit, why = UNREACHABLE[api]
    session = write_session(tmp_path / "s.jsonl", SAID)
    started = time.monotonic()
    report = runner.reflect_transcript(vault, session, final=True)  # what the SessionEnd job runs
    took = time.monotonic() - started
    print(f"{api}: fell back after {took:.1f} s: {report.miner_reason}")
    assert took < limit, f"the pass took {took:.1f} s"
    assert report.miner == "offline" and re.search(why, report.miner_reason), report.miner_reason
    assert len(report.written) == 1  # the offline rules still keep the correction
    assert report.claude_calls == 0 and miner.calls_today() == 0  # no model answered: nothing charged to the cap
    if api == "5xx":
        assert len(stub.bodies()) <= 2  # one quick retry at most, not the client's patient backoff
    said = [w for w in health.check(vault, service=False).warnings if "fell back" in w]
    assert len(said) == 1 and said[0].startswith("reflection fell back to offline rules at "), said
    assert re.search(why, said[0])
