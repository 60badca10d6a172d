"""The Vault: the public API over one Obsidian vault — save, evolve, update, move, remove, read, list, undo.

Every mutation runs under the vault lock, is written to the intent journal first, then applied
with atomic writes, then (in a git vault) committed as exactly one commit (`changes`).

A little over 400 lines: the six write methods share one shape (check, lock, compose, commit) and are
read and reviewed side by side; the machinery they share already lives in `changes`, what protection
and the change log mean in `store.protect`, `store.changelog` and their vault-side halves.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memvault import config as config_mod
from memvault.errors import MemvaultError, SafetyError, VaultNotFound
from memvault.index import catalog
from memvault.index.sync import Progress, SyncReport
from memvault.recall import eligible, passages
from memvault.recall import search as recall_mod
from memvault.store import disk, journal, model, notes, safety
from memvault.store.model import ALWAYS_LOAD, ARCHIVE, INBOX, INCUBATOR, REVIEW, Entry, NoteFile, WriteResult

from . import indexing, protection
from .changelog import Record
from .changes import Changes

__all__ = ["Entry", "NoteFile", "Record", "Vault", "WriteResult", "open_vault"]


def open_vault(path: str | os.PathLike[str] | None = None, *, config: config_mod.Config | None = None) -> Vault:
    """Open the vault at `path` (else `MEMVAULT_VAULT`, else the config file) and finish any interrupted write."""
    config = config or config_mod.load()
    root = Path(path).expanduser() if path else config.vault_root
    if root is None:
        raise VaultNotFound("no vault given: pass --vault PATH, set MEMVAULT_VAULT, or run `memvault init PATH`")
    if root.exists() and not root.is_dir():
        raise VaultNotFound(f"{root} is a file, not a folder: give the vault's folder (the one holding .obsidian/)")
    if not root.is_dir():
        raise VaultNotFound(f"vault folder {root} does not exist (is the sync drive mounted?)")
    vault = Vault(root.resolve(), config)
    vault.recover()
    return vault


class Vault:
    def __init__(self, root: Path, config: config_mod.Config) -> None:
        self.root = root
        self.config = config
        self.folder = config.vault.folder.strip("/")
        self.memory_dir = root / self.folder
        self.changes = Changes(root, config, self.folder)
        self.state_dir = self.changes.state_dir
        self.journal_dir = self.changes.journal_dir
        self.ignore = disk.ignore_patterns(root, config.vault.ignore)

    # ---- reading -------------------------------------------------------------------------

    def read(self, rel: str) -> NoteFile:
        target, norm = safety.resolve_target(self.root, rel, self.folder, outside=True)
        text = disk.read_text(target)
        st = target.stat()
        return NoteFile(norm, notes.parse(text), st.st_mtime_ns, st.st_size, journal.text_digest(text))

    def list(
        self, *, scope: str = "memory", group: str | None = None, kind: str | None = None, status: str | None = None
    ) -> builtins.list[Entry]:
        """Entries under MemoryVault/ (`scope="memory"`) or the whole read scope (`"all"`)."""
        under = self.folder if scope == "memory" else ""
        if under and not self.memory_dir.is_dir():
            return []
        listing = disk.list_markdown(self.root, self.ignore, under=under)
        fresh = catalog.fresh_entries(self.root, self.index_file, listing.notes)  # unchanged since indexed
        entries = (fresh.get(rel) or self.entry(rel) for rel in listing.notes)
        return [
            e
            for e in entries
            if (group is None or e.group == group)
            and (kind is None or e.kind == kind)
            and (status is None or e.status == status)
        ]

    def entry(self, rel: str) -> Entry:
        """The summary of one listed note; an unreadable file gives an entry with `error` set."""
        group, in_memory = self.group_of(rel), self.in_memory(rel)
        try:
            return model.entry(rel, self.read(rel), group, in_memory)
        except MemvaultError as exc:
            return model.unreadable_entry(rel, group, in_memory, str(exc))

    def keyed(self, key: str) -> builtins.list[tuple[str, notes.Note]]:
        """Every readable note under MemoryVault/ whose frontmatter has `key` (the text is checked first)."""
        found: builtins.list[tuple[str, notes.Note]] = []
        if not self.memory_dir.is_dir():
            return found
        for rel in disk.list_markdown(self.root, self.ignore, under=self.folder).notes:
            try:
                text = disk.read_text(self.root / rel)
            except MemvaultError:
                continue
            note = notes.parse(text) if key in text else None
            if note is not None and note.ok and key in note.meta:
                found.append((rel, note))
        return found

    def in_memory(self, rel: str) -> bool:
        """Whether a vault-relative path is under the MemoryVault folder (the write scope)."""
        return rel.startswith(self.folder + "/")

    def group_of(self, rel: str) -> str | None:
        parts = rel.split("/")
        return parts[1] if len(parts) > 2 and parts[0] == self.folder else None

    # ---- index and recall ----------------------------------------------------------------

    @property
    def index_file(self) -> Path:
        return indexing.index_file(self.root, self.config)

    def reindex(
        self,
        *,
        full: bool = False,
        vectors: str = "auto",
        progress: Progress | None = None,
        wait: float = 0.0,
        on_wait: Callable[[str], None] | None = None,
    ) -> SyncReport:
        """Bring the index up to date with the notes (see `indexing.reindex` for `vectors`, `wait`, `on_wait`)."""
        return indexing.reindex(
            self.root, self.config, full=full, vectors=vectors, progress=progress, wait=wait, on_wait=on_wait
        )

    def recall(
        self,
        query: str,
        k: int | None = None,
        *,
        group: str | None = None,
        include_inbox: bool = False,
        include_private: bool = False,
        wait_service: float = 0.0,
        budget_ms: float | None = None,
        floor: bool = False,
    ) -> recall_mod.Result:
        """The notes most relevant to `query`: hits with path, title, score, vec_score, kw_score and snippet.

        Private notes are left out unless `include_private` (never pass it for agent context).
        `wait_service` seconds may be spent starting the warm embedding service; without it the
        result is keyword-only until the service is up. With `floor`, hits below the configured
        relevance floor (`recall.min_relevance`) move to `result.dropped`, as the hooks do.
        """
        settings = self.config.recall
        options = recall_mod.Options(
            k=k or settings.k,
            group=group,
            include_inbox=include_inbox,
            include_private=include_private,
            fusion=settings.fusion,
            vector_weight=settings.vector_weight,
            keyword_weight=settings.keyword_weight,
            min_relevance=settings.min_relevance if floor else 0.0,
            min_probability=settings.min_probability,
            coverage_weight=settings.coverage_weight,
            min_coverage=settings.min_coverage,
            min_shared_words=settings.min_shared_words,
            daily_folder=eligible.daily_folder(self.root),  # its notes need a reason, as in the hook
            passage_chars=passages.per_hit(settings.max_context_chars, settings.k),  # the hook's passages
            # A person waiting for the service gets complete results; otherwise the hook's budget applies.
            budget_ms=budget_ms or (10_000 if wait_service else settings.prompt_budget_ms),
        )
        return indexing.recall(self.root, self.config, query, options, wait_service=wait_service)

    # ---- writing -------------------------------------------------------------------------

    def save(
        self,
        kind: str,
        slug: str,
        body: str,
        *,
        group: str | None = None,
        tags: Iterable[str] = (),
        always_load: bool = False,
        private: bool = False,
        source: str = "manual",
        confidence: str | None = None,
        meta: Mapping[str, Any] | None = None,
        replace: bool = False,
        expected_mtime_ns: int | None = None,
        folder: str | None = None,
        log: Sequence[Record] = (),
    ) -> WriteResult:
        """Write `MemoryVault/<group>/<kind>/<slug>.md` (or `<group>/<folder>/…` for `_inbox` etc.).

        With `replace`, the note's old text is kept in `_archive/` (as `evolve` keeps it) in the same change.
        """
        # `_index` is the folder note of an idea or project folder (`_idea-incubator/<idea>/_index.md`).
        kind_s, slug_s = model.slug(kind, "kind"), slug if slug == "_index" else model.slug(slug, "slug")
        group_s = model.slug(group or self.config.vault.default_group, "group")
        rel = f"{self.folder}/{group_s}/{folder or kind_s}/{slug_s}.md"
        given, body = model.split_given(body)
        stamp = notes.now()
        fields: dict[str, Any] = {**given, **(meta or {}), "kind": kind_s, "group": group_s, "updated": stamp}
        fields["source"] = source if source != "manual" or "source" not in fields else fields["source"]
        if confidence:
            fields["confidence"] = confidence
        tag_list = model.tags(tags) or model.tags(model.as_list(given.get("tags")))
        model.check_fields(fields, body)
        with self.changes.mutation():
            target, rel = safety.resolve_target(self.root, rel, self.folder)
            existing = self._existing(target, rel, expected_mtime_ns)
            if existing is not None and not replace:
                raise SafetyError(
                    f"{rel} already exists: use `evolve` to supersede it, or --replace", code="conflict", path=rel
                )
            # On --replace, flags left at their defaults keep what the note already says.
            for key, value, default in (
                ("tags", tag_list, []),
                ("always_load", always_load, False),
                ("private", private, False),
            ):
                if value != default or existing is None:
                    fields[key] = value if value != default else fields.get(key, default)
            if existing is None:
                fields.setdefault("status", "active")
                fields.setdefault("created", stamp)
                note = notes.new_note(model.ordered(fields), safety.strip_private(body))
            else:
                fields.pop("created", None)
                note = notes.with_body(notes.with_meta(model.valid(existing, rel), fields), safety.strip_private(body))
            text, warning = self.changes.checked(notes.dump(note), rel)
            before = existing.digest if existing is not None else journal.digest(target)
            ops, archived = [journal.FileOp(rel, text, before)], None
            if existing is not None:  # a replace keeps the old text in _archive/, in the same change
                _, archived = safety.resolve_target(self.root, self._archive_path(rel), self.folder)
                ops.insert(0, journal.FileOp(archived, notes.dump(existing.note), journal.ABSENT))
            intent = self.changes.intent("save", rel, ops)
            return self.changes.commit(intent, rel, archived=archived, warning=warning, log=log)

    def evolve(
        self,
        old: str,
        body: str,
        *,
        reason: str,
        slug: str | None = None,
        tags: Iterable[str] | None = None,
        source: str = "manual",
        confidence: str | None = None,
        expected_mtime_ns: int | None = None,
        outside: bool = False,
        log: Sequence[Record] = (),
    ) -> WriteResult:
        """Atomic supersede: new entry (`supersedes:`), old one archived (`status: superseded`)."""
        if not reason.strip():
            raise MemvaultError("evolve needs a --reason: it is recorded with the new entry", code="usage")
        with self.changes.mutation():
            old_target, old_rel = safety.resolve_target(self.root, old, self.folder, outside=outside)
            old_file = self._existing(old_target, old_rel, expected_mtime_ns)
            if old_file is None:
                raise SafetyError(f"{old_rel}: no such note to evolve", code="missing", path=old_rel)
            old_note = model.valid(old_file, old_rel)
            if old_note.meta.get("status") in ("superseded", "archived"):
                raise SafetyError(
                    f"{old_rel} is already {old_note.meta['status']} (by {old_note.meta.get('superseded_by', '?')})",
                    code="conflict",
                    path=old_rel,
                )
            new_rel = old_rel if slug is None else f"{old_rel.rsplit('/', 1)[0]}/{model.slug(slug, 'slug')}.md"
            new_target, new_rel = safety.resolve_target(self.root, new_rel, self.folder, outside=outside)
            if new_rel != old_rel and new_target.exists():
                raise SafetyError(f"{new_rel} already exists", code="conflict", path=new_rel)
            archive_rel = self._archive_path(old_rel)
            _, archive_rel = safety.resolve_target(self.root, archive_rel, self.folder)
            stamp = notes.now()
            archived = notes.with_meta(old_note, {"status": "superseded", "superseded_by": new_rel, "updated": stamp})
            given, body = model.split_given(body)
            model.check_fields(given, body)
            carried = {
                k: v
                for k, v in old_note.meta.items()
                if k not in ("status", "created", "updated", "supersedes", "superseded_by", "supersede_reason")
            }
            fields = {
                **carried,
                **given,
                "status": "active",
                "created": stamp,
                "updated": stamp,
                "supersedes": archive_rel,
                "supersede_reason": reason.strip(),
                "source": source,
            }
            if tags is not None:
                fields["tags"] = model.tags(tags)
            if confidence:
                fields["confidence"] = confidence
            new_note = notes.new_note(model.ordered(fields), safety.strip_private(body))
            old_title = notes.title_of(old_note, "")
            if old_title and not notes.title_of(new_note, ""):  # no heading of its own: keep the old title
                new_note = notes.new_note(model.ordered({**fields, "title": old_title}), new_note.body)
            text, warning = self.changes.checked(notes.dump(new_note), new_rel)
            ops = [
                journal.FileOp(archive_rel, notes.dump(archived), journal.ABSENT),
                journal.FileOp(new_rel, text, old_file.digest if new_rel == old_rel else journal.digest(new_target)),
            ]
            if new_rel != old_rel:
                ops.append(journal.FileOp(old_rel, None, old_file.digest))
            ops += self._relink_predecessor(old_note, old_rel, archive_rel)
            intent = self.changes.intent("evolve", new_rel, ops, reason=reason.strip())
            return self.changes.commit(intent, new_rel, archived=archive_rel, warning=warning, log=log)

    def update(
        self,
        rel: str,
        *,
        meta: Mapping[str, Any] | None = None,
        remove: Iterable[str] = (),
        body: str | None = None,
        expected_mtime_ns: int | None = None,
        outside: bool = False,
        op: str = "update",
        log: Sequence[Record] = (),
    ) -> WriteResult:
        """Change some frontmatter keys and/or the body of an existing note; everything else is kept."""
        model.check_fields(meta or {}, body)
        with self.changes.mutation():
            target, rel = safety.resolve_target(self.root, rel, self.folder, outside=outside)
            existing = self._existing(target, rel, expected_mtime_ns)
            if existing is None:
                raise SafetyError(f"{rel}: no such note", code="missing", path=rel)
            note = notes.with_meta(model.valid(existing, rel), {**(meta or {}), "updated": notes.now()}, remove)
            if body is not None:
                note = notes.with_body(note, safety.strip_private(body))
            text, warning = self.changes.checked(notes.dump(note), rel)
            intent = self.changes.intent(op, rel, [journal.FileOp(rel, text, existing.digest)])
            return self.changes.commit(intent, rel, warning=warning, log=log)

    def move(
        self,
        rel: str,
        new_rel: str,
        *,
        meta: Mapping[str, Any] | None = None,
        remove: Iterable[str] = (),
        body: str | None = None,
        expected_mtime_ns: int | None = None,
        op: str = "move",
        log: Sequence[Record] = (),
    ) -> WriteResult:
        """Move a note inside MemoryVault/ (e.g. `_review/` → `<kind>/`), optionally changing keys and body.

        One intent: the new file is written and the old one deleted together; `new_rel` must be free.
        """
        model.check_fields(meta or {}, body)
        with self.changes.mutation():
            target, rel = safety.resolve_target(self.root, rel, self.folder)
            new_target, new_rel = safety.resolve_target(self.root, new_rel, self.folder)
            existing = self._existing(target, rel, expected_mtime_ns)
            if existing is None:
                raise SafetyError(f"{rel}: no such note", code="missing", path=rel)
            if new_rel == rel or new_target.exists():
                raise SafetyError(f"{new_rel} already exists", code="conflict", path=new_rel)
            note = notes.with_meta(model.valid(existing, rel), {**(meta or {}), "updated": notes.now()}, remove)
            if body is not None:
                note = notes.with_body(note, safety.strip_private(body))
            text, warning = self.changes.checked(notes.dump(note), new_rel)
            ops = [journal.FileOp(new_rel, text, journal.ABSENT), journal.FileOp(rel, None, existing.digest)]
            intent = self.changes.intent(op, new_rel, ops, reason=f"from {rel}")
            return self.changes.commit(intent, new_rel, warning=warning, log=log)

    def remove(
        self,
        rel: str,
        *,
        reason: str,
        expected_mtime_ns: int | None = None,
        op: str = "remove",
        log: Sequence[Record] = (),
    ) -> WriteResult:
        """Delete a note under MemoryVault/ (inbox reject, review reject); `reason` goes into the commit."""
        if not reason.strip():
            raise MemvaultError("remove needs a reason: it is recorded in the commit", code="usage")
        with self.changes.mutation():
            target, rel = safety.resolve_target(self.root, rel, self.folder)
            existing = self._existing(target, rel, expected_mtime_ns)
            if existing is None:
                raise SafetyError(f"{rel}: no such note", code="missing", path=rel)
            intent = self.changes.intent(op, rel, [journal.FileOp(rel, None, existing.digest)], reason=reason.strip())
            return self.changes.commit(intent, rel, log=log)

    def transact(
        self,
        op: str,
        target: str,
        plan: Callable[[], builtins.list[journal.FileOp]],
        *,
        reason: str = "",
        log: Sequence[Record] | Callable[[], Sequence[Record]] = (),
    ) -> WriteResult:
        """Several files changed as one mutation (an idea folder moved and its Ideas.md section marked).

        `plan` runs under the vault lock, after any interrupted write is finished, and returns the file
        operations with their before-digests; it has confined and checked every path and text. They are
        journalled, applied and committed together: after a crash, all of them or none. `log` may be a
        function, called after `plan`, when the change-log lines depend on what the plan found.
        """
        with self.changes.mutation():
            ops = plan()
            if not ops:
                raise MemvaultError(f"{op}: nothing to change", code="usage")
            records = log() if callable(log) else log
            return self.changes.commit(self.changes.intent(op, target, ops, reason=reason), target, log=records)

    def record(self, log: Sequence[Record]) -> WriteResult | None:
        """Append lines to the change log alone (what reflection skipped as a duplicate); None when not logged."""
        if not log or self.config.memory.transparency == "silent":
            return None
        where = f"{self.folder}/_meta/changelog"
        with self.changes.mutation():
            return self.changes.commit(self.changes.intent("log", where, []), where, log=log)

    # ---- protected entries -----------------------------------------------------------------

    def protected(self, rel: str, meta: Mapping[str, Any] | None = None) -> bool:
        """Whether automatic processes must leave `rel` alone (`protected: true` or `vault.protected_folders`).

        The note on disk is always read too (`meta` is what the caller read of it): a note whose frontmatter
        cannot be read is protected, whatever the caller made of it.
        """
        return protection.why(self.root, self.folder, self.config.vault.protected_folders, rel, meta) is not None

    @contextmanager
    def protection_waived(self) -> Iterator[None]:
        """Let the changes made inside change protected entries: for explicit commands the user confirmed."""
        before, self.changes.waived = self.changes.waived, True
        try:
            yield
        finally:
            self.changes.waived = before

    def undo(self) -> WriteResult:
        """Revert the last memvault commit with `git revert` (never a reset)."""
        return self.changes.undo()

    def init_structure(self) -> builtins.list[str]:
        """Create the MemoryVault/ folders of SPEC §3 that are missing; returns the ones created."""
        group = self.config.vault.default_group
        wanted = [f"{group}/{d}" for d in (ALWAYS_LOAD, INBOX, REVIEW, ARCHIVE, INCUBATOR)]
        wanted += ["personal-projects", "personal-skills"]
        created = []
        for rel in wanted:
            folder = self.memory_dir / rel
            if not folder.is_dir():
                folder.mkdir(parents=True, exist_ok=True)
                created.append(f"{self.folder}/{rel}")
        return created

    def recover(self) -> builtins.list[str]:
        """Finish (or set aside) mutations a crash interrupted; returns what was replayed."""
        return self.changes.recover()

    def git_repo(self) -> Path | None:
        """The git work tree the vault's changes are committed to (None without `git.commit: auto`)."""
        return self.changes.git_repo()

    # ---- internals -----------------------------------------------------------------------

    def _existing(self, target: Path, rel: str, expected_mtime_ns: int | None) -> NoteFile | None:
        if not target.exists():
            if expected_mtime_ns is not None:
                raise SafetyError(f"{rel} was deleted since you read it", code="conflict", path=rel)
            return None
        current = self.read(rel)
        if expected_mtime_ns is not None and current.mtime_ns != expected_mtime_ns:
            raise SafetyError(
                f"{rel} changed on disk since you read it (edited in Obsidian or synced?); re-read it and try again",
                code="conflict",
                path=rel,
            )
        return current

    def _relink_predecessor(self, old: notes.Note, old_rel: str, archive_rel: str) -> builtins.list[journal.FileOp]:
        """The entry `old` superseded pointed at `old_rel`; once `old` is archived it must point at the archive."""
        prior = old.meta.get("supersedes")
        if not isinstance(prior, str) or not prior.endswith(".md"):
            return []
        try:
            _, prior = safety.resolve_target(self.root, prior, self.folder)
            nf = self.read(prior)
        except MemvaultError:
            return []  # a dangling or foreign link is left as the user wrote it
        if not nf.note.ok or nf.note.meta.get("superseded_by") != old_rel:
            return []
        text = notes.dump(notes.with_meta(nf.note, {"superseded_by": archive_rel}))
        return [journal.FileOp(prior, text, nf.digest)]

    def _archive_path(self, old_rel: str) -> str:
        under = old_rel.removeprefix(self.folder + "/")
        base = f"{self.folder}/{self.config.vault.default_group}/{ARCHIVE}/{under.removesuffix('.md')}"
        day = notes.now().strftime("%Y%m%d")
        candidate, n = f"{base}.{day}.md", 2
        while (self.root / candidate).exists():
            candidate, n = f"{base}.{day}-{n}.md", n + 1
        return candidate
