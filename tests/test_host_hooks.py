"""Codex CLI and Gemini CLI hooks as their clients run them: real launcher processes fed the clients' real stdin."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from memvault import runtime
from memvault.claude.settings import INTERPRETER_FLAGS

from .conftest import REPO
from .test_hooks import hook_vault  # the example vault, keyword-only, its keyword floor lowered

__all__ = ["hook_vault"]

LAUNCHER = REPO / "memvault" / "hooks" / "host_event.py"
FIXTURES = REPO / "tests" / "fixtures" / "hosts"
STDIN = json.loads((FIXTURES / "hook-stdin.json").read_text(encoding="utf-8"))  # recorded from the real clients
FLAKY = "how do I fix a flaky test that fails only sometimes on CI?"


def run(host: str, event: str, stdin: str | dict[str, Any]) -> subprocess.CompletedProcess[str]:
    text = stdin if isinstance(stdin, str) else json.dumps(stdin)
    return subprocess.run(
        [sys.executable, *INTERPRETER_FLAGS, str(LAUNCHER), host, event],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
    )


def recorded(host: str, key: str, **changes: Any) -> dict[str, Any]:
    return {**STDIN[host][key], **changes}


def answer(result: subprocess.CompletedProcess[str], event: str) -> tuple[str, dict[str, Any]]:
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert set(out) <= {"hookSpecificOutput", "systemMessage"}  # Codex rejects any other top-level key
    inner = out["hookSpecificOutput"]
    assert inner["hookEventName"] == event and set(inner) == {"hookEventName", "additionalContext"}
    return inner["additionalContext"], out


def test_codex_session_start_and_prompt_get_the_notes_in_codex_shape(hook_vault: Path) -> None:
    context, out = answer(run("codex", "SessionStart", recorded("codex", "SessionStart:startup")), "SessionStart")
    assert "Core dev flow" in context and "systemMessage" in out  # queue counts, shown once per session
    prompt = recorded("codex", "UserPromptSubmit", prompt=FLAKY)
    context, out = answer(run("codex", "UserPromptSubmit", prompt), "UserPromptSubmit")
    assert "bisecting-flaky-tests.md" in context and "dev-flow.md" not in context
    assert "systemMessage" not in out  # Codex shows it as a warning on every prompt: left out
    again = run("codex", "UserPromptSubmit", prompt)
    assert "bisecting-flaky-tests.md" not in again.stdout  # deduplicated within the Codex session
    records = [r for r in runtime.read_log() if r.get("host") == "codex"]
    assert [r["hook"] for r in records] == ["SessionStart", "UserPromptSubmit", "UserPromptSubmit"]
    marker = runtime.read_json(runtime.marker(STDIN["codex"]["SessionStart:startup"]["session_id"], "start"))
    assert marker["transcript_path"].endswith(".jsonl")


def test_gemini_before_agent_strips_the_session_start_context_glued_onto_the_prompt(hook_vault: Path) -> None:
    start = recorded("gemini", "SessionStart:startup")
    context, _ = answer(run("gemini", "SessionStart", start), "SessionStart")
    glued = f"<hook_context>{context}</hook_context>\n\n{FLAKY}"  # what headless Gemini CLI hands BeforeAgent
    context, out = answer(run("gemini", "BeforeAgent", recorded("gemini", "BeforeAgent", prompt=glued)), "BeforeAgent")
    assert "bisecting-flaky-tests.md" in context and out["systemMessage"].startswith("Loaded ")
    logged = [r for r in runtime.read_log() if r.get("hook") == "UserPromptSubmit"][-1]
    assert logged["host"] == "gemini" and logged["prompt"].startswith("how do I fix a flaky test")


def test_gemini_resume_marks_the_real_chat_file_not_the_stray_one(hook_vault: Path, tmp_path: Path) -> None:
    chats = tmp_path / "chats"
    chats.mkdir()
    for name in ("session-2026-11-23T16-05-51f3a02d.jsonl", "session-2026-11-23T16-06-51f3a02d.jsonl"):
        shutil.copy(FIXTURES / "gemini" / "resumed" / name, chats / name)
    os.utime(chats / "session-2026-11-23T16-05-51f3a02d.jsonl", (1, 1))  # the session's own, older file
    stray = chats / "session-2026-11-23T16-06-51f3a02d.jsonl"
    event = recorded("gemini", "SessionStart:resume", transcript_path=str(stray))
    assert run("gemini", "SessionStart", event).returncode == 0
    marker = runtime.read_json(runtime.marker(event["session_id"], "start"))
    assert marker["transcript_path"] == str(chats / "session-2026-11-23T16-05-51f3a02d.jsonl")


@pytest.mark.parametrize(
    ("host", "event"), [("codex", "Stop"), ("codex", "SessionEnd"), ("gemini", "AfterAgent"), ("gemini", "SessionEnd")]
)
def test_end_of_turn_and_session_print_nothing_and_schedule_reflection(host: str, event: str, hook_vault: Path) -> None:
    end = "SessionEnd:exit" if host == "gemini" else "SessionEnd:other"
    key = {"Stop": "Stop", "AfterAgent": "AfterAgent"}.get(event, end)
    result = run(host, event, recorded(host, key, transcript_path="/nonexistent/t.jsonl"))
    assert result.returncode == 0 and result.stdout == ""
    record = [r for r in runtime.read_log() if r.get("host") == host][-1]
    assert record["scheduled"].startswith("reflect") and record["result"] == "success"


@pytest.mark.parametrize("stdin", ["", "not json", "[1]", '{"session_id": 5, "prompt": ["x"]}'])
def test_garbage_unknown_hosts_and_events_exit_0_quietly(stdin: str, hook_vault: Path) -> None:
    for host, event in (("codex", "UserPromptSubmit"), ("gemini", "BeforeAgent"), ("cursor", "Start"), ("codex", "X")):
        result = run(host, event, stdin)
        assert result.returncode == 0 and result.stderr == ""
        assert result.stdout == "" or json.loads(result.stdout)
    assert any(r.get("reason", "").startswith("unknown hook event") for r in runtime.read_log())


def test_the_host_launcher_never_imports_click_rich_yaml_or_the_model(hook_vault: Path) -> None:
    run("codex", "SessionStart", recorded("codex", "SessionStart:startup"))  # fills the settings cache
    probe = (
        "import runpy, sys\nsys.argv = sys.argv[1:]\n"
        "try:\n    runpy.run_path(sys.argv[0], run_name='__main__')\nexcept SystemExit:\n    pass\n"
        "heavy = {'click', 'rich', 'yaml', 'torch', 'sentence_transformers', 'numpy', 'mcp'}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy), file=sys.stderr)\n"
    )
    for host, event in (("codex", "UserPromptSubmit"), ("gemini", "BeforeAgent")):
        key = "UserPromptSubmit" if host == "codex" else "BeforeAgent"
        result = subprocess.run(
            [sys.executable, *INTERPRETER_FLAGS, "-c", probe, str(LAUNCHER), host, event],
            input=json.dumps(recorded(host, key, prompt=FLAKY)),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.stderr.strip().splitlines()[-1] == "[]", result.stderr


def test_a_crashed_codex_session_is_reflected_from_its_rollout_by_the_next_start(
    hook_vault: Path, tmp_path: Path
) -> None:
    rollout = tmp_path / "rollout.jsonl"
    shutil.copy(FIXTURES / "codex" / "rollout-2026-11-23T16-01-11-01a20923-d05c-7000-840f-bbc0244fbef1.jsonl", rollout)
    start = recorded("codex", "SessionStart:startup", transcript_path=str(rollout))
    assert run("codex", "SessionStart", start).returncode == 0
    session = start["session_id"]
    wait_for_job("start", 1)
    two_hours_ago = time.time() - 7200  # … then Codex died without Stop or SessionEnd
    for path in (rollout, runtime.marker(session, "start")):
        os.utime(path, (two_hours_ago, two_hours_ago))
    later = recorded("gemini", "SessionStart:startup", transcript_path=str(tmp_path / "none.jsonl"))
    assert run("gemini", "SessionStart", later).returncode == 0  # any agent's next session sweeps
    wait_for_job("start", 2)
    sweep = [r for r in runtime.read_log() if r.get("hook") == "job:start"][-1]
    assert sweep["reflected_sessions"] == [session], sweep
    assert runtime.marker(session, "reflected").exists()
    from memvault import open_vault

    captured = [e for e in open_vault(hook_vault).list() if "httpx" in e.title.lower() or "httpx" in e.path]
    assert captured, "the preference stated in the crashed Codex session was not captured"


def wait_for_job(kind: str, count: int, timeout: float = 90) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if len([r for r in runtime.read_log() if r.get("hook") == f"job:{kind}"]) >= count:
            return
        time.sleep(0.2)
    raise AssertionError(f"job:{kind} did not run {count}×: {list(runtime.read_log())[-3:]}")
