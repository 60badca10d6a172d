"""Connect Claude Code to memvault and undo it: plan, apply (backup, atomic writes, manifest), uninstall.

The settings file is changed only through `claude_settings` (pure merge and unmerge). Before the first
change the file is copied to `settings.json.memvault-backup`; a manifest in the state dir records what was
added, so `uninstall` takes out exactly that and, when nothing else changed, puts back the original bytes
(or deletes a file that install created). The vault and the config's vault path are never removed.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path, PurePath, PureWindowsPath
from typing import Any

from memvault import config as config_mod
from memvault import paths
from memvault.errors import MemvaultError
from memvault.store import disk

from . import settings as cs
from . import skillfile

BACKUP_SUFFIX = ".memvault-backup"
HOOKS_DIR = Path(__file__).resolve().parents[1] / "hooks"


@dataclass
class Target:
    """Where one install lives: the settings file and the skills folder of a scope."""

    scope: str
    settings: Path
    skills_dir: Path

    @classmethod
    def of(cls, scope: str, project: Path | None = None) -> Target:
        if scope == "project":
            base = (project or Path.cwd()).absolute() / ".claude"
        elif scope == "user":
            base = cs.claude_dir().absolute()
        else:
            raise MemvaultError(f"unknown scope {scope!r}: user or project", code="usage")
        return cls(scope, base / "settings.json", base / "skills")

    def manifest(self) -> Path:
        digest = hashlib.sha256(str(self.settings).encode("utf-8", "surrogateescape")).hexdigest()[:12]
        return paths.state_dir() / "installs" / f"claude-code-{self.scope}-{digest}.json"


@dataclass
class Plan:
    """Everything `install` would change; `apply` writes exactly this."""

    target: Target
    before: bytes | None  # the settings file's bytes now (None: no file)
    after: str | None  # the new settings text (None: unchanged)
    merge: cs.MergeResult
    skill_path: Path
    skill_text: str
    skill_action: str  # created, updated, unchanged
    stale_skills: list[Path] = field(default_factory=list)  # our skills under an earlier name
    vault: Path | None = None
    write_config: bool = False
    vault_folders: list[str] = field(default_factory=list)
    interpreter: str = ""
    warnings: list[str] = field(default_factory=list)
    first: bool = True  # no install recorded for this settings file: back it up before changing it
    manifest: dict[str, Any] = field(default_factory=dict)

    @property
    def backup(self) -> Path:
        return self.target.settings.with_name(self.target.settings.name + BACKUP_SUFFIX)

    @property
    def writes_backup(self) -> bool:
        return self.first and self.before is not None and self.after is not None

    @property
    def changed(self) -> bool:
        return bool(
            self.after is not None
            or self.skill_action != "unchanged"
            or self.stale_skills
            or self.write_config
            or self.vault_folders
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "host": "claude-code",
            "scope": self.target.scope,
            "settings": str(self.target.settings),
            "hooks": {
                "added": list(self.merge.added),
                "updated": list(self.merge.updated),
                "unchanged": list(self.merge.unchanged),
            },
            "interpreter": self.interpreter,
            "backup": str(self.backup) if self.writes_backup else None,
            "skill": {"path": str(self.skill_path), "action": self.skill_action},
            "removed_skills": [str(p) for p in self.stale_skills],
            "vault": str(self.vault) if self.vault else None,
            "config": str(paths.config_file()) if self.write_config else None,
            "created_folders": self.vault_folders,
            "warnings": self.warnings,
            "changed": self.changed,
        }


# ---- install ---------------------------------------------------------------------------------------


def plan_install(
    target: Target,
    *,
    skill_name: str = skillfile.DEFAULT_SKILL,
    vault: Path | None = None,
    interpreter: PurePath | None = None,
    hooks_dir: PurePath | None = None,
) -> Plan:
    """Read the current state and work out every change; writes nothing."""
    skillfile.check_skill_name(skill_name)
    interpreter = interpreter or _this_interpreter()
    cs.check_interpreter(interpreter)
    hooks_dir = hooks_dir or HOOKS_DIR
    before = read_bytes(target.settings)
    text = before.decode("utf-8-sig") if before is not None else ""
    current = cs.parse(text, str(target.settings))
    merged = cs.merge(current, cs.hook_entries(interpreter, hooks_dir))
    after = cs.dump(merged.data, like=text) if merged.changed else None

    warnings = []
    if skill_name == "memory":
        warnings.append(
            "the skill name 'memory' clashes with Claude Code's built-in /memory (which edits CLAUDE.md); "
            "one of the two can become unreachable. The default name is 'memvault'."
        )
    for key in cs.plugin_keys(current):
        warnings.append(
            f"the Claude Code plugin {key} is enabled as well: its hooks and these would both run on every event; "
            "keep one (disable the plugin, or run memvault uninstall)"
        )

    skill_path = target.skills_dir / skill_name / "SKILL.md"
    skill_text = skillfile.render_skill(skill_name, skillfile.memvault_command(interpreter))
    if skill_path.exists() and not skillfile.is_our_skill(skill_path):
        raise MemvaultError(
            f"{skill_path.parent} exists and was not written by memvault; choose another name with --skill-name",
            code="install",
        )
    if skill_path.parent.exists() and not skill_path.exists() and any(skill_path.parent.iterdir()):
        raise MemvaultError(
            f"{skill_path.parent} exists and holds other files; choose another name with --skill-name", code="install"
        )
    old_skill = read_bytes(skill_path)
    skill_action = (
        "created" if old_skill is None else "unchanged" if old_skill == skill_text.encode("utf-8") else "updated"
    )
    stale = [d for d in skillfile.our_skills(target.skills_dir) if d != skill_path.parent]

    write_config, folders = False, []
    if vault is not None:
        vault = Path(os.path.abspath(vault.expanduser()))
        if not vault.is_dir():
            raise MemvaultError(f"{vault} is not a folder: create the Obsidian vault first", code="no_vault")
        configured = config_mod.load(env={}).vault_root
        write_config = configured is None or os.path.realpath(configured) != os.path.realpath(vault)
        folders = _missing_folders(vault)
    else:
        vault = config_mod.load().vault_root

    manifest = load_manifest(target)
    # No manifest, or one left over while none of our hooks is in the file: this is a first install.
    first = manifest is None or not (merged.updated or merged.unchanged)
    plan = Plan(
        target=target,
        before=before,
        after=after,
        merge=merged,
        skill_path=skill_path,
        skill_text=skill_text,
        skill_action=skill_action,
        stale_skills=stale,
        vault=vault,
        write_config=write_config,
        vault_folders=folders,
        interpreter=str(interpreter),
        warnings=warnings,
        first=first,
    )
    plan.manifest = _next_manifest(plan, manifest, current)
    return plan


def apply(plan: Plan) -> None:
    """Write the plan: backup first, then settings, skill, config, vault folders, manifest (each atomically)."""
    target = plan.target
    if plan.after is not None:
        if read_bytes(target.settings) != plan.before:
            raise MemvaultError(
                f"{target.settings} changed while installing; run memvault install again", code="install"
            )
        real = real_path(target.settings)
        if plan.writes_backup and plan.before is not None:
            disk.atomic_write(plan.backup, plan.before)
        disk.atomic_write(real, plan.after.encode("utf-8"))
    for old in plan.stale_skills:
        skillfile.remove_skill(old)
    if plan.skill_action != "unchanged":
        disk.atomic_write(plan.skill_path, plan.skill_text.encode("utf-8"))
    if plan.vault is not None and (plan.write_config or plan.vault_folders):
        from memvault.vault.core import open_vault

        if plan.write_config:
            config_mod.write_vault_root(plan.vault)
        open_vault(plan.vault).init_structure()
    if plan.changed:
        _write_json(target.manifest(), plan.manifest)


def _missing_folders(vault: Path) -> list[str]:
    """The folders `Vault.init_structure` would create (it runs in `apply`)."""
    from memvault.store.model import ALWAYS_LOAD, ARCHIVE, INBOX, INCUBATOR, REVIEW
    from memvault.vault.core import open_vault

    handle = open_vault(vault)
    group = handle.config.vault.default_group
    wanted = [f"{group}/{d}" for d in (ALWAYS_LOAD, INBOX, REVIEW, ARCHIVE, INCUBATOR)]
    wanted += ["personal-projects", "personal-skills"]
    return [f"{handle.folder}/{rel}" for rel in wanted if not (handle.memory_dir / rel).is_dir()]


def _next_manifest(plan: Plan, old: dict[str, Any] | None, current: dict[str, Any]) -> dict[str, Any]:
    """What uninstall needs. The pre-install state comes from the first install and is kept on re-installs."""
    hooks = current.get("hooks") if isinstance(current.get("hooks"), dict) else None
    new_events = [e for e in plan.merge.added if hooks is None or e not in hooks]
    if plan.first or old is None:
        base: dict[str, Any] = {
            "settings_existed": plan.before is not None,
            "backup": str(plan.backup) if plan.before is not None else None,
            "created_hooks_key": hooks is None,
            "created_events": new_events,
        }
    else:
        base = {k: old.get(k) for k in ("settings_existed", "backup", "created_hooks_key")}
        base["created_events"] = sorted(set(old.get("created_events") or []) | set(new_events))
    return {
        "version": 1,
        "host": "claude-code",
        "scope": plan.target.scope,
        "settings": str(plan.target.settings),
        **base,
        "interpreter": plan.interpreter,
        "events": [spec.event for spec in cs.HOOKS],
        "skill_dir": str(plan.skill_path.parent),
        "created_dirs": sorted(set((old or {}).get("created_dirs") or []) | set(_missing_dirs(plan)), reverse=True),
    }


def _missing_dirs(plan: Plan) -> list[str]:
    """Folders the install creates (the skill's and its parents up to the first that exists), deepest first."""
    missing = []
    for folder in (plan.skill_path.parent, plan.target.settings.parent):
        while not folder.exists() and folder != folder.parent:
            missing.append(str(folder))
            folder = folder.parent
    return missing


# ---- small helpers ---------------------------------------------------------------------------------


def _this_interpreter() -> PurePath:
    exe = os.path.abspath(sys.executable) if sys.executable else ""
    return PureWindowsPath(exe) if os.name == "nt" else PurePath(exe)


def read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise MemvaultError(f"cannot read {path}: {exc}", code="install") from None


def real_path(path: Path) -> Path:
    """Write through a symlinked settings file (dotfile managers) instead of replacing the link."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def load_manifest(target: Target) -> dict[str, Any] | None:
    raw = read_bytes(target.manifest())
    if raw is None:
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    return data if isinstance(data, dict) and data.get("settings") == str(target.settings) else None


def _write_json(path: Path, data: dict[str, Any]) -> None:
    paths.ensure_private_dir(path.parent)
    disk.atomic_write(path, (json.dumps(data, indent=2) + "\n").encode("utf-8"), private=True)
