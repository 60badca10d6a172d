"""The relevance floor: a hit's raw signals and the absolute test on them, the hand-set floor or the learned judge.

Fusion only ranks candidates against each other, so it always has a "best" hit, however unrelated the
prompt. The floor asks of each hit, on its own: is it relevant? By default the hand-set floor answers
(cosine + 0.2 × keyword coverage, keyword coverage alone without a query vector); with
`recall.min_probability` above 0 the learned judge does (`judge`, trained by scripts/train_relevance.py:
P(relevant) from the chunk's signals, at least that probability). Below the floor nothing is injected.
An exact identifier always passes; notes that need a reason (`eligible`) must also give it. Runs on the
prompt path: standard library and the index layer only.
"""

from __future__ import annotations

import math
import operator
import os
import re
from array import array
from collections.abc import Iterable, Sequence

from memvault.index import chunking
from memvault.index.core import Index
from memvault.index.schema import VEC_TABLE
from memvault.records import Record

from . import eligible, judge

# The columns a chunk's coverage is counted in: its own text, title, tags and heading path; not the
# neighbours' window, which helps ranking but would let a chunk pass for words it does not contain.
OWN_COLUMNS = "{title tags heading body}"


class Signals(Record):
    """What the floor looks at for one chunk (the judge's inputs: `judge.features`)."""

    cosine: float | None  # similarity of the chunk's vector to the prompt's; None without a query vector
    coverage: float  # IDF-weighted share of the prompt's content words the chunk contains (0–1)
    identifier: bool  # the chunk contains an exact identifier the prompt names (an error code, snake_case…)
    shared_words: int  # how many of the prompt's content words the chunk contains
    special: str = ""  # a note that needs a reason to be given (`eligible.special`): the idea ledger, a daily note…
    named: bool = False  # the prompt names the note (a skill entry's name)
    rare: float = 0.0  # the rarest shared word's IDF, as a share of the most a word can weigh in the index (0–1)
    keyword: float = 0.0  # the note's bm25 relative to the best keyword hit (0: not found by keywords)
    rank: int = 0  # the note's place in fusion's order (0: first)
    score: float = 0.0  # its fusion score
    margin: float = 0.0  # its fusion score's lead over the next note's
    words: int = 0  # how many content words the prompt has
    kind: str | None = None  # the note's kind
    memory: bool = False  # the note is in the MemoryVault folder
    seq: int = 0  # the chunk's place in its note (0: first)
    chunks: int = 1  # how many chunks the note has
    part: float = 0.0  # `coverage` of the prompt's best-covered sentence (a two-part prompt: of either part)


# The default floor probability: 0, the hand-set floor below. scripts/train_relevance.py chose the judge's floor on
# the training data's dev split (judge.json's `floor`) and compared the two there at the same share of unrelated
# prompts injecting: the judge kept no more relevant hits than the hand-set floor, so the hand-set floor stays the
# default (wiki/explanation/recall.md, "The relevance judge"). `recall.min_probability` in the config has the same
# default (a test keeps them equal); set it to judge.json's floor to use the judge.
MIN_PROBABILITY = 0.0
# The hand-set floor (fitted by the old scripts/calibrate_floor.py on LoCoMo dev conversations): the floor when
# `min_probability` is 0 and when the judge's weights cannot be read; `recall.min_relevance` 0 turns the floor off.
MIN_RELEVANCE, COVERAGE_WEIGHT, MIN_COVERAGE, MIN_SHARED_WORDS = 0.435, 0.2, 0.455, 2


class Floor(Record):
    """The absolute test: the hand-set floor (`min_probability` 0), or P(relevant) by the judge ≥ `min_probability`.

    The floor is on when `min_relevance` is above 0 (a config of before the judge turned it off with
    `min_relevance: 0`, and still does). The hand-set floor, also used when the judge cannot be read: relevance
    = cosine + coverage_weight × coverage ≥ min_relevance; without a query vector the chunk must contain
    `min_coverage` of the prompt's content words. Keyword-only, a chunk must also contain at least
    `min_shared_words` of the prompt's content words (a rule of both floors). An exact identifier always passes.
    """

    min_relevance: float = 0.0
    coverage_weight: float = COVERAGE_WEIGHT
    min_coverage: float = MIN_COVERAGE
    min_shared_words: int = MIN_SHARED_WORDS
    min_probability: float = MIN_PROBABILITY

    @property
    def on(self) -> bool:
        return self.min_relevance > 0

    def learned(self) -> judge.Judge | None:
        """The learned judge when this floor uses it (`min_probability` > 0 and its weights readable), else None."""
        return judge.load() if self.min_probability > 0 else None


def relevance(signals: Signals, floor: Floor) -> float:
    """The one number the floor compares: P(relevant) by the judge (with the hand-set floor, or without the
    judge's weights, cosine + coverage_weight × coverage, coverage alone without a vector)."""
    shipped = floor.learned()
    if shipped is not None:
        return judge.probability(shipped, signals)
    return _hand_value(signals, floor)


def _hand_value(signals: Signals, floor: Floor) -> float:
    """The hand-set floor's number: the cosine plus the weighted coverage (coverage alone without a vector)."""
    return (signals.cosine or 0.0) + floor.coverage_weight * signals.coverage


def verdict(signals: Signals, floor: Floor, *, hand: bool = False) -> tuple[bool, str]:
    """Whether a chunk passes the floor, and why in words (`memvault recall --explain`, the hook log).

    With the floor on, a note that needs a reason (`eligible`) must also give that reason: the idea ledger and a
    daily note an exact identifier or a strong keyword match (their cosine does not count), a skill entry a close
    meaning (keyword-only: the prompt names it). `hand`: by the hand-set floor of before the judge (benchmarks).
    """
    passed, why = _hand_floor(signals, floor) if hand else _floor(signals, floor)
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
    words = f"keywords {signals.coverage:.2f}, {signals.shared_words} of the prompt's words"
    if signals.identifier:
        said = "names an exact identifier from the prompt"
    else:
        said = f"{words}{'' if strong else ': not enough'}"
    rule = f"keywords ≥ {eligible.STRONG_COVERAGE:.2f} with {floor.min_shared_words}+ of the prompt's words"
    return strong, f"{signals.special}, given only on an exact identifier or {rule}: {said} (the floor: {why})"


# How `--explain` names a feature that moved P, given the signals.
_SAID = {
    "cosine": lambda s: f"cosine {s.cosine:.2f}",
    "coverage": lambda s: f"keywords {s.coverage:.2f}",
    "shared": lambda s: f"{s.shared_words} shared words",
    "identifier": lambda s: "an exact identifier",
    "rare": lambda s: f"rare shared word {s.rare:.2f}",
    "keyword": lambda s: f"bm25 {s.keyword:.2f} of the best",
    "first": lambda s: "ranked first" if s.rank == 0 else "not ranked first",
    "rank": lambda s: f"rank {s.rank + 1}",
    "score": lambda s: f"fusion score {s.score:.2f}",
    "margin": lambda s: f"margin {s.margin:.2f} over the next",
    "words": lambda s: f"a prompt of {s.words} words",
    "kind": lambda s: f"kind {s.kind}" if s.kind else "no kind",
    "memory": lambda s: "a MemoryVault note" if s.memory else "not a MemoryVault note",
    "lead": lambda s: "the note's first chunk" if s.seq == 0 else f"chunk {s.seq + 1} of its note",
    "long": lambda s: f"a note of {s.chunks} chunks",
    "part": lambda s: f"keywords {s.part:.2f} of one sentence of the prompt",
}


def _floor(signals: Signals, floor: Floor) -> tuple[bool, str]:
    """The floor's test alone, on any chunk: the judge's, or the hand-set one (`min_probability` 0, or the judge's
    weights cannot be read)."""
    shipped = floor.learned()
    if shipped is None:
        return _hand_floor(signals, floor)
    p = judge.probability(shipped, signals)
    top = ", ".join(f"{_SAID[name](signals)} {part:+.1f}" for name, part in judge.reasons(shipped, signals))
    said = f"P(relevant) {p:.2f}{' (keyword-only)' if signals.cosine is None else ''}"
    said_top = f" ({top})" if top else ""
    if signals.identifier:
        return True, f"names an exact identifier from the prompt; {said}{said_top}"
    if not floor.on:
        return True, f"{said}{said_top} (no floor)"
    if signals.cosine is None and signals.shared_words < floor.min_shared_words:  # a rule, kept from the hand floor:
        # keyword-only, one shared word is what "thanks, that worked" shares with any chat log
        return False, f"{said}, {signals.shared_words} of the prompt's words < {floor.min_shared_words}"
    passed = p >= floor.min_probability
    return passed, f"{said} {'≥' if passed else '<'} {floor.min_probability:.2f}{said_top}"


def _hand_floor(signals: Signals, floor: Floor) -> tuple[bool, str]:
    """The hand-set floor of before the judge (the fallback): cosine + weight × coverage, or coverage alone."""
    words = f"keywords {signals.coverage:.2f}"
    if signals.cosine is None:
        value, need, said = signals.coverage, floor.min_coverage, f"{words} (keyword-only)"
        if floor.on and not signals.identifier and signals.shared_words < floor.min_shared_words:
            return False, f"{said}, {signals.shared_words} of the prompt's words < {floor.min_shared_words}"
    else:
        value, need = _hand_value(signals, floor), floor.min_relevance
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
    total: int = 1  # the index's number of chunks
    counts: tuple[int, ...] = ()  # how many chunks contain each word (`matching_chunks` picks its plan by it)

    @property
    def ceiling(self) -> float:
        """The most a word can weigh in this index (one no chunk contains): what `rare` is a share of."""
        return math.log(1 + (self.total + 0.5) / 0.5)


def terms(index: Index, words: list[str], found: list[int] | None = None) -> Terms:
    """IDF weights of the prompt's words: a word in every chunk says little, one the vault never uses says a lot.

    A word the vault does not contain keeps the highest weight, so a prompt about something else
    covers little of itself in any chunk. `found`: how many chunks contain each word, when already counted.
    """
    total = int(index.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]) or 1
    queries, weights, counts = [], [], []
    sql = "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?"
    for i, word in enumerate(words):
        match = chunking.fts_query([word]) or ""
        count = found[i] if found is not None else int(index.conn.execute(sql, (match,)).fetchone()[0])
        queries.append(match)
        weights.append(idf(total, count))
        counts.append(count)
    return Terms(queries, weights, total, tuple(counts))


def idf(total: int, count: int) -> float:
    """A word's weight when `count` of `total` chunks (or team entries) contain it: BM25's IDF."""
    return math.log(1 + (total - count + 0.5) / (count + 0.5))


def coverage(
    index: Index, words: Terms, chunk_ids: Iterable[int], columns: str = OWN_COLUMNS
) -> dict[int, tuple[float, int]]:
    """chunk id → the IDF-weighted share of the prompt's words it contains (in `columns`), and how many it contains."""
    return {c: (got[0], got[1]) for c, got in coverage_rare(index, words, chunk_ids, columns).items()}


_SENTENCE_END = re.compile(r"(?<=[.?!;])\s+|\n+")


def parts(query: str, words: list[str]) -> list[list[int]]:
    """The prompt's sentences, each as the indices in `words` of its content words ([] for a one-sentence prompt)."""
    where = {w: i for i, w in enumerate(words)}
    out = []
    for piece in _SENTENCE_END.split(query):
        ids = [where[w] for w in chunking.query_terms(piece) if w in where]
        if ids:
            out.append(ids)
    return out if len(out) > 1 else []


MAX_PARAMETERS = 900  # ids per statement, below the 999 parameters of SQLite before 3.32
# Reading a word's whole list costs about 0.06 µs a chunk that holds it; FTS5's seek for one id about 15 µs
# (measured at 20,000 and 100,000 notes): the list is read when it holds fewer than this many chunks per id asked.
SCAN_PER_ID = 250


def matching_chunks(index: Index, match: str, chunk_ids: Sequence[int], count: int | None = None) -> set[int]:
    """Which of `chunk_ids` match the FTS5 query `match`; `count`: how many chunks match it, when known.

    Two plans, the same answer. FTS5 turns `rowid IN (…)` beside MATCH into a seek per id (5 ms for 60 chunks
    and a six-word prompt at 20,000 notes); reading the query's whole list in C and keeping the ids asked for
    (`r+0` keeps the IN out of FTS5) costs a tenth of that, unless the list is long and the ids few: the seeks
    are taken when `count` says so, or is unknown (wiki/explanation/hooks.md).
    """
    found: set[int] = set()
    scan = count is not None and count < SCAN_PER_ID * len(chunk_ids)
    for start in range(0, len(chunk_ids), MAX_PARAMETERS):  # an older SQLite takes 999 parameters at most
        part = chunk_ids[start : start + MAX_PARAMETERS]
        marks = ",".join("?" * len(part))
        if scan:
            sql = f"SELECT r FROM (SELECT rowid AS r FROM chunks_fts WHERE chunks_fts MATCH ?) WHERE r+0 IN ({marks})"  # noqa: S608 (marks only)
        else:
            sql = f"SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? AND rowid IN ({marks})"  # noqa: S608 (marks only)
        found.update(row[0] for row in index.conn.execute(sql, [match, *part]))
    return found


def coverage_rare(
    index: Index,
    words: Terms,
    chunk_ids: Iterable[int],
    columns: str = OWN_COLUMNS,
    sentences: Sequence[list[int]] = (),
) -> dict[int, tuple[float, int, float, float]]:
    """`coverage`, the weight of the rarest prompt word each chunk contains as a share of `Terms.ceiling`, and the
    coverage of the prompt's best-covered sentence (`parts`; the whole prompt's coverage without sentences)."""
    ids = list(dict.fromkeys(chunk_ids))
    total = sum(words.weights)
    if not ids or total <= 0:
        return dict.fromkeys(ids, (0.0, 0, 0.0, 0.0))
    found: dict[int, list[int]] = {c: [] for c in ids}  # chunk id → the indices of the words it contains
    for i, match in enumerate(words.queries):
        count = words.counts[i] if i < len(words.counts) else None  # in any column: at least the columns' own
        for chunk_id in matching_chunks(index, f"{columns}: ({match})", ids, count):
            found[chunk_id].append(i)
    ceiling, weights = words.ceiling, words.weights
    sizes = [sum(weights[i] for i in part) for part in sentences]
    out = {}
    for chunk_id, have in found.items():
        share = sum(weights[i] for i in have) / total
        rare = max((weights[i] for i in have), default=0.0) / ceiling
        got = set(have)
        best = max((sum(weights[i] for i in part if i in got) / size for part, size in zip(sentences, sizes,
                    strict=True) if size > 0), default=share)  # fmt: skip
        out[chunk_id] = (share, len(have), rare, max(best, share))
    return out


# A rare name: a capitalised word inside a sentence of the prompt (`Zephyrq`, `Kafka`), of four letters or more, that
# the packaged model does not know as a word (`known_words.txt`, its vocabulary: it reads such a word in pieces, so
# its cosine says little) and that at most RARE_NAME_CHUNKS chunks of the index hold. Like an exact identifier it
# names one thing: keyword-only (search._hits), the chunks holding it pass the floor. With a query vector it does
# not apply: there the training data's dev split preferred the floor as it was (recall.md, "A rare name passes").
RARE_NAME_CHUNKS = 3
_NAME = re.compile(r"(?<![\w.-])[A-Z][a-z]{3,}[a-z0-9]*(?![\w-])")
_KNOWN_WORDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "known_words.txt")
_known: list[str] = []  # the file's text, read once, on the first prompt that has a candidate


def rare_names(query: str, postings: dict[str, int]) -> list[str]:
    """The prompt's rare names (see RARE_NAME_CHUNKS) as FTS5 phrase queries; `postings`: term → chunks holding it."""
    out: dict[str, None] = {}
    for m in _NAME.finditer(query):
        before, word = query[: m.start()].rstrip(), m.group(0).lower()
        inside = bool(before) and before[-1] not in ".!?:"  # not a sentence's first word
        if inside and 0 < postings.get(word, 0) <= RARE_NAME_CHUNKS and not _known_word(word):
            out.setdefault(f'"{word}"', None)
    return list(out)


def _known_word(word: str) -> bool:
    if not _known:
        try:
            with open(_KNOWN_WORDS, encoding="utf-8") as handle:
                _known.append("\n" + handle.read())
        except OSError:
            _known.append("")  # no list: no word is taken for a name
    return not _known[0] or f"\n{word}\n" in _known[0]


def identifier_chunks(
    index: Index, query: str, chunk_ids: Iterable[int], postings: dict[str, int] | None = None
) -> set[int]:
    """Which of the chunks contain one of the prompt's exact identifiers (`KX-4471`, `getUserById`, …) or, given the
    query terms' `postings`, one of its rare names (`Zephyrq`)."""
    phrases = chunking.identifiers(query) + (rare_names(query, postings) if postings else [])
    ids = list(dict.fromkeys(chunk_ids))
    if not phrases or not ids:
        return set()
    return matching_chunks(index, " OR ".join(phrases), ids)


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
