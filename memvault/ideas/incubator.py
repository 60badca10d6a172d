"""The idea ledger (SPEC §8): Ideas.md sections and incubator folders, captured, promoted, archived or deleted."""

from __future__ import annotations

import calendar
import dataclasses
import datetime as dt
import difflib
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memvault.errors import MemvaultError, SafetyError
from memvault.store import changelog, disk, journal, model, notes, safety
from memvault.store.model import ARCHIVE, INCUBATOR, WriteResult
from memvault.vault import protection
from memvault.vault.core import Vault

from . import ledger as ideas_md

PROJECTS = "personal-projects"
JUNK = frozenset({".DS_Store", "Thumbs.db", "desktop.ini"})  # removed with a folder, never carried along


@dataclass(frozen=True)
class Idea:
    """An idea folder: `<group>/_idea-incubator/<slug>/_index.md` and its place in Ideas.md."""

    slug: str
    group: str
    path: str  # vault-relative `_index.md`
    title: str
    status: str
    last_touched: dt.datetime  # aware: the later of the newest file mtime in the folder and `updated` (or `created`)
    section_present: bool  # a section of Ideas.md links to the incubator note
    protected: bool = False  # `protected: true` or a protected folder: gc never offers it
    protected_reason: str = ""  # which file of the folder keeps gc away, and why (`stale` looks at every file)

    @property
    def folder(self) -> str:
        return self.path.rsplit("/", 1)[0]

    def as_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "last_touched": self.last_touched.isoformat(timespec="seconds")}


@dataclass(frozen=True)
class Outcome:
    """What promote, archive or delete did to one idea."""

    action: str  # promoted | archived | deleted
    slug: str
    path: str  # the idea's `_index.md` now ("" once deleted)
    files: tuple[str, ...]  # the files of the folder, at their new place (or as removed)
    section_marked: bool
    commit: str | None = None
    warning: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# ---- reading -------------------------------------------------------------------------------------------


def _digest(text: str | None) -> str:
    """The before-digest of a file from the exact text read of it (read_ledger decodes strictly)."""
    return journal.ABSENT if text is None else journal.text_digest(text)


def read_ledger(vault: Vault) -> str | None:
    """The text of Ideas.md (None when there is none); a non-UTF-8 file is refused, never rewritten."""
    path, _ = safety.resolve_target(vault.root, ideas_md.LEDGER, vault.folder, outside=True)
    try:
        data = disk.read_bytes(path)
    except MemvaultError as exc:
        if exc.code == "missing":
            return None
        raise
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SafetyError(f"{ideas_md.LEDGER} is not UTF-8 text; memvault leaves it alone", code="conflict") from None


def ideas_in(vault: Vault, statuses: Iterable[str] | None = ("incubating",)) -> list[Idea]:
    """Idea folders of every group's incubator (without the index: one small read per idea)."""
    wanted = None if statuses is None else set(statuses)
    try:
        ledger = read_ledger(vault) or ""
    except SafetyError:
        ledger = ""
    found = []
    for index in sorted(vault.memory_dir.glob(f"*/{INCUBATOR}/*/{ideas_md.INDEX}")):
        rel = index.relative_to(vault.root).as_posix()
        try:
            nf = vault.read(rel)
        except MemvaultError:
            continue
        meta = nf.note.meta if nf.note.ok else {}
        status = str(meta.get("status") or "incubating")
        if wanted is not None and status not in wanted:
            continue
        folder = rel.rsplit("/", 1)[0]
        touched = max(_file_time(index.parent), _meta_time(meta.get("updated") or meta.get("created")))
        present = ideas_md.find_section(ledger, ideas_md.link_target(folder)) is not None
        found.append(Idea(index.parent.name, rel.split("/")[1], rel, nf.title, status, touched, present,
                          vault.protected(rel, meta)))  # fmt: skip
    return found


def incubating(vault: Vault) -> list[Idea]:
    """The ideas waiting in an incubator (`status: incubating`)."""
    return ideas_in(vault)


def stale(vault: Vault, months: int, now: dt.datetime | None = None) -> list[Idea]:
    """Incubating ideas untouched (files and `updated`) for `months` calendar months, oldest first; each
    marked protected when any file of its folder is (`kept_by`): gc never offers what it cannot clean up."""
    cutoff = months_before(now or dt.datetime.now(dt.timezone.utc), months)
    old = sorted((i for i in incubating(vault) if i.last_touched < cutoff), key=lambda i: i.last_touched)
    kept = {i.path: why for i in old if (why := kept_by(vault, i))}
    return [dataclasses.replace(i, protected=True, protected_reason=kept[i.path]) if i.path in kept else i for i in old]


def kept_by(vault: Vault, idea: Idea) -> str | None:
    """Why gc may not move or remove `idea`'s folder (None when it may): its first protected file (a note
    whose frontmatter cannot be read counts as protected), or a file memvault cannot move (a symlink)."""
    try:
        files = _folder_files(vault, idea.folder)
    except SafetyError as exc:
        return str(exc.args[0])
    patterns = vault.config.vault.protected_folders
    for rel, _ in files:
        why = protection.why(vault.root, vault.folder, patterns, rel)
        if why is not None:
            return f"{rel[len(idea.folder) + 1 :]}: {why}"
    return None


def months_before(when: dt.datetime, months: int) -> dt.datetime:
    year, month = divmod(when.year * 12 + when.month - 1 - months, 12)
    day = min(when.day, calendar.monthrange(year, month + 1)[1])
    return when.replace(year=year, month=month + 1, day=day)


def find(vault: Vault, slug: str, group: str | None = None) -> Idea:
    """The idea folder named `slug` (any status); an unknown slug names the closest ones."""
    every = [i for i in ideas_in(vault, None) if group is None or i.group == group]
    matches = [i for i in every if i.slug == slug]
    if len(matches) > 1:
        groups = ", ".join(i.group for i in matches)
        raise MemvaultError(f"idea {slug!r} is in several groups ({groups}): give --group", code="usage")
    promoted = vault.root / vault.folder / PROJECTS / slug / ideas_md.INDEX
    if not matches and notes.slugify(slug) == slug and promoted.is_file():
        rel = promoted.relative_to(vault.root).as_posix()
        raise MemvaultError(f"idea {slug!r} is no longer in the incubator: it was promoted to {rel}", code="conflict")
    if not matches:
        close = difflib.get_close_matches(slug, [i.slug for i in every], n=3, cutoff=0.5)
        close += [i.slug for i in every if slug in i.slug and i.slug not in close][: 3 - len(close)]
        hint = f"; did you mean {', '.join(close)}?" if close else ("" if every else "; the incubator is empty")
        raise MemvaultError(f"no idea {slug!r} in the incubator{hint}", code="missing")
    return matches[0]


# ---- writing -------------------------------------------------------------------------------------------


def capture(
    vault: Vault,
    title: str,
    body: str,
    *,
    slug: str | None = None,
    group: str | None = None,
    session: str = "manual",
    confidence: str | None = None,
    meta: Mapping[str, Any] | None = None,
    tags: Iterable[str] = ("idea",),
    summary: str | None = None,
    log: Sequence[changelog.Record] = (),
) -> WriteResult:
    """Write an idea to both places in one journalled write: `<group>/_idea-incubator/<slug>/_index.md`
    and a section appended to Ideas.md (unless a section already links to that note).
    """
    title = ideas_md.clean_title(title)
    body = safety.strip_private(body)
    if not title:
        raise MemvaultError("the idea needs a title", code="usage")
    model.check_fields({}, body)
    group_s = model.slug(group or vault.config.vault.default_group, "group")
    name = model.slug(slug, "slug") if slug else model.slug(title, "slug", from_text=True)
    folder = f"{vault.folder}/{group_s}/{INCUBATOR}/{name}"
    rel = f"{folder}/{ideas_md.INDEX}"
    stamp = notes.now()
    given = dict(meta or {})
    fields: dict[str, Any] = {
        **given, "kind": "idea", "status": "incubating", "created": stamp, "updated": stamp,
        "tags": model.tags(tags) or ["idea"], "group": group_s, "always_load": False, "source": session,
        "private": False, "surfaced_in_session": given.get("surfaced_in_session") or session,
    }  # fmt: skip
    if confidence:
        fields["confidence"] = confidence
    text = body if body.lstrip().startswith("# ") else f"# {title}\n\n{body.strip()}\n"
    note_text = notes.dump(notes.new_note(model.ordered(fields), text))
    lines = ideas_md.section_lines(
        stamp.date(), title, ideas_md.summary_of(summary or body, title), ideas_md.link_target(folder)
    )
    warnings: list[str] = []

    def plan() -> list[journal.FileOp]:
        target, _ = safety.resolve_target(vault.root, rel, vault.folder)
        if target.exists():
            raise SafetyError(f"{rel} already exists: the idea is already in the incubator", code="conflict", path=rel)
        ops = [journal.FileOp(rel, _checked(vault, note_text, rel, warnings), journal.ABSENT)]
        safety.resolve_target(vault.root, ideas_md.LEDGER, vault.folder, outside=True)  # confined, or refused
        current = read_ledger(vault)
        if current is None or ideas_md.find_section(current, ideas_md.link_target(folder)) is None:
            section = _checked(vault, "\n".join(lines), ideas_md.LEDGER, warnings).split("\n")
            ops.append(journal.FileOp(ideas_md.LEDGER, ideas_md.appended(current, section), _digest(current)))
        return ops

    result = vault.transact("idea", rel, plan, reason=title, log=log)
    return _with_warnings(result, warnings)


def promote(vault: Vault, slug: str, *, group: str | None = None) -> Outcome:
    """Move an incubating idea's folder to `personal-projects/<slug>/` (`status: promoted`), mark Ideas.md."""
    idea = _incubating(vault, slug, group)
    day = dt.date.today()
    dest = f"{vault.folder}/{PROJECTS}/{idea.slug}"
    marker = f"→ promoted {day.isoformat()} to [[{ideas_md.link_target(dest)}]]"
    meta = {"status": "promoted", "promoted": day, "group": PROJECTS}
    return _relocate(vault, idea, dest, "promoted", meta, marker)


def archive(vault: Vault, idea: Idea) -> Outcome:
    """Move an idea's folder to `_archive/<group>/_idea-incubator/<slug>.YYYYMMDD/` (`status: archived`)."""
    day = dt.date.today()
    base = f"{vault.folder}/{vault.config.vault.default_group}/{ARCHIVE}/{idea.group}/{INCUBATOR}/{idea.slug}"
    dest, n = f"{base}.{day.strftime('%Y%m%d')}", 2
    while (vault.root / dest).exists():
        dest, n = f"{base}.{day.strftime('%Y%m%d')}-{n}", n + 1
    marker = f"→ archived {day.isoformat()} to [[{ideas_md.link_target(dest)}]]"
    log = changelog.Record(changelog.ARCHIVED, detail=f"idea {idea.slug} {_untouched(idea)}, archived by gc")
    return _relocate(vault, idea, dest, "archived", {"status": "archived", "archived": day}, marker, log)


def delete(vault: Vault, idea: Idea) -> Outcome:
    """Remove an idea's folder (every file, journalled) and mark its Ideas.md section `→ deleted`."""
    log = changelog.Record(changelog.DELETED, detail=f"idea {idea.slug} {_untouched(idea)}, deleted by gc")
    return _relocate(vault, idea, None, "deleted", {}, f"→ deleted {dt.date.today().isoformat()}", log)


def _untouched(idea: Idea) -> str:
    return f"untouched since {idea.last_touched.astimezone().date().isoformat()}"


def _incubating(vault: Vault, slug: str, group: str | None) -> Idea:
    idea = find(vault, slug, group)
    if idea.status != "incubating":
        raise MemvaultError(f"idea {slug!r} is {idea.status}, not incubating ({idea.path})", code="conflict")
    return idea


def _relocate(
    vault: Vault, idea: Idea, dest: str | None, action: str, meta: Mapping[str, Any], marker: str,
    log: changelog.Record | None = None,
) -> Outcome:  # fmt: skip
    """Move (or, with no `dest`, remove) an idea folder and mark its section, as one journalled write.

    A protected idea is refused (`ProtectedError`) unless the caller waived protection after asking.
    """
    warnings: list[str] = []
    section = {"marked": False}

    def plan() -> list[journal.FileOp]:
        files = _folder_files(vault, idea.folder)
        if not any(
            rel.endswith(f"/{ideas_md.INDEX}") and rel.count("/") == idea.folder.count("/") + 1 for rel, _ in files
        ):
            raise SafetyError(f"{idea.path}: no such note", code="missing", path=idea.path)
        if dest is not None and (vault.root / dest).exists():
            raise SafetyError(f"{dest}/ already exists", code="conflict", path=dest)
        ops = []
        for rel, path in files:
            inner = rel[len(idea.folder) + 1 :]
            if dest is not None and path.name not in JUNK:
                new_rel = _confined(vault, f"{dest}/{inner}")
                content = _moved_text(vault, rel, path, inner, meta, warnings)
                ops.append(journal.FileOp(new_rel, content, journal.ABSENT))
            ops.append(journal.FileOp(rel, None, journal.digest(path)))
        ledger = read_ledger(vault)
        span = ideas_md.find_section(ledger, ideas_md.link_target(idea.folder)) if ledger is not None else None
        if ledger is None or span is None:
            warnings.append(
                f"no section of {ideas_md.LEDGER} links to {ideas_md.link_target(idea.folder)} (deleted?);"
                f" {action} anyway"
            )
        else:
            safety.resolve_target(vault.root, ideas_md.LEDGER, vault.folder, outside=True)  # confined, or refused
            ops.append(journal.FileOp(ideas_md.LEDGER, ideas_md.marked(ledger, span, marker), _digest(ledger)))
            section["marked"] = True
        return ops

    op = {"promoted": "promote", "archived": "archive", "deleted": "delete"}[action]
    target = dest + f"/{ideas_md.INDEX}" if dest else idea.path
    result = vault.transact(op, target, plan, reason=f"idea {idea.slug}", log=[log] if log else ())
    _prune(vault.root / idea.folder)
    result = _with_warnings(result, warnings)
    moved = tuple(p for p in result.paths if p.startswith(f"{dest or idea.folder}/"))  # not Ideas.md, not the log
    return Outcome(
        action, idea.slug, result.path if dest else "", moved, section["marked"], result.commit, result.warning
    )


def _folder_files(vault: Vault, folder: str) -> list[tuple[str, Path]]:
    """Every file under an idea folder (vault-relative, path); symlinks and escapes are refused."""
    root = vault.root / folder
    real_memory = os.path.realpath(vault.memory_dir)
    if root.is_symlink() or not disk.is_inside(os.path.realpath(root), real_memory):
        raise SafetyError(f"{folder} resolves outside {vault.folder}/", code="path_escape", path=folder)
    out = []
    for here, dirs, names in os.walk(root):
        for name in sorted(dirs + names):
            path = Path(here) / name
            if path.is_symlink():
                rel = path.relative_to(vault.root).as_posix()
                raise SafetyError(f"{rel} is a symlink; memvault does not move links", code="path_escape", path=rel)
        out += [(p.relative_to(vault.root).as_posix(), p) for p in (Path(here) / n for n in sorted(names))]
    return out


def _confined(vault: Vault, rel: str) -> str:
    """`rel` checked like every write (under MemoryVault/, no escape); any extension."""
    probe = rel if rel.lower().endswith(".md") else rel + ".md"
    safety.resolve_target(vault.root, probe, vault.folder)
    return rel


def _moved_text(vault: Vault, rel: str, path: Path, inner: str, meta: Mapping[str, Any], warnings: list[str]) -> str:
    """The content a file of the folder has at its new place: the folder note gets its new keys."""
    try:
        text = disk.read_bytes(path).decode("utf-8")
    except UnicodeDecodeError:
        raise SafetyError(
            f"{rel} is not a text file: memvault moves an idea folder as one journalled write of text files; "
            "move that file out of the folder and try again",
            code="not_text",
            path=rel,
        ) from None
    if inner != ideas_md.INDEX:
        return text
    nf = vault.read(rel)
    note = notes.with_meta(model.valid(nf, rel), {**meta, "updated": notes.now()})
    return _checked(vault, notes.dump(note), rel, warnings)


def _prune(folder: Path) -> None:
    """Remove the folders a move or delete left empty (a replay may leave them; they are harmless)."""
    if not folder.is_dir():
        return
    for here, _, _ in sorted(os.walk(folder), key=lambda w: -len(w[0])):
        try:
            os.rmdir(here)
        except OSError:
            continue


def _checked(vault: Vault, text: str, where: str, warnings: list[str]) -> str:
    settings = vault.config.vault
    out = safety.check_content(text, max_bytes=settings.max_note_kb * 1024, secrets_mode=settings.secrets, where=where)
    if out != text:
        warnings.append(f"secrets were redacted from {where} before writing (vault.secrets: redact)")
    return out


def _with_warnings(result: WriteResult, warnings: list[str]) -> WriteResult:
    joined = "; ".join(w for w in (*warnings, result.warning) if w) or None
    return dataclasses.replace(result, warning=joined)


def _file_time(folder: Path) -> dt.datetime:
    latest = 0.0
    for here, _, names in os.walk(folder):
        for name in names:
            try:
                latest = max(latest, (Path(here) / name).stat().st_mtime)
            except OSError:
                continue
    return dt.datetime.fromtimestamp(latest, dt.timezone.utc)


def _meta_time(value: Any) -> dt.datetime:
    """A frontmatter date or datetime as an aware datetime (naive means local time); unknown is the epoch."""
    return model.as_datetime(value) or dt.datetime.fromtimestamp(0, dt.timezone.utc)
