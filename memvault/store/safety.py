"""The safety envelope around every write: where it may go, what it may contain, how big it may be.

Each refusal is a `SafetyError` with a reason code (`path_escape`, `not_markdown`, `outside_scope`,
`too_large`, `not_utf8`, `conflict`, `secret`, `missing`). Pure apart from resolving paths on disk.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath, PureWindowsPath

from memvault.errors import SafetyError

from . import disk, secrets
from .privacy import strip_private as strip_private  # re-exported: writers strip with it


def resolve_target(root: Path, rel: str, folder: str, *, outside: bool = False) -> tuple[Path, str]:
    """Check a vault-relative path for a write; return (absolute path, normalised relative path).

    Refuses absolute paths, `..`, symlinks that lead out of the vault, non-`.md` files, and (unless
    `outside`) anything not under the MemoryVault folder.
    """
    text = rel.replace("\\", "/")
    if (
        not text
        or PurePosixPath(text).is_absolute()
        or PureWindowsPath(rel).is_absolute()
        or PureWindowsPath(rel).drive
    ):
        raise SafetyError(
            f"{rel!r}: give a path relative to the vault, not an absolute one", code="path_escape", path=rel
        )
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise SafetyError(f"{rel!r}: '..' would leave the vault", code="path_escape", path=rel)
    norm = "/".join(parts)
    if not norm.lower().endswith(".md"):
        raise SafetyError(f"{rel!r}: only markdown (.md) notes can be written", code="not_markdown", path=rel)
    target = root.joinpath(*parts)
    real_root = os.path.realpath(root)
    real = os.path.realpath(target)  # resolves symlinks in every existing component
    if real == real_root or not disk.is_inside(real, real_root):
        raise SafetyError(f"{rel!r}: resolves outside the vault (symlink?)", code="path_escape", path=rel)
    scope = os.path.join(real_root, folder)
    in_scope = real != scope and disk.is_inside(real, scope)
    if not outside and not in_scope:
        raise SafetyError(
            f"{rel!r} is outside {folder}/; memvault only changes your own notes when asked (--outside)",
            code="outside_scope",
            path=rel,
        )
    return target, norm


def check_content(text: str, *, max_bytes: int, secrets_mode: str, where: str) -> str:
    """Refuse text that is not valid Unicode or oversized; refuse (or redact, per config) secrets. Returns the text."""
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:  # e.g. an argument in another encoding, read with surrogate escapes
        raise SafetyError(
            f"{where}: the text is not valid UTF-8 (character {exc.start + 1}); nothing was written",
            code="not_utf8",
            path=where,
        ) from None
    if size > max_bytes:
        raise SafetyError(
            f"{where}: {size // 1024} KB is over the {max_bytes // 1024} KB limit", code="too_large", path=where
        )
    findings = secrets.scan(text)
    if not findings:
        return text
    if secrets_mode == "redact":
        return secrets.redact(text)[0]
    raise SafetyError(
        f"{where}: looks like it holds a secret ({secrets.describe(findings, text)}); "
        "remove it, wrap it in <private>…</private>, or set vault.secrets: redact",
        code="secret",
        path=where,
    )
