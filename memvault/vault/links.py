"""Links between notes as Obsidian resolves them, and the rewrite that keeps them pointing where they did (pure).

Obsidian resolves `[[target]]` by path when the target is a path from the vault root, else by file
name anywhere in the vault (a partial path `[[folder/name]]` matches the end of a path). When several
files share the name it prefers the one beside the linking note, then the shortest path. Moving notes
can therefore change what a link means without changing its text: a name that was unique becomes
ambiguous, or a partial path no longer matches. `rewrite` keeps every link whose meaning survives as it
is, and gives the others the full path from the vault root (with the old text as the alias, so the
note reads the same). Markdown links `[text](path.md)` are relative to the note and are recomputed.
Links inside code blocks and code spans are text, not links.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import quote, unquote

WIKILINK = re.compile(r"(!?)\[\[([^\[\]|#^\n]*)([#^][^\[\]|\n]*)?(?:\|([^\[\]\n]*))?\]\]")
MDLINK = re.compile(r"(!?)\[([^\]\n]*)\]\((<[^>\n]+>|[^)\s]+)(\s+\"[^\"\n]*\")?\)")
_CODE = re.compile(r"^ {0,3}(`{3,}|~{3,}).*?(?:^ {0,3}\1[ \t]*$|\Z)|`[^`\n]+`", re.M | re.S)
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


@dataclass(frozen=True)
class Files:
    """Every file of a vault (vault-relative POSIX paths), indexed the way Obsidian looks links up."""

    paths: frozenset[str]
    by_name: dict[str, list[str]]  # lowercased file name ("note.md", "image.png") → paths, shortest first

    @classmethod
    def of(cls, paths: Iterable[str]) -> Files:
        every = frozenset(paths)
        by_name: dict[str, list[str]] = {}
        for path in every:
            by_name.setdefault(path.rsplit("/", 1)[-1].lower(), []).append(path)
        for found in by_name.values():
            found.sort(key=lambda p: (len(p), p))
        return cls(every, by_name)

    def candidates(self, link: str) -> tuple[str | None, list[str]]:
        """The file at `link` as a path from the vault root, and the files whose path ends with it."""
        target = link.strip().lstrip("/")
        if not target:
            return None, []
        wanted = [target] if target.lower().endswith(".md") else [f"{target}.md", target]
        lowered = {p.lower(): p for p in self.paths}
        exact = next((lowered[w.lower()] for w in wanted if w.lower() in lowered), None)
        ends = [
            path
            for want in wanted
            for path in self.by_name.get(want.rsplit("/", 1)[-1].lower(), [])
            if "/" not in want or path.lower().endswith("/" + want.lower()) or path.lower() == want.lower()
        ]
        return exact, ends


def resolve(link: str, source: str, files: Files) -> str | None:
    """The file `[[link]]` written in `source` opens in Obsidian (None when it opens nothing)."""
    exact, ends = files.candidates(link)
    if exact:
        return exact
    here = posixpath.dirname(source)
    return next((p for p in ends if posixpath.dirname(p) == here), ends[0] if ends else None)


def unique(link: str, files: Files) -> str | None:
    """The file `[[link]]` means when no rule of preference is needed to decide it; None when there is a choice."""
    exact, ends = files.candidates(link)
    found = set(ends) | ({exact} if exact else set())
    return found.pop() if len(found) == 1 else None


def resolve_markdown(href: str, source: str, files: Files) -> str | None:
    """The file a markdown link opens: relative to the note, else from the vault root."""
    path = unquote(href.strip("<>").split("#", 1)[0])
    if not path or _SCHEME.match(path):
        return None
    for candidate in (posixpath.normpath(posixpath.join(posixpath.dirname(source), path)), path.lstrip("/")):
        if candidate in files.paths:
            return candidate
    return None


def rewrite(
    text: str, source: str, before: Files, moved: Callable[[str], str | None], after: Files, new_source: str
) -> tuple[str, int]:
    """`text` of the note `source` (in the `before` vault) as it must read at `new_source` (in `after`).

    `moved(path)` is where a file of `before` is in `after` (None: not carried over). Returns the text and
    how many links were rewritten.
    """
    skip = [m.span() for m in _CODE.finditer(text)]
    count = 0

    def outside(match: re.Match[str]) -> bool:
        return not any(a <= match.start() < b for a, b in skip)

    def wiki(match: re.Match[str]) -> str:
        nonlocal count
        bang, target, sub, alias = match.group(1), match.group(2), match.group(3) or "", match.group(4)
        if not outside(match) or not target.strip():
            return match.group(0)
        was = resolve(target, source, before)
        now = moved(was) if was else None
        if now is None or unique(target, after) == now:
            return match.group(0)
        count += 1
        full = now.removesuffix(".md") if now.lower().endswith(".md") else now
        shown = alias if alias is not None else (None if bang else target + sub)
        return f"{bang}[[{full}{sub}" + (f"|{shown}" if shown else "") + "]]"

    def markdown(match: re.Match[str]) -> str:
        nonlocal count
        href = match.group(3)
        if not outside(match):
            return match.group(0)
        was = resolve_markdown(href, source, before)
        now = moved(was) if was else None
        if now is None:
            return match.group(0)
        new = posixpath.relpath(now, posixpath.dirname(new_source) or ".")
        anchor = "#" + href.strip("<>").split("#", 1)[1] if "#" in href else ""
        if resolve_markdown(href, new_source, after) == now:
            return match.group(0)
        count += 1
        shown = f"<{new}{anchor}>" if href.startswith("<") else quote(new) + anchor
        return f"{match.group(1)}[{match.group(2)}]({shown}{match.group(4) or ''})"

    text = WIKILINK.sub(wiki, text)
    skip = [m.span() for m in _CODE.finditer(text)]
    return MDLINK.sub(markdown, text), count


def targets(text: str, source: str, files: Files) -> list[str]:
    """The files the note's links open (wikilinks and markdown links, outside code), each once."""
    skip = [m.span() for m in _CODE.finditer(text)]
    found: list[str] = []
    for match in WIKILINK.finditer(text):
        if not any(a <= match.start() < b for a, b in skip) and match.group(2).strip():
            found.append(resolve(match.group(2), source, files) or "")
    for match in MDLINK.finditer(text):
        if not any(a <= match.start() < b for a, b in skip):
            found.append(resolve_markdown(match.group(3), source, files) or "")
    return [p for p in dict.fromkeys(found) if p]


def unresolved(text: str, source: str, files: Files) -> list[str]:
    """The links of the note that open no file (wikilink targets and markdown paths as written), each once."""
    skip = [m.span() for m in _CODE.finditer(text)]
    found: list[str] = []
    for match in WIKILINK.finditer(text):
        target = match.group(2).strip()  # empty: a heading or block of the note itself
        if target and not any(a <= match.start() < b for a, b in skip) and resolve(target, source, files) is None:
            found.append(target)
    for match in MDLINK.finditer(text):
        path = unquote(match.group(3).strip("<>").split("#", 1)[0])  # empty: an anchor in the note itself
        if not path or _SCHEME.match(path) or any(a <= match.start() < b for a, b in skip):
            continue
        if resolve_markdown(match.group(3), source, files) is None:
            found.append(path)
    return list(dict.fromkeys(found))
