"""The Claude miner's own logic without a client: windows, what a window shows, the strict answer check, the choice.

Runs of the real client against a scripted Messages API are in tests/e2e/test_claude_miner.py.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import time
from pathlib import Path

import pytest

from memvault.config import ReflectionSettings
from memvault.reflect import miner
from memvault.reflect.mine import claude
from memvault.reflect.mine.claude import MinerError, Window
from memvault.reflect.transcript import Turn

GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def turns_of(*specs: tuple[str, str] | tuple[str, str, bool]) -> list[Turn]:
    return [Turn(s[0], s[1], n, f"u{n}", None, len(s) > 2 and bool(s[2])) for n, s in enumerate(specs, 1)]


TURNS = turns_of(
    ("user", "Always use pnpm instead of npm. <private>internal codename</private>"),
    ("assistant", "Switched the scripts to pnpm."),
    ("user", "secret subagent prompt", True),
    ("user", "We should add a flaky-test detector to CI later."),
)


def envelope(result: object, **extra: object) -> str:
    text = result if isinstance(result, str) else json.dumps(result)
    return json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": text, **extra})


GOOD = {
    "candidates": [
        {"category": "preference", "title": "Use pnpm, not npm", "quote": "Always use pnpm instead of npm",
         "body": "", "evidence": ["L1"], "confidence": "high", "rule": "explicit-always", "idea_kind": None},
        {"category": "idea", "title": "Add a flaky-test detector to CI", "quote": "add a flaky-test detector to CI",
         "body": f"token {GITHUB_TOKEN} was mentioned", "evidence": ["L4"], "confidence": "low",
         "rule": "follow-up", "idea_kind": "follow-up"},
    ]
}  # fmt: skip


def one_window(turns: list[Turn] = TURNS) -> Window:
    (window,) = claude.windows(turns, 60_000)
    return window


def test_a_window_shows_the_main_conversation_tersely() -> None:
    turns = [
        *TURNS,
        Turn("tool_call", "Bash: pytest -q", 5, "c", None, False, "Bash: pytest -q"),
        Turn("tool_error", "E   assert 1 == 2", 6, "e", None, False, "Bash: pytest -q"),
        Turn("summary", "Earlier: the user likes tabs", 7, "s", None, False),
    ]
    window = one_window(turns)
    assert window.lines == frozenset({1, 2, 4, 5, 6})
    assert "L1 [user]: Always use pnpm instead of npm." in window.text
    assert "L5 [tool]: Bash: pytest -q" in window.text and "L6 [tool error]: Bash: pytest -q: E   assert" in window.text
    assert "secret subagent prompt" not in window.text and "Earlier: the user likes tabs" not in window.text
    assert claude.window_input(window).startswith("Transcript (L1–L6):")


def test_long_sessions_are_cut_into_overlapping_windows_covering_every_turn() -> None:
    turns = turns_of(*[("user" if n % 2 else "assistant", f"turn {n} " + "word " * 150) for n in range(1, 61)])
    windows = claude.windows(turns, 8_000)
    assert len(windows) > 3 and all(len(w.text) <= 8_000 for w in windows)
    assert set().union(*(w.lines for w in windows)) == {t.line for t in turns}
    for before, after in itertools.pairwise(windows):
        assert before.lines & after.lines  # a statement on the edge is seen whole in one of them
        assert min(after.lines) > min(before.lines)
    assert [w.number for w in windows] == list(range(1, len(windows) + 1))
    assert claude.window_input(windows[1]).startswith(f"Transcript, part 2 of {len(windows)} (L")
    assert claude.windows([], 8_000) == []


def test_the_child_command_has_no_tools_no_hooks_no_transcript_and_the_configured_model() -> None:
    argv = claude.command("claude", "claude-haiku-4-5")
    assert argv[:3] == ["claude", "-p", claude.ASK]

    def value(flag: str) -> str:
        return argv[argv.index(flag) + 1]

    assert value("--tools") == "" and value("--model") == "claude-haiku-4-5" and value("--output-format") == "json"
    assert json.loads(value("--settings")) == {"disableAllHooks": True, "env": claude.CHILD_ENV}
    assert value("--max-turns") == "1"
    assert value("--system-prompt") == claude.PROMPT
    assert {"--no-session-persistence", "--strict-mcp-config", "--disable-slash-commands"} <= set(argv)
    env = claude.child_env({"PATH": "/bin", "CLAUDECODE": "1", "MEMVAULT_ENABLED": "1"})
    assert env == {"PATH": "/bin", "MEMVAULT_ENABLED": "0", **claude.CHILD_ENV}  # memvault's own hooks are off


def test_a_valid_answer() -> None:
    call = claude.parse(envelope(GOOD, total_cost_usd=0.0021), one_window(), TURNS)
    assert [(c.category, c.rule, c.confidence, c.evidence) for c in call.candidates] == [
        ("preference", "llm:explicit-always", "high", ("L1",)),
        ("idea", "llm:follow-up", "low", ("L4",)),
    ]
    assert call.candidates[0].body == "> Always use pnpm instead of npm\n— the user, L1"
    assert call.cost_usd == 0.0021 and call.dropped == []
    fenced = "```json\n" + json.dumps({"candidates": []}) + "\n```"
    assert claude.parse(envelope(fenced), one_window(), TURNS).candidates == []


def test_words_the_user_did_not_say_are_dropped() -> None:
    made_up = dict(GOOD["candidates"][0], quote="Always use yarn")
    by_agent = dict(GOOD["candidates"][0], quote="Switched the scripts to pnpm", evidence=["L2"])
    call = claude.parse(envelope({"candidates": [made_up, by_agent]}), one_window(), TURNS)
    assert call.candidates == [] and len(call.dropped) == 2
    assert "not the user's words in L1" in call.dropped[0]


def _bad(**change: object) -> dict:
    return {"candidates": [dict(GOOD["candidates"][0], **change)]}


@pytest.mark.parametrize(
    ("stdout", "message"),
    [
        ("this is not json", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        (envelope("no json here"), "result is not JSON"),
        (envelope({"items": []}), "must be"),
        (envelope(GOOD, is_error=True), "reported an error"),
        (json.dumps({"type": "result", "subtype": "error_max_turns", "is_error": True}), "reported an error"),
        (json.dumps({"type": "result", "subtype": "success"}), "no 'result'"),
        (envelope(_bad(category="opinion")), "unknown category"),
        (envelope(_bad(confidence="certain")), "unknown confidence"),
        (envelope(_bad(evidence=["L99"])), "not a turn"),
        (envelope(_bad(evidence=["L3"])), "not a turn"),  # a sidechain turn the model never saw
        (envelope(_bad(evidence=[])), "non-empty list"),
        (envelope(_bad(title="")), "title"),
        (envelope(_bad(extra="x")), "keys"),
        (envelope(_bad(category="idea")), "idea_kind"),
        (envelope(_bad(idea_kind="research")), "only for ideas"),
    ],
)
def test_a_malformed_answer_fails_the_call(stdout: str, message: str) -> None:
    with pytest.raises(MinerError, match=message):
        claude.parse(stdout, one_window(), TURNS)


def test_offline_when_asked_when_claude_is_missing_or_capped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no claude here
    assert miner.choose(ReflectionSettings(miner="offline")) == ("offline", "reflection.miner is offline")
    assert miner.choose(ReflectionSettings(miner="auto")) == ("offline", "'claude' was not found")
    assert miner.choose(ReflectionSettings(miner="claude")) == (
        "offline", "'claude' was not found (reflection.miner is claude)")  # fmt: skip
    assert miner.choose(ReflectionSettings(miner="auto", claude_calls_per_day=0))[0] == "offline"
    with pytest.raises(ValueError, match="unknown miner"):
        miner.choose(ReflectionSettings(miner="gpt"))
    cands, ran = miner.run(TURNS, ReflectionSettings(miner="auto"))
    assert (ran.miner, ran.reason, ran.calls) == ("offline", "'claude' was not found", 0)
    assert cands == miner.mine(TURNS)


@pytest.mark.usefixtures("today")  # the count is per local day
def test_calls_are_counted_per_day(monkeypatch: pytest.MonkeyPatch) -> None:
    assert miner.calls_today() == 0
    miner.count_call()
    miner.count_call()
    assert miner.calls_today() == 2
    path = miner._ledger_file()
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "day": "2000-01-01"}))
    assert miner.calls_today() == 0  # a new day starts at zero
    assert os.stat(path.parent).st_mode & 0o077 == 0 or os.name == "nt"  # the state folder is private


# ---- the miner never blocks: deadlines, the cap, the recorded fallback ------------------------------------------

FAKE_CLAUDE = '''
import json, os, subprocess, sys, time
if sys.argv[1:] == ["--version"]:
    print("2.1.332 (Claude Code)")
    sys.exit(0)
log = os.environ["FAKE_CLAUDE_LOG"]
with open(log, "a") as out:
    out.write(json.dumps({"argv": sys.argv[1:], "env": {k: v for k, v in os.environ.items() if "CLAUDE" in k
                                                         or k == "API_TIMEOUT_MS"}}) + "\\n")
mode = os.environ["FAKE_CLAUDE_MODE"]
sys.stdin.read()
if mode == "refused":  # what the real client prints when it cannot reach the API
    print(json.dumps({"type": "result", "subtype": "success", "is_error": True, "api_error": "connection_failed",
                      "result": "API Error: Connection refused (ECONNREFUSED)", "total_cost_usd": 0}))
    sys.exit(1)
if mode == "slow":  # a model that answers, slowly: nothing found in this part
    time.sleep(float(os.environ["FAKE_CLAUDE_SLOW"]))
    print(json.dumps({"type": "result", "subtype": "success", "is_error": False, "total_cost_usd": 0.001,
                      "result": json.dumps({"candidates": []})}))
    sys.exit(0)
# "hang": a client retrying an API that never answers, with a helper process of its own
helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
with open(log + ".pids", "a") as out:
    out.write(f"{os.getpid()} {helper.pid}\\n")
time.sleep(600)
'''


def fake_claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> Path:
    """A stand-in `claude` executable (a real process) that fails the way an unreachable API makes the client fail."""
    exe = tmp_path / "bin" / "claude"
    exe.parent.mkdir(exist_ok=True)
    exe.write_text(f"#!{sys.executable}\n{FAKE_CLAUDE}", encoding="utf-8")
    exe.chmod(0o755)
    monkeypatch.setenv("FAKE_CLAUDE_LOG", str(tmp_path / "claude-calls.jsonl"))
    monkeypatch.setenv("FAKE_CLAUDE_MODE", mode)
    return exe


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (killed, not reaped yet by its parent) is not running
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1] != "Z"
    except OSError:
        return True


@pytest.mark.usefixtures("today")
@pytest.mark.skipif(os.name == "nt", reason="the stand-in client is a POSIX script")
def test_a_call_that_reaches_no_api_falls_back_and_is_not_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exe = fake_claude(tmp_path, monkeypatch, "refused")
    settings = ReflectionSettings(miner="auto", claude_command=str(exe))
    cands, ran = miner.run(TURNS, settings)
    assert ran.miner == "offline" and "Connection refused" in ran.reason and cands == miner.mine(TURNS)
    assert miner.calls_today() == 0 and ran.calls == 0  # no model answered: nothing is charged to the cap
    fell = miner.last_fallback()
    assert fell is not None and "Connection refused" in fell[1] and abs(fell[0] - time.time()) < 60


@pytest.mark.skipif(os.name == "nt", reason="the stand-in client is a POSIX script")
def test_the_child_is_told_to_give_up_fast_whatever_the_user_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exe = fake_claude(tmp_path, monkeypatch, "refused")
    monkeypatch.setenv("CLAUDE_CODE_MAX_RETRIES", "10")  # the user's own (interactive) patience
    monkeypatch.setenv("CLAUDE_CODE_RETRY_WATCHDOG", "1")
    miner.run(TURNS, ReflectionSettings(miner="claude", claude_command=str(exe)))
    (call,) = [json.loads(line) for line in (tmp_path / "claude-calls.jsonl").read_text().splitlines()]
    argv, env = call["argv"], call["env"]
    given = json.loads(argv[argv.index("--settings") + 1])  # flag settings win over ~/.claude/settings.json's env
    assert given["disableAllHooks"] is True
    assert given["env"] == {"CLAUDE_CODE_MAX_RETRIES": "1", "API_TIMEOUT_MS": str(claude.FIRST_BYTE_S * 1000)}
    assert env["CLAUDE_CODE_MAX_RETRIES"] == "1" and "CLAUDE_CODE_RETRY_WATCHDOG" not in env


LONG = turns_of(*[("user" if n % 2 else "assistant", f"turn {n} " + "word " * 300) for n in range(1, 31)])


@pytest.mark.usefixtures("today")
@pytest.mark.skipif(os.name == "nt", reason="the stand-in client is a POSIX script")
def test_the_whole_pass_ends_at_its_deadline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exe = fake_claude(tmp_path, monkeypatch, "slow")
    monkeypatch.setenv("FAKE_CLAUDE_SLOW", "1.2")  # each call answers in time; all of them would not
    settings = ReflectionSettings(miner="claude", claude_command=str(exe), claude_window_chars=5_000,
                                  claude_timeout_s=2, claude_pass_s=3)  # fmt: skip
    assert len(miner.windows(LONG, settings)) >= 4  # about 5 s of calls without the pass deadline
    started = time.monotonic()
    cands, ran = miner.run(LONG, settings)
    took = time.monotonic() - started
    assert took < 3 + 0.5, f"the pass took {took:.1f} s"
    assert ran.miner == "offline" and "ran out of its 3 s (reflection.claude_pass_s)" in ran.reason
    assert cands == miner.mine(LONG)
    assert 1 <= ran.calls < ran.windows and miner.calls_today() == ran.calls  # the answered calls did cost


@pytest.mark.usefixtures("today")
@pytest.mark.skipif(os.name == "nt", reason="the stand-in client is a POSIX script")
def test_a_call_that_never_answers_is_killed_with_what_it_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exe = fake_claude(tmp_path, monkeypatch, "hang")
    settings = ReflectionSettings(miner="claude", claude_command=str(exe), claude_window_chars=5_000,
                                  claude_timeout_s=2, claude_pass_s=60)  # fmt: skip
    started = time.monotonic()
    cands, ran = miner.run(LONG, settings)
    assert time.monotonic() - started < 2 + 1.5
    assert ran.miner == "offline" and "did not answer within 2 s" in ran.reason and cands == miner.mine(LONG)
    assert ran.calls == 0 and miner.calls_today() == 0  # killed before any answer: not charged
    pids = [int(p) for p in Path(str(tmp_path / "claude-calls.jsonl") + ".pids").read_text().split()]
    assert len(pids) == 2  # the first failure ends the pass: no second call
    deadline = time.monotonic() + 5
    while any(map(alive, pids)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(map(alive, pids)), "the client or a process it started outlived its call"


@pytest.mark.skipif(os.name == "nt", reason="the stand-in client is a POSIX script")
def test_health_names_the_last_fallback_until_claude_answers_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, memvault_home: Path, vault_dir: Path
) -> None:
    from memvault import health, open_vault
    from tests.conftest import configure

    exe = fake_claude(tmp_path, monkeypatch, "refused")
    monkeypatch.delenv("MEMVAULT_MINER")
    configure(memvault_home, f"reflection:\n  miner: auto\n  claude_command: {json.dumps(str(exe))}\n")
    vault = open_vault(vault_dir)
    assert not [w for w in health.check(vault, service=False).warnings if "fell back" in w]
    miner.run(TURNS, vault.config.reflection)
    report = health.check(vault, service=False)
    (said,) = [w for w in report.warnings if "fell back" in w]
    assert said.startswith("reflection fell back to offline rules at ") and "Connection refused" in said
    assert report.miner["last_fallback"]["reason"] in said
    miner.record_success()  # a later pass that Claude answered: the warning is history
    assert not [w for w in health.check(vault, service=False).warnings if "fell back" in w]
