"""The Gemini CLI miner: one `gemini -p` call per window, its answer checked as strictly as Claude's.

The child is a plain model call. It is given settings of its own as the system settings file
(`GEMINI_CLI_SYSTEM_SETTINGS_PATH`, which wins over the user's): no core tools (`tools.core: []`, so
the request declares no tool at all), no MCP servers (`mcpServers: {}`, and
`--allowed-mcp-server-names` naming none), no hooks (`hooksConfig.enabled: false`, and
MEMVAULT_ENABLED=0 for memvault's own), no checkpoints, no skills, no extensions (`-e none`).
The client records every session; the call gets a session id of its own (`--session-id`) and the
chat file of that id is deleted when the call ends, answered or not, so it is never reflected itself.
It runs from memvault's own empty folder, trusted for this call only (`--skip-trust`). The system
prompt is `claude.PROMPT` (`GEMINI_SYSTEM_MD`); one window of the transcript (`claude.window_input`)
is read on standard input; the answer (`-o json`, its `response`) is checked by `claude.parse_answer`.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Sequence
from pathlib import Path

from memvault.reflect.transcript import Turn

from . import claude
from .claude import Call, Window
from .headless import MinerError, run_child
from .text import clip

SETTINGS = {
    "tools": {"core": []},
    "mcpServers": {},
    "hooksConfig": {"enabled": False},
    "general": {"checkpointing": {"enabled": False}},
    "skills": {"enabled": False},
}


def command(executable: str, model: str, session: str) -> list[str]:
    """The child's command line (the system prompt and settings are files named in its environment)."""
    argv = [executable, "-p", claude.ASK, "--output-format", "json", "--skip-trust", "--session-id", session,
            "--allowed-mcp-server-names", "none", "--extensions", "none"]  # fmt: skip
    return [*argv, "--model", model] if model else argv


def child_env(cwd: str) -> dict[str, str]:
    """The child's environment: memvault's hooks off, the miner's settings and system prompt (written into `cwd`)."""
    folder = Path(cwd)
    (folder / "settings.json").write_text(json.dumps(SETTINGS), encoding="utf-8")
    (folder / "system.md").write_text(claude.PROMPT, encoding="utf-8")
    return {**claude.child_env(), "GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(folder / "settings.json"),
            "GEMINI_SYSTEM_MD": str(folder / "system.md")}  # fmt: skip


def ask(window: Window, turns: Sequence[Turn], *, executable: str, model: str, timeout: float, cwd: str) -> Call:
    """Run one `gemini -p` for `window`, killed after `timeout` s; validate its answer. Failures raise MinerError."""
    session = str(uuid.uuid4())
    try:
        code, stdout, stderr = run_child(command(executable, model, session), claude.window_input(window),
                                         env=child_env(cwd), cwd=cwd, timeout=timeout)  # fmt: skip
    finally:
        forget(session)
    try:
        report = json.loads(stdout)
    except ValueError:
        report = None
    report = report if isinstance(report, dict) else {}
    if code != 0 or "error" in report:
        error = report.get("error")
        said = error.get("message") if isinstance(error, dict) else None
        lines = [line for line in (stderr or stdout).splitlines() if line.strip()]
        said = said if isinstance(said, str) and said else (lines[-1] if lines else "no output")
        raise MinerError(f"{executable} exited with {code}: {clip(said, 200)}", answered=_spent(report))
    answer = report.get("response")
    if not isinstance(answer, str):
        raise MinerError("the output has no 'response' text", answered=True)
    try:
        return claude.parse_answer(answer, window, turns)
    except MinerError as exc:
        exc.answered = True  # the model answered, if not as asked
        raise


def chats(session: str) -> list[Path]:
    """The chat files Gemini CLI recorded for `session` (under GEMINI_CLI_HOME, else the home folder)."""
    home = Path(os.environ.get("GEMINI_CLI_HOME") or Path.home()) / ".gemini" / "tmp"
    return [p for p in home.glob(f"*/chats/session-*-{session[:8]}.json*") if session in _head(p)]


def forget(session: str) -> None:
    """Delete the chat file(s) the call's session left."""
    for path in chats(session):
        path.unlink(missing_ok=True)


def _head(path: Path) -> str:
    try:
        with path.open("r", encoding="utf-8", errors="replace") as handle:
            return handle.read(4096)
    except OSError:
        return ""


def _spent(report: dict[str, object]) -> bool:
    """Whether a failed call's report says the model produced something (and so it cost)."""
    stats = report.get("stats")
    models = stats.get("models") if isinstance(stats, dict) else None
    for one in (models or {}).values() if isinstance(models, dict) else ():
        tokens = one.get("tokens") if isinstance(one, dict) else None
        if isinstance(tokens, dict) and isinstance(tokens.get("candidates"), int) and tokens["candidates"] > 0:
            return True
    return False
