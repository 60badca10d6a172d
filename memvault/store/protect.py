"""What "protected" means, once for every automatic process: `protected: true`, or a path in a protected folder.

A protected entry is the user's core: reflection, supersede proposals, review's supersede, idea clean-up,
the skills index and the auto-memory import never modify, move or remove it; explicit commands change
it only after a confirmation. A capture still waiting in `_review/` or `_inbox/` is a proposal, not an
entry yet: its `protected: true` takes effect once it is approved.

Both halves fail closed. The flag is read like `private` (anything but an explicit no protects), and a
note whose frontmatter cannot be read (not UTF-8, a NUL byte, YAML that does not parse) is protected:
its flag cannot be known, so it is taken as set. A folder pattern is read the way people write it:
`skills`, `skills/`, `skills/*`, `skills/**`, `MemoryVault/skills` all protect every file in that folder
and below.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from typing import Any

from .privacy import is_private_value

PROPERTY = "protected"
QUEUES = ("_review", "_inbox")
UNREADABLE = "its frontmatter cannot be read, so memvault takes it as protected"


def is_protected(
    rel: str, meta: Mapping[str, Any] | None, folder: str, patterns: Sequence[str] = ()
) -> bool:
    """Whether the note at vault-relative `rel` is protected; `meta` is its frontmatter, None when unreadable.

    `patterns` are `vault.protected_folders` (see `covering`).
    """
    return why(rel, meta, folder, patterns) is not None


def why(rel: str, meta: Mapping[str, Any] | None, folder: str, patterns: Sequence[str] = ()) -> str | None:
    """Why `rel` is protected, in words for the user; None when it is not."""
    inside = rel.removeprefix(folder + "/") if rel.startswith(folder + "/") else None
    if inside is not None and any(part in QUEUES for part in inside.split("/")[:-1]):
        return None
    if meta is None:
        return UNREADABLE
    if flag(meta):
        return f"it has {PROPERTY}: true"
    pattern = covering(inside, patterns, folder) if inside is not None else None
    if pattern is not None:
        return f"it is in a protected folder (vault.protected_folders: {pattern.strip()})"
    return None


def flag(meta: Mapping[str, Any]) -> bool:
    """The `protected` property is set: YAML truthiness failing closed, exactly as `private` is read
    (true, yes, on, 1, a non-empty list… protect; absent, false, no, off, 0, empty do not)."""
    return is_private_value(meta.get(PROPERTY))


def covering(inside: str, patterns: Sequence[str], folder: str, *, file: bool = True) -> str | None:
    """The first of `patterns` that covers `inside` (a path under the MemoryVault `folder`), or None.

    A pattern is a glob, compared without regard to case. Leading `/`, `./` and `MemoryVault/` and
    trailing `/`, `/*` and `/**` are dropped: each names the folder. A pattern without `/` (or starting
    with `**/`) names a folder at any depth; one with `/` the path from the MemoryVault folder. A file
    is covered when a folder above it matches, or (for a pattern with `/`) its own path does
    (`skills/*.md`). With `file=False`, `inside` is a folder, covered when it or a folder above matches.
    """
    parts = inside.casefold().split("/")
    for pattern in patterns:
        if _covers(normal(pattern, folder), parts, file):
            return pattern
    return None


def normal(pattern: str, folder: str) -> tuple[bool, str]:
    """(anchored, glob): a pattern as `covering` reads it; an empty glob matches nothing."""
    text = pattern.strip().replace("\\", "/").casefold()
    while "//" in text:
        text = text.replace("//", "/")
    while text.startswith("./"):
        text = text[2:]
    anchored = text.startswith("/")
    text = text.strip("/")
    prefix = folder.casefold()
    if text == prefix:
        return True, "*"  # the whole MemoryVault folder
    if text.startswith(prefix + "/"):
        text, anchored = text[len(prefix) + 1 :], True
    if text.startswith("**/"):
        text, anchored = text[3:], False
    elif "/" in text:
        anchored = True
    while text.endswith(("/*", "/**")):
        text = text.rsplit("/", 1)[0]
    return anchored, text


def _covers(normalized: tuple[bool, str], parts: list[str], file: bool) -> bool:
    anchored, glob = normalized
    if not glob:
        return False
    folders = len(parts) - 1 if file else len(parts)
    prefixes = ["/".join(parts[:n]) for n in range(1, folders + 1)]
    if anchored:
        if file:
            prefixes.append("/".join(parts))
        return any(fnmatch.fnmatchcase(p, glob) for p in prefixes)
    return any(fnmatch.fnmatchcase(p, glob) or fnmatch.fnmatchcase(p, "*/" + glob) for p in prefixes)
