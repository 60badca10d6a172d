"""Which span of a recalled note is shown: its best chunk, then the chunks next to it, within a per-hit budget.

A hit's note is chunked (index.chunking, about a kilobyte a chunk); the chunk of best meaning and words is shown
first (`search`), and what is left of the hit's character budget is filled by the strategy `FILL`. On LoCoMo
session notes the evidence is often a reply next to the chunk that matches ("Yup, we did it yesterday!"), so
the shipped fill takes the following chunk, then the preceding one, cut at a paragraph or sentence to what
fits (wiki/explanation/recall.md, "What is shown"). The budget comes from the hook's `recall.max_context_chars`
and `recall.k` (`per_hit`), so the hook, the CLI and MCP show the same passage for the same hit.

Runs on the prompt path: the standard library and `store.privacy` only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from memvault.records import Record
from memvault.store import privacy

TYPE_CHECKING = False  # typing.TYPE_CHECKING (mypy reads it so) without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

FILLS = ("chunk", "neighbours", "best", "next", "excerpt")  # "chunk": the best chunk alone (before this module)
FILL = "excerpt"
# Characters of the recall context the hook spends on its own text (the fence, the header line) and per hit on the
# title and path line; `per_hit` gives each of the k hits an equal share of the rest.
CONTEXT_OVERHEAD = 250
HIT_OVERHEAD = 120
MIN_PASSAGE = 220  # never less than the one-line snippet a hit showed before
MIN_PIECE = 120  # a neighbour cut shorter than this is left out (a stub of a sentence does not help)
GAP = "\n…\n"  # between two shown pieces that are not next to each other in the note
TAG = "memoryvault-recall"  # the fence around the recall context (the transcript reader drops what it holds)


class Piece(Record):
    """One chunk of a note as a candidate to show: its position, text, and how well it matches the prompt."""

    seq: int
    text: str
    score: float = 0.0


def per_hit(max_context_chars: int, k: int) -> int:
    """The passage characters of each of `k` hits when the whole recall context is `max_context_chars`."""
    return max(MIN_PASSAGE, (max_context_chars - CONTEXT_OVERHEAD) // max(1, k) - HIT_OVERHEAD)


def choose(
    pieces: Sequence[Piece], first: int, budget: int, fill: str = FILL, terms: Sequence[str] = ()
) -> list[tuple[int, str]]:
    """The shown pieces of one note as (seq, text), in note order: `first` (a seq of `pieces`), then more by `fill`.

    `pieces` are the note's chunks in note order. The first piece is cut to `budget` when longer; a further
    piece is taken whole when it fits, else the part of it nearest the shown text (its start when it follows,
    its end when it precedes), and then the fill stops. "excerpt" works by paragraphs instead (`excerpt`).
    """
    if fill not in FILLS:
        raise ValueError(f"unknown passage fill {fill!r}; expected one of {', '.join(FILLS)}")
    by_seq = {p.seq: p for p in pieces}
    if first not in by_seq:
        return []
    if fill == "excerpt":
        return [(first, excerpt(pieces, first, budget, terms))]
    shown = {first: _head(by_seq[first].text, budget)}
    room = budget - len(shown[first])
    for seq in _order(pieces, first, fill):
        if room < MIN_PIECE:
            break
        text = by_seq[seq].text
        if len(text) > room:
            cut = _head(text, room) if seq > min(shown) else _tail(text, room)
            if len(cut) >= MIN_PIECE:
                shown[seq] = cut
            break
        shown[seq] = text
        room -= len(text) + len(GAP)
    return sorted(shown.items())


def excerpt(pieces: Sequence[Piece], first: int, budget: int, terms: Sequence[str]) -> str:
    """The note's text around its best chunk's best paragraph: that paragraph (the one naming most of `terms`;
    the whole chunk when none does), then the paragraphs after and before it in turn, next first, whole while
    they fit, the last one cut to what is left (at least MIN_PIECE), across chunk boundaries.
    """
    paragraphs = [(p.seq, para) for p in pieces for para in _paragraphs(p.text)]
    own = [i for i, (seq, _) in enumerate(paragraphs) if seq == first]
    if not own:
        return ""
    stems = [t[:5] for t in dict.fromkeys(t.lower() for t in terms) if t]
    named = [_named(paragraphs[i][1], stems) for i in own]
    best = max(named)
    lo = hi = own[named.index(best)] if best else own[0]
    if not best:
        hi = own[-1]
    shown = "\n\n".join(para for _, para in paragraphs[lo : hi + 1])
    if len(shown) > budget:
        return _head(shown, budget)
    after, before = paragraphs[hi + 1 :], paragraphs[:lo][::-1]
    head: list[str] = []  # paragraphs taken before the anchor (nearest first), and after it
    tail: list[str] = []
    room = budget - len(shown)
    for i in range(max(len(after), len(before))):
        for side, out, trim in ((after, tail, _head), (before, head, _tail)):
            if i >= len(side) or room < MIN_PIECE:
                continue
            text = side[i][1]
            if len(text) + 2 <= room:
                out.append(text)
                room -= len(text) + 2
            else:
                cut = trim(text, room - 2)
                if len(cut) >= MIN_PIECE:
                    out.append(cut)
                room = 0
    return "\n\n".join([*head[::-1], shown, *tail])


_WORDS = re.compile(r"\w+")


def _paragraphs(text: str) -> list[str]:
    return [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]


def _named(paragraph: str, stems: Sequence[str]) -> int:
    """How many of the query's terms (by their first five letters) a paragraph names."""
    words = {w[:5] for w in _WORDS.findall(paragraph.lower())}
    return sum(stem in words or any(w.startswith(stem) for w in words) for stem in stems)


def render(shown: Sequence[tuple[int, str]]) -> str:
    """The shown pieces as one text: next pieces joined by a blank line, a gap marked with an ellipsis line."""
    out, last = "", None
    for seq, text in shown:
        if last is not None:
            out += "\n\n" if seq == last + 1 else GAP
        out += text.strip()
        last = seq
    return out


def _order(pieces: Sequence[Piece], first: int, fill: str) -> list[int]:
    """The seqs after `first` in the order `fill` offers them."""
    rest = [p for p in pieces if p.seq != first]
    if fill == "chunk":
        return []
    if fill == "best":
        return [p.seq for p in sorted(rest, key=lambda p: -p.score)]
    seqs = [p.seq for p in rest]
    after = sorted(s for s in seqs if s > first)
    before = sorted((s for s in seqs if s < first), reverse=True)
    if fill == "next":  # the chunks that follow first, then those before it
        return after + before
    out = []  # neighbours: next, previous, the one after next, …
    for i in range(max(len(after), len(before))):
        out += after[i : i + 1] + before[i : i + 1]
    return out


def _head(text: str, limit: int) -> str:
    """The start of `text`, at most `limit` characters, ending at a paragraph, sentence or word when one is near."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[: limit - 2]  # room for the " …" that marks the cut
    for mark in ("\n\n", ". ", "\n", " "):
        at = cut.rfind(mark)
        if at > limit // 2:
            return cut[: at + (1 if mark == ". " else 0)].rstrip() + " …"
    return cut.rstrip() + " …"


def _tail(text: str, limit: int) -> str:
    """The end of `text`, at most `limit` characters, starting at a paragraph, sentence or word when one is near."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[2 - limit :]  # room for the "… " that marks the cut
    for mark in ("\n\n", ". ", "\n", " "):
        at = cut.find(mark)
        if 0 <= at < limit // 2:
            return "… " + cut[at + len(mark) :].lstrip()
    return "… " + cut.lstrip()


def entry(title: str, path: str, heading: str, text: str) -> str:
    """One recalled note as the hook and MCP show it to an agent: a line naming it, then its passage."""
    where = f"{path} › {heading}" if heading else path
    return f"\n## {' '.join(title.split())} ({where})\n{text.strip()}\n"


def cut(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters at a paragraph, sentence or word, the cut marked."""
    return _head(text, limit)


def context(
    hits: Sequence[Mapping[str, Any]], max_chars: int, clean: Callable[[str], str]
) -> tuple[str, list[Mapping[str, Any]]]:
    """The recall context the prompt hook injects and the hits it holds: per hit, best first, `entry` with the
    hit's passage (its snippet when it has none: the file scan before the first index), within `max_chars`.

    `clean` redacts secret-shaped strings; `<private>` spans are removed. A passage longer than the room left
    is cut to it; a hit with less room than MIN_PASSAGE is not given, nor any after it.
    """
    if not hits:
        return "", []
    head = (
        f'<{TAG} count="{{n}}">\n'
        "Notes from the user's MemoryVault that match this prompt, most relevant first, each with the passage "
        "that matched (read the file for the whole note):\n"
    )
    tail = f"</{TAG}>"
    parts: list[str] = []
    used = len(head) + len(tail) + 8
    kept: list[Mapping[str, Any]] = []
    for hit in hits:
        title, path, heading = str(hit["title"]), str(hit["path"]), str(hit.get("heading") or "")
        text = privacy.strip_private(str(hit.get("passage") or hit.get("snippet") or "")).strip()
        block = clean(entry(title, path, heading, text))
        room = max_chars - used
        if len(block) > room:
            bare = len(block) - len(text)
            if room - bare < MIN_PASSAGE:
                break
            block = clean(entry(title, path, heading, cut(text, room - bare)))
            if len(block) > room:
                break
        parts.append(block)
        kept.append(hit)
        used += len(block)
    if not kept:
        return "", []
    return head.format(n=len(kept)) + "".join(parts) + tail, kept
