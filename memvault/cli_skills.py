"""`memvault index-skills` and `memvault import-claude-memory`: bring what Claude Code already knows into the vault."""

from __future__ import annotations

from .cli import cli  # noqa: F401
