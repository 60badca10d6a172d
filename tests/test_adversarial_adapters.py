"""Host adapters and transcript readers given FIFOs, devices and folders named like the hosts' files.

A hook or a reflection opens paths a host event names or a glob finds. Each must open only regular
files, without blocking: a FIFO named like a Gemini chat, a Codex rollout or a Claude Code transcript
is skipped or refused at once, never read (an open FIFO waits for a writer that never comes).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memvault import runtime

from .adversarial import say
from .conftest import REPO
from .test_hooks import hook_vault  # the example vault, keyword-only
from .test_host_hooks import FIXTURES, recorded

__all__ = ["hook_vault"]

pytestmark = [
    pytest.mark.adversarial,
    pytest.mark.slow,  # about forty hook and job processes
    pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX"),
]

HOST_TIMEOUT_S = 10.0  # what Gemini CLI and Codex give a hook before they give up on it
QUICK_S = 5.0  # a hook that meets a FIFO must answer well inside the host's timeout
REAL = "session-2026-11-23T16-05-51f3a02d.jsonl"  # the resumed session's own chat file
STRAY = "session-2026-11-23T16-06-51f3a02d.jsonl"  # the nearly empty one Gemini hands SessionStart on resume
OLDER = "session-2026-11-23T16-04-51f3a02d.jsonl"  # sorts (and is dated) before the real one
# One file name per host, as each host names its transcripts.
NAMES = {
    "claude": "0b4c6d2e-1f3a-4b5c-8d9e-0a1b2c3d4e5f.jsonl",
    "codex": "rollout-2026-11-23T16-01-11-01a20923-d05c-7000-840f-bbc0244fbef1.jsonl",
    "gemini": REAL,
}


def timed_run(host: str, event: str, stdin: dict[str, object]) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    try:
        result = run_within(host, event, stdin, HOST_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the {host} {event} hook still ran after {HOST_TIMEOUT_S:g}s (blocked on a FIFO?)")
    return result, time.monotonic() - started


def run_within(host: str, event: str, stdin: dict[str, object], timeout: float) -> subprocess.CompletedProcess[str]:
    """`test_host_hooks.run`, with the host's own timeout instead of a minute."""
    from memvault.claude.settings import INTERPRETER_FLAGS

    launcher = REPO / "memvault" / "hooks" / "host_event.py"
    return subprocess.run(
        [sys.executable, *INTERPRETER_FLAGS, str(launcher), host, event],
        input=json.dumps(stdin), capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def resumed_chats(folder: Path) -> Path:
    """The resumed Gemini session's two chat files (its own, older; the stray new one) in `folder`."""
    folder.mkdir()
    for name in (REAL, STRAY):
        shutil.copy(FIXTURES / "gemini" / "resumed" / name, folder / name)
    os.utime(folder / REAL, (2, 2))
    return folder / STRAY


def test_gemini_resume_skips_a_fifo_named_like_the_sessions_chat_file(hook_vault: Path, tmp_path: Path) -> None:
    stray = resumed_chats(tmp_path / "chats")
    os.mkfifo(stray.parent / OLDER)
    os.utime(stray.parent / OLDER, (1, 1))  # oldest: the first candidate the adapter looks at
    event = recorded("gemini", "SessionStart:resume", transcript_path=str(stray))
    result, took = timed_run("gemini", "SessionStart", event)
    assert result.returncode == 0 and took < QUICK_S, (took, result.stderr)
    marker = runtime.read_json(runtime.marker(event["session_id"], "start"))
    assert marker["transcript_path"] == str(stray.parent / REAL)  # the FIFO skipped, the real chat found
    say(f"gemini resume beside a FIFO chat file: answered in {took:.2f}s")


@pytest.mark.parametrize("kind", ["fifo", "symlink to a fifo", "device", "folder", "dangling symlink"])
def test_gemini_resume_with_only_a_strange_entry_keeps_the_given_chat_file(
    kind: str, hook_vault: Path, tmp_path: Path
) -> None:
    chats = tmp_path / "chats"
    chats.mkdir()
    stray = chats / STRAY
    shutil.copy(FIXTURES / "gemini" / "resumed" / STRAY, stray)
    odd = chats / REAL
    if kind == "fifo":
        os.mkfifo(odd)
    elif kind == "symlink to a fifo":
        os.mkfifo(tmp_path / "pipe")
        odd.symlink_to(tmp_path / "pipe")
    elif kind == "device":
        odd.symlink_to(os.devnull)
    elif kind == "folder":
        odd.mkdir()
    else:
        odd.symlink_to(tmp_path / "gone.jsonl")
    event = recorded("gemini", "SessionStart:resume", transcript_path=str(stray))
    result, took = timed_run("gemini", "SessionStart", event)
    assert result.returncode == 0 and took < QUICK_S, (took, result.stderr)
    marker = runtime.read_json(runtime.marker(event["session_id"], "start"))
    assert marker["transcript_path"] == str(stray)


READ = """
import sys, time
from pathlib import Path
from memvault.reflect import readers
started = time.monotonic()
try:
    readers.read(Path(sys.argv[1]))
except OSError as exc:
    print(type(exc).__name__, round(time.monotonic() - started, 3))
else:
    print("read", round(time.monotonic() - started, 3))
"""


@pytest.mark.parametrize("host", sorted(NAMES))
@pytest.mark.parametrize("kind", ["fifo", "symlink to a fifo", "device"])
def test_every_transcript_reader_refuses_what_is_not_a_regular_file_at_once(
    host: str, kind: str, tmp_path: Path
) -> None:
    path = tmp_path / NAMES[host]
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink to a fifo":
        os.mkfifo(tmp_path / "pipe")
        path.symlink_to(tmp_path / "pipe")
    else:
        path.symlink_to(os.devnull)
    try:
        result = subprocess.run(
            [sys.executable, "-c", READ, str(path)], capture_output=True, text=True, timeout=HOST_TIMEOUT_S,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"reading a {kind} named like a {host} transcript blocked for {HOST_TIMEOUT_S:g}s")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[0] == "NotRegularFile", result.stdout


@pytest.mark.parametrize(("host", "event", "key"), [
    ("claude", "Stop", None), ("claude", "SessionEnd", None), ("codex", "Stop", "Stop"),
    ("gemini", "AfterAgent", "AfterAgent"), ("gemini", "SessionEnd", "SessionEnd:exit"),
])  # fmt: skip
def test_end_hooks_and_their_reflection_job_never_block_on_a_fifo_transcript(
    host: str, event: str, key: str | None, hook_vault: Path, tmp_path: Path
) -> None:
    fifo = tmp_path / NAMES[host]
    os.mkfifo(fifo)
    session = "fifo-session"
    started = time.monotonic()
    if host == "claude":
        hook = REPO / "memvault" / "hooks" / ("stop.py" if event == "Stop" else "session_end.py")
        stdin = {"session_id": session, "transcript_path": str(fifo), "hook_event_name": event}
        result = subprocess.run([sys.executable, str(hook)], input=json.dumps(stdin), capture_output=True, text=True,
                                timeout=HOST_TIMEOUT_S)  # fmt: skip
    else:
        assert key is not None
        result = run_within(host, event, recorded(host, key, transcript_path=str(fifo)), HOST_TIMEOUT_S)
    assert result.returncode == 0 and time.monotonic() - started < QUICK_S, result.stderr
    job = [sys.executable, "-m", "memvault.hooks.jobs", "reflect", f"--session={session}", f"--transcript={fifo}"]
    done = subprocess.run([*job, "--final"], capture_output=True, text=True, timeout=HOST_TIMEOUT_S,
                          env={**os.environ, "PYTHONPATH": str(REPO)})  # fmt: skip
    assert done.returncode == 0, done.stderr
    record = [r for r in runtime.read_log() if r.get("hook") == "job:reflect"][-1]
    assert record["result"] in ("skipped", "error") and "Traceback" not in done.stderr, record
