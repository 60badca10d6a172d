"""What each agent host calls our hook events, how long it waits, and how it runs a command: pure data.

Standard library only, and light (no dataclasses): the hook adapter (`hooks.adapters`, on the prompt
path) and the installers (`hosts.install`) both read it. Claude Code's own entries stay in `claude.settings`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

CODEX, GEMINI = "codex", "gemini"
LAUNCHER = "host_event"  # memvault/hooks/host_event.py: `<python> host_event.py <host> <host event>`


class Event(NamedTuple):
    """One host event we hook: its name there, the core event it runs, its matcher and timeout (seconds)."""

    name: str
    core: str
    matcher: str | None
    timeout_s: int


class Host(NamedTuple):
    name: str
    title: str
    events: tuple[Event, ...]
    timeout_unit: str  # "s" or "ms": what the host's `timeout` field counts
    quiet_prompt: bool  # the host shows a hook's systemMessage as a warning: keep per-prompt status out of it

    def event(self, name: str) -> Event | None:
        return next((e for e in self.events if e.name == name), None)

    def timeout(self, event: Event) -> int:
        return event.timeout_s * 1000 if self.timeout_unit == "ms" else event.timeout_s


# Codex CLI 0.169: SessionEnd (and Interrupt) timeouts are clamped to 3 s, so 3 is asked for outright.
# It has no idle notification; a crashed session is recovered by the next session's start job.
HOSTS: dict[str, Host] = {
    CODEX: Host(
        CODEX,
        "Codex CLI",
        (
            Event("SessionStart", "SessionStart", "startup|resume|clear", 10),
            Event("UserPromptSubmit", "UserPromptSubmit", None, 5),
            Event("Stop", "Stop", None, 5),
            Event("SessionEnd", "SessionEnd", None, 3),
        ),
        timeout_unit="s",
        quiet_prompt=True,
    ),
    # Gemini CLI 0.61: BeforeAgent runs after the prompt is submitted and before planning (UserPromptSubmit),
    # AfterAgent when the agent's turn ends (Stop); timeouts are milliseconds.
    GEMINI: Host(
        GEMINI,
        "Gemini CLI",
        (
            Event("SessionStart", "SessionStart", None, 10),
            Event("BeforeAgent", "UserPromptSubmit", None, 5),
            Event("AfterAgent", "Stop", None, 5),
            Event("SessionEnd", "SessionEnd", None, 5),
        ),
        timeout_unit="ms",
        quiet_prompt=False,
    ),
}


def shell_command(argv: Sequence[str], flavour: str) -> str:
    """One command line that the host's shell runs as `argv` (both hosts ignore an `args` array).

    `posix`: `sh`/`bash -c` (Codex and Gemini on Linux and macOS); `powershell`: Gemini on Windows
    (a quoted program needs the call operator); `cmd`: `cmd /C` (quotes only where a space needs them).
    """
    import shlex  # here, not at the top: the hook adapter imports this module on the prompt path
    import subprocess

    if flavour == "posix":
        return shlex.join(argv)
    if flavour == "powershell":
        return "& " + " ".join("'" + a.replace("'", "''") + "'" for a in argv)
    if flavour == "cmd":
        return subprocess.list2cmdline(list(argv))
    raise ValueError(f"unknown shell flavour {flavour!r}")


_OURS = re.compile(
    r"memvault[/\\]hooks[/\\]" + LAUNCHER + r"\.py['\"]?\s+'?(?P<host>[a-z]+)'?\s+'?(?P<event>[A-Za-z]+)'?\s*$"
)


def our_hook(handler: object) -> tuple[str, str] | None:
    """(host, event) when a hook handler runs our launcher, else None; any interpreter, quoting or OS."""
    command = handler.get("command") if isinstance(handler, dict) else None
    match = _OURS.search(command) if isinstance(command, str) else None
    return (match["host"], match["event"]) if match else None
