"""Where each agent host keeps its configuration and its session history on this machine."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path


def codex_home(env: Mapping[str, str] | None = None) -> Path:
    """`$CODEX_HOME`, else `~/.codex` (Codex CLI's config.toml, hooks.json and sessions/)."""
    env = os.environ if env is None else env
    return Path(env["CODEX_HOME"]).expanduser() if env.get("CODEX_HOME") else Path.home() / ".codex"


def gemini_dir(env: Mapping[str, str] | None = None) -> Path:
    """`$GEMINI_CLI_HOME/.gemini`, else `~/.gemini` (Gemini CLI's settings.json and tmp/<project>/chats/)."""
    env = os.environ if env is None else env
    base = Path(env["GEMINI_CLI_HOME"]).expanduser() if env.get("GEMINI_CLI_HOME") else Path.home()
    return base / ".gemini"


def claude_json(env: Mapping[str, str] | None = None) -> Path:
    """Claude Code's user-scope MCP servers live in `~/.claude.json` (`$CLAUDE_CONFIG_DIR/.claude.json` when set)."""
    env = os.environ if env is None else env
    if env.get("CLAUDE_CONFIG_DIR"):
        return Path(env["CLAUDE_CONFIG_DIR"]).expanduser() / ".claude.json"
    return Path.home() / ".claude.json"


def claude_desktop_config(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
    if os.name == "nt":
        return Path(env.get("APPDATA") or Path.home() / "AppData" / "Roaming") / "Claude" / "claude_desktop_config.json"
    base = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else Path.home() / ".config"
    return base / "Claude" / "claude_desktop_config.json"


def cursor_mcp(env: Mapping[str, str] | None = None) -> Path:
    return Path.home() / ".cursor" / "mcp.json"


def codex_sessions(env: Mapping[str, str] | None = None) -> Path:
    """Codex rollouts: `sessions/YYYY/MM/DD/rollout-<time>-<session id>.jsonl`."""
    return codex_home(env) / "sessions"


def gemini_chats(env: Mapping[str, str] | None = None) -> list[Path]:
    """Gemini CLI chat files: `tmp/<project>/chats/session-<time>-<id8>.jsonl`, every project."""
    tmp = gemini_dir(env) / "tmp"
    return sorted(tmp.glob("*/chats")) if tmp.is_dir() else []
