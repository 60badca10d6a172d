"""The guard that keeps protected entries out of automatic changes: every change is checked before its journal.

What "protected" means is `store.protect`. A change that would overwrite, move or delete a protected
file is refused with `ProtectedError` unless the caller waived the guard for an explicit, confirmed
command (`Vault.protection_waived()`). Creating a new file is never refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memvault.errors import MemvaultError, ProtectedError
from memvault.store import disk, journal, notes, protect


def check(root: Path, folder: str, patterns: tuple[str, ...], intent: journal.Intent) -> None:
    """Refuse `intent` when one of the existing files it changes or removes is protected."""
    for op in intent.ops:
        if op.before == journal.ABSENT:
            continue
        meta = meta_of(root / op.path) if op.path.lower().endswith(".md") else {}
        if protect.is_protected(op.path, meta, folder, patterns):
            raise ProtectedError(
                f"{op.path} is protected ({protect.reason(op.path, meta)}): memvault never changes it on its own; "
                "an explicit command changes it after you confirm",
                path=op.path,
            )


def meta_of(path: Path) -> Mapping[str, Any]:
    """The frontmatter of a note on disk ({} when it has none or cannot be read)."""
    try:
        return notes.parse(disk.read_text(path)).meta
    except MemvaultError:
        return {}
