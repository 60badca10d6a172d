"""What "protected" means, once for every automatic process: `protected: true`, or a path in a protected folder.

A protected entry is the user's core: reflection, supersede proposals, review's supersede, idea clean-up,
the skills index and the auto-memory import never modify, move or remove it; explicit commands change
it only after a confirmation. A capture still waiting in `_review/` or `_inbox/` is a proposal, not an
entry yet: its `protected: true` takes effect once it is approved.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import disk

PROPERTY = "protected"
QUEUES = ("_review", "_inbox")


def is_protected(rel: str, meta: Mapping[str, Any], folder: str, patterns: tuple[str, ...] = ()) -> bool:
    """Whether the note at vault-relative `rel` (frontmatter `meta`) is protected.

    `patterns` are `vault.protected_folders`: globs under the MemoryVault `folder`, matched like
    `vault.ignore` (a glob without `/` matches any folder name at any depth, one with `/` the path).
    """
    inside = rel.removeprefix(folder + "/") if rel.startswith(folder + "/") else None
    if inside is not None and any(part in QUEUES for part in inside.split("/")[:-1]):
        return False
    if flag(meta):
        return True
    if inside is None or not patterns:
        return False
    folders = inside.rsplit("/", 1)[0] if "/" in inside else ""
    return bool(folders) and disk.is_ignored(folders, patterns)


def flag(meta: Mapping[str, Any]) -> bool:
    """The `protected` property is set: a YAML true (Obsidian's checkbox), or the text "true" / "yes"."""
    value = meta.get(PROPERTY)
    return value is True or (isinstance(value, str) and value.strip().lower() in ("true", "yes"))


def reason(rel: str, meta: Mapping[str, Any]) -> str:
    """Why `rel` is protected, in words for the user."""
    return "it has protected: true" if flag(meta) else "it is in a protected folder (vault.protected_folders)"
