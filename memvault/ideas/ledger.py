"""The text of `Ideas.md` (pure): finding an idea's section by its wikilink, appending and marking sections.

Only memvault's own sections are ever touched; every other byte of the user's file is kept.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable

from memvault.store import safety

LEDGER = "Ideas.md"  # at the vault root: the one file outside MemoryVault/ memvault appends to
INDEX = "_index.md"
HEADER = "# Ideas"
SUMMARY_CHARS = 400
_HEADING = re.compile(r"^#{1,2}[ \t]", re.MULTILINE)  # a section ends at the next `# ` or `## ` heading
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")


def link_target(folder: str) -> str:
    """The wikilink target of an idea folder's note, as Ideas.md links it: `<folder>/_index`."""
    return f"{folder}/{INDEX.removesuffix('.md')}"


def find_section(text: str, target: str) -> tuple[int, int] | None:
    """(start, end) of the Ideas.md section that links to `target`, found by the link, not the heading."""
    link = re.search(r"\[\[" + re.escape(target) + r"(?:\||#|\]\])", text)
    if link is None:
        return None
    starts = [m.start() for m in _HEADING.finditer(text, 0, link.start())]
    start = starts[-1] if starts else text.rfind("\n", 0, link.start()) + 1
    following = _HEADING.search(text, link.end())
    return start, following.start() if following else len(text)


def newline_of(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def appended(text: str | None, lines: Iterable[str]) -> str:
    """`text` with a section (its lines) appended after a blank line; every byte before it is kept."""
    if not text:
        return "\n".join([HEADER, "", *lines, ""])
    nl = newline_of(text)
    trailing = text[len(text.rstrip("\r\n")) :].count("\n")
    return text + nl * max(0, 2 - trailing) + nl.join(lines) + nl


def marked(text: str, span: tuple[int, int], marker: str) -> str:
    """`text` with `marker` on its own line after the last non-blank line of the section at `span`."""
    start, end = span
    last = start + len(text[start:end].rstrip())
    line_end = text.find("\n", last, end)
    at = end if line_end == -1 else line_end  # -1: the section ends the file without a newline
    if 0 < at == line_end and text[at - 1] == "\r":
        at -= 1
    return text[:at] + newline_of(text) + marker + text[at:]


def section_lines(day: dt.date, title: str, summary: str, target: str) -> list[str]:
    return [f"## {day.isoformat()}: {title}", summary, f"[[{target}|{title}]]"]


def clean_title(title: str) -> str:
    """A title that fits a heading and a wikilink alias: one line, no `[`, `]` or `|`."""
    return " ".join(re.sub(r"[\[\]|]", " ", safety.strip_private(title)).split()).lstrip("#").strip()


def summary_of(body: str, title: str) -> str:
    """The first two sentences of the body's prose (headings and quote marks dropped), on one line."""
    prose = []
    for line in safety.strip_private(body).splitlines():
        bare = line.strip().lstrip(">").strip()
        if bare and not bare.startswith("#"):
            prose.append(bare)
    sentences = _SENTENCE_END.split(" ".join(prose))
    text = " ".join(sentences[:2]).strip()
    if len(text) > SUMMARY_CHARS:
        text = text[:SUMMARY_CHARS].rsplit(" ", 1)[0] + " …"
    return text or f"{title}."
