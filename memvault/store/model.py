"""Pure value types of the vault API and the helpers that compose an entry's frontmatter."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memvault.errors import InvalidNote, MemvaultError

from . import notes, privacy

# Special folders inside a group (SPEC §3).
ALWAYS_LOAD, INBOX, REVIEW, ARCHIVE, INCUBATOR = "_always-load", "_inbox", "_review", "_archive", "_idea-incubator"
STATUSES = ("active", "resolved", "superseded", "incubating", "promoted", "archived")
# The kinds of entry `save` knows; a kind folder a vault already has is known in that vault too.
KINDS = ("preference", "workflow", "fix", "domain", "idea", "skill")
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
    digest: str = ""  # sha256 of the bytes read: a change is journalled against exactly what it was based on

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
    created: str | None = None


@dataclass(frozen=True)
class WriteResult:
    op: str
    path: str  # the note the caller cares about (the new entry for evolve)
    paths: tuple[str, ...]  # every file touched
    commit: str | None = None
    archived: str | None = None
    warning: str | None = None


def entry(rel: str, nf: NoteFile, group: str | None, in_memory: bool) -> Entry:
    """Summarise a note read from disk."""
    meta = nf.note.meta
    return Entry(
        path=rel,
        title=nf.title,
        kind=to_str(meta.get("kind")),
        status=to_str(meta.get("status")) or "active",
        group=group,
        tags=tuple(str(t) for t in as_list(meta.get("tags"))),
        always_load=meta.get("always_load") is True or f"/{ALWAYS_LOAD}/" in rel,
        private=privacy.note_is_private(meta, nf.note.frontmatter),
        updated=to_str(meta.get("updated")),
        in_memory=in_memory,
        error=nf.note.error,
        created=to_str(meta.get("created")),
    )


def unreadable_entry(rel: str, group: str | None, in_memory: bool, error: str) -> Entry:
    return Entry(rel, Path(rel).stem, None, "unreadable", group, (), False, False, None, in_memory, error=error)


# Names Windows reserves for devices, with or without an extension: a note named so cannot be opened there.
WINDOWS_RESERVED = frozenset(["con", "prn", "aux", "nul", *(f"{d}{n}" for d in ("com", "lpt") for n in range(10))])
NAME_RULE = "a name is letters, digits, spaces, '-' and '_', without '/' or a leading '.'"


class InvalidName(MemvaultError):
    """A kind, group or slug that cannot be one file or folder name as given."""

    code = "invalid_name"


def slug(value: str, what: str, *, from_text: bool = False) -> str:
    """The file-system name for a kind, group or slug; a name given by someone that memvault would have to
    rewrite beyond case and spaces (a path, a reserved name) is refused. `from_text` slugs a title instead."""
    problem = None if from_text else name_problem(value, what)
    if problem:
        raise InvalidName(f"{what} {value!r} is not a valid name: {problem} ({NAME_RULE})")
    made = notes.slugify(value)
    if not made or made.startswith("."):
        raise InvalidName(f"{what} {value!r} has no usable characters for a file name ({NAME_RULE})")
    if made.split(".")[0] in WINDOWS_RESERVED:
        made = f"{made}-note"  # only reached from text (a title); a given name was refused above
    return made


def name_problem(value: str, what: str) -> str | None:
    """Why `value` cannot be used as a kind, group or slug as given, or None."""
    if "/" in value or "\\" in value:
        return "it is one file or folder name, not a path"
    if value.strip().startswith("."):
        return "it may not start with '.'"
    if what in ("kind", "group", "folder") and value.strip().startswith("_"):
        return "names starting with '_' are memvault's own folders (_archive, _inbox, _review, …)"
    if any(ord(c) < 32 for c in value):
        return "it may not contain control characters"
    if value != value.rstrip(" ."):
        return "it may not end with a space or a dot (Windows drops them)"
    if value.strip().lower().split(".")[0] in WINDOWS_RESERVED:
        return f"Windows reserves the name {value.strip().split('.')[0].upper()}"
    if any(c in '<>:"|?*' for c in value):
        return 'it may not contain < > : " | ? *'
    return None


class UnknownKind(MemvaultError):
    """A kind that is neither one memvault knows nor a kind folder the vault has (a typo, most often)."""

    code = "unknown_kind"


def kind_folders(memory: Path) -> list[str]:
    """The kind folders under the groups of a vault's MemoryVault/ folder (`<group>/<kind>/`), sorted."""
    found: set[str] = set()
    try:
        groups = [g for g in memory.iterdir() if g.is_dir() and not g.name.startswith((".", "_"))]
        for group in groups:
            found.update(k.name for k in group.iterdir() if k.is_dir() and not k.name.startswith((".", "_")))
    except OSError:
        pass  # no MemoryVault/ folder yet, or one that cannot be read: only the built-in kinds are known
    return sorted(found)


def check_kind(kind: str, existing: Iterable[str] = ()) -> str:
    """`kind` as its folder name when it is known (in KINDS or among `existing`); else UnknownKind listing them."""
    name = slug(kind, "kind")
    known = [*KINDS, *sorted(set(existing) - set(KINDS))]
    if name in known:
        return name
    import difflib

    near = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    hint = f" (did you mean {near[0]}?)" if near else ""
    raise UnknownKind(
        f"unknown kind {kind!r}{hint}: known kinds are {', '.join(known)}; "
        "to start a new kind, create its folder MemoryVault/<group>/<kind>/ first"
    )


def tags(values: Iterable[str]) -> list[str]:
    out: list[str] = []
    for tag in values:
        clean = str(tag).strip().lstrip("#")
        if clean and clean not in out:
            out.append(clean)
    return out


def split_given(body: str) -> tuple[dict[str, Any], str]:
    """A body may start with its own frontmatter: its keys are taken as given metadata."""
    parsed = notes.parse(body)
    if parsed.error is not None:
        raise InvalidNote(f"the frontmatter of the given content is not valid YAML: {parsed.error}")
    text = parsed.body if parsed.frontmatter is not None else body
    if text and not text.endswith("\n"):
        text += "\n"
    return dict(parsed.meta), text


def check_fields(fields: Mapping[str, Any], body: str | None) -> None:
    """Refuse an unknown status and empty content (usage errors, not safety refusals)."""
    status = fields.get("status")
    if status is not None and status not in STATUSES:
        raise MemvaultError(f"status {status!r} is not one of {', '.join(STATUSES)}", code="usage")
    if body is not None and not body.strip():
        raise MemvaultError("the content is empty: give the text of the entry", code="usage")


def valid(nf: NoteFile, rel: str) -> notes.Note:
    if not nf.note.ok:
        raise InvalidNote(f"{rel}: frontmatter is not valid YAML ({nf.note.error}); fix it in Obsidian first", path=rel)
    return nf.note


def ordered(fields: Mapping[str, Any]) -> dict[str, Any]:
    head = {k: fields[k] for k in KEY_ORDER if k in fields}
    return {**head, **{k: v for k, v in fields.items() if k not in head}}


def as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def as_datetime(value: Any) -> dt.datetime | None:
    """A frontmatter date or time (YAML value or ISO text) as an aware UTC datetime; None when it is not one.

    A naive time is local wall-clock time (what `notes.now()` writes); a bare date is local midnight.
    """
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        value = dt.datetime.combine(value, dt.time())
    return value.astimezone(dt.timezone.utc) if isinstance(value, dt.datetime) else None


def to_str(value: Any) -> str | None:
    return None if value is None else (value.isoformat() if hasattr(value, "isoformat") else str(value))
