"""The memory side of the end-to-end tests with Codex CLI and Gemini CLI: a vault, Claude Code's hooks, reflection.

A vault the hooks use, Claude Code's hooks run as Claude Code runs them (by path, event JSON on stdin),
and waiting for the background reflection a session end starts.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memvault import open_vault, runtime

from ..conftest import EXAMPLE_VAULT, REPO

CLAUDE_HOOKS = REPO / "memvault" / "hooks"
# What the user tells Claude Code, and how another agent later asks about it.
CLAUDE_SAID = "From now on, always use structlog for logging in this service, never the stdlib logging module."
# What the user tells Codex CLI or Gemini CLI, and how Claude Code later asks about it.
HTTPX_SAID = "From now on always use httpx instead of requests for HTTP calls in this project."
CLAUDE_ASKS_HTTP = "Which HTTP client library should the new webhook sender use here?"
CLAUDE_ASKED = "Which logging library should I use for the new service module?"


def make_vault(root: Path, memvault_home: Path) -> Path:
    """A copy of the example vault as the configured vault: keyword-only index, offline miner, no warm service."""
    vault = root / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    memvault_home.mkdir(parents=True, exist_ok=True)
    # Keyword-only (no embedding service here), so the relevance floor is off: these tests are about what
    # crosses between hosts, and a paraphrased question shares few words with its note (the floor, with
    # vectors and without, has its own tests in tests/test_relevance.py and tests/test_hooks.py).
    (memvault_home / "config.yaml").write_text(
        f"vault:\n  root: {vault}\nembedding:\n  warm_service: false\nreflection:\n  miner: offline\n"
        "recall:\n  min_relevance: 0\n",
        encoding="utf-8",
    )
    open_vault(vault).reindex(vectors="none")
    return vault


def claude_hook(script: str, payload: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """One Claude Code hook, as settings.json runs it: the launcher by path, the event on stdin."""
    return subprocess.run(
        [sys.executable, str(CLAUDE_HOOKS / f"{script}.py")], input=json.dumps(payload), capture_output=True,
        text=True, timeout=60,
    )  # fmt: skip


def claude_transcript(path: Path, session: str, said: str) -> Path:
    """A Claude Code session transcript (the JSONL Claude Code writes) in which the user states `said`."""
    start = dt.datetime.now(dt.timezone.utc)
    turns = [("user", said), ("assistant", "Understood: structlog from now on, no stdlib logging.")]
    lines = []
    for n, (role, text) in enumerate(turns):
        stamp = (start + dt.timedelta(seconds=n)).isoformat().replace("+00:00", "Z")
        line: dict[str, Any] = {"uuid": f"{session}-{n}", "timestamp": stamp, "sessionId": session, "type": role,
                                "cwd": str(path.parent), "isSidechain": False}  # fmt: skip
        if role == "user":
            line["message"] = {"role": "user", "content": text}
        else:
            line["message"] = {"id": f"msg-{n}", "role": "assistant", "content": [{"type": "text", "text": text}]}
        lines.append(json.dumps(line))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def claude_session(folder: Path, vault: Path, session: str = "claude-session-1") -> str:
    """A whole Claude Code session through its hooks: start, the user's statement (CLAUDE_SAID), the end.

    Returns the note the session-end reflection wrote to `vault` with what the user said (structlog).
    """
    transcript = claude_transcript(folder / f"{session}.jsonl", session, CLAUDE_SAID)
    base = {"session_id": session, "transcript_path": str(transcript), "cwd": str(folder)}
    assert (
        claude_hook("session_start", {**base, "hook_event_name": "SessionStart", "source": "startup"}).returncode == 0
    )
    assert claude_hook("session_end", {**base, "hook_event_name": "SessionEnd", "reason": "exit"}).returncode == 0
    return next(p for p in reflected(session) if "structlog" in note_text(vault, p))


def reflected(session: str, timeout: float = 90.0) -> list[str]:
    """The paths the background reflection of `session` wrote, once a pass wrote something (or fails the test)."""
    written: list[str] = []

    def done() -> bool:
        for record in runtime.read_log():
            if record.get("hook") == "job:reflect" and record.get("session") == session and record.get("written"):
                written.extend(record["written"])
                return True
        return False

    wait_for(done, timeout, lambda: f"no reflection of {session} wrote anything: {jobs()}")
    return written


def host_log(host: str) -> list[dict[str, Any]]:
    """The hook log's lines of one agent (`codex`, `gemini`, `mcp`)."""
    return [r for r in runtime.read_log() if r.get("host") == host]


def claude_recall(prompt: str, session: str = "claude-later") -> str:
    """What Claude Code's prompt hook injects for `prompt` in a new session."""
    asked = claude_hook("user_prompt_submit", {"session_id": session, "hook_event_name": "UserPromptSubmit",
                                               "prompt": prompt})  # fmt: skip
    return str(json.loads(asked.stdout)["hookSpecificOutput"]["additionalContext"]) if asked.stdout.strip() else ""


def jobs() -> list[dict[str, Any]]:
    return [r for r in runtime.read_log() if str(r.get("hook", "")).startswith("job:")]


def wait_for(condition: Callable[[], bool], timeout: float, message: str | Callable[[], str]) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(message() if callable(message) else message)


def note_text(vault: Path, rel: str) -> str:
    return (vault / rel).read_text(encoding="utf-8")


def use_warm_service(memvault_home: Path) -> None:
    """Turn the warm service on in `make_vault`'s config."""
    config = memvault_home / "config.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace("warm_service: false", "warm_service: true"))


@contextmanager
def warm_service(env: dict[str, str]) -> Iterator[None]:
    """The warm service, started (and ready) in the environment a client gives its hooks: it answers only hooks
    whose config and state folders are its own."""
    serve = [sys.executable, "-m", "memvault", "serve"]
    started = subprocess.run([*serve, "--background"], env=env, capture_output=True, text=True, timeout=300)
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        yield
    finally:
        subprocess.run([*serve, "--stop"], env=env, capture_output=True, text=True, timeout=120)


def served_hooks(host: str) -> set[str]:
    """The core events of `host` that the warm service ran for the hook process."""
    return {r["hook"] for r in host_log(host) if r.get("served") is True}
