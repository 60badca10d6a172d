"""MemoryVault: a permanent, human-editable memory for coding agents, kept in an Obsidian vault.

The public names load lazily, so `import memvault.index.db` (on a hook's 300 ms path) does not pay for
the vault layer's YAML, lock and config imports, nor even for `typing`.
"""

from __future__ import annotations

TYPE_CHECKING = False  # as typing.TYPE_CHECKING (mypy reads it so), without importing typing at run time

__version__ = "0.1.0"
__all__ = ["Entry", "MemvaultError", "NoteFile", "SafetyError", "Vault", "WriteResult", "open_vault"]

if TYPE_CHECKING:
    from typing import Any

    from .errors import MemvaultError, SafetyError
    from .vault import Entry, NoteFile, Vault, WriteResult, open_vault


def __getattr__(name: str) -> Any:
    if name in ("MemvaultError", "SafetyError"):
        from . import errors

        return getattr(errors, name)
    if name in __all__:
        from . import vault

        return getattr(vault, name)
    raise AttributeError(f"module 'memvault' has no attribute {name!r}")
