"""Pure parsing and dumping of markdown notes with YAML frontmatter, preserving every untouched byte.

Does NOT touch the filesystem. A note keeps its raw frontmatter text; changing a key rewrites only
that key's lines, so comments, key order, quoting and the types of other values survive as the
user (or Obsidian) wrote them. A note whose frontmatter is not valid YAML is still readable, but
refuses metadata edits (`InvalidNote`) so it is never rewritten destructively.
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import yaml

from memvault.errors import InvalidNote

from . import privacy

_Loader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_OPEN = re.compile(r"---[ \t]*(\r?\n)")
_CLOSE = re.compile(r"^---[ \t]*(?:\r?\n|\Z)", re.MULTILINE)
_FENCED = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
_H1 = re.compile(r"^#[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
# A top-level mapping key starts a line: not indented, not a comment, not a list item.
_TOP_KEY = re.compile(
    r"""^(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'|(?P<plain>[^\s#'"\-?:][^:\n]*?))[ \t]*:(?:[ \t]|\r?\n|$)"""
)


@dataclass(frozen=True)
class Note:
    """A parsed note. `meta` is read-only by convention; use `with_meta` / `with_body` to change it."""

    body: str
    meta: Mapping[str, Any] = field(default_factory=dict)
    frontmatter: str | None = None  # raw YAML between the fences; None when the note has none
    error: str | None = None  # why the frontmatter could not be parsed
    bom: str = ""
    newline: str = "\n"
    open_fence: str = "---\n"
    close_fence: str = "---\n"

    @property
    def ok(self) -> bool:
        return self.error is None


def parse(text: str) -> Note:
    """Split `text` into frontmatter and body. Never raises on bad YAML: see `Note.error`."""
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    rest = text[len(bom) :]
    opened = _OPEN.match(rest)
    closed = _CLOSE.search(rest, opened.end()) if opened else None
    if not opened or not closed:
        # Obsidian only treats a fenced block on the very first line as properties.
        return Note(body=rest, bom=bom, newline="\r\n" if "\r\n" in rest else "\n")
    raw = rest[opened.end() : closed.start()]
    meta, error = _load_yaml(raw)
    return Note(
        body=rest[closed.end() :],
        meta=meta,
        frontmatter=raw,
        error=error,
        bom=bom,
        newline=opened.group(1),
        open_fence=opened.group(0),
        close_fence=closed.group(0),
    )


def dump(note: Note) -> str:
    """Render a note; `dump(parse(text)) == text` for every input."""
    if note.frontmatter is None:
        return note.bom + note.body
    return note.bom + note.open_fence + note.frontmatter + note.close_fence + note.body


def new_note(meta: Mapping[str, Any], body: str) -> Note:
    """A fresh note with frontmatter rendered in Obsidian's style."""
    return Note(body=body, meta=dict(meta), frontmatter=dump_yaml(meta))


def with_body(note: Note, body: str) -> Note:
    close = note.close_fence
    if body and not close.endswith("\n") and note.frontmatter is not None:
        close += note.newline
    return replace(note, body=body, close_fence=close)


def with_meta(note: Note, updates: Mapping[str, Any], remove: Iterable[str] = ()) -> Note:
    """Set and remove frontmatter keys, rewriting only the lines of the keys that change."""
    if note.error is not None:
        raise InvalidNote(f"frontmatter is not valid YAML ({note.error}); fix it before memvault edits it")
    removed = set(remove)
    expected = {k: v for k, v in note.meta.items() if k not in removed}
    expected.update(updates)
    if note.frontmatter is None:
        nl = note.newline
        return replace(
            note,
            meta=expected,
            frontmatter=_newlines(dump_yaml(expected), nl),
            open_fence="---" + nl,
            close_fence="---" + nl,
        )
    raw = _edit_blocks(note.frontmatter, updates, removed, note.newline)
    meta, error = _load_yaml(raw)
    if error is not None or meta != expected:
        # The line-level edit met a layout it cannot handle: re-render the whole block instead.
        raw = _newlines(dump_yaml(expected), note.newline)
    return replace(note, meta=expected, frontmatter=raw)


def title_of(note: Note, fallback: str) -> str:
    """The first H1 of the body, else a `title` property, else `fallback` (usually the file stem).

    `<private>` spans are removed first: a heading inside one, or a span inside a heading, never
    becomes (part of) a title, which recall, the hooks' messages and the log show.
    """
    match = _H1.search(_FENCED.sub("", privacy.strip_private(note.body)))
    if match and match.group(1).strip():
        return match.group(1).strip()
    title = privacy.strip_private(str(note.meta.get("title") or "")).strip() if note.ok else ""
    return " ".join(title.split()) if title else fallback


def first_paragraph(body: str, limit: int = 400) -> str:
    """The first prose paragraph of a body (headings and blank lines skipped), clipped to `limit`."""
    for block in re.split(r"\n\s*\n", body):
        text = " ".join(line.strip() for line in block.splitlines() if not line.lstrip().startswith("#"))
        if text.strip():
            return text.strip()[:limit]
    return ""


def slugify(text: str, max_len: int = 80) -> str:
    """A file-system-safe, lowercase, hyphenated slug; keeps non-Latin letters (CJK, accents)."""
    s = unicodedata.normalize("NFKC", text).strip().lower()
    s = re.sub(r"[^\w\s-]", "", s)
    s = re.sub(r"[\s_-]+", "-", s).strip("-")
    return s[:max_len].strip("-")


def dump_yaml(data: Mapping[str, Any]) -> str:
    """YAML as Obsidian writes it: block lists indented, ISO datetimes, empty for null."""
    if not data:
        return ""
    out: str = yaml.dump(dict(data), Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=10_000)
    return out


def _load_yaml(raw: str) -> tuple[dict[str, Any], str | None]:
    try:
        data = yaml.load(raw, Loader=_Loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        return {}, " ".join(str(exc).split())
    if data is None:
        return {}, None
    if not isinstance(data, dict):
        return {}, f"frontmatter is a {type(data).__name__}, not a mapping of properties"
    return data, None


def _edit_blocks(raw: str, updates: Mapping[str, Any], removed: set[str], nl: str) -> str:
    """Replace, drop or append top-level key blocks of a YAML mapping, leaving other lines alone."""
    blocks: list[list[Any]] = []  # [key or None, text]
    for line in raw.splitlines(keepends=True):
        match = _TOP_KEY.match(line)
        if match:
            key = match.group("dq") if match.group("dq") is not None else match.group("sq")
            blocks.append([key if key is not None else match.group("plain").strip(), line])
        elif blocks and blocks[-1][0] is not None and line[:1] in (" ", "\t", "-") and line.strip():
            blocks[-1][1] += line  # continuation: indented value, nested map, or list item
        else:
            blocks.append([None, line])  # comment, blank line, or something we do not understand
    pending = dict(updates)
    out: list[str] = []
    for key, text in blocks:
        if key in removed and key not in pending:
            continue
        if key is not None and key in pending:
            text = _newlines(dump_yaml({key: pending.pop(key)}), nl)
        out.append(text)
    if pending:
        if out and not out[-1].endswith("\n"):
            out[-1] += nl
        out.append(_newlines(dump_yaml(pending), nl))
    return "".join(out)


def _newlines(text: str, nl: str) -> str:
    return text.replace("\n", nl) if nl != "\n" else text


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True  # never write &id001 anchors: Obsidian users read and edit this text

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def _repr_datetime(dumper: yaml.SafeDumper, value: dt.datetime) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:timestamp", value.isoformat())


def _repr_none(dumper: yaml.SafeDumper, _value: None) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:null", "")


def _repr_tuple(dumper: yaml.SafeDumper, value: tuple[Any, ...]) -> yaml.Node:
    return dumper.represent_list(list(value))


_Dumper.add_representer(dt.datetime, _repr_datetime)
_Dumper.add_representer(type(None), _repr_none)
_Dumper.add_representer(tuple, _repr_tuple)


def now() -> dt.datetime:
    """Local wall-clock time to the second, as Obsidian's date-time properties hold it."""
    return dt.datetime.now().replace(microsecond=0)
