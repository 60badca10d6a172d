"""Claude Code's auto memory on disk: where it lives, whether it is on, and its facts (MEMORY.md, topic files).

Reads files only; nothing here touches the vault (that is `claude_memory`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memvault.errors import MemvaultError
from memvault.store import disk, notes, privacy, secrets

from .settings import claude_dir

INDEX = "MEMORY.md"
# Claude Code's memory types (frontmatter `type`) → vault kinds.
KINDS = {"feedback": "preference", "user": "preference", "project": "domain", "reference": "reference"}
DEFAULT_KIND = "domain"
MIN_FACT_CHARS = 12  # shorter MEMORY.md lines are headings' leftovers, not facts
MAX_FILE_BYTES = 256 * 1024
TITLE_CHARS = 80
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+\.md)\)")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


@dataclass(frozen=True)
class Fact:
    """One thing Claude's auto memory knows, ready to become a vault entry."""

    key: str  # the import key: "<project folder>/<file>" or "<project folder>/MEMORY.md#<hash>"
    title: str
    body: str  # markdown, starting with "# <title>"
    kind: str
    memory_type: str | None
    origin: str  # the file it came from
    origin_hash: str
    redacted: bool = False


# ---- where Claude Code keeps it, and whether it is on ---------------------------------------------


def project_key(path: Path) -> str:
    """Claude Code's folder name for a project: the absolute path with every non-alphanumeric → `-`."""
    return "".join(c if c.isalnum() else "-" for c in str(path))


def memory_dir(project: Path, claude: Path | None = None) -> Path:
    """`<claude>/projects/<key>/memory` for the project, or for its git root when only that one exists."""
    claude = claude or claude_dir()
    candidates = [project, *(p for p in project.parents if (p / ".git").exists())][:2]
    folders = [claude / "projects" / project_key(p) / "memory" for p in candidates]
    return next((f for f in folders if f.is_dir()), folders[0])


def all_memory_dirs(claude: Path | None = None) -> list[Path]:
    root = (claude or claude_dir()) / "projects"
    return sorted(p / "memory" for p in root.iterdir() if (p / "memory").is_dir()) if root.is_dir() else []


def status(project: Path | None, *, claude: Path | None = None) -> dict[str, Any]:
    """Whether Claude Code's auto memory is on for a project, why, and how many memory files it has."""
    project = (project or Path.cwd()).expanduser().resolve()
    claude = claude or claude_dir()
    active, reason = _enabled(project, claude)
    folder = memory_dir(project, claude)
    files = sorted(p.name for p in folder.glob("*.md")) if folder.is_dir() else []
    return {
        "active": active,
        "reason": reason,
        "memory_dir": str(folder),
        "files": len(files),
        "index": INDEX in files,
        "topics": len([f for f in files if f != INDEX]),
    }


def _enabled(project: Path, claude: Path) -> tuple[bool, str]:
    env = os.environ.get("CLAUDE_CODE_DISABLE_AUTO_MEMORY")
    if env is not None and env.strip().lower() in ("1", "true", "yes"):
        return False, "CLAUDE_CODE_DISABLE_AUTO_MEMORY is set"
    active, reason = True, "on by default"
    # Lowest to highest precedence; a settings file's `env` block counts like the environment.
    for path in (claude / "settings.json", project / ".claude/settings.json", project / ".claude/settings.local.json"):
        settings = _settings(path)
        env_block = settings.get("env")
        env_block = env_block if isinstance(env_block, dict) else {}
        if str(env_block.get("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "")).strip().lower() in ("1", "true", "yes"):
            active, reason = False, f"CLAUDE_CODE_DISABLE_AUTO_MEMORY in the env of {path}"
        if isinstance(settings.get("autoMemoryEnabled"), bool):
            on = settings["autoMemoryEnabled"]
            active, reason = on, f"autoMemoryEnabled: {str(on).lower()} in {path}"
    return active, reason


def _settings(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


# ---- reading the memory folder (pure apart from reading files) ------------------------------------


def read_folder(folder: Path, errors: list[dict[str, str]]) -> list[Fact]:
    """Every fact of one memory folder: its topic files, then the facts written into MEMORY.md itself."""
    facts: list[Fact] = []
    prefix = folder.parent.name
    for path in sorted(folder.glob("*.md")):
        if path.name == INDEX or disk.is_conflict_copy(path.name):
            continue
        try:
            fact = parse_topic(prefix, path, _read(path))
        except MemvaultError as exc:
            errors.append({"path": str(path), "error": exc.args[0]})
            continue
        if fact is not None:
            facts.append(fact)
    index = folder / INDEX
    if index.is_file():
        try:
            topics = {p.name for p in folder.glob("*.md")}
            facts += parse_index(prefix, index, _read(index), topics)
        except MemvaultError as exc:
            errors.append({"path": str(index), "error": exc.args[0]})
    return facts


def parse_topic(prefix: str, path: Path, text: str) -> Fact | None:
    """A topic file (frontmatter `name`, `description`, `type`; body = the memory) as one fact."""
    note = notes.parse(text)
    if note.error is not None:
        raise MemvaultError(f"frontmatter is not valid YAML: {note.error}", code="invalid_memory")
    meta = note.meta
    mtype = str(meta["type"]).strip().lower() if meta.get("type") else None
    body = privacy.strip_private(note.body).strip()
    description = _clean(privacy.strip_private(str(meta.get("description") or "")))
    title = _clean(privacy.strip_private(str(meta.get("name") or ""))) or notes.title_of(note, path.stem)
    body = _drop_h1(body, title)
    if not body and not description:
        return None
    parts = [f"# {_cut(title)}", description, body]
    return _fact(f"{prefix}/{path.name}", title, parts, mtype, path, text)


def parse_index(prefix: str, path: Path, text: str, topics: set[str]) -> list[Fact]:
    """The facts written straight into MEMORY.md: bullets and paragraphs that do not point at a topic file."""
    facts: list[Fact] = []
    heading_type: str | None = None
    for block in _blocks(privacy.strip_private(text)):
        if block.startswith("#"):
            heading_type = _type_of_heading(block.lstrip("#"))
            continue
        links = _LINK.findall(block)
        if links and all(Path(target).name in topics for _, target in links):
            continue  # an index line: the topic file is imported on its own
        fact_text = _clean(_BULLET.sub("", block, count=1))
        if len(fact_text) < MIN_FACT_CHARS:
            continue
        digest = hashlib.sha256(fact_text.lower().encode("utf-8")).hexdigest()[:12]
        title = _title_from(fact_text)
        facts.append(_fact(f"{prefix}/{INDEX}#{digest}", title, [f"# {title}", fact_text], heading_type, path, block))
    return facts


def _blocks(text: str) -> list[str]:
    """Headings, bullets (with their continuation lines) and paragraphs of a markdown file."""
    blocks: list[str] = []
    current: list[str] = []

    def flush() -> None:
        if current:
            blocks.append("\n".join(current).strip())
            current.clear()

    for line in notes.parse(text).body.splitlines():
        if not line.strip():
            flush()
        elif line.lstrip().startswith("#"):
            flush()
            blocks.append(line.strip())
        elif _BULLET.match(line) and not line.startswith(("  ", "\t")):
            flush()
            current.append(line)
        else:
            current.append(line)
    flush()
    return [b for b in blocks if b]


def _type_of_heading(heading: str) -> str | None:
    words = heading.lower()
    for word, mtype in (("feedback", "feedback"), ("preference", "feedback"), ("user", "user"),
                        ("project", "project"), ("reference", "reference"), ("link", "reference")):  # fmt: skip
        if word in words:
            return mtype
    return None


def _fact(key: str, title: str, parts: list[str], mtype: str | None, path: Path, source_text: str) -> Fact:
    body = "\n\n".join(p for p in parts if p.strip()) + "\n"
    clean_body, found = secrets.redact(body)
    clean_title, found_title = secrets.redact(title)
    return Fact(
        key=key,
        title=_cut(clean_title),
        body=clean_body,
        kind=KINDS.get(mtype or "", DEFAULT_KIND),
        memory_type=mtype,
        origin=str(path),
        origin_hash="sha256:" + hashlib.sha256(source_text.encode("utf-8")).hexdigest(),
        redacted=bool(found or found_title),
    )


def _read(path: Path) -> str:
    try:
        return disk.read_text(path, MAX_FILE_BYTES)
    except MemvaultError as exc:
        raise MemvaultError(exc.args[0], code="invalid_memory") from None


def _clean(text: str) -> str:
    return " ".join(text.split())


def _cut(title: str) -> str:
    return title if len(title) <= TITLE_CHARS else title[:TITLE_CHARS].rsplit(" ", 1)[0] + "…"


def _title_from(text: str) -> str:
    """A title for a one-line fact: its first sentence (or clause), links reduced to their text."""
    plain = _LINK.sub(r"\1", text)
    first = re.split(r"(?<=[.!?])\s|\s[—–-]\s|:\s", plain, maxsplit=1)[0].strip().rstrip(".")
    return _cut(first or plain)


def _drop_h1(body: str, title: str) -> str:
    """A topic body that starts with its own `# title` would repeat the entry's heading."""
    lines = body.splitlines()
    if lines and lines[0].startswith("# ") and lines[0][2:].strip().lower() == title.lower():
        return "\n".join(lines[1:]).strip()
    return body
