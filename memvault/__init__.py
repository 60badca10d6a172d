"""MemoryVault: a permanent, human-editable memory for coding agents, kept in an Obsidian vault."""

from __future__ import annotations

from .errors import MemvaultError, SafetyError
from .vault import Entry, NoteFile, Vault, WriteResult, open_vault

__all__ = ["Entry", "MemvaultError", "NoteFile", "SafetyError", "Vault", "WriteResult", "open_vault"]
__version__ = "0.1.0"
