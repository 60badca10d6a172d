"""The Claude miner's own logic without a client: windows, what a window shows, the strict answer check, the choice.

Runs of the real client against a scripted Messages API are in tests/e2e/test_claude_miner.py.
"""

from __future__ import annotations

import itertools
import json
import os
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
    assert json.loads(value("--settings")) == {"disableAllHooks": True} and value("--max-turns") == "1"
    assert value("--system-prompt") == claude.PROMPT
    assert {"--no-session-persistence", "--strict-mcp-config", "--disable-slash-commands"} <= set(argv)
    env = claude.child_env({"PATH": "/bin", "CLAUDECODE": "1", "MEMVAULT_ENABLED": "1"})
    assert env == {"PATH": "/bin", "MEMVAULT_ENABLED": "0"}  # memvault's own hooks are off in the child


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
