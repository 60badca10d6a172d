"""The relevance floor: a hit's raw signals (cosine, keyword coverage, exact identifiers) and the absolute test on them.

Fusion only ranks candidates against each other, so it always has a "best" hit, however unrelated the
prompt. The floor asks of each hit, on its own: does its chunk mean what the prompt means (cosine), does
it contain the prompt's distinctive words (coverage), or does it name an exact identifier the prompt
names? Below the floor nothing is injected. The thresholds come from scripts/calibrate_floor.py.
Runs on the prompt path: standard library and the index layer only.
"""

from __future__ import annotations

import math
import operator
from array import array
from collections.abc import Iterable

from memvault.index import chunking
from memvault.index.core import Index
from memvault.index.schema import VEC_TABLE
from memvault.records import Record

from . import eligible

# The columns a chunk's coverage is counted in: its own text, title, tags and heading path; not the
# neighbours' window, which helps ranking but would let a chunk pass for words it does not contain.
OWN_COLUMNS = "{title tags heading body}"


class Signals(Record):
    """What the floor looks at for one chunk."""

    cosine: float | None  # similarity of the chunk's vector to the prompt's; None without a query vector
    coverage: float  # IDF-weighted share of the prompt's content words the chunk contains (0–1)
    identifier: bool  # the chunk contains an exact identifier the prompt names (an error code, snake_case…)
    shared_words: int  # how many of the prompt's content words the chunk contains
    special: str = ""  # a note that needs a reason to be given (`eligible.special`): the idea ledger, a daily note…
    named: bool = False  # the prompt names the note (a skill entry's name)


# The calibrated floor (scripts/calibrate_floor.py); `recall.*` in the config has the same defaults.
MIN_RELEVANCE, COVERAGE_WEIGHT, MIN_COVERAGE, MIN_SHARED_WORDS = 0.435, 0.2, 0.455, 2


class Floor(Record):
    """The absolute test: relevance = cosine + coverage_weight × coverage, at least `min_relevance` (0: off).

    Without a query vector (keyword-only recall) only the words are known: the chunk must contain
    `min_coverage` of the prompt's content words, and at least `min_shared_words` of them (one shared word is
    what "thanks, that worked" shares with any chat log). An exact identifier always passes.
    """

    min_relevance: float = 0.0
    coverage_weight: float = COVERAGE_WEIGHT
    min_coverage: float = MIN_COVERAGE
    min_shared_words: int = MIN_SHARED_WORDS

    @property
    def on(self) -> bool:
        return self.min_relevance > 0


def relevance(signals: Signals, floor: Floor) -> float:
    """The one number the floor compares: the cosine plus the weighted coverage (coverage alone without a vector)."""
    return (signals.cosine or 0.0) + floor.coverage_weight * signals.coverage


def verdict(signals: Signals, floor: Floor) -> tuple[bool, str]:
    """Whether a chunk passes the floor, and why in words (`memvault recall --explain`, the hook log).

    With the floor on, a note that needs a reason (`eligible`) must also give that reason: the idea ledger and a
    daily note an exact identifier or a strong keyword match (their cosine does not count), a skill entry a close
    meaning (keyword-only: the prompt names it).
    """
    passed, why = _floor(signals, floor)
    if not floor.on or not signals.special:
        return passed, why
    if signals.special == eligible.SKILL_ENTRY:
        if signals.cosine is not None:
            close = signals.cosine >= eligible.SKILL_MIN_SIMILARITY
            said = f"cosine {signals.cosine:.2f} {'≥' if close else '<'} {eligible.SKILL_MIN_SIMILARITY:.2f}"
        else:
            close, said = signals.named, "the prompt names it" if signals.named else "the prompt does not name it"
        if not passed:
            return False, why
        return close, f"{why}; a skill entry (the host lists skills already): {said}"
    strong = signals.identifier or (
        signals.coverage >= eligible.STRONG_COVERAGE and signals.shared_words >= floor.min_shared_words
    )
    if not strong and not passed:
        return False, why  # below the floor in any case
    words = f"keywords {signals.coverage:.2f}, {signals.shared_words} of the prompt's words"
    if signals.identifier:
        said = "names an exact identifier from the prompt"
    else:
        said = f"{words}{'' if strong else ': not enough'}"
    rule = f"keywords ≥ {eligible.STRONG_COVERAGE:.2f} with {floor.min_shared_words}+ of the prompt's words"
    return strong, f"{signals.special}, given only on an exact identifier or {rule}: {said} (the floor: {why})"


def _floor(signals: Signals, floor: Floor) -> tuple[bool, str]:
    """The floor's test alone, on any chunk."""
    words = f"keywords {signals.coverage:.2f}"
    if signals.cosine is None:
        value, need, said = signals.coverage, floor.min_coverage, f"{words} (keyword-only)"
        if floor.on and not signals.identifier and signals.shared_words < floor.min_shared_words:
            return False, f"{said}, {signals.shared_words} of the prompt's words < {floor.min_shared_words}"
    else:
        value, need = relevance(signals, floor), floor.min_relevance
        said = f"cosine {signals.cosine:.2f} + {floor.coverage_weight:g} × {words} = {value:.2f}"
    if signals.identifier:
        return True, f"names an exact identifier from the prompt; {said}"
    if not floor.on:
        return True, f"{said} (no floor)"
    return value >= need, f"{said} {'≥' if value >= need else '<'} {need:.2f}"


class Terms(Record):
    """The prompt's content words with their weight (IDF over the index's chunks), as FTS5 queries."""

    queries: list[str]
    weights: list[float]


def terms(index: Index, words: list[str], found: list[int] | None = None) -> Terms:
    """IDF weights of the prompt's words: a word in every chunk says little, one the vault never uses says a lot.

    A word the vault does not contain keeps the highest weight, so a prompt about something else
    covers little of itself in any chunk. `found`: how many chunks contain each word, when already counted.
    """
    total = int(index.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]) or 1
    queries, weights = [], []
    sql = "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?"
    for i, word in enumerate(words):
        match = chunking.fts_query([word]) or ""
        count = found[i] if found is not None else int(index.conn.execute(sql, (match,)).fetchone()[0])
        queries.append(match)
        weights.append(math.log(1 + (total - count + 0.5) / (count + 0.5)))
    return Terms(queries, weights)


def coverage(
    index: Index, words: Terms, chunk_ids: Iterable[int], columns: str = OWN_COLUMNS
) -> dict[int, tuple[float, int]]:
    """chunk id → the IDF-weighted share of the prompt's words it contains (in `columns`), and how many it contains."""
    ids = list(dict.fromkeys(chunk_ids))
    total = sum(words.weights)
    if not ids or total <= 0:
        return dict.fromkeys(ids, (0.0, 0))
    marks = ",".join("?" * len(ids))
    sql = f"SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? AND rowid IN ({marks})"  # noqa: S608 (marks only)
    got = dict.fromkeys(ids, (0.0, 0))
    for match, weight in zip(words.queries, words.weights, strict=True):
        for (chunk_id,) in index.conn.execute(sql, [f"{columns}: ({match})", *ids]):
            share, count = got[chunk_id]
            got[chunk_id] = (share + weight, count + 1)
    return {chunk_id: (share / total, count) for chunk_id, (share, count) in got.items()}


def identifier_chunks(index: Index, query: str, chunk_ids: Iterable[int]) -> set[int]:
    """Which of the chunks contain one of the prompt's exact identifiers (`KX-4471`, `getUserById`, …)."""
    phrases = chunking.identifiers(query)
    ids = list(dict.fromkeys(chunk_ids))
    if not phrases or not ids:
        return set()
    marks = ",".join("?" * len(ids))
    sql = f"SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? AND rowid IN ({marks})"  # noqa: S608 (marks only)
    return {row[0] for row in index.conn.execute(sql, [" OR ".join(phrases), *ids])}


def cosines(index: Index, blob: bytes, chunk_ids: Iterable[int]) -> dict[int, float]:
    """chunk id → cosine similarity of its stored vector to `blob` (both L2-normalised: the dot product)."""
    query = array("f", blob)
    sql = f"SELECT embedding FROM {VEC_TABLE} WHERE rowid = ?"  # noqa: S608 (a module constant)
    out: dict[int, float] = {}
    for chunk_id in dict.fromkeys(chunk_ids):
        row = index.conn.execute(sql, (chunk_id,)).fetchone()
        if row is not None:
            vector = array("f", bytes(row[0]))
            if len(vector) == len(query):
                out[chunk_id] = sum(map(operator.mul, vector, query))  # twice as fast as a generator
    return out
