"""The Vault: the public API over one Obsidian vault — save, evolve, update, read, list, undo.

Every mutation runs under the vault lock, is written to the intent journal first, then applied
with atomic writes, then (in a git vault) committed as exactly one commit.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import config as config_mod
from . import fault, gitops, journal, notes, paths, safety, store
from .errors import GitError, InvalidNote, MemvaultError, SafetyError, VaultNotFound

# Special folders inside a group (SPEC §3).
ALWAYS_LOAD, INBOX, REVIEW, ARCHIVE, INCUBATOR = "_always-load", "_inbox", "_review", "_archive", "_idea-incubator"
STATUSES = ("active", "resolved", "superseded", "incubating", "promoted", "archived")
# Frontmatter keys in the order memvault writes them; other keys follow in their own order.
KEY_ORDER = (
    "kind",
    "status",
    "created",
    "updated",
    "tags",
    "group",
    "always_load",
    "supersedes",
    "superseded_by",
    "supersede_reason",
    "confidence",
    "source",
    "private",
)


@dataclass(frozen=True)
class NoteFile:
    """One note as read from disk."""

    path: str  # vault-relative, POSIX
    note: notes.Note
    mtime_ns: int
    size: int

    @property
    def title(self) -> str:
        return notes.title_of(self.note, Path(self.path).stem)


@dataclass(frozen=True)
class Entry:
    """The summary of a note that listings and health work from."""

    path: str
    title: str
    kind: str | None
    status: str
    group: str | None
    tags: tuple[str, ...]
    always_load: bool
    private: bool
    updated: str | None
    in_memory: bool  # under the MemoryVault folder
    error: str | None = None  # unreadable file or invalid frontmatter


@dataclass(frozen=True)
class WriteResult:
    op: str
    path: str  # the note the caller cares about (the new entry for evolve)
    paths: tuple[str, ...]  # every file touched
    commit: str | None = None
    archived: str | None = None
    warning: str | None = None


def open_vault(path: str | os.PathLike[str] | None = None, *, config: config_mod.Config | None = None) -> Vault:
    """Open the vault at `path` (else `MEMVAULT_VAULT`, else the config file) and finish any interrupted write."""
    config = config or config_mod.load()
    root = Path(path).expanduser() if path else config.vault_root
    if root is None:
        raise VaultNotFound("no vault given: pass --vault PATH, set MEMVAULT_VAULT, or run `memvault init PATH`")
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
        self.state_dir = paths.vault_state_dir(root)
        self.journal_dir = self.state_dir / "journal"
        self.ignore = store.ignore_patterns(root, config.vault.ignore)

    # ---- reading -------------------------------------------------------------------------

    def read(self, rel: str) -> NoteFile:
        target, norm = safety.resolve_target(self.root, rel, self.folder, outside=True)
        text = store.read_text(target)
        st = target.stat()
        return NoteFile(norm, notes.parse(text), st.st_mtime_ns, st.st_size)

    def list(
        self, *, scope: str = "memory", group: str | None = None, kind: str | None = None, status: str | None = None
    ) -> list[Entry]:
        """Entries under MemoryVault/ (`scope="memory"`) or the whole read scope (`"all"`)."""
        under = self.folder if scope == "memory" else ""
        if under and not self.memory_dir.is_dir():
            return []
        listing = store.list_markdown(self.root, self.ignore, under=under)
        entries = (self._entry(rel) for rel in listing.notes)
        return [
            e
            for e in entries
            if (group is None or e.group == group)
            and (kind is None or e.kind == kind)
            and (status is None or e.status == status)
        ]

    def iter_files(self, scope: str = "all") -> Iterator[tuple[str, NoteFile | MemvaultError]]:
        """Every note in scope with its parsed content, or the error that prevented reading it."""
        under = self.folder if scope == "memory" else ""
        for rel in store.list_markdown(self.root, self.ignore, under=under).notes:
            try:
                yield rel, self.read(rel)
            except MemvaultError as exc:
                yield rel, exc

    def group_of(self, rel: str) -> str | None:
        parts = rel.split("/")
        return parts[1] if len(parts) > 2 and parts[0] == self.folder else None

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
    ) -> WriteResult:
        """Write `MemoryVault/<group>/<kind>/<slug>.md` (or `<group>/<folder>/…` for `_inbox` etc.)."""
        kind_s, slug_s = _slug(kind, "kind"), _slug(slug, "slug")
        group_s = _slug(group or self.config.vault.default_group, "group")
        rel = f"{self.folder}/{group_s}/{folder or kind_s}/{slug_s}.md"
        given, body = _split_given(body)
        stamp = notes.now()
        fields: dict[str, Any] = {**given, **(meta or {}), "kind": kind_s, "group": group_s, "updated": stamp}
        fields["source"] = source if source != "manual" or "source" not in fields else fields["source"]
        if confidence:
            fields["confidence"] = confidence
        tag_list = _tags(tags) or _tags(_as_list(given.get("tags")))
        with self._mutation():
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
                note = notes.new_note(_ordered(fields), safety.strip_private(body))
            else:
                fields.pop("created", None)
                note = notes.with_body(notes.with_meta(_valid(existing, rel), fields), safety.strip_private(body))
            text = self._checked(notes.dump(note), rel)
            intent = self._intent("save", rel, [journal.FileOp(rel, text, journal.digest(target))])
            return self._commit(intent, rel)

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
    ) -> WriteResult:
        """Atomic supersede: new entry (`supersedes:`), old one archived (`status: superseded`)."""
        if not reason.strip():
            raise MemvaultError("evolve needs a --reason: it is recorded with the new entry", code="usage")
        with self._mutation():
            old_target, old_rel = safety.resolve_target(self.root, old, self.folder, outside=outside)
            old_file = self._existing(old_target, old_rel, expected_mtime_ns)
            if old_file is None:
                raise SafetyError(f"{old_rel}: no such note to evolve", code="missing", path=old_rel)
            old_note = _valid(old_file, old_rel)
            if old_note.meta.get("status") in ("superseded", "archived"):
                raise SafetyError(
                    f"{old_rel} is already {old_note.meta['status']} (by {old_note.meta.get('superseded_by', '?')})",
                    code="conflict",
                    path=old_rel,
                )
            new_rel = old_rel if slug is None else f"{old_rel.rsplit('/', 1)[0]}/{_slug(slug, 'slug')}.md"
            new_target, new_rel = safety.resolve_target(self.root, new_rel, self.folder, outside=outside)
            if new_rel != old_rel and new_target.exists():
                raise SafetyError(f"{new_rel} already exists", code="conflict", path=new_rel)
            archive_rel = self._archive_path(old_rel)
            _, archive_rel = safety.resolve_target(self.root, archive_rel, self.folder)
            stamp = notes.now()
            archived = notes.with_meta(old_note, {"status": "superseded", "superseded_by": new_rel, "updated": stamp})
            given, body = _split_given(body)
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
                fields["tags"] = _tags(tags)
            if confidence:
                fields["confidence"] = confidence
            text = self._checked(notes.dump(notes.new_note(_ordered(fields), safety.strip_private(body))), new_rel)
            ops = [
                journal.FileOp(archive_rel, notes.dump(archived), journal.ABSENT),
                journal.FileOp(new_rel, text, journal.digest(new_target)),
            ]
            if new_rel != old_rel:
                ops.append(journal.FileOp(old_rel, None, journal.digest(old_target)))
            intent = self._intent("evolve", new_rel, ops, reason=reason.strip())
            return self._commit(intent, new_rel, archived=archive_rel)

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
    ) -> WriteResult:
        """Change some frontmatter keys and/or the body of an existing note; everything else is kept."""
        with self._mutation():
            target, rel = safety.resolve_target(self.root, rel, self.folder, outside=outside)
            existing = self._existing(target, rel, expected_mtime_ns)
            if existing is None:
                raise SafetyError(f"{rel}: no such note", code="missing", path=rel)
            note = notes.with_meta(_valid(existing, rel), {**(meta or {}), "updated": notes.now()}, remove)
            if body is not None:
                note = notes.with_body(note, safety.strip_private(body))
            text = self._checked(notes.dump(note), rel)
            return self._commit(self._intent(op, rel, [journal.FileOp(rel, text, journal.digest(target))]), rel)

    def undo(self) -> WriteResult:
        """Revert the last memvault commit with `git revert` (never a reset)."""
        repo = self.git_repo()
        if repo is None:
            raise GitError(
                "undo needs the vault to be a git repository with git.commit: auto "
                "(superseded entries are kept in _archive/ either way)"
            )
        with self._mutation():
            target = gitops.last_undoable(repo)
            if target is None:
                raise GitError("nothing to undo: no memvault commit in this repository's recent history")
            sha = gitops.revert(repo, target)
            touched = tuple(
                os.path.relpath(repo / p, self.root).replace(os.sep, "/") for p in gitops.changed_paths(repo, sha)
            )
            return WriteResult("undo", touched[0] if touched else "", touched, commit=sha)

    def init_structure(self) -> list[str]:
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

    def recover(self) -> list[str]:
        """Finish (or set aside) mutations a crash interrupted; returns what was replayed."""
        if not journal.pending(self.journal_dir):
            return []
        with store.vault_lock(self._lock_file(), self.config.vault.lock_timeout_s):
            return self._replay()

    # ---- internals -----------------------------------------------------------------------

    @contextmanager
    def _mutation(self) -> Iterator[None]:
        if not self.root.is_dir():
            raise VaultNotFound(f"vault folder {self.root} is gone")
        with store.vault_lock(self._lock_file(), self.config.vault.lock_timeout_s):
            self._replay()
            yield

    def _lock_file(self) -> Path:
        paths.ensure_private_dir(self.journal_dir)
        return self.state_dir / "vault.lock"

    def _replay(self) -> list[str]:
        done = []
        for path in journal.pending(self.journal_dir):
            try:
                intent = journal.read(path)
            except (OSError, ValueError, KeyError, TypeError):
                journal.set_aside(path)
                continue
            if not journal.replayable(self.root, intent):
                journal.set_aside(path)
                continue
            journal.apply(self.root, intent)
            for folder in {(self.root / p).parent for p in intent.paths}:
                store.sweep_temp_files(folder)
            self._git_commit(intent)
            path.unlink()
            done.append(intent.id)
        store.sweep_temp_files(self.journal_dir)
        return done

    def _commit(self, intent: journal.Intent, rel: str, archived: str | None = None) -> WriteResult:
        record = journal.write(self.journal_dir, intent)
        journal.apply(self.root, intent)
        sha, warning = self._git_commit(intent)
        record.unlink()
        return WriteResult(intent.op, rel, tuple(intent.paths), commit=sha, archived=archived, warning=warning)

    def _git_commit(self, intent: journal.Intent) -> tuple[str | None, str | None]:
        repo = self.git_repo()
        if repo is None:
            return None, None
        repo_paths = [os.path.relpath(self.root / p, repo) for p in intent.paths]
        try:
            sha = gitops.commit(repo, repo_paths, intent.message)
        except GitError as exc:
            return None, f"written, but not committed: {exc.args[0]}"
        fault.checkpoint("committed")
        return sha, None

    def git_repo(self) -> Path | None:
        return gitops.repo_root(self.root) if self.config.git.commit == "auto" else None

    def _intent(self, op: str, target: str, ops: list[journal.FileOp], reason: str = "") -> journal.Intent:
        subject = self.config.git.message.format(
            op=op, target=target.removeprefix(self.folder + "/").removesuffix(".md"), reason=reason
        )
        lines = [subject, "", f"{gitops.TRAILER_OP}: {op}"]
        lines += [f"Memvault-Path: {o.path}" for o in ops]
        if reason:
            lines.append(f"Memvault-Reason: {' '.join(reason.split())}")
        return journal.Intent(journal.new_id(), op, "\n".join(lines) + "\n", tuple(ops))

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

    def _checked(self, text: str, rel: str) -> str:
        return safety.check_content(
            text, max_bytes=self.config.vault.max_note_kb * 1024, secrets_mode=self.config.vault.secrets, where=rel
        )

    def _archive_path(self, old_rel: str) -> str:
        under = old_rel.removeprefix(self.folder + "/") if old_rel.startswith(self.folder + "/") else old_rel
        base = f"{self.folder}/{self.config.vault.default_group}/{ARCHIVE}/{under.removesuffix('.md')}"
        day = notes.now().strftime("%Y%m%d")
        candidate, n = f"{base}.{day}.md", 2
        while (self.root / candidate).exists():
            candidate, n = f"{base}.{day}-{n}.md", n + 1
        return candidate

    def _entry(self, rel: str) -> Entry:
        in_memory = rel.startswith(self.folder + "/")
        try:
            nf = self.read(rel)
        except MemvaultError as exc:
            return Entry(
                rel,
                Path(rel).stem,
                None,
                "unreadable",
                self.group_of(rel),
                (),
                False,
                False,
                None,
                in_memory,
                error=str(exc),
            )
        meta = nf.note.meta
        return Entry(
            path=rel,
            title=nf.title,
            kind=_str(meta.get("kind")),
            status=_str(meta.get("status")) or "active",
            group=self.group_of(rel),
            tags=tuple(str(t) for t in _as_list(meta.get("tags"))),
            always_load=meta.get("always_load") is True or f"/{ALWAYS_LOAD}/" in rel,
            private=meta.get("private") is True,
            updated=_str(meta.get("updated")),
            in_memory=in_memory,
            error=nf.note.error,
        )


def _slug(value: str, what: str) -> str:
    slug = notes.slugify(value)
    if not slug or slug.startswith("."):
        raise MemvaultError(f"{what} {value!r} has no usable characters for a file name", code="usage")
    return slug


def _tags(tags: Iterable[str]) -> list[str]:
    out: list[str] = []
    for tag in tags:
        clean = str(tag).strip().lstrip("#")
        if clean and clean not in out:
            out.append(clean)
    return out


def _split_given(body: str) -> tuple[dict[str, Any], str]:
    """A body may start with its own frontmatter: its keys are taken as given metadata."""
    parsed = notes.parse(body)
    if parsed.error is not None:
        raise InvalidNote(f"the frontmatter of the given content is not valid YAML: {parsed.error}")
    text = parsed.body if parsed.frontmatter is not None else body
    if text and not text.endswith("\n"):
        text += "\n"
    return dict(parsed.meta), text


def _valid(nf: NoteFile, rel: str) -> notes.Note:
    if not nf.note.ok:
        raise InvalidNote(f"{rel}: frontmatter is not valid YAML ({nf.note.error}); fix it in Obsidian first", path=rel)
    return nf.note


def _ordered(fields: Mapping[str, Any]) -> dict[str, Any]:
    head = {k: fields[k] for k in KEY_ORDER if k in fields}
    return {**head, **{k: v for k, v in fields.items() if k not in head}}


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _str(value: Any) -> str | None:
    return None if value is None else (value.isoformat() if hasattr(value, "isoformat") else str(value))
