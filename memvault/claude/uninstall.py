"""`memvault uninstall` for Claude Code: our hooks out of settings.json (byte for byte when nothing else
changed since), our skills removed, the install manifest and backup cleaned up."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memvault.errors import MemvaultError
from memvault.store import disk

from . import registrations, skillfile
from . import settings as cs
from .installer import Target, load_manifest, read_bytes, real_path


@dataclass
class Removal:
    """What `uninstall` takes out (or would)."""

    target: Target
    events: list[str]
    settings_action: str  # unchanged, restored (original bytes), rewritten (your later changes kept), deleted
    new_bytes: bytes | None
    skills: list[Path]
    backup_removed: Path | None
    manifest: Path | None
    backup_kept: Path | None = None  # the pre-install copy, left in place when your later changes were kept
    empty_dirs: list[str] = field(default_factory=list)  # folders install created, removed when left empty

    @property
    def changed(self) -> bool:
        return bool(self.settings_action != "unchanged" or self.skills or self.manifest)

    def as_dict(self) -> dict[str, Any]:
        return {
            "host": "claude-code",
            "scope": self.target.scope,
            "settings": str(self.target.settings),
            "removed_hooks": self.events,
            "settings_action": self.settings_action,
            "removed_skills": [str(p) for p in self.skills],
            "backup_removed": str(self.backup_removed) if self.backup_removed else None,
            "backup_kept": str(self.backup_kept) if self.backup_kept else None,
            "changed": self.changed,
        }


def plan_uninstall(target: Target) -> Removal:
    """Work out what to take out of the settings file and skills folder; writes nothing."""
    manifest = load_manifest(target)
    before = read_bytes(target.settings)
    text = before.decode("utf-8-sig") if before is not None else ""
    current = cs.parse(text, str(target.settings))
    created = frozenset(manifest.get("created_events", [])) if manifest else None
    result = cs.unmerge(current, created, manifest.get("created_hooks_key", True) if manifest else True)

    action, new_bytes, backup_removed = "unchanged", None, None
    if result.removed:
        original = _original(manifest)
        if original is not None and result.data == original[0]:
            if original[1] is None:
                action = "deleted"
            else:
                action, new_bytes = "restored", original[1]
                backup_removed = Path(manifest["backup"]) if manifest and manifest.get("backup") else None
        else:
            action, new_bytes = "rewritten", cs.dump(result.data, like=text).encode("utf-8")
    skills = skillfile.our_skills(target.skills_dir)
    manifest_path = target.manifest() if manifest is not None else None
    backup = Path(manifest["backup"]) if manifest and isinstance(manifest.get("backup"), str) else None
    return Removal(
        target,
        list(result.removed),
        action,
        new_bytes,
        skills,
        backup_removed,
        manifest_path,
        backup_kept=backup if backup and backup != backup_removed and backup.exists() else None,
        empty_dirs=list(manifest.get("created_dirs") or []) if manifest else [],
    )


def recorded_targets() -> list[Target]:
    """Every Claude Code settings file an install record names (each scope and project installed into)."""
    found = []
    for _, data in registrations.records():
        settings, scope = data.get("settings"), data.get("scope")
        if data.get("host") == "claude-code" and isinstance(settings, str) and scope in ("user", "project"):
            found.append(Target(scope, Path(settings), Path(settings).parent / "skills"))
    return found


def apply_uninstall(removal: Removal) -> None:
    settings = removal.target.settings
    if removal.settings_action == "deleted":
        disk.remove(real_path(settings))
    elif removal.new_bytes is not None:
        disk.atomic_write(real_path(settings), removal.new_bytes)
    for skill in removal.skills:
        skillfile.remove_skill(skill)
    if removal.backup_removed is not None:
        disk.remove(removal.backup_removed)
    if removal.manifest is not None:
        disk.remove(removal.manifest)
    for folder in removal.empty_dirs:
        with contextlib.suppress(OSError):
            Path(folder).rmdir()  # only when empty


def _original(manifest: dict[str, Any] | None) -> tuple[dict[str, Any], bytes | None] | None:
    """The settings data and bytes from before the first install, when known."""
    if manifest is None:
        return None
    if not manifest.get("settings_existed"):
        return {}, None
    backup = manifest.get("backup")
    raw = read_bytes(Path(backup)) if isinstance(backup, str) else None
    if raw is None:
        return None
    try:
        return cs.parse(raw.decode("utf-8-sig"), str(backup)), raw
    except (MemvaultError, UnicodeDecodeError):
        return None
