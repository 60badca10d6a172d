"""The text hooks put into Claude's context: always-load entries and recalled notes, fenced, labelled and capped.

The fences (`<memoryvault-always-load>`, `<memoryvault-recall>`) let the transcript reader drop this
text again, so reflection never re-ingests what the vault itself injected. Private notes and `<private>`
spans never get here (`store.privacy`); secret-shaped strings are redacted from whatever does.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from memvault.recall import passages
from memvault.store import privacy

TYPE_CHECKING = False  # typing.TYPE_CHECKING (mypy reads it so) without importing typing at run time
if TYPE_CHECKING:  # not imported at run time (the prompt path)
    from typing import Any

ALWAYS_TAG, RECALL_TAG = "memoryvault-always-load", passages.TAG
ALWAYS_FOLDER = "_always-load"
MIN_SHARE = 300  # an always-load entry cut to fit is still given at least this many characters
TITLE_CHARS = 48  # per title in the one-line message shown to the user
# The warm service runs every SessionStart: an always-load note is parsed and scanned for secrets once per text
# (0.8 ms a note, 16 of the 22 ms for 20 notes), not once per session. Keyed by the note's path and whole text,
# so an edit is read at once; a one-shot hook process gains nothing from it and loses nothing.
_READ: dict[tuple[str, str, str], Loaded | None] = {}
READ_CACHE = 256  # entries kept (it is emptied when full): many times the always-load limit of a few vaults


class Loaded:
    """One always-load note as context: its vault path, title and text."""

    __slots__ = ("path", "text", "title")

    def __init__(self, path: str, title: str, text: str) -> None:
        self.path, self.title, self.text = path, title, text


def always_load_paths(root: Path, folder: str, index_file: Path | None) -> list[str]:
    """`_always-load/` notes of every group (read from disk: always fresh), then `always_load: true` notes (index)."""
    from memvault.index.core import open_reader
    from memvault.index.schema import VISIBLE

    memory = root / folder
    inside = os.path.realpath(root) + os.sep  # a symlink that leads out of the vault is never read
    found = sorted(
        f"{folder}/{p.relative_to(memory).as_posix()}"
        for p in memory.glob(f"*/{ALWAYS_FOLDER}/*.md")
        if p.is_file() and os.path.realpath(p).startswith(inside)
    )
    if index_file is not None and index_file.exists():
        with contextlib.suppress(Exception):  # a missing or damaged index only loses the flagged notes
            index = open_reader(index_file)
            try:
                rows = index.conn.execute(
                    "SELECT path FROM notes WHERE always_load = 1 AND visibility = ? ORDER BY path", (VISIBLE,)
                ).fetchall()
            finally:
                index.close()
            found += [str(r[0]) for r in rows if r[0] not in found]
    return found


def read_entry(root: Path, rel: str, folder: str) -> Loaded | None:
    """One note as context, or None when it is private, not active, or unreadable."""
    from memvault.errors import MemvaultError
    from memvault.store import disk  # after recall has run: none of this is on the way to it

    try:
        text = disk.read_text(root / rel)  # regular files only, bounded
    except MemvaultError:
        return None
    key = (rel, folder, text)
    try:
        return _READ[key]
    except KeyError:
        entry = _entry(rel, folder, text)
    if len(_READ) >= READ_CACHE:
        _READ.clear()
    _READ[key] = entry
    return entry


def _entry(rel: str, folder: str, text: str) -> Loaded | None:
    """`read_entry` of a note whose path and text are these: what it gives depends on nothing else."""
    from memvault.recall import scan, search

    head, body = scan.split_frontmatter(text)
    if not scan.admits_file(rel, folder, head, search.Options()):
        return None
    body = privacy.strip_private(body).strip()
    lines = body.splitlines()
    if lines and lines[0].startswith("# "):
        title, body = lines[0][2:].strip(), "\n".join(lines[1:]).strip()
    else:
        title = Path(rel).stem
    return Loaded(rel, redact(title), redact(body))


def redact(text: str) -> str:
    """`text` with secret-shaped strings replaced by markers, before any of it is given (or cut to fit)."""
    from memvault.store import secrets  # only once there is text to give

    return secrets.redact(text)[0] if text else text


def always_load(root: Path, folder: str, index_file: Path | None, limit: int) -> list[Loaded]:
    entries = (read_entry(root, rel, folder) for rel in always_load_paths(root, folder, index_file))
    return [e for e in entries if e is not None][:limit]


def always_load_context(entries: Sequence[Loaded], max_chars: int) -> tuple[str, list[str]]:
    """The SessionStart context and the paths it shows; entries past the budget are named, not dropped silently."""
    if not entries:
        return "", []
    head = (
        f'<{ALWAYS_TAG} count="{len(entries)}">\n'
        "Standing notes from the user's MemoryVault (their Obsidian vault), loaded at every session start. "
        "They record the user's preferences, conventions and decisions; the path is where each note lives.\n"
    )
    tail = f"</{ALWAYS_TAG}>"
    budget = max_chars - len(head) - len(tail) - 200  # room for the "not shown" line
    parts, shown = [], []
    for n, entry in enumerate(entries):
        header = f"\n## {entry.title} ({entry.path})\n"
        share = max(MIN_SHARE, budget // (len(entries) - n))
        room = min(share, budget) - len(header)
        if room < 80:
            break
        body = entry.text
        if len(body) > room:
            body = body[: room - 40].rstrip() + f"\n… (cut; read {entry.path})"
        parts.append(header + body + "\n")
        shown.append(entry.path)
        budget -= len(parts[-1])
    rest = [e.path for e in entries[len(shown) :]]
    if rest:
        parts.append(f"\nNot shown for space: {', '.join(rest)}\n")
    return head + "".join(parts) + tail, shown


def recall_context(hits: Sequence[Mapping[str, Any]], max_chars: int) -> tuple[str, list[Mapping[str, Any]]]:
    """The per-prompt context (per hit, best first: its title and path, then its passage) and the hits that fit.

    Hits are `recall.Hit.as_dict()` mappings (what the embedding service returns); the text is
    `recall.passages.context`'s, which `memvault recall --explain` prints too.
    """
    return passages.context(hits, max_chars, redact)


def titles(names: Sequence[str], limit: int = 5, *, redacted: bool = False) -> str:
    """'a, b, c' for the user's status line, each cut to a readable length, '+N more' past `limit`. `redacted`: the
    names were redacted already (the index stores a clean note's title so)."""
    shown = [n if redacted else redact(n) for n in names[:limit]]
    cut = [n if len(n) <= TITLE_CHARS else n[: TITLE_CHARS - 1] + "…" for n in shown]
    more = f" +{len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(cut) + more


def pending_counts(root: Path, folder: str) -> dict[str, int]:
    """Entries waiting for the user in `_review/` and `_inbox/` across groups."""
    memory = root / folder
    return {name: sum(1 for _ in memory.glob(f"*/_{name}/*.md")) for name in ("review", "inbox")}
