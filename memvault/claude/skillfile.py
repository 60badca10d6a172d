"""The memvault skill for Claude Code: render the template, recognise a skill we wrote, remove it."""

from __future__ import annotations

import contextlib
import json
import os
import re
from pathlib import Path, PurePath, PureWindowsPath

from memvault.errors import MemvaultError
from memvault.store import disk, notes

DEFAULT_SKILL = "memvault"  # not "memory": Claude Code has a built-in /memory
MARKER = "memvault"  # frontmatter `metadata.managed-by` of a skill memvault wrote
SKILL_TEMPLATE = Path(__file__).resolve().parents[1] / "skill" / "SKILL.md"
_SKILL_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$")


def check_skill_name(name: str) -> str:
    if not _SKILL_NAME.match(name):
        raise MemvaultError(
            f"skill name {name!r}: use lowercase letters, digits and hyphens (at most 64 characters)", code="usage"
        )
    return name


def render_skill(name: str, command: str) -> str:
    """The skill template with its name and the memvault command it runs."""
    allowed = f"Bash({command} *)"
    text = SKILL_TEMPLATE.read_text(encoding="utf-8")
    return (
        text.replace("{{name}}", name)
        .replace("{{allowed_tools}}", json.dumps(allowed, ensure_ascii=False))
        .replace("{{memvault}}", command)
    )


def memvault_command(interpreter: PurePath) -> str:
    """The memvault executable next to the interpreter, as a Bash command word (quoted when needed)."""
    windows = isinstance(interpreter, PureWindowsPath)
    exe = interpreter.parent / ("memvault.exe" if windows else "memvault")
    native = windows == (os.name == "nt")
    if native and not Path(exe).exists():  # no console script (a bare checkout): run the package instead
        return " ".join(_quote(part) for part in (interpreter.as_posix(), "-m", "memvault"))
    return _quote(exe.as_posix())  # Claude Code's Bash tool is Git Bash on Windows: forward slashes work there


def _quote(word: str) -> str:
    return word if re.fullmatch(r"[\w@%+=:,./-]+", word) else "'" + word.replace("'", "'\"'\"'") + "'"


def is_our_skill(skill_file: Path) -> bool:
    """True when `skill_file` carries our marker in its frontmatter `metadata` (the name does not matter)."""
    try:
        meta = notes.parse(skill_file.read_text(encoding="utf-8")).meta
    except (OSError, UnicodeDecodeError, MemvaultError):
        return False
    metadata = meta.get("metadata")
    return isinstance(metadata, dict) and metadata.get("managed-by") == MARKER


def our_skills(skills_dir: Path) -> list[Path]:
    """Every skill folder under `skills_dir` that this installer wrote."""
    if not skills_dir.is_dir():
        return []
    return sorted(d for d in skills_dir.iterdir() if (d / "SKILL.md").is_file() and is_our_skill(d / "SKILL.md"))


def remove_skill(folder: Path) -> None:
    """Delete our SKILL.md, and its folder when nothing else is in it."""
    disk.remove(folder / "SKILL.md")
    with contextlib.suppress(OSError):
        folder.rmdir()  # only when empty: files the user added stay
