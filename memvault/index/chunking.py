"""Pure text helpers for the index: heading-aware chunks, the text to embed, wikilinks, query terms, snippets."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence

from memvault.records import Record

# all-MiniLM-L6-v2 reads 256 word pieces (about 1 KB of English); longer chunks would be cut silently.
MAX_CHUNK_CHARS = 1000
# How much of its neighbours a chunk carries (the end of the previous chunk, the start of the next, in the
# same section): what a reader of the chunk would have just read. The embedded text takes the part before
# the chunk while the whole stays within EMBED_CHARS, so the model still reads the chunk itself to the end;
# the keyword row takes both sides. Bounded, so an edit re-embeds at most the chunks next to it.
CONTEXT_CHARS = 300
EMBED_CHARS = 1200
SNIPPET_CHARS = 220

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^[ \t]*(```|~~~)")
_WIKILINK = re.compile(r"!?\[\[([^\]\[|#^]*)(?:#[^\]|]*)?(?:\|[^\]]*)?\]\]")
_WORD = re.compile(r"\w+", re.UNICODE)
_TOKEN = re.compile(r"\w[\w.\-/:]*\w|\w", re.UNICODE)
_CAMEL = re.compile(r"[a-z][A-Z]")
_DOTTED = re.compile(r"[A-Za-z]{2}\.[A-Za-z]{2}")  # config.yaml, os.path; not e.g., i.e.
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")


# English function words: an FTS5 OR query containing them matches nearly every note (slow, noisy).
_STOP_WORDS = """
a about above after again against all am an and any are as at be because been before being below between
both but by can could did do does doing down during each few for from further had has have having he her
here hers herself him himself his how i if in into is it its itself just me more most my myself no nor
not now of off on once only or other our ours ourselves out over own same she should so some such than
that the their theirs them themselves then there these they this those through to too under until up
very was we were what when where which while who whom why will with would you your yours yourself
yourselves also get got let lets like make made use used using want wants way ve ll re d s t m o y don
doesn didn isn aren wasn weren won wouldn shouldn couldn us one thing things
"""
STOP_WORDS = frozenset(_STOP_WORDS.split())


class Chunk(Record):
    seq: int
    heading: str  # heading path, "Setup › Linux"; "" before the first heading
    text: str
    before: str = ""  # the end of the previous chunk of the same section (at most CONTEXT_CHARS)
    after: str = ""  # the start of the next chunk of the same section (at most CONTEXT_CHARS)


def chunks(body: str, max_chars: int | None = None) -> list[Chunk]:
    """Split a note body into chunks at headings, then at paragraphs, then sentences; never longer than max_chars.

    Headings inside fenced code blocks are not headings. An empty body gives one empty chunk so the
    note's title and tags still have a row to be found by. Each chunk carries its neighbours' window.
    """
    out: list[Chunk] = []
    for heading, text in _sections(body):
        for piece in _pack(_paragraphs(text), max_chars or MAX_CHUNK_CHARS):
            out.append(Chunk(len(out), heading, piece))
    return with_neighbours(out) or [Chunk(0, "", "")]


def with_neighbours(parts: Sequence[Chunk], window: int | None = None) -> list[Chunk]:
    """The chunks (in order) with `before` and `after` set from their neighbours in the same section."""
    window = CONTEXT_CHARS if window is None else window
    out = []
    for i, part in enumerate(parts):
        prev = parts[i - 1] if i > 0 and parts[i - 1].heading == part.heading else None
        nxt = parts[i + 1] if i + 1 < len(parts) and parts[i + 1].heading == part.heading else None
        before = _tail(prev.text, window) if prev else ""
        after = _head(nxt.text, window) if nxt else ""
        out.append(Chunk(part.seq, part.heading, part.text, before, after))
    return out


def heading_path(title: str, heading: str) -> str:
    """The title and the heading path as a reader sees them: "Title › Setup › Linux", the H1 not repeated."""
    if not heading:
        return title
    repeats = heading == title or heading.startswith(f"{title} › ")  # the path usually starts with the H1
    return heading if repeats or not title else f"{title} › {heading}"


def embed_text(title: str, tags: Iterable[str], chunk: Chunk) -> str:
    """What the model reads for a chunk: title and heading path, tags (first chunk), the text before it, the chunk.

    The text before is cut from its start so the whole stays within EMBED_CHARS: the model reads
    only its first 256 word pieces, and the chunk itself must not be the part it never reaches.
    """
    head = heading_path(title, chunk.heading)
    lines = [head] if head else []
    tag_line = " ".join(f"#{t}" for t in tags)
    if chunk.seq == 0 and tag_line:
        lines.append(tag_line)
    room = EMBED_CHARS - len(chunk.text) - sum(len(line) + 1 for line in lines)
    if chunk.before and room >= 40:
        lines.append(_tail(chunk.before, room))
    if chunk.text:
        lines.append(chunk.text)
    return "\n".join(lines)


def keyword_row(title: str, tags: Iterable[str], chunk: Chunk) -> tuple[str, str, str, str, str]:
    """A chunk's FTS5 row: title, tags, heading path, text, and its neighbours' window (`context`, weighted low).

    Every chunk carries the note's title and tags, so a chunk deep in a long note is found by them too.
    """
    context = f"{chunk.before}\n{chunk.after}".strip()
    return title, " ".join(tags), chunk.heading, chunk.text, context


def wikilinks(text: str) -> list[str]:
    """Targets of `[[target]]`, `[[target|alias]]`, `[[target#heading]]` and `![[embed]]`, in order, deduplicated."""
    seen: dict[str, None] = {}
    for match in _WIKILINK.finditer(_strip_code(text)):
        target = match.group(1).strip()
        if target:
            seen.setdefault(target, None)
    return list(seen)


def resolve_link(target: str, source: str, by_path: dict[str, str], by_name: dict[str, list[str]]) -> str | None:
    """Resolve a wikilink target the way Obsidian does, or None when no note matches.

    `by_path` maps a lowercased vault-relative path without `.md` to the real path; `by_name` a
    lowercased file stem to every path with that stem. A target with a folder part must match a
    path (or its tail); a bare name prefers the note in the source's own folder, then the
    shortest path, then alphabetical order.
    """
    key = target.strip().lstrip("/").lower()
    if key.endswith(".md"):
        key = key[:-3]
    if not key:
        return None
    if key in by_path:
        return by_path[key]
    if "/" in key:
        tails = sorted(p for k, p in by_path.items() if k.endswith("/" + key))
        return min(tails, key=len) if tails else None
    candidates = by_name.get(key)
    if not candidates:
        return None
    folder = source.rsplit("/", 1)[0] if "/" in source else ""
    same = [p for p in candidates if (p.rsplit("/", 1)[0] if "/" in p else "") == folder]
    return (same or sorted(candidates, key=lambda p: (p.count("/"), len(p), p)))[0]


def query_terms(query: str, limit: int = 32) -> list[str]:
    """Lowercased content words of a query, stop words and one-letter words dropped, first occurrence order."""
    terms: dict[str, None] = {}
    for word in _WORD.findall(query.lower()):
        word = word.strip("_")
        short = len(word) < 2 and word.isascii()  # one CJK character is a word; one Latin letter is not
        if word and not short and word not in STOP_WORDS:
            terms.setdefault(word, None)
    return list(terms)[:limit]


def identifiers(query: str) -> list[str]:
    """Tokens of a query that name one exact thing: error codes, snake_case, camelCase, dotted names.

    `KX-4471`, `ERR_OSSL_EVP_UNSUPPORTED`, `0308010C`, `getUserById`, `config.yaml` are; plain words,
    numbers, hyphenated words (`pre-commit`), abbreviations (`e.g.`) and underscores around one plain
    word (`__name__`, `_private`: the index reads them as the word `name`, found everywhere) are not.
    Each comes back as an FTS5 phrase query.
    """
    out: dict[str, None] = {}
    for token in _TOKEN.findall(query):
        letters, digits = any(c.isalpha() for c in token), any(c.isdigit() for c in token)
        words = _WORD.findall(token.replace("_", " ").lower())
        snake = "_" in token and (len(words) > 1 or digits)
        if words and ((letters and digits) or snake or _CAMEL.search(token) or _DOTTED.search(token)):
            out.setdefault('"' + " ".join(words) + '"', None)
    return list(out)


def fts_query(terms: list[str]) -> str | None:
    """An FTS5 OR query of quoted terms (quoting keeps user text from being read as FTS syntax)."""
    if not terms:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def snippet(text: str, terms: list[str], limit: int = SNIPPET_CHARS) -> str:
    """A one-line excerpt of `text` around the first query term found (else its start), at most `limit` chars."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    lower = flat.lower()
    hits = [i for i in (lower.find(t) for t in terms) if i >= 0]
    start = 0
    if hits:
        start = max(0, min(hits) - limit // 4)
        space = flat.rfind(" ", 0, start)
        start = space + 1 if space >= 0 and start > 0 else start
    end = min(len(flat), start + limit)
    cut = flat[start:end]
    if end < len(flat):
        space = cut.rfind(" ")
        cut = (cut[:space] if space > limit // 2 else cut).rstrip() + " …"
    return ("… " if start > 0 else "") + cut


def _tail(text: str, limit: int) -> str:
    """The end of `text`, at most `limit` characters, starting at a word (a paragraph or sentence when one is near)."""
    if limit <= 0:
        return ""
    if len(text) <= limit:
        return text
    cut = text[-limit:]
    for mark in ("\n\n", ". ", " "):
        at = cut.find(mark)
        if 0 <= at < limit // 2:
            return cut[at + len(mark) :].strip()
    return cut.strip()


def _head(text: str, limit: int) -> str:
    """The start of `text`, at most `limit` characters, ending at a word (a paragraph or sentence when one is near)."""
    if limit <= 0:
        return ""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    for mark in ("\n\n", ". ", " "):
        at = cut.rfind(mark)
        if at > limit // 2:
            return cut[: at + (1 if mark == ". " else 0)].strip()
    return cut.strip()


def _lines(text: str) -> Iterator[tuple[str, bool]]:
    """Each line with whether it belongs to a fenced code block (the fence lines included)."""
    fence: str | None = None
    for line in text.splitlines():
        opened = _FENCE.match(line)
        if fence is None and opened:
            fence = opened.group(1)
            yield line, True
        elif fence is not None:
            if line.strip().startswith(fence):
                fence = None
            yield line, True
        else:
            yield line, False


def _strip_code(text: str) -> str:
    return "\n".join(re.sub(r"`[^`\n]*`", "", line) for line, code in _lines(text) if not code)


def _sections(body: str) -> list[tuple[str, str]]:
    sections: list[tuple[str, list[str]]] = [("", [])]
    path: list[tuple[int, str]] = []
    for line, code in _lines(body):
        heading = None if code else _HEADING.match(line)
        if heading:
            level = len(heading.group(1))
            path = [(lvl, name) for lvl, name in path if lvl < level] + [(level, heading.group(2).strip())]
            sections.append((" › ".join(name for _, name in path), []))
        else:
            sections[-1][1].append(line)
    return [(h, "\n".join(lines).strip()) for h, lines in sections if "\n".join(lines).strip() or h]


def _paragraphs(text: str) -> list[str]:
    return [p.strip() for p in re.split(r"\n[ \t]*\n", text) if p.strip()] or [""]


def _pack(paragraphs: list[str], max_chars: int) -> list[str]:
    """Greedily join paragraphs up to max_chars; split any longer paragraph at sentences, then hard."""
    pieces: list[str] = []
    for para in paragraphs:
        pieces.extend(_split_long(para, max_chars) if len(para) > max_chars else [para])
    out: list[str] = []
    for piece in pieces:
        if out and len(out[-1]) + 2 + len(piece) <= max_chars:
            out[-1] = f"{out[-1]}\n\n{piece}"
        else:
            out.append(piece)
    return out


def _split_long(text: str, max_chars: int) -> list[str]:
    out: list[str] = []
    for sentence in _SENTENCE_END.split(text):
        while len(sentence) > max_chars:
            cut = sentence.rfind(" ", 0, max_chars)
            cut = cut if cut > max_chars // 2 else max_chars
            out.append(sentence[:cut].strip())
            sentence = sentence[cut:].strip()
        if out and len(out[-1]) + 1 + len(sentence) <= max_chars:
            out[-1] = f"{out[-1]} {sentence}"
        elif sentence:
            out.append(sentence)
    return out
