"""Shared by the hook scripts here: import memvault (the enclosing checkout's when it is not installed), run one event.

A hook must never hurt the session, so a Python without memvault makes every hook exit 0 silently.
As a Claude Code plugin (`CLAUDE_PLUGIN_DATA` set) memvault always comes from the plugin's own folder
and its dependencies from the plugin's venv (`memvault.claude.plugin_setup`); until that venv exists the
hooks exit 0 at once, and SessionStart starts installing it in the background.
"""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the checkout, or the plugin folder (CLAUDE_PLUGIN_ROOT)


def run(event: str) -> None:
    data = os.environ.get("CLAUDE_PLUGIN_DATA")
    if data:
        _plugin(event, Path(data))
    try:
        from memvault.hooks.events import main
    except ImportError:  # a plugin checkout without an install: use the package this folder is in
        sys.path.insert(0, str(ROOT))
        try:
            from memvault.hooks.events import main
        except ImportError:
            sys.exit(0)
    sys.exit(main(event))


def run_host(argv: list) -> None:
    """`<host> <event>` from a host's hook command: the host adapter runs the event (Codex CLI, Gemini CLI)."""
    try:
        from memvault.hooks.adapters import main
    except ImportError:
        sys.path.insert(0, str(ROOT))
        try:
            from memvault.hooks.adapters import main
        except ImportError:
            sys.exit(0)
    sys.exit(main(*[*argv, "", ""][:2]))


def _plugin(event: str, data: Path) -> None:
    """Plugin route: the plugin's memvault first on sys.path, then its venv's packages, or exit until they exist."""
    sys.path.insert(0, str(ROOT))
    try:
        from memvault.claude import plugin_setup

        reason = plugin_setup.prepare(event, data, ROOT)
    except Exception:  # never a hook error in the user's session
        sys.exit(0)
    if reason is None:
        return
    if reason:
        import json

        print(json.dumps({"systemMessage": reason}))
    sys.exit(0)
