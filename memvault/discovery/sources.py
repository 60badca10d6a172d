"""Where skill patterns come from: SKILL.md files on this machine and in the repositories the user lists.

Local sources are always read, from disk only: Claude Code's skills (the user's, the project's, installed
plugins' and the plugin marketplaces' catalogues), Codex CLI's and Gemini CLI's skill folders (and the shared
`~/.agents/skills`), Gemini CLI's extensions, and every repository listed in `discovery.repos` or given
with `--repo` (a local folder; or a git URL, read from its clone among the plugin marketplaces, the project and
the folders beside it: memvault never clones or fetches). The web whitelist is `whitelist`'s.

Everything read here is untrusted: files are read through `claude.confined` (no symlink out of their folder,
regular files only, size-bounded), and the text a pattern carries never reaches the vault as it is (see
`watchlist`, which writes an entry in the user's terms).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memvault import paths
from memvault.claude import confined, settings
from memvault.claude.skills_index import skill_files, subdirs
from memvault.config import Config
from memvault.errors import MemvaultError
from memvault.store import notes, privacy

MAX_SKILL_BYTES = 512 * 1024
MAX_LICENCE_BYTES = 64 * 1024
MAX_DEPTH = 6  # how deep below a listed repository a skills/ folder is looked for
# The local kinds of `discovery.sources`: installed plugins and plugin marketplaces, ~/.claude/skills, the project's
# skill folders, and Codex CLI's, Gemini CLI's and ~/.agents skill folders.
LOCAL_KINDS = ("plugins", "user-skills", "project-skills", "host-skills")
_LICENCE_FILES = ("LICENSE", "LICENSE.txt", "LICENSE.md", "LICENCE", "LICENCE.txt", "COPYING")
_LICENCES = (  # (SPDX id, words that identify the licence text), most specific first
    ("Apache-2.0", ("apache license", "version 2.0")),
    ("MPL-2.0", ("mozilla public license",)),
    ("AGPL-3.0", ("gnu affero general public license",)),
    ("LGPL-3.0", ("gnu lesser general public license",)),
    ("GPL-3.0", ("gnu general public license", "version 3")),
    ("GPL-2.0", ("gnu general public license", "version 2")),
    ("BSD-3-Clause", ("redistribution and use", "neither the name")),
    ("BSD-2-Clause", ("redistribution and use",)),
    ("ISC", ("permission to use, copy, modify, and/or distribute",)),
    ("MIT", ("permission is hereby granted, free of charge",)),
    ("CC-BY-4.0", ("creative commons attribution 4.0",)),
    ("Unlicense", ("this is free and unencumbered software",)),
)
# Lines of a SKILL.md that tell an agent what to do always or never, or to drop what it was told: never adopted.
COMMANDING = re.compile(
    r"\b(always|never|must|ignore (?:all|any|the|previous|prior)|disregard|you are now|from now on|do not tell)\b",
    re.IGNORECASE,
)
_UNTITLED = re.compile(COMMANDING.pattern + r"|://|`|\||\$\(", re.IGNORECASE)  # not a section title to reuse
_GIT_URL = re.compile(r"^(?:[a-z+]+://|[\w.-]+@[\w.-]+:)", re.IGNORECASE)  # a repository listed by URL
_SKIP_DIRS = {".git", "node_modules", ".venv", "venv", "__pycache__", "dist", "build"}


@dataclass(frozen=True)
class Pattern:
    """One SKILL.md-shaped pattern found somewhere: what it says of itself, and where it came from."""

    name: str
    description: str
    origin: str  # claude | plugins | marketplaces | project | codex | gemini | agents | repository | web
    source: str  # a link a person can follow: a file path, `<remote> <path>`, or a URL
    licence: str | None = None
    headings: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()  # `allowed-tools` it asks for
    body: str = field(default="", repr=False)  # the upstream text: read, compared, never written to the vault
    digest: str = ""
    path: str | None = None  # the SKILL.md on this machine (None for web patterns)

    @property
    def slug(self) -> str:
        return notes.slugify(self.name, max_len=60) or "skill"

    @property
    def installed(self) -> bool:
        """Whether Claude Code loads it already (the user's, the project's `.claude/skills`, an installed plugin's):
        the skills index's own sources, so it is the user's whether or not `index-skills` has run."""
        if self.origin in ("claude", "plugins"):
            return True
        parts = Path(self.path).parts if self.path else ()
        return self.origin == "project" and len(parts) >= 4 and parts[-4:-2] == (".claude", "skills")

    @property
    def titles(self) -> tuple[str, ...]:
        """Its section titles, less the ones that command an agent, link somewhere or hold code."""
        return tuple(h for h in self.headings if not _UNTITLED.search(h))

    @property
    def key(self) -> str:
        """Its identity across runs: the slug and where it came from (a moved clone keeps its remote)."""
        return f"{self.slug}@{self.source}"

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Pattern:
        """A pattern as `as_dict` gave it (the last run's candidates, kept in the state folder)."""
        known = {f.name for f in dataclasses.fields(cls)}
        values: dict[str, Any] = {
            k: tuple(v) if k in ("headings", "tools") else v for k, v in data.items() if k in known
        }
        return cls(**values)


@dataclass(frozen=True)
class Places:
    """The folders a discovery run reads (every one overridable, for tests and other machines)."""

    claude: Path
    codex: Path
    gemini: Path
    agents: Path
    project: Path
    repositories: tuple[Path, ...] = ()
    kinds: tuple[str, ...] = LOCAL_KINDS
    urls: tuple[str, ...] = ()  # repositories listed by their git URL: read from a clone found on this machine

    @classmethod
    def default(
        cls,
        project: Path | None = None,
        repositories: Iterable[Path] = (),
        kinds: Iterable[str] = LOCAL_KINDS,
        env: Mapping[str, str] | None = None,
    ) -> Places:
        env = os.environ if env is None else env
        home = Path.home()
        # The same rules as hosts.places (a layer above this one): $CODEX_HOME, $GEMINI_CLI_HOME.
        codex = Path(env["CODEX_HOME"]).expanduser() if env.get("CODEX_HOME") else home / ".codex"
        gemini_base = Path(env["GEMINI_CLI_HOME"]).expanduser() if env.get("GEMINI_CLI_HOME") else home
        return cls(
            claude=settings.claude_dir(dict(env)).expanduser(),
            codex=codex,
            gemini=gemini_base / ".gemini",
            agents=home / ".agents",
            project=(project or Path.cwd()).expanduser().resolve(),
            repositories=tuple(Path(r).expanduser() for r in repositories),
            kinds=tuple(kinds),
        )

    @classmethod
    def from_config(cls, config: Config, project: Path | None = None, repositories: Iterable[Path] = ()) -> Places:
        """The local kinds of `discovery.sources`, `discovery.repos` and the `repositories` given."""
        kinds = [s for s in config.discovery.sources if s in LOCAL_KINDS]
        urls = tuple(r for r in config.discovery.repos if _GIT_URL.match(r))
        repos = [Path(r) for r in config.discovery.repos if r not in urls] + list(repositories)
        return dataclasses.replace(cls.default(project, repos, kinds), urls=urls)


@dataclass
class Found:
    patterns: list[Pattern] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)  # {"path", "error"}


# ---- local -----------------------------------------------------------------------------------------


def local(places: Places) -> Found:
    """Every SKILL.md in the local sources, each read confined to the folder it was found in."""
    clones, found = cloned(places)
    places = dataclasses.replace(places, repositories=(*places.repositories, *clones))
    seen: set[str] = set()
    for origin, skills_dir, confine in _local_dirs(places):
        for skill_md in skill_files(skills_dir):
            real = os.path.realpath(skill_md)
            if real in seen:  # one skill linked into several agents' folders is one pattern
                continue
            seen.add(real)
            try:
                found.patterns.append(read_pattern(skill_md, origin, confine=confine))
            except MemvaultError as exc:
                found.errors.append({"path": str(skill_md), "error": exc.args[0]})
    return found


def cloned(places: Places) -> tuple[list[Path], Found]:
    """The clones of the repositories listed by URL: a git folder whose `origin` is that repository, among the
    plugin marketplaces, the listed folders, the project and the folders beside it. A URL with no clone here
    is reported (memvault never clones)."""
    found = Found()
    if not places.urls:
        return [], found
    pool = [*subdirs(places.claude / "plugins" / "marketplaces"), *places.repositories, places.project]
    pool += subdirs(places.project.parent)
    by_remote: dict[str, Path] = {}
    for folder in pool:
        remote = _origin(folder)
        if remote:
            by_remote.setdefault(_same_repo(remote), folder)
    clones: list[Path] = []
    for url in places.urls:
        clone = by_remote.get(_same_repo(url))
        if clone is None:
            why = "no clone of it on this machine: memvault never clones; clone it and list its folder"
            found.errors.append({"path": _no_credentials(url), "error": why})
        else:
            clones.append(clone)
    return clones, found


def _origin(folder: Path) -> str | None:
    """The `origin` URL of a git work tree, read from its `.git/config` (no git process per folder)."""
    try:
        text = (folder / ".git" / "config").read_text(encoding="utf-8", errors="replace")[:65_536]
    except OSError:
        return None
    match = re.search(r'^\[remote "origin"\][^\[]*?^\s*url\s*=\s*(\S+)', text, re.MULTILINE)
    return match.group(1) if match else None


def _same_repo(url: str) -> str:
    """A repository URL reduced to host/path: the https, ssh and scp-like spellings of one repository agree."""
    url = _no_credentials(url.strip())
    url = re.sub(r"^[a-z+]+://", "", url, flags=re.IGNORECASE)
    url = re.sub(r"^[^@/]+@", "", url)
    url = re.sub(r"^([^/:]+):(?!\d)", r"\1/", url)
    return url.removesuffix("/").removesuffix(".git").lower()


def _local_dirs(places: Places) -> list[tuple[str, Path, Path | None]]:
    """(origin, a folder of skill folders, the folder reads must stay in; None: the user's own, links allowed)."""
    kinds = set(places.kinds)
    dirs: list[tuple[str, Path, Path | None]] = []
    if "user-skills" in kinds:
        dirs.append(("claude", places.claude / "skills", None))
    if "project-skills" in kinds:
        for sub in (".claude", ".agents", ".gemini", ".codex"):
            dirs.append(("project", places.project / sub / "skills", places.project))
    if "plugins" in kinds:
        for version in _plugin_versions(places.claude / "plugins" / "cache"):
            dirs.append(("plugins", version / "skills", version))
    if "plugins" in kinds:  # the marketplaces' catalogues: plugins installed or not
        for market in subdirs(places.claude / "plugins" / "marketplaces"):
            dirs.append(("marketplaces", market / "skills", market))
            for plugin in subdirs(market / "plugins") + subdirs(market):
                dirs.append(("marketplaces", plugin / "skills", market))
    if "host-skills" in kinds:
        dirs.append(("codex", places.codex / "skills", None))
        dirs.append(("gemini", places.gemini / "skills", None))
        for extension in subdirs(places.gemini / "extensions"):
            dirs.append(("gemini", extension / "skills", extension))
        dirs.append(("agents", places.agents / "skills", None))
    for repo in places.repositories:
        dirs += [("repository", d, repo) for d in _skills_dirs_in(repo)]
    return dirs


def _plugin_versions(cache: Path) -> list[Path]:
    from memvault.claude.skills_index import newest_version  # the skills index's rule for "installed"

    found = []
    for market in subdirs(cache):
        for plugin in subdirs(market):
            versions = subdirs(plugin)
            if versions:
                found.append(newest_version(versions))
    return found


def _skills_dirs_in(repo: Path) -> list[Path]:
    """Every `skills/` folder of a repository (bounded depth, no symlinked folders, no .git or node_modules)."""
    if not repo.is_dir():
        return []
    found: list[Path] = []
    for top, dirs, _files in os.walk(repo, followlinks=False):
        depth = len(Path(top).relative_to(repo).parts)
        dirs[:] = sorted(d for d in dirs if d in (".claude", ".agents") or not (d in _SKIP_DIRS or d.startswith(".")))
        if depth >= MAX_DEPTH:
            dirs[:] = []
        if Path(top).name == "skills":
            found.append(Path(top))
            dirs[:] = []
    return found


def read_pattern(skill_md: Path, origin: str, *, confine: Path | None) -> Pattern:
    """Parse one SKILL.md read through `confined` (code `invalid_skill` when it cannot or may not be read)."""
    folder = skill_md.parent
    if confine is not None and not confined.inside(folder, confine):
        raise MemvaultError(
            "the skill folder is a symlink that leads out of its repository: not read", code="invalid_skill"
        )
    data = confined.read(
        skill_md, folder, MAX_SKILL_BYTES, leaving="SKILL.md leads out of its folder: not read", code="invalid_skill"
    )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise MemvaultError("not UTF-8 text", code="invalid_skill") from None
    note = notes.parse(text)
    meta = note.meta if note.ok else {}
    body = privacy.strip_private(note.body if note.ok else text)
    name = one_line(meta.get("name")) or folder.name
    description = one_line(meta.get("description")) or notes.first_paragraph(body, 600)
    licence = one_line(meta.get("license") or meta.get("licence")) or licence_near(folder, confine)
    return Pattern(
        name=name[:80],
        description=description[:1_000],
        origin=origin,
        source=_link(skill_md, confine),
        licence=licence or None,
        headings=headings(body),
        tools=_tools(meta.get("allowed-tools")),
        body=body,
        digest="sha256:" + hashlib.sha256(data).hexdigest(),
        path=str(skill_md),
    )


def headings(body: str) -> tuple[str, ...]:
    """The markdown headings of a body, in order (the shape of what a skill does)."""
    found = (m.group(1).strip() for m in re.finditer(r"^#{1,4}\s+(.+?)\s*#*\s*$", body, re.MULTILINE))
    return tuple(h for h in found if h)[:20]


def _tools(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        parts = re.split(r",\s*|\s+(?![^()]*\))", value.strip())
    elif isinstance(value, list):
        parts = [str(v) for v in value]
    else:
        return ()
    return tuple(p.strip() for p in parts if p.strip())[:20]


def one_line(value: Any) -> str:
    return " ".join(privacy.strip_private(str(value)).split()) if value not in (None, "") else ""


def licence_near(folder: Path, confine: Path | None) -> str | None:
    """The licence of a skill: a LICENSE file in its folder, else in the folders above it up to `confine`."""
    here, top = folder, confine or folder
    while True:
        for name in _LICENCE_FILES:
            candidate = here / name
            if candidate.is_file():
                try:
                    text = confined.read(candidate, top, MAX_LICENCE_BYTES, leaving="", code="licence").decode(
                        "utf-8", "replace"
                    )
                except MemvaultError:
                    continue
                return identify_licence(text) or f"see {name}"
        if here == top or here.parent == here or not confined.inside(here.parent, top):
            return None
        here = here.parent


def identify_licence(text: str) -> str | None:
    low = " ".join(text.lower().split())
    for spdx, words in _LICENCES:
        if all(w in low for w in words):
            return spdx
    return None


def _link(skill_md: Path, repo: Path | None) -> str:
    """A link to the SKILL.md: `<origin remote> <path in the repository>` for a clone, else its path."""
    remote = _origin(repo) if repo is not None else None
    if repo is not None and remote:
        return f"{_no_credentials(remote)} {skill_md.relative_to(repo).as_posix()}"
    return paths.shown(skill_md)  # `~/…`: the same on every machine of a synced vault


def _no_credentials(url: str) -> str:
    return re.sub(r"(?<=://)[^/@\s]+@", "", url)
