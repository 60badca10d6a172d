"""Instruction files (CLAUDE.md, AGENTS.md) split by their markdown structure into rules, each with its heading path.

Pure: text in, pieces out. A list item (with its sub-items and any code block it owns), a paragraph,
a table or a quote is one piece; a paragraph that ends in `:` and introduces a list is context for
its items, not a rule. Headings give every piece its context path. Code blocks, HTML comments and
`@path` import lines are never split or taken for rules.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from memvault.store import notes

TITLE_CHARS = 72
MIN_CHARS = 6  # "Use uv" is a rule; "TODO" is not

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ITEM = re.compile(r"^( {0,3})([-*+]|\d{1,9}[.)])([ \t]+|$)")
_BREAK = re.compile(r"^ {0,3}([-*_])([ \t]*\1){2,}[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_IMPORT = re.compile(r"(?<![\w`/])@((?:~/|\.{0,2}/)?[\w.\-/]+\.md)\b")
_ONLY_IMPORTS = re.compile(r"^\s*(?:[-*+]\s+)?(?:@\S+\s*)+$")
# The line Claude Code's /init writes at the top of every CLAUDE.md: about the file, not a rule.
_BOILERPLATE = re.compile(r"^this file (provides|gives|contains|is)\b.*\b(guidance|instructions)\b", re.I)
_INLINE = (
    (re.compile(r"\[\[([^\]|]+)\|([^\]]+)\]\]"), r"\2"),
    (re.compile(r"\[\[([^\]]+)\]\]"), r"\1"),
    (re.compile(r"!?\[([^\]]*)\]\([^)]*\)"), r"\1"),
    (re.compile(r"(\*\*|__)(.+?)\1"), r"\2"),
    (re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])"), r"\1"),
    (re.compile(r"`([^`]*)`"), r"\1"),
)


@dataclass(frozen=True)
class Piece:
    """One rule as written: its markdown (list marker removed, dedented), heading path and first line."""

    context: tuple[str, ...]
    text: str
    line: int  # 1-based, in the file as given (frontmatter included)


def split(text: str) -> list[Piece]:
    """The rules of an instruction file, in order."""
    note = notes.parse(text)
    offset = text[: len(text) - len(note.body)].count("\n") if note.frontmatter is not None else 0
    body = _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), note.body)
    lines = body.splitlines()
    pieces: list[Piece] = []
    headings: list[tuple[int, str]] = []
    lead: str | None = None  # "Before committing:" introducing the list that follows
    last_heading_at = -1
    i = 0
    while i < len(lines):
        line = lines[i]
        heading = _HEADING.match(line)
        if not line.strip() or _BREAK.match(line):
            i += 1
        elif heading:
            level = len(heading.group(1))
            headings = _under(headings, level, heading.group(2), first=not pieces and not headings)
            lead, last_heading_at, i = None, len(pieces), i + 1
        elif _FENCE.match(line):
            end = _fence_end(lines, i)
            block = "\n".join(lines[i:end])
            if len(pieces) > last_heading_at and pieces:  # the example of the rule just above it
                pieces[-1] = Piece(pieces[-1].context, pieces[-1].text + "\n\n" + block, pieces[-1].line)
            else:
                pieces.append(Piece(_context(headings, lead), block, offset + i + 1))
            i = end
        elif _ITEM.match(line):
            end = _item_end(lines, i)
            pieces.append(Piece(_context(headings, lead), _item_text(lines[i:end]), offset + i + 1))
            i = end
        else:
            end = _block_end(lines, i)
            block = "\n".join(lines[i:end]).strip()
            if end < len(lines) and _SETEXT.match(lines[end]) and not block.startswith(("|", ">")):  # Title\n=====
                level = 1 if lines[end].strip().startswith("=") else 2
                headings = _under(headings, level, block, first=not pieces and not headings)
                lead, last_heading_at, i = None, len(pieces), end + 1
                continue
            nxt = next((k for k in range(end, len(lines)) if lines[k].strip()), None)
            follows_list = nxt is not None and bool(_ITEM.match(lines[nxt]))
            if block.endswith(":") and follows_list and not block.startswith(("|", ">")):
                lead = plain(block).rstrip(":").strip()
            else:
                lead = None
                pieces.append(Piece(_context(headings, None), block, offset + i + 1))
            i = end
    return [
        p
        for p in pieces
        if len(plain(p.text)) >= MIN_CHARS and not _ONLY_IMPORTS.match(p.text) and not _BOILERPLATE.match(plain(p.text))
    ]


def imports(text: str) -> list[str]:
    """The `@path` markdown files an instruction file imports (outside code), in order, each once."""
    body = re.sub(r"^ {0,3}(`{3,}|~{3,}).*?^ {0,3}\1", "", _COMMENT.sub("", text), flags=re.M | re.S)
    body = re.sub(r"`[^`\n]*`", "", body)
    return list(dict.fromkeys(m.group(1) for m in _IMPORT.finditer(body)))


def plain(text: str) -> str:
    """Markdown reduced to its words: links, emphasis and code marks removed, whitespace folded."""
    for pattern, repl in _INLINE:
        text = pattern.sub(repl, text)
    return " ".join(text.split())


def title(text: str, context: tuple[str, ...] = ()) -> str:
    """A title for a rule: its bold lead-in, else its first sentence, cut at a word within TITLE_CHARS.

    A table is named after the heading above it.
    """
    text = text.strip()
    if text.startswith("|"):
        return context[-1] if context else "Table"
    lead = re.match(r"^(\*\*|__)(.+?)\1", text)
    line = plain(text.splitlines()[0].lstrip("> ")) if text else ""
    first = plain(lead.group(2)) if lead else re.split(r"(?<=[.!?])\s", line, maxsplit=1)[0]
    first = first.strip().rstrip(".:;,!—-").strip() or plain(text)[:TITLE_CHARS]
    if len(first) > TITLE_CHARS:
        first = first[:TITLE_CHARS].rsplit(" ", 1)[0].rstrip(",;:—-") + "…"
    return first


def key(text: str) -> str:
    """The rule's identity: its words, whatever the markup, heading or file around them."""
    return hashlib.sha256(plain(text).lower().encode("utf-8")).hexdigest()[:16]


def kind(context: tuple[str, ...], text: str) -> str:
    """`decision`, `workflow` or `convention`, from the headings above the rule (and a `Decision:` lead-in)."""
    where = " ".join(context).lower()
    if re.search(r"\bdecisions?\b|\bdecided\b|\blocked\b|\badrs?\b", where) or re.match(r"\W*decision\b", text, re.I):
        return "decision"
    if re.search(r"\bworkflows?\b|\bprocess\b|\bprocedures?\b|\bchecklists?\b|\bsteps\b|\breleas", where):
        return "workflow"
    return "convention"


def _under(headings: list[tuple[int, str]], level: int, text: str, *, first: bool) -> list[tuple[int, str]]:
    """The heading path after a heading; a file's opening title naming the file itself adds nothing."""
    name = plain(text)
    if first and level == 1 and re.fullmatch(r"(?i)(claude|agents)(\.local)?(\.md)?", name):
        return []
    return [h for h in headings if h[0] < level] + [(level, name)]


def _context(headings: list[tuple[int, str]], lead: str | None) -> tuple[str, ...]:
    return tuple(h for _, h in headings) + ((lead,) if lead else ())


def _fence_end(lines: list[str], start: int) -> int:
    fence = _FENCE.match(lines[start])
    assert fence
    mark = fence.group(1)
    for j in range(start + 1, len(lines)):
        if lines[j].strip().startswith(mark[0] * len(mark)) and not lines[j].strip().strip(mark[0]):
            return j + 1
    return len(lines)


def _item_end(lines: list[str], start: int) -> int:
    """The line after a list item: its continuation lines, sub-items and indented blocks belong to it."""
    first = _ITEM.match(lines[start])
    assert first
    indent = len(first.group(1))
    j = start + 1
    while j < len(lines):
        line = lines[j]
        if not line.strip():
            nxt = next((k for k in range(j + 1, len(lines)) if lines[k].strip()), None)
            if nxt is None or _indent(lines[nxt]) <= indent:
                return j
            j += 1
            continue
        item = _ITEM.match(line)
        top_fence = _FENCE.match(line) and _indent(line) <= indent
        if (item and len(item.group(1)) <= indent) or _HEADING.match(line) or top_fence:
            return j
        j += 1
    return j


def _block_end(lines: list[str], start: int) -> int:
    """The line after a paragraph, table or quote (up to a blank line, heading, fence or list item)."""
    j = start + 1
    while j < len(lines):
        line = lines[j]
        if not line.strip() or _HEADING.match(line) or _FENCE.match(line) or _ITEM.match(line) or _SETEXT.match(line):
            return j
        j += 1
    return j


def _item_text(lines: list[str]) -> str:
    """A list item without its marker, its continuation lines dedented to match."""
    first = _ITEM.match(lines[0])
    assert first
    width = len(first.group(0)) if first.group(3) else len(first.group(0)) + 1
    out = [lines[0][len(first.group(0)) :]]
    for line in lines[1:]:
        cut = min(width, _indent(line))
        out.append(line[cut:])
    return "\n".join(out).strip()


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))
