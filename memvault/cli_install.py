"""`memvault install` and `memvault uninstall`: connect Claude Code to the vault (hooks, skill, config), or undo it."""

from __future__ import annotations

from .cli import cli  # noqa: F401
