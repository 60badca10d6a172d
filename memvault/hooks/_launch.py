"""Shared by the hook scripts here: import memvault (the enclosing checkout's when it is not installed), run one event.

A hook must never hurt the session, so a Python without memvault makes every hook exit 0 silently.
The hooks are registered as `python -S <script>`: the prompt's short way (`memvault.hooks.fast`) needs
nothing from site-packages, and the interpreter's site set-up (the venv's packages and their `.pth` files:
1–2 ms in a regular venv, about 26 ms with an editable install's finder) runs only when a hook does its full
work.
As a Claude Code plugin (`CLAUDE_PLUGIN_DATA` set) memvault always comes from the plugin's own folder
and its dependencies from the plugin's venv (`memvault.claude.plugin_setup`); until that venv exists the
hooks exit 0 at once, and SessionStart starts installing it in the background.
"""

from __future__ import annotations

import io
import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING (mypy reads it so) without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

# The checkout, or the plugin folder (CLAUDE_PLUGIN_ROOT); os.path, as pathlib costs a prompt hook 8 ms of imports.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
_site_done = False
if sys.flags.no_site:  # this hook's own memvault (checkout or site-packages), after the standard library
    sys.path.append(ROOT)


# Handed to the warm service first (`memvault.hooks.fast`): Claude Code's events, and the other hosts' events
# (hosts.spec maps them onto the same core events; the service checks it again). Named here, not read from
# hosts.spec: the hook process imports nothing it can skip (a test keeps the two in step).
FAST_EVENTS = ("UserPromptSubmit", "SessionStart", "Stop", "SessionEnd", "Notification")
FAST_HOST_EVENTS = (
    ("codex", "SessionStart"), ("codex", "UserPromptSubmit"), ("codex", "Stop"), ("codex", "SessionEnd"),
    ("gemini", "SessionStart"), ("gemini", "BeforeAgent"), ("gemini", "AfterAgent"), ("gemini", "SessionEnd"),
)  # fmt: skip


def run(event: str) -> None:
    data = os.environ.get("CLAUDE_PLUGIN_DATA")
    if data:
        _site()
        _plugin(event, data)
    # A person at a terminal gets the full hook, which says what it expects before it reads.
    stdin, why = _hand_over(event, None) if event in FAST_EVENTS and not _at_terminal() else (None, None)
    main = _import("events").main
    sys.exit(main(event, stdin, not_served=why))


def run_host(argv: list) -> None:
    """`<host> <event>` from a host's hook command: the host adapter runs the event (Codex CLI, Gemini CLI)."""
    host, event = [*argv, "", ""][:2]
    stdin, why = _hand_over(event, host) if (host, event) in FAST_HOST_EVENTS else (None, None)
    sys.exit(_import("adapters").main(host, event, stdin, not_served=why))


def _at_terminal() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (ValueError, OSError):
        return False


def _hand_over(event: str, host: str | None) -> tuple[io.TextIOWrapper | None, str | None]:
    """Exits when the warm service ran the event; else the stdin already read and why it did not."""
    not_served = _import("fast").hand_over(event, host)
    if not_served is None:
        sys.exit(0)
    return io.TextIOWrapper(io.BytesIO(not_served[0]), encoding="utf-8"), not_served[1]


def _site() -> None:
    """The site set-up `python -S` skipped (documented as `site.main()`), once, before any full hook's imports."""
    global _site_done
    if sys.flags.no_site and not _site_done:
        _site_done = True
        import site

        site.main()


def _import(name: str) -> Any:
    """`memvault.hooks.<name>`: installed, else the package this folder is in (a plugin checkout), else exit 0.
    Anything but the short way's module gets the site set-up first (`_site`)."""
    import importlib

    if name != "fast":
        _site()

    try:
        return importlib.import_module(f"memvault.hooks.{name}")
    except ImportError:
        sys.path.insert(0, ROOT)
        try:
            return importlib.import_module(f"memvault.hooks.{name}")
        except ImportError:
            sys.exit(0)


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
