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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memvault.errors import MemvaultError
from memvault.recall import client
from memvault.recall import search as recall_mod
from memvault.reflect import router, state
from memvault.reflect.session import capture_slug, term_share
from memvault.store import changelog, disk, notes
from memvault.store.changelog import Record
from memvault.store.model import REVIEW
from memvault.vault import indexing
from memvault.vault.core import Vault

from .auto_memory_files import Fact, all_memory_dirs, memory_dir, project_key, read_folder, status
from .settings import claude_dir

__all__ = ["Fact", "Report", "import_memory", "memory_dir", "project_key", "status"]

SOURCE = "claude-auto-memory"
RECALL_BUDGET_MS = 5_000
LEDGER = "claude-memory-imports.json"  # in the vault's per-machine state folder


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
    claude = claude or claude_dir()
    if all_projects:
        folders = all_memory_dirs(claude)
    else:
        folder = memory_dir((project or Path.cwd()).expanduser().resolve(), claude)
        if not folder.is_dir():
            raise MemvaultError(f"no Claude Code auto memory for this project at {folder}", code="missing")
        folders = [folder]
    report = Report(folders=[str(f) for f in folders], dry_run=dry_run, review=review)
    known = _imported(vault)
    ledger_file = vault.state_dir / LEDGER
    ledger = state.read_json(ledger_file)
    ledger = ledger if isinstance(ledger, dict) else {}
    importer = _Importer(vault, report, known, ledger, review=review, wait_service=wait_service)
    try:
        for folder in folders:
            for fact in read_folder(folder, report.errors):
                try:
                    importer.one(fact)
                except MemvaultError as exc:  # refused by the vault: this fact only
                    report.errors.append({"path": fact.origin, "error": f"{fact.title}: {exc}"})
    finally:
        if report.created and not dry_run:
            state.write_json(ledger_file, ledger)
    return report


class _Importer:
    def __init__(
        self, vault: Vault, report: Report, known: dict[str, tuple[str, dict[str, Any], str]],
        ledger: dict[str, Any], *, review: bool, wait_service: float,
    ) -> None:  # fmt: skip
        self.vault, self.report, self.known, self.review = vault, report, known, review
        self.ledger = ledger  # import key → the path it was first written to (this machine)
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
        if fact.key in self.ledger:  # imported once, then deleted (or rejected in review): stays out
            report.skipped.append({"key": fact.key, "reason": f"imported before as {self.ledger[fact.key]} and "
                                   "deleted from the vault since: not imported again"})  # fmt: skip
            return
        duplicate = self._duplicate(fact)
        if duplicate is not None:
            report.duplicates.append({"key": fact.key, "title": fact.title, **duplicate})
            return
        if fact.redacted:
            report.notes.append(f"{fact.title}: secrets were redacted before writing")
        folder = REVIEW if self.review else fact.kind
        rel = disk.free_note(
            self.vault.root, f"{self.vault.folder}/{self.group}/{folder}", capture_slug(fact.title), self.report.created
        )
        self.planned.add(fact.key)
        if report.dry_run:
            report.created.append(rel)
            return
        meta = {**self._meta(fact), "imported": notes.now(), "body_hash": _digest(fact.body)}
        if self.review:
            meta["route"] = "review"
        action = changelog.REVIEW if self.review else changelog.SAVED
        why = f"Claude Code auto memory: {Path(fact.origin).name}"
        log = [Record(action, detail=why, confidence=_confidence(fact))]
        result = self.vault.save(
            fact.kind, Path(rel).stem, fact.body, folder=folder, source=SOURCE, confidence=_confidence(fact),
            tags=["claude-memory"], meta=meta, log=log,
        )  # fmt: skip
        report.created.append(result.path)
        self.ledger[fact.key] = result.path
        if result.warning:
            report.notes.append(f"{result.path}: {result.warning}")

    def _again(self, fact: Fact, rel: str, meta: dict[str, Any], body: str) -> None:
        """An already imported fact: unchanged, or changed by Claude and untouched in the vault → updated."""
        if meta.get("origin_hash") == fact.origin_hash:
            self.report.unchanged.append(rel)
            return
        if self.vault.protected(rel, meta):
            self.report.skipped.append({"key": fact.key, "reason": f"changed in Claude's memory, but {rel} is "
                                        "protected: left as it is"})  # fmt: skip
            return
        if meta.get("body_hash") != _digest(body):
            self.report.skipped.append({"key": fact.key, "reason": f"changed in Claude's memory, but {rel} was "
                                        "edited in the vault since the import: left as it is"})  # fmt: skip
            return
        if not self.report.dry_run:
            updates = {**self._meta(fact), "body_hash": _digest(fact.body)}
            log = [Record(changelog.UPDATED, detail=f"Claude Code auto memory: {Path(fact.origin).name} changed")]
            self.vault.update(rel, meta=updates, body=fact.body, op="import", log=log)
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
                similarity = term_share(query, f"{nf.title}\n{nf.note.body}")
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


def _imported(vault: Vault) -> dict[str, tuple[str, dict[str, Any], str]]:
    """import_key → (path, frontmatter, body) of every entry this importer wrote before."""
    found: dict[str, tuple[str, dict[str, Any], str]] = {}
    for rel, note in vault.keyed("import_key"):
        key = note.meta["import_key"]
        if isinstance(key, str) and note.meta.get("source") == SOURCE:
            found[key] = (rel, dict(note.meta), note.body)
    return found


def _digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.strip().encode("utf-8")).hexdigest()


def _confidence(fact: Fact) -> str:
    """Feedback and user facts are what the user told Claude: high; the rest Claude inferred: medium."""
    return "high" if fact.memory_type in ("feedback", "user") else "medium"
