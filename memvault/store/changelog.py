"""The change log in the vault: one markdown line per automatic change, a page per month under `MemoryVault/_meta/`.

This module is the page's format, written and read: the line a change appends, the page it goes to,
and the counts SessionStart sums up since the last session. Writing the line together with the change
it records (one journalled intent) is `vault.changes`. Standard library only: the SessionStart hook
reads the pages too.

A line reads `- 2026-05-03 14:02 · saved · [[MemoryVault/…/use-uv|use-uv]] · rule …, confidence high,
session …`: when, what, which entry (a wikilink Obsidian resolves by path; by name for a capture in
`_review/` or `_inbox/`, which approving moves), why. `_meta/` is outside
the read scope, so the log is never indexed or recalled into a prompt; Obsidian shows it like any note.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from memvault import records
from memvault.text import plural

FOLDER = "_meta"
PREFIX = "changelog-"
PAGE_MAX_BYTES = 256 * 1024  # a month holding more continues on changelog-YYYY-MM-2.md, -3, …
SEP = " · "

# What a line says happened (the second field). The summary counts those it has words for.
SAVED, REVIEW, INBOX, IDEA, PROMOTED = "saved", "to review", "to inbox", "idea", "promoted"
PROPOSED, DUPLICATE, UPDATED, ARCHIVED, DELETED = "supersede proposed", "duplicate", "updated", "archived", "deleted"
IMPORTED, UNDONE, APPROVED, REJECTED, SUPERSEDED = "imported", "import undone", "approved", "rejected", "superseded"
UNDID = "undone"  # `memvault undo` took a change back; the change's own lines stay (the log is append-only)
SUMMARY = {
    SAVED: ("entry saved", "entries saved"),
    REVIEW: ("sent to review", "sent to review"),
    INBOX: ("sent to the inbox", "sent to the inbox"),
    IDEA: ("idea captured", "ideas captured"),
    PROMOTED: ("capture promoted", "captures promoted"),
    PROPOSED: ("supersede proposal", "supersede proposals"),
    UPDATED: ("entry updated", "entries updated"),
    ARCHIVED: ("archived", "archived"),
    DELETED: ("deleted", "deleted"),
    IMPORTED: ("import", "imports"),
}

_PAGE = re.compile(r"^changelog-(\d{4})-(\d{2})(?:-(\d+))?\.md$")
_STAMP = re.compile(r"- \d{4}-\d{2}-\d{2} \d{2}:\d{2}")


class Record(records.Record):
    """One automatic change as the log tells it; `path` None means the change's own entry."""

    action: str
    path: str | None = None
    detail: str = ""  # what else the reader needs: "of [[…]]", "from ~/.claude/CLAUDE.md › Testing"
    rule: str | None = None
    confidence: str | None = None
    session: str | None = None


# ---- writing --------------------------------------------------------------------------------------


def folder_rel(memory_folder: str) -> str:
    return f"{memory_folder}/{FOLDER}"


def is_page(rel: str, memory_folder: str) -> bool:
    """Whether vault-relative `rel` is one of the log's pages."""
    folder, _, name = rel.rpartition("/")
    return folder == folder_rel(memory_folder) and _PAGE.match(name) is not None


def page_name(when: dt.datetime, n: int = 1) -> str:
    return f"{PREFIX}{when:%Y-%m}{'' if n == 1 else f'-{n}'}.md"


QUEUES = ("_review", "_inbox")  # a capture there moves when approved (keeping its name) or is deleted


def wikilink(rel: str) -> str:
    """A link Obsidian resolves by path whatever other notes share the name, shown as the file name.

    A capture waiting in a queue is linked by its name alone: the log is append-only, and approving moves
    the note (same name) to its kind folder, where Obsidian still finds it. A rejected capture is deleted;
    its link then opens nothing, and the `rejected` line after it says so.
    """
    target = rel.removesuffix(".md")
    folder, _, name = target.rpartition("/")
    if folder.rsplit("/", 1)[-1] in QUEUES:
        return f"[[{name}]]"
    return f"[[{target}|{name}]]"


def line(record: Record, when: dt.datetime, path: str) -> str:
    """One line of the page; secrets in free text are redacted and line breaks folded."""
    why = [record.detail.strip()] if record.detail.strip() else []
    facts = (("rule", record.rule), ("confidence", record.confidence), ("session", record.session))
    why += [f"{name} {value}" for name, value in facts if value]
    parts = [f"{when:%Y-%m-%d %H:%M}", record.action, wikilink(path) if path else "—", ", ".join(why) or "—"]
    text = " ".join(SEP.join(parts).split())
    from . import secrets  # here: compiling its patterns costs SessionStart, which only reads pages, about 30 ms

    return "- " + secrets.redact(text)[0]


def header(when: dt.datetime) -> str:
    return (
        f"# MemoryVault changes, {when:%B %Y}\n\n"
        "What memvault changed in this vault on its own (reflection, seed, imports, clean-ups, the skills "
        "index), what became of its captures in review and what `memvault undo` took back, one line per change, "
        "oldest first; a line is never removed: when · what · "
        "which entry · why. `memory.transparency` decides what is recorded; this page is never recalled into "
        "a prompt.\n\n"
    )


def appended(current: str | None, lines: Iterable[str], when: dt.datetime) -> str:
    """The page with `lines` added at its end (a new page starts with its header)."""
    text = current if current else header(when)
    if not text.endswith("\n"):
        text += "\n"
    return text + "".join(f"{entry}\n" for entry in lines)


# ---- reading: what changed since the last session ----------------------------------------------


def pages(memory_dir: Path) -> list[str]:
    """The log's page names, oldest first."""
    try:
        names = [p.name for p in (memory_dir / FOLDER).iterdir() if _PAGE.match(p.name)]
    except OSError:
        return []
    return sorted(names, key=_page_key)


def actions(text: str) -> list[str]:
    """The action of every log line of a page, in order."""
    out = []
    for line in text.split("\n"):
        if line.startswith("- "):
            parts = line.split(SEP, 2)
            if len(parts) == 3 and _STAMP.fullmatch(parts[0]):
                out.append(parts[1])
    return out


def since(memory_dir: Path, mark: Mapping[str, object] | None) -> tuple[dict[str, int], dict[str, object], str | None]:
    """Lines written after `mark` ({"page", "lines"}), counted by action; the new mark; the newest page.

    Without a mark nothing is counted: the mark starts at the end of the log.
    """
    names = pages(memory_dir)
    if not names:
        return {}, {"page": None, "lines": 0}, None
    counts: dict[str, int] = {}
    page, seen = (mark.get("page"), mark.get("lines")) if mark else (None, 0)
    start = _page_key(page) if isinstance(page, str) else (0, 0, 0)  # no page then: every page is new
    read: dict[str, list[str]] = {}
    for name in names if mark is not None else ():
        key = _page_key(name)
        if key >= start:
            skip = seen if key == start and isinstance(seen, int) else 0
            read[name] = _read_actions(memory_dir / FOLDER / name)
            for action in read[name][skip:]:
                counts[action] = counts.get(action, 0) + 1
    last = read[names[-1]] if names[-1] in read else _read_actions(memory_dir / FOLDER / names[-1])
    return counts, {"page": names[-1], "lines": len(last)}, names[-1]


def summary(counts: Mapping[str, int]) -> str:
    """'3 entries saved, 1 supersede proposal' (only the actions the summary has words for), or ''."""
    return ", ".join(plural(counts[a], *SUMMARY[a]) for a in SUMMARY if counts.get(a))


def _read_actions(path: Path) -> list[str]:
    try:
        return actions(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return []


def _page_key(name: str) -> tuple[int, int, int]:
    match = _PAGE.match(name)
    if not match:
        return (0, 0, 0)
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 1)
