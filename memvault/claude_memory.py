"""`import-claude-memory`: Claude Code's auto memory (MEMORY.md, topic files) imported into the vault, deduplicated.

Each topic file becomes one entry; each fact written straight into MEMORY.md (a bullet or a paragraph
that is not a link to a topic file) becomes one entry too. An import key in the entry's frontmatter
makes a re-run create nothing new; a topic file Claude changed later updates its entry, unless the
entry was edited in the vault since. A fact whose nearest vault note is a near-duplicate (recall, with
reflection's thresholds) is skipped. Secrets are redacted and `<private>` spans dropped before writing.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import chunking, client, indexing, notes, router, secrets, store
from . import recall as recall_mod
from .errors import MemvaultError
from .model import REVIEW
from .reflect_pass import _slug, _term_share
from .skills_index import claude_home
from .vault import Vault

SOURCE = "claude-auto-memory"
INDEX = "MEMORY.md"
# Claude Code's memory types (frontmatter `type`) → vault kinds.
KINDS = {"feedback": "preference", "user": "preference", "project": "domain", "reference": "reference"}
DEFAULT_KIND = "domain"
MIN_FACT_CHARS = 12  # shorter MEMORY.md lines are headings' leftovers, not facts
MAX_FILE_BYTES = 256 * 1024
TITLE_CHARS = 80
RECALL_BUDGET_MS = 5_000
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


@dataclass
class Report:
    folders: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)  # import keys already in the vault
    duplicates: list[dict[str, Any]] = field(default_factory=list)  # {key, title, of, similarity, measure}
    skipped: list[dict[str, str]] = field(default_factory=list)  # {key, reason}
    errors: list[dict[str, str]] = field(default_factory=list)  # {path, error}
    notes: list[str] = field(default_factory=list)
    dry_run: bool = False
    review: bool = False

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# ---- where Claude Code keeps it, and whether it is on ---------------------------------------------


def project_key(path: Path) -> str:
    """Claude Code's folder name for a project: the absolute path with every non-alphanumeric → `-`."""
    return "".join(c if c.isalnum() else "-" for c in str(path))


def memory_dir(project: Path, claude: Path | None = None) -> Path:
    """`<claude>/projects/<key>/memory` for the project, or for its git root when only that one exists."""
    claude = claude or claude_home()
    candidates = [project, *(p for p in project.parents if (p / ".git").exists())][:2]
    folders = [claude / "projects" / project_key(p) / "memory" for p in candidates]
    return next((f for f in folders if f.is_dir()), folders[0])


def all_memory_dirs(claude: Path | None = None) -> list[Path]:
    root = (claude or claude_home()) / "projects"
    return sorted(p / "memory" for p in root.iterdir() if (p / "memory").is_dir()) if root.is_dir() else []


def status(project: Path | None, *, claude: Path | None = None) -> dict[str, Any]:
    """Whether Claude Code's auto memory is on for a project, why, and how many memory files it has."""
    project = (project or Path.cwd()).expanduser().resolve()
    claude = claude or claude_home()
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


def read_folder(folder: Path, report: Report) -> list[Fact]:
    """Every fact of one memory folder: its topic files, then the facts written into MEMORY.md itself."""
    facts: list[Fact] = []
    prefix = folder.parent.name
    for path in sorted(folder.glob("*.md")):
        if path.name == INDEX or store.is_conflict_copy(path.name):
            continue
        try:
            fact = parse_topic(prefix, path, _read(path))
        except MemvaultError as exc:
            report.errors.append({"path": str(path), "error": exc.args[0]})
            continue
        if fact is not None:
            facts.append(fact)
    index = folder / INDEX
    if index.is_file():
        try:
            topics = {p.name for p in folder.glob("*.md")}
            facts += parse_index(prefix, index, _read(index), topics)
        except MemvaultError as exc:
            report.errors.append({"path": str(index), "error": exc.args[0]})
    return facts


def parse_topic(prefix: str, path: Path, text: str) -> Fact | None:
    """A topic file (frontmatter `name`, `description`, `type`; body = the memory) as one fact."""
    note = notes.parse(text)
    if note.error is not None:
        raise MemvaultError(f"frontmatter is not valid YAML: {note.error}", code="invalid_memory")
    meta = note.meta
    mtype = str(meta["type"]).strip().lower() if meta.get("type") else None
    body = chunking.strip_private(note.body).strip()
    description = _clean(chunking.strip_private(str(meta.get("description") or "")))
    title = _clean(chunking.strip_private(str(meta.get("name") or ""))) or notes.title_of(note, path.stem)
    body = _drop_h1(body, title)
    if not body and not description:
        return None
    parts = [f"# {_cut(title)}", description, body]
    return _fact(f"{prefix}/{path.name}", title, parts, mtype, path, text)


def parse_index(prefix: str, path: Path, text: str, topics: set[str]) -> list[Fact]:
    """The facts written straight into MEMORY.md: bullets and paragraphs that do not point at a topic file."""
    facts: list[Fact] = []
    heading_type: str | None = None
    for block in _blocks(chunking.strip_private(text)):
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
        return store.read_text(path, MAX_FILE_BYTES)
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


# ---- importing --------------------------------------------------------------------------------------


def import_memory(
    vault: Vault,
    *,
    project: Path | None = None,
    all_projects: bool = False,
    claude: Path | None = None,
    dry_run: bool = False,
    review: bool = False,
    wait_service: float = 0.0,
) -> Report:
    """Import Claude Code's auto memory of one project (default: the cwd) or of every project."""
    claude = claude or claude_home()
    if all_projects:
        folders = all_memory_dirs(claude)
    else:
        folder = memory_dir((project or Path.cwd()).expanduser().resolve(), claude)
        if not folder.is_dir():
            raise MemvaultError(f"no Claude Code auto memory for this project at {folder}", code="missing")
        folders = [folder]
    report = Report(folders=[str(f) for f in folders], dry_run=dry_run, review=review)
    known = _imported(vault)
    importer = _Importer(vault, report, known, review=review, wait_service=wait_service)
    for folder in folders:
        for fact in read_folder(folder, report):
            try:
                importer.one(fact)
            except MemvaultError as exc:  # refused by the vault: this fact only
                report.errors.append({"path": fact.origin, "error": f"{fact.title}: {exc}"})
    return report


class _Importer:
    def __init__(
        self, vault: Vault, report: Report, known: dict[str, tuple[str, dict[str, Any], str]], *, review: bool,
        wait_service: float,
    ) -> None:  # fmt: skip
        self.vault, self.report, self.known, self.review = vault, report, known, review
        self.wait_service = wait_service
        self.thresholds = router.Thresholds.from_settings(vault.config.reflection)
        self.group = vault.config.vault.default_group
        self.planned: set[str] = set()
        self.synced = False

    def one(self, fact: Fact) -> None:
        report = self.report
        if fact.key in self.known:
            self._again(fact, *self.known[fact.key])
            return
        if fact.key in self.planned:
            return
        duplicate = self._duplicate(fact)
        if duplicate is not None:
            report.duplicates.append({"key": fact.key, "title": fact.title, **duplicate})
            return
        if fact.redacted:
            report.notes.append(f"{fact.title}: secrets were redacted before writing")
        folder = REVIEW if self.review else fact.kind
        rel = self._free(f"{self.vault.folder}/{self.group}/{folder}", _slug(fact.title))
        self.planned.add(fact.key)
        if report.dry_run:
            report.created.append(rel)
            return
        meta = {**self._meta(fact), "imported": notes.now(), "body_hash": _digest(fact.body)}
        if self.review:
            meta["route"] = "review"
        result = self.vault.save(
            fact.kind, Path(rel).stem, fact.body, folder=folder, source=SOURCE, confidence=_confidence(fact),
            tags=["claude-memory"], meta=meta,
        )  # fmt: skip
        report.created.append(result.path)
        if result.warning:
            report.notes.append(f"{result.path}: {result.warning}")

    def _again(self, fact: Fact, rel: str, meta: dict[str, Any], body: str) -> None:
        """An already imported fact: unchanged, or changed by Claude and untouched in the vault → updated."""
        if meta.get("origin_hash") == fact.origin_hash:
            self.report.unchanged.append(rel)
            return
        if meta.get("body_hash") != _digest(body):
            self.report.skipped.append({"key": fact.key, "reason": f"changed in Claude's memory, but {rel} was "
                                        "edited in the vault since the import: left as it is"})  # fmt: skip
            return
        if not self.report.dry_run:
            updates = {**self._meta(fact), "body_hash": _digest(fact.body)}
            self.vault.update(rel, meta=updates, body=fact.body, op="import")
        self.report.updated.append(rel)

    def _meta(self, fact: Fact) -> dict[str, Any]:
        meta: dict[str, Any] = {"import_key": fact.key, "origin": fact.origin, "origin_hash": fact.origin_hash}
        if fact.memory_type:
            meta["memory_type"] = fact.memory_type
        return meta

    def _duplicate(self, fact: Fact) -> dict[str, Any] | None:
        """The existing note this fact nearly duplicates (reflection's recall and thresholds), if any."""
        query = f"{fact.title}\n\n{fact.body}"
        try:
            result = self._recall(query)
        except (MemvaultError, OSError) as exc:
            self.report.notes.append(f"recall failed, no duplicate check for {fact.title!r}: {exc}")
            return None
        if not result.hits:
            return None
        hit = result.hits[0]
        keyword = result.mode == "keyword" or hit.vec_score == 0.0
        if keyword:
            try:
                nf = self.vault.read(hit.path)
                similarity = _term_share(query, f"{nf.title}\n{nf.note.body}")
            except MemvaultError:
                return None
        else:
            similarity = hit.vec_score
        nearest = router.Nearest(hit.path, hit.title, similarity, "keyword" if keyword else "cosine")
        duplicate_at, _ = self.thresholds.band(nearest)
        if similarity < duplicate_at:
            return None
        return {"of": hit.path, "similarity": round(similarity, 3), "measure": nearest.measure}

    def _recall(self, query: str) -> recall_mod.Result:
        """The first recall of a run syncs the index with the notes and may wait for the embedding service;
        later ones query the index as it is (the import's own writes refresh it), as reflection does.
        """
        if not self.synced:
            self.synced = True
            return self.vault.recall(
                query, 3, include_inbox=True, wait_service=self.wait_service, budget_ms=RECALL_BUDGET_MS
            )
        settings = self.vault.config.recall
        options = recall_mod.Options(
            k=3, include_inbox=True, fusion=settings.fusion, vector_weight=settings.vector_weight,
            keyword_weight=settings.keyword_weight, budget_ms=RECALL_BUDGET_MS,
        )  # fmt: skip
        return recall_mod.recall_file(indexing.index_file(self.vault.root, self.vault.config), query, options,
                                      client.query_vector)  # fmt: skip

    def _free(self, folder: str, slug: str) -> str:
        rel, n = f"{folder}/{slug}.md", 2
        while (self.vault.root / rel).exists() or rel in self.report.created:
            rel, n = f"{folder}/{slug}-{n}.md", n + 1
        return rel


def _imported(vault: Vault) -> dict[str, tuple[str, dict[str, Any], str]]:
    """import_key → (path, frontmatter, body) of every entry this importer wrote before."""
    found: dict[str, tuple[str, dict[str, Any], str]] = {}
    if not vault.memory_dir.is_dir():
        return found
    for rel in store.list_markdown(vault.root, vault.ignore, under=vault.folder).notes:
        try:
            text = store.read_text(vault.root / rel)
        except MemvaultError:
            continue
        if SOURCE not in text or "import_key" not in text:
            continue
        note = notes.parse(text)
        key = note.meta.get("import_key") if note.ok else None
        if isinstance(key, str) and note.meta.get("source") == SOURCE:
            found[key] = (rel, dict(note.meta), note.body)
    return found


def _digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.strip().encode("utf-8")).hexdigest()


def _confidence(fact: Fact) -> str:
    """Feedback and user facts are what the user told Claude: high; the rest Claude inferred: medium."""
    return "high" if fact.memory_type in ("feedback", "user") else "medium"
