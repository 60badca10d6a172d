"""The guard that keeps protected entries out of automatic changes: every change is checked before its journal.

What "protected" means is `store.protect`. A change that would overwrite, move or delete a protected
file is refused with `ProtectedError` unless the caller waived the guard for an explicit, confirmed
command (`Vault.protection_waived()`). Creating a new file is never refused. A note whose frontmatter
cannot be read is protected (it fails closed): its `protected` flag cannot be known.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memvault.errors import MemvaultError, ProtectedError
from memvault.store import disk, journal, notes, protect

_FLAG_KEY = re.compile(rf"""^["']?{protect.PROPERTY}["']?[ \t]*:(?:[ \t]|$)""", re.MULTILINE)


def check(root: Path, folder: str, patterns: Sequence[str], intent: journal.Intent) -> None:
    """Refuse `intent` when one of the existing files it changes or removes is protected."""
    for op in intent.ops:
        if op.before == journal.ABSENT:
            continue
        reason = why(root, folder, patterns, op.path)
        if reason is not None:
            raise ProtectedError(
                f"{op.path} is protected ({reason}): memvault never changes it on its own; "
                "an explicit command changes it after you confirm",
                path=op.path,
            )


def why(
    root: Path, folder: str, patterns: Sequence[str], rel: str, meta: Mapping[str, Any] | None = None
) -> str | None:
    """Why the file `rel` is protected (None when it is not), from its frontmatter on disk and `meta`, the
    frontmatter a caller read of it (either one saying protected is enough)."""
    on_disk = meta_of(root / rel) if rel.lower().endswith(".md") else {}
    if meta is not None and on_disk is not None:
        reason = protect.why(rel, meta, folder, patterns)
        if reason is not None:
            return reason
    return protect.why(rel, on_disk, folder, patterns)


def meta_of(path: Path) -> Mapping[str, Any] | None:
    """The frontmatter of a note on disk: {} when the file is missing or has none, None when it cannot be
    read (not a regular file, too large, not UTF-8, a NUL byte anywhere, YAML that does not parse, or a
    `protected` key written twice, where YAML keeps the last and Obsidian may show either)."""
    try:
        text = disk.read_text(path)
    except MemvaultError as exc:
        return {} if exc.code == "missing" else None
    if "\x00" in text:
        return None
    note = notes.parse(text)
    if not note.ok or len(_FLAG_KEY.findall(note.frontmatter or "")) > 1:
        return None
    return note.meta


def unmatched(memory_dir: Path, folder: str, patterns: Sequence[str]) -> list[str]:
    """The `vault.protected_folders` patterns that cover no folder (and no file) under `memory_dir`."""
    left = list(dict.fromkeys(patterns))
    for here, dirs, names in os.walk(memory_dir):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        inside = Path(here).relative_to(memory_dir).as_posix()
        base = "" if inside == "." else inside + "/"
        paths = [(base + d, False) for d in dirs] + [(base + n, True) for n in names]
        left = [p for p in left if not any(protect.covering(rel, (p,), folder, file=f) for rel, f in paths)]
        if not left:
            break
    return left
