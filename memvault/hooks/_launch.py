"""Shared by the hook scripts here: import memvault (the enclosing checkout's when it is not installed), run one event.

A hook must never hurt the session, so a Python without memvault makes every hook exit 0 silently.
As a Claude Code plugin (`CLAUDE_PLUGIN_DATA` set) memvault always comes from the plugin's own folder
and its dependencies from the plugin's venv (`memvault.claude.plugin_setup`); until that venv exists the
hooks exit 0 at once, and SessionStart starts installing it in the background.
"""

import io
import os
import sys

# The checkout, or the plugin folder (CLAUDE_PLUGIN_ROOT); os.path, as pathlib costs a prompt hook 8 ms of imports.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))


FAST_EVENTS = ("UserPromptSubmit",)  # handed to the warm service first (`memvault.hooks.fast`)


def run(event: str) -> None:
    data = os.environ.get("CLAUDE_PLUGIN_DATA")
    if data:
        _plugin(event, data)
    stdin, why = None, None
    if event in FAST_EVENTS:
        try:
            from memvault.hooks import fast
        except ImportError:  # a plugin checkout without an install: use the package this folder is in
            sys.path.insert(0, ROOT)
            try:
                from memvault.hooks import fast
            except ImportError:
                sys.exit(0)
        not_served = fast.hand_over(event)
        if not_served is None:  # the service ran it
            sys.exit(0)
        stdin, why = io.TextIOWrapper(io.BytesIO(not_served[0]), encoding="utf-8"), not_served[1]
    try:
        from memvault.hooks.events import main
    except ImportError:  # a plugin checkout without an install: use the package this folder is in
        sys.path.insert(0, ROOT)
        try:
            from memvault.hooks.events import main
        except ImportError:
            sys.exit(0)
    sys.exit(main(event, stdin, not_served=why))


def run_host(argv: list) -> None:
    """`<host> <event>` from a host's hook command: the host adapter runs the event (Codex CLI, Gemini CLI)."""
    try:
        from memvault.hooks.adapters import main
    except ImportError:
        sys.path.insert(0, ROOT)
        try:
            from memvault.hooks.adapters import main
        except ImportError:
            sys.exit(0)
    sys.exit(main(*[*argv, "", ""][:2]))


def _plugin(event: str, data: str) -> None:
    """Plugin route: the plugin's memvault first on sys.path, then its venv's packages, or exit until they exist."""
    sys.path.insert(0, ROOT)
    try:
        from pathlib import Path

        from memvault.claude import plugin_setup

        reason = plugin_setup.prepare(event, Path(data), Path(ROOT))
    except Exception:  # never a hook error in the user's session
        sys.exit(0)
    if reason is None:
        return
    if reason:
        import json

        print(json.dumps({"systemMessage": reason}))
    sys.exit(0)
