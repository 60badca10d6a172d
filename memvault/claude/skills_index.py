"""`index-skills`: one `personal-skills/<name>.md` entry per installed Claude Code skill, kept in step with it.

Just over 400 lines: finding skills (every scope, symlinks refused out of their folder), parsing one and
writing its entry belong together, because each step's checks guard the next.
"""

from __future__ import annotations

import dataclasses
import hashlib
import platform
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memvault.errors import MemvaultError
from memvault.store import changelog, disk, notes, privacy, secrets
from memvault.store.changelog import Record
from memvault.vault.core import Vault

from . import confined, settings, skillfile

GROUP = "personal-skills"
SOURCE = "skills-index"
MAX_SKILL_BYTES = 512 * 1024  # a SKILL.md bigger than this is reported, not read
EXCERPT_CHARS = 700  # how much of a skill's body goes into its entry
DESCRIPTION_CHARS = 1_536  # Claude Code cuts description + when_to_use at this length in its listing
ARCHIVED_BY = "archived_by"  # set to SOURCE when the indexer archived an entry: it may make it active again
NOTES_HEADING = "## My notes"  # from this heading on, an entry's body is the user's and survives re-indexing
# Frontmatter keys the indexer owns: rewritten when the skill changes. Every other key is the user's;
# `status` only when the indexer archived the entry itself (ARCHIVED_BY).
OWNED = (
    "name", "description", "when_to_use", "scope", "command", "skill_id", "skill_file", "skill_hash",
    "project", "plugin", "marketplace", "plugin_version", "indexed_on",
)  # fmt: skip
_VERSION = re.compile(r"v?(\d+(?:\.\d+)*)(?:[-+].*)?")


@dataclass(frozen=True)
class Location:
    """Where one SKILL.md was found; its identity does not depend on what the file says."""

    scope: str  # user | project | plugin
    path: Path
    project: Path | None = None
    marketplace: str | None = None
    plugin: str | None = None
    version: str | None = None
    # The folder the skill's folder must really lie in: the project, or the plugin version. A user's
    # own skill folder may be a symlink (to a dotfiles checkout, say); a repository's may not.
    confine: Path | None = field(default=None, compare=False)

    @property
    def dir_name(self) -> str:
        return self.path.parent.name

    @property
    def skill_id(self) -> str:
        if self.scope == "plugin":
            return f"plugin/{self.marketplace}/{self.plugin}/{self.dir_name}"
        if self.scope == "project":
            return f"project/{self.project}/{self.dir_name}"
        return f"user/{self.dir_name}"

    @property
    def preferred_slug(self) -> str:
        """The entry's file name: the skill's folder, prefixed by its plugin or project (slug rules apply)."""
        prefix = self.plugin if self.scope == "plugin" else self.project.name if self.project else None
        return notes.slugify(f"{prefix} {self.dir_name}" if prefix else self.dir_name) or "skill"


@dataclass(frozen=True)
class Skill:
    location: Location
    name: str
    description: str
    when_to_use: str | None
    command: str
    digest: str
    excerpt: str
    ours: bool = False  # memvault's own skill (its frontmatter `metadata` carries our marker)


@dataclass
class Report:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    archived: list[str] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)  # {"path", "reason"}: hand-written entries
    errors: list[dict[str, str]] = field(default_factory=list)  # {"path", "error"}
    dry_run: bool = False

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# ---- finding skills ------------------------------------------------------------------------------


def locate(claude: Path, project: Path) -> list[Location]:
    """Every SKILL.md Claude Code would load: the user's, the project's, each plugin's newest version."""
    found = [Location("user", p) for p in skill_files(claude / "skills")]
    found += [
        Location("project", p, project=project, confine=project) for p in skill_files(project / ".claude" / "skills")
    ]
    cache = claude / "plugins" / "cache"
    for marketplace in subdirs(cache):
        for plugin in subdirs(marketplace):
            versions = subdirs(plugin)
            if not versions:
                continue
            newest = newest_version(versions)
            found += [
                Location(
                    "plugin", p, marketplace=marketplace.name, plugin=plugin.name, version=newest.name, confine=newest
                )
                for p in skill_files(newest / "skills")
            ]
    return found


def newest_version(versions: list[Path]) -> Path:
    """The newest of a plugin's version folders: by version number, else (commit-hash names) by modification time."""

    def key(path: Path) -> tuple[bool, tuple[int, ...], float]:
        match = _VERSION.fullmatch(path.name)
        number = tuple(int(n) for n in match.group(1).split(".")) if match else ()
        return bool(match), number, path.stat().st_mtime

    return max(versions, key=key)


def subdirs(folder: Path) -> list[Path]:
    """The folders in `folder`, hidden ones left out, sorted; none when it cannot be read."""
    try:
        return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return []


def skill_files(folder: Path) -> list[Path]:
    """Each skill folder's SKILL.md, symlinks included (`read_skill` refuses the ones that lead out)."""
    return [d / "SKILL.md" for d in subdirs(folder) if (d / "SKILL.md").is_file() or (d / "SKILL.md").is_symlink()]


# ---- reading one skill (pure apart from reading the file) ----------------------------------------


def read_skill(location: Location) -> Skill:
    """Parse one SKILL.md; a malformed one raises `MemvaultError` (code `invalid_skill`).

    Every file of a repository or plugin is treated as hostile: a SKILL.md (or a skill folder of a
    project or plugin) that is a symlink leading out of its own folder is never read, nor is
    anything but a regular file, so a cloned repository cannot make the index copy `~/.netrc` or
    `~/.ssh/id_rsa` into the vault.
    """
    data = _read_confined(location)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise MemvaultError("not UTF-8 text", code="invalid_skill") from None
    return parse_skill(location, text, hashlib.sha256(data).hexdigest())


def _read_confined(location: Location) -> bytes:
    if location.confine is not None and not confined.inside(location.path.parent, location.confine):
        raise MemvaultError("the skill folder is a symlink that leads out of its project or plugin: not read",
                            code="invalid_skill")  # fmt: skip
    leaving = "SKILL.md is a symlink that leads out of its skill folder: not read"
    return confined.read(location.path, location.path.parent, MAX_SKILL_BYTES, leaving=leaving, code="invalid_skill")


def parse_skill(location: Location, text: str, digest: str) -> Skill:
    """A Skill from the text of its SKILL.md (frontmatter optional, as Claude Code treats it)."""
    note = notes.parse(text)
    if note.error is not None:
        raise MemvaultError(f"frontmatter is not valid YAML: {note.error}", code="invalid_skill")
    meta = note.meta
    for key in ("name", "description", "when_to_use"):
        value = meta.get(key)
        if value is not None and not isinstance(value, (str, int, float)):
            raise MemvaultError(f"frontmatter `{key}` is a {type(value).__name__}, not text", code="invalid_skill")
    name = _text(meta.get("name")) or location.dir_name
    body = privacy.strip_private(note.body)
    description = _text(meta.get("description")) or notes.first_paragraph(body, DESCRIPTION_CHARS)
    # Claude Code names a plugin's skill by its folder (the frontmatter `name` is only an alias), as a user's.
    command = f"/{location.plugin}:{location.dir_name}" if location.scope == "plugin" else f"/{location.dir_name}"
    return Skill(
        location=location,
        name=name,
        description=description[:DESCRIPTION_CHARS],
        when_to_use=_text(meta.get("when_to_use")) or None,
        command=command,
        digest=f"sha256:{digest}",
        excerpt=excerpt(body),
        ours=isinstance(meta.get("metadata"), dict) and meta["metadata"].get("managed-by") == skillfile.MARKER,
    )


def excerpt(body: str, limit: int = EXCERPT_CHARS) -> str:
    """The start of a skill's body, blank-line runs collapsed, cut at a line end, private spans removed."""
    lines: list[str] = []
    used = 0
    for line in privacy.strip_private(body).strip().splitlines():
        line = line.rstrip()
        if not line and (not lines or not lines[-1]):
            continue
        if used + len(line) > limit:
            lines.append("…")
            break
        lines.append(line)
        used += len(line) + 1
    return "\n".join(lines).strip()


def _text(value: Any) -> str:
    return " ".join(privacy.strip_private(str(value)).split()) if value is not None else ""


# ---- the entry ------------------------------------------------------------------------------------


def entry_meta(skill: Skill) -> dict[str, Any]:
    """The frontmatter keys the indexer owns for one skill."""
    loc = skill.location
    meta: dict[str, Any] = {
        "name": skill.name,
        "description": skill.description,
        "when_to_use": skill.when_to_use,
        "scope": loc.scope,
        "command": skill.command,
        "skill_id": loc.skill_id,
        "skill_file": str(loc.path),
        "skill_hash": skill.digest,
        "project": str(loc.project) if loc.project else None,
        "plugin": loc.plugin,
        "marketplace": loc.marketplace,
        "plugin_version": loc.version,
        "indexed_on": platform.node() or None,
    }
    return {k: secrets.redact(v)[0] if isinstance(v, str) else v for k, v in meta.items() if v is not None}


def entry_body(skill: Skill, kept: str = "") -> str:
    """The entry's body: what recall searches. `kept` is the user's own `## My notes` section."""
    loc = skill.location
    where = {
        "user": "your personal skill",
        "project": f"a skill of the project `{loc.project}`",
        "plugin": f"from the plugin `{loc.plugin}` ({loc.marketplace}, version {loc.version})",
    }[loc.scope]
    parts = [f"# {skill.name}", skill.description or "(no description)"]
    if skill.when_to_use:
        parts.append(f"**When to use:** {skill.when_to_use}")
    parts.append(f"Invoke with `{skill.command}`: {where}. Source: `{loc.path}`")
    if skill.excerpt:
        parts.append("## Excerpt\n\n" + "\n".join(f"> {line}" if line else ">" for line in skill.excerpt.splitlines()))
    body = "\n\n".join(parts) + "\n"
    if kept:
        body += "\n" + kept.rstrip() + "\n"
    return secrets.redact(body)[0]


def kept_notes(body: str) -> str:
    """The user's own section of an entry body: from the `## My notes` heading to the end."""
    match = re.search(rf"^{re.escape(NOTES_HEADING)}[ \t]*$", body, re.MULTILINE)
    return body[match.start() :] if match else ""


# ---- indexing --------------------------------------------------------------------------------------


def index_skills(
    vault: Vault, *, claude_dir: Path | None = None, project: Path | None = None, dry_run: bool = False
) -> Report:
    """Bring `personal-skills/` in step with the installed skills; see wiki/reference/skills-index.md.

    Unchanged skills are not written at all; changed ones are updated in place (keys the indexer does
    not own, and the `## My notes` section, are kept); entries of skills that are gone are marked
    `status: archived`; a malformed SKILL.md is reported in `errors` and skipped. memvault's own skill
    (the installed one and the plugin's) is never indexed, and an entry an earlier version made for it
    is archived.
    """
    claude = (claude_dir or settings.claude_dir()).expanduser()
    project = (project or Path.cwd()).expanduser().resolve()
    report = Report(dry_run=dry_run)
    existing, taken, manual = _scan(vault)
    present: set[str] = set()
    for location in locate(claude, project):
        try:
            skill = read_skill(location)  # the confined read, before anything else opens the file
        except MemvaultError as exc:
            present.add(location.skill_id)
            report.errors.append({"path": str(location.path), "error": exc.args[0]})
            continue
        if skill.ours:  # memvault's own skill: Claude Code lists it already
            continue
        present.add(location.skill_id)
        try:
            _one(vault, skill, existing.get(location.skill_id), taken, manual, report)
        except MemvaultError as exc:  # refused by the vault (too large, a conflict…): this skill only
            report.errors.append({"path": str(location.path), "error": str(exc)})
    for skill_id, (rel, meta) in sorted(existing.items()):
        if skill_id not in present and _in_reach(meta, project) and meta.get("status") != "archived":
            if vault.protected(rel, meta):
                report.skipped.append({"path": rel, "reason": "protected: not archived although the skill is gone"})
                continue
            if not dry_run:
                log = [Record(changelog.ARCHIVED, detail="skills index: the skill is no longer installed")]
                vault.update(rel, meta={"status": "archived", ARCHIVED_BY: SOURCE}, op="index-skills", log=log)
            report.archived.append(rel)
    return report


def _one(
    vault: Vault,
    skill: Skill,
    known: tuple[str, dict[str, Any]] | None,
    taken: set[str],
    manual: set[str],
    report: Report,
) -> None:
    meta = entry_meta(skill)
    if known is None:
        if skill.location.preferred_slug in manual:  # the user's own entry for this skill: left as it is
            rel = f"{vault.folder}/{GROUP}/{skill.location.preferred_slug}.md"
            report.skipped.append({"path": rel, "reason": "a hand-written entry (no skill_id) describes this skill"})
            return
        slug = _free(skill.location.preferred_slug, taken)
        taken.add(slug)
        rel = f"{vault.folder}/{GROUP}/{slug}.md"
        if not report.dry_run:
            # folder "." puts the entry straight under the group: personal-skills/<slug>.md
            log = [Record(changelog.SAVED, detail=f"skills index: {skill.command} ({skill.location.scope} skill)")]
            rel = vault.save(
                "skill", slug, entry_body(skill), group=GROUP, folder=".", source=SOURCE, tags=["skill"], meta=meta,
                log=log,
            ).path  # fmt: skip
        report.created.append(rel)
        return
    rel, old = known
    revive = old.get("status") == "archived" and old.get(ARCHIVED_BY) == SOURCE  # the skill is back
    same = all(old.get(k) == meta.get(k) for k in ("skill_hash", "skill_file", "plugin_version"))
    if same and not revive:
        report.unchanged.append(rel)
        return
    if vault.protected(rel, old):
        report.skipped.append({"path": rel, "reason": "protected: left as it is although the skill changed"})
        return
    if not report.dry_run:
        body = entry_body(skill, kept_notes(vault.read(rel).note.body))
        gone = [k for k in OWNED if k not in meta and k in old]
        if revive:
            meta["status"] = "active"
            gone.append(ARCHIVED_BY)
        log = [Record(changelog.UPDATED, detail=f"skills index: {skill.command} changed")]
        vault.update(rel, meta=meta, remove=gone, body=body, op="index-skills", log=log)
    report.updated.append(rel)


def _in_reach(meta: dict[str, Any], project: Path) -> bool:
    """Whether this run could have seen the entry's skill: other projects' skills, and skills indexed on
    another machine of a synced vault, are left alone."""
    host = meta.get("indexed_on")
    if host and host != (platform.node() or None):
        return False
    return meta.get("scope") != "project" or meta.get("project") == str(project)


def _free(slug: str, taken: set[str]) -> str:
    candidate, n = slug, 2
    while candidate in taken:
        candidate, n = f"{slug}-{n}", n + 1
    return candidate


def _scan(vault: Vault) -> tuple[dict[str, tuple[str, dict[str, Any]]], set[str], set[str]]:
    """What `personal-skills/` holds: indexer entries by skill_id, every slug taken, hand-written skill entries."""
    folder = vault.memory_dir / GROUP
    entries: dict[str, tuple[str, dict[str, Any]]] = {}
    taken: set[str] = set()
    manual: set[str] = set()
    files = sorted(folder.glob("*.md")) if folder.is_dir() else []
    for path in files:
        if disk.is_conflict_copy(path.name):
            continue
        rel, slug = path.relative_to(vault.root).as_posix(), path.stem
        taken.add(slug)
        try:
            note = vault.read(rel).note
        except MemvaultError:
            continue
        skill_id = note.meta.get("skill_id") if note.ok else None
        if isinstance(skill_id, str):
            entries[skill_id] = (rel, dict(note.meta))
        elif note.meta.get("kind") == "skill":
            manual.add(slug)
    return entries, taken, manual
