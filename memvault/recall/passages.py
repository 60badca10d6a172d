"""Which spans of the recalled notes are shown: the best chunks of all the hits together, then the text next to them.

A hit's note is chunked (index.chunking, about a kilobyte a chunk). The shipped fill, "spread" (`spread`), ranks
the chunks of every shown hit by how well they match the prompt and takes them best first within the budget of
all the hits, so a strong note shows several chunks and a weak one its snippet; what is left goes to the chunks
next to those taken (the evidence is often a reply next to what matches: "Yup, we did it yesterday!"). The per-note
fills (`choose`: the best chunk, then its neighbours or paragraphs) are kept for the benchmark's curve
(wiki/explanation/recall.md, "What is shown"). The budget comes from the hook's `recall.max_context_chars` and
`recall.k` (`per_hit` per shown hit), so the hook, the CLI and MCP show the same passages for the same hits.

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

FILLS = ("chunk", "neighbours", "best", "next", "excerpt", "spread")  # "chunk": the best chunk alone (before)
# "spread" is chosen over the final hits (`spread`), not per note: per note it is "excerpt" (a hit the floor dropped).
SPREAD = "spread"
SPREAD_NEIGHBOURS = True  # "spread" gives what is left after the best chunks to the chunks next to them
# How "spread" shows a ranked chunk: "paragraph" (a window of its size around its paragraph naming the prompt most),
# "chunk" (the chunk whole), "first" (a hit's first chunk as "paragraph", its others as "chunk").
SPREAD_WINDOW = "first"
# How "spread" widens a window with what is left: "next" (the following text up to the window's size, then the
# preceding), "turn" (a paragraph after, one before, in turn, up to its size in all).
SPREAD_SIDES = "next"
FILL = SPREAD  # chosen on the training data's dev split (bench_recall.py --set spans)
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
    if fill in ("excerpt", SPREAD):
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


def spread(
    notes: Sequence[Sequence[Piece]], scored: Sequence[Mapping[int, float]], budget: int, reserve: Sequence[int],
    terms: Sequence[str] = (), neighbours: bool | None = None,
) -> list[str]:
    """The passages of several hits at once (per hit, "" for none): `budget` characters spent on the best chunks
    of all the hits together, not a share per hit.

    `notes[i]` are hit i's chunks in note order (those its passage may draw on); `scored[i]` maps some of their
    seqs to how well the chunk matches the prompt (cosine + coverage, as `search` picks a hit's best chunk); only
    those are ranked. Best first across hits, each ranked chunk is shown (`SPREAD_WINDOW`, shipped "first"): a
    hit's first as a window of the chunk's size around its paragraph naming most of `terms` (reading on into the
    next chunk when that paragraph ends its chunk, as `excerpt`), a hit's further ones whole, leaving out what is
    shown already; the first that does not fit is cut to what is left, and the ranking stops. A hit given nothing
    shows its snippet, whose `reserve[i]` characters are kept for it until it gets a window. With `neighbours`
    (default SPREAD_NEIGHBOURS), what is left then widens the windows in the order they were taken: the text after
    each, then before it, each side by at most the window's size (`SPREAD_SIDES`). So a strong note shows several
    spans, merged when they meet, and a weak note its snippet.
    """
    neighbours = SPREAD_NEIGHBOURS if neighbours is None else neighbours
    stems = _stems(terms)
    paras = [[(p.seq, para) for p in pieces for para in _paragraphs(p.text)] for pieces in notes]
    shown: list[dict[int, str]] = [{} for _ in notes]  # per hit: paragraph index → the text shown of it
    room = budget - sum(reserve)
    ranked = sorted((-score, i, seq) for i, scores in enumerate(scored) for seq, score in scores.items())
    windows: list[tuple[int, int, int]] = []  # (hit, a paragraph of the window, its chunk's size)
    for _, i, seq in ranked:
        own = [j for j, (s, _) in enumerate(paras[i]) if s == seq and j not in shown[i]]
        if not own:
            continue
        size = sum(len(paras[i][j][1]) + 2 for j in own)
        free = 0 if shown[i] else reserve[i]
        limit = min(size, room + free - len(GAP))
        if limit < MIN_PIECE:
            break
        named = [_named(paras[i][j][1], stems) for j in own]
        anchor = own[named.index(max(named))]
        text = paras[i][anchor][1]
        whole = SPREAD_WINDOW == "chunk" or (SPREAD_WINDOW == "first" and shown[i])
        if whole and limit == size:
            got = {j: paras[i][j][1] for j in own}
        else:
            got = {anchor: _head(text, limit)} if len(text) > limit else {anchor: text}
            got.update(_grow(paras[i], {**shown[i], **got}, anchor, anchor, limit - len(got[anchor]) - 2))
        shown[i].update(got)
        room -= sum(len(t) + 2 for t in got.values()) + len(GAP) - free
        windows.append((i, anchor, size))
        if limit < size:  # the budget ran out inside this chunk
            break
    for i, anchor, size in windows if neighbours else ():
        if room < MIN_PIECE + len(GAP):
            break
        lo = hi = anchor
        while lo - 1 in shown[i]:
            lo -= 1
        while hi + 1 in shown[i]:
            hi += 1
        for step in (1, -1) if SPREAD_SIDES == "next" else (0,):  # 0: both sides in turn
            if room < MIN_PIECE + len(GAP):
                break
            got = _grow(paras[i], shown[i], lo, hi, min(size, room - len(GAP)), step)
            shown[i].update(got)
            room -= sum(len(t) + 2 for t in got.values()) + (len(GAP) if got else 0)
            hi, lo = (max([hi, *got]), lo) if step == 1 else (hi, min([lo, *got]))
    out = []
    for hit in shown:
        text, last = "", None
        for j in sorted(hit):
            if last is not None:
                text += "\n\n" if j == last + 1 else GAP
            text, last = text + hit[j].strip(), j
        out.append(text)
    return out


def _grow(paragraphs: Sequence[tuple[int, str]], shown: Mapping[int, str], lo: int, hi: int, limit: int,
          step: int = 0) -> dict[int, str]:  # fmt: skip
    """The paragraphs taken around `paragraphs[lo..hi]`: the next, then the previous, in turn (`step` 1 or -1: that
    side only), whole while they fit in `limit` (2 characters each for the blank line), the last one cut at the side
    that touches; a side stops at a paragraph already `shown` or at the note's end."""
    got: dict[int, str] = {}
    after, before = hi + 1, lo - 1
    moved = True
    while moved and limit >= MIN_PIECE:
        moved = False
        for side in (1, -1) if not step else (step,):
            j = after if side == 1 else before
            if not 0 <= j < len(paragraphs) or j in shown or limit < MIN_PIECE:
                continue
            text = paragraphs[j][1]
            if len(text) + 2 > limit:
                cut = (_head if side == 1 else _tail)(text, limit - 2)
                if len(cut) >= MIN_PIECE:
                    got[j] = cut
                limit = 0
                break
            got[j] = text
            limit -= len(text) + 2
            moved = True
            after, before = (after + 1, before) if side == 1 else (after, before - 1)
    return got


_WORDS = re.compile(r"\w+")


def _paragraphs(text: str) -> list[str]:
    return [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]


def _named(paragraph: str, stems: Sequence[str]) -> int:
    """How many of the query's terms (by their first five letters) a paragraph names."""
    words = {w[:5] for w in _WORDS.findall(paragraph.lower())}
    return sum(stem in words or any(w.startswith(stem) for w in words) for stem in stems)


def named(text: str, terms: Sequence[str]) -> float:
    """The share of the prompt's `terms` a text names (by their first five letters)."""
    stems = _stems(terms)
    return _named(text, stems) / len(stems) if stems else 0.0


def _stems(terms: Sequence[str]) -> list[str]:
    return [t[:5] for t in dict.fromkeys(t.lower() for t in terms) if t]


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


def _as_is(text: str) -> str:
    return text


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

    `clean` redacts secret-shaped strings, except in a hit marked `clean` (the index stored its title and text
    redacted, and its path has none); `<private>` spans are removed. A passage longer than the room left is cut
    to it; a hit with less room than MIN_PASSAGE is not given, nor any after it.
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
        scrub = _as_is if hit.get("clean") is True else clean
        block = scrub(entry(title, path, heading, text))
        room = max_chars - used
        if len(block) > room:
            bare = len(block) - len(text)
            if room - bare < MIN_PASSAGE:
                break
            block = scrub(entry(title, path, heading, cut(text, room - bare)))
            if len(block) > room:
                break
        parts.append(block)
        kept.append(hit)
        used += len(block)
    if not kept:
        return "", []
    return head.format(n=len(kept)) + "".join(parts) + tail, kept
