"""Every hook command and MCP server memvault registered with an agent, and the interpreter each one runs.

Found from the install records in the state folder (`installs/*.json`, written by `claude.installer` and
`hosts.install`) and the files they name: Claude Code's settings.json, Codex CLI's hooks.json and
config.toml, Gemini CLI's settings.json, the MCP clients' configs. `health` reports each interpreter that
no longer exists (a removed or moved environment: every hook of that agent then fails). Reads only.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from pathlib import Path
from typing import Any, NamedTuple

from memvault import paths

_OUR_SCRIPT = re.compile(r"memvault[/\\]hooks[/\\][A-Za-z_]+\.py")
_SERVER = ["-m", "memvault", "mcp"]


class Registration(NamedTuple):
    file: Path
    what: str  # "hook UserPromptSubmit", "MCP server"
    interpreter: str


def records_dir() -> Path:
    return paths.state_dir() / "installs"


def records() -> list[tuple[Path, dict[str, Any]]]:
    """Every install record of this machine: (record file, its data); unreadable ones are skipped."""
    folder = records_dir()
    found = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            data = json.loads(path.read_bytes())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            found.append((path, data))
    return found


def recorded_file(data: dict[str, Any]) -> Path | None:
    """The agent's file an install record is about (`settings` for Claude Code's, `file` for the others)."""
    name = data.get("file") if isinstance(data.get("file"), str) else data.get("settings")
    return Path(name) if isinstance(name, str) and name else None


def registrations() -> list[Registration]:
    """memvault's hooks and MCP servers in every file an install record names."""
    found: list[Registration] = []
    files = [f for f in (recorded_file(data) for _, data in records()) if f is not None]
    for file in dict.fromkeys(files):
        try:
            text = file.read_bytes().decode("utf-8-sig", "replace")
        except OSError:
            continue
        try:
            data = _toml(text) if file.suffix == ".toml" else json.loads(text)
        except ValueError:
            continue  # a file the agent cannot read either; its own error says why
        if isinstance(data, dict):
            found += _in(file, data)
    return found


def missing_interpreters() -> list[str]:
    """One line per file whose memvault hooks or server run an interpreter that does not exist."""
    lines: dict[tuple[Path, str], list[str]] = {}
    for reg in registrations():
        if reg.interpreter and not os.path.isfile(reg.interpreter):
            lines.setdefault((reg.file, reg.interpreter), []).append(reg.what)
    return [
        f"{file}: {', '.join(whats)} run{'s' if len(whats) == 1 else ''} {interpreter}, which does not exist "
        "(the environment was moved or removed, so each of them fails): install again from the current "
        "environment (`memvault install` for that agent) or remove them (`memvault uninstall --all`)"
        for (file, interpreter), whats in lines.items()
    ]


def _in(file: Path, data: dict[str, Any]) -> list[Registration]:
    found = []
    hooks = data.get("hooks")
    for event, groups in hooks.items() if isinstance(hooks, dict) else []:
        for group in groups if isinstance(groups, list) else []:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for handler in handlers if isinstance(handlers, list) else []:
                interpreter = _hook_interpreter(handler)
                if interpreter is not None:
                    found.append(Registration(file, f"hook {event}", interpreter))
    for key in ("mcpServers", "mcp_servers"):  # JSON clients; Codex's config.toml
        servers = data.get(key)
        server = servers.get("memvault") if isinstance(servers, dict) else None
        command = server.get("command") if isinstance(server, dict) else None
        if isinstance(server, dict) and server.get("args", [])[-3:] == _SERVER and isinstance(command, str):
            found.append(Registration(file, "MCP server", command))
    return found


def _hook_interpreter(handler: Any) -> str | None:
    """The program one of our hook handlers runs (None: not ours). Claude Code's are exec form (`command` is
    the interpreter, `args` the script); Codex's and Gemini's one shell string."""
    if not isinstance(handler, dict) or not isinstance(handler.get("command"), str):
        return None
    command, args = handler["command"], handler.get("args")
    words = [a for a in args if isinstance(a, str)] if isinstance(args, list) else []
    if not _OUR_SCRIPT.search(" ".join([command, *words])):
        return None
    return command if words else first_word(command)


def first_word(command: str) -> str:
    """The program of a shell command line as `hosts.spec.shell_command` writes it (POSIX, PowerShell, cmd)."""
    powershell = re.match(r"& '((?:[^']|'')*)'", command)
    if powershell:
        return powershell[1].replace("''", "'")
    if os.name == "nt":
        cmd = re.match(r'"([^"]*)"|(\S+)', command)
        return (cmd[1] or cmd[2]) if cmd else ""
    try:
        words = shlex.split(command)
    except ValueError:
        return ""
    return words[0] if words else ""


def _toml(text: str) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(str(exc)) from None
