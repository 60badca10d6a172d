"""The Codex CLI miner: one `codex exec` call per window, its last message checked as strictly as Claude's answer.

The child is a plain model call: `--ephemeral` (no session file, so it is never reflected itself),
`--sandbox read-only`, every MCP server of the user's config off (`-c mcp_servers.<name>.enabled=false`),
hooks off (`--disable hooks`, and
MEMVAULT_ENABLED=0 for memvault's own), and every tool that can be switched off switched off (shell,
exec, images, web search, agents, goals, apps, plugins, skills, memories). What the client cannot
switch off is still offered to the model: its MCP-resource readers (with no server configured there is
nothing to read) and `request_user_input` (an `exec` run has no user to ask). Connection retries
are not unbounded (`--disable unbounded_connection_retries`). The prompt (`claude.PROMPT`) and one
window of the transcript (`claude.window_input`) go in as the one user message; the model's last
message (`--output-last-message`) must be the JSON of PROMPT, checked by `claude.parse_answer`.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Sequence
from pathlib import Path

from memvault.reflect.transcript import Turn

from . import claude
from .claude import Call, Window
from .headless import MinerError, run_child
from .text import clip

_BARE = re.compile(r"[\w-]+")  # a TOML key that needs no quotes
OFF = (  # features switched off (`--disable`): tools, hooks, and retrying an unreachable API forever
    "shell_tool", "unified_exec", "view_image", "image_generation", "multi_agent", "goals", "sleep_tool", "apps",
    "plugins", "skill_search", "tool_suggest", "memories", "hooks", "unbounded_connection_retries",
)  # fmt: skip


def command(executable: str, model: str, last: str) -> list[str]:
    """The child's command line; `last` is the file the model's last message is written to."""
    argv = [executable, "exec", "--ephemeral", "--skip-git-repo-check", "--sandbox", "read-only", "--color", "never",
            "-c", 'web_search="disabled"']  # fmt: skip
    for feature in OFF:
        argv += ["--disable", feature]
    for name in servers():  # `-c mcp_servers={}` would leave them on: each is switched off by name
        key = name if _BARE.fullmatch(name) else json.dumps(name)
        argv += ["-c", f"mcp_servers.{key}.enabled=false"]
    if model:
        argv += ["--model", model]
    return [*argv, "--output-last-message", last, f"{claude.PROMPT}\n\n{claude.ASK}"]


def servers() -> list[str]:
    """The MCP servers the user's Codex config names (CODEX_HOME, else ~/.codex)."""
    file = Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex") / "config.toml"
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, ValueError):
        return []
    found = re.findall(r'^\s*\[mcp_servers\.(?:"([^"]+)"|([\w-]+))[\].]', text, re.M)
    return sorted({a or b for a, b in found})


def ask(window: Window, turns: Sequence[Turn], *, executable: str, model: str, timeout: float, cwd: str) -> Call:
    """Run one `codex exec` for `window`, killed after `timeout` s; validate its answer. Failures raise MinerError."""
    last = Path(cwd) / f"answer-{uuid.uuid4().hex}.txt"
    try:
        code, stdout, stderr = run_child(command(executable, model, str(last)), claude.window_input(window),
                                         env=claude.child_env(), cwd=cwd, timeout=timeout)  # fmt: skip
        answer = last.read_text(encoding="utf-8", errors="replace") if last.exists() else ""
    finally:
        last.unlink(missing_ok=True)
    if code != 0:
        said = [line for line in (stderr or stdout).splitlines() if line.strip()]
        why = next((s for s in reversed(said) if "error" in s.lower()), said[-1] if said else "no output")
        raise MinerError(f"{executable} exited with {code}: {clip(why, 200)}", answered=bool(answer.strip()))
    if not answer.strip():
        raise MinerError(f"{executable} wrote no answer")
    try:
        return claude.parse_answer(answer, window, turns)
    except MinerError as exc:
        exc.answered = True  # the model answered, if not as asked
        raise



