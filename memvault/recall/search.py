"""Hybrid recall: FTS5 keywords and sqlite-vec vectors, fused, filtered for agent context, with snippets and a budget.

Runs on the hook's prompt path, so it imports only the index layer and the standard library:
the query vector comes from a callable (the warm service's client), never from a model loaded here.
Over 400 lines: the hits are built here with the floor's and the judge's signals of their candidate
chunks (the rules themselves are `relevance` and `judge`; the passages shown, `spans` and `passages`),
and splitting the SQL of one recall across more modules would not make it easier to follow.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from memvault.index import chunking, db
from memvault.index.core import CorruptIndex, Index, open_reader
from memvault.index.schema import INBOX, PRIVATE, VEC_TABLE, VISIBLE, NoteRow
from memvault.records import Record
from memvault.store import privacy
from memvault.text import bounded_query

from . import eligible, fusion, passages, relevance, spans

TYPE_CHECKING = False  # typing.TYPE_CHECKING (mypy reads it so) without importing typing at run time
if TYPE_CHECKING:  # the service's readers: a hook's own recall never imports them (threading)
    from typing import Protocol

    from memvault.index.readers import Readers

    class VectorSource(Protocol):
        """Where the vector side reads: the index itself (`SqliteVectors`), or the warm service's in-memory copy."""

        kind: str  # "index" or "memory" (`Result.vectors`)

        def nearest(self, index: Index, blob: bytes, limit: int, cap: int, group: str | None) -> dict[int, float]:
            """chunk id → cosine distance of the `limit` chunks nearest `blob` (visibility ≤ cap, in `group`)."""

        def notes(self, index: Index, chunk_ids: list[int]) -> dict[int, int]:
            """chunk id → its note id."""

        def cosines(self, index: Index, blob: bytes, chunk_ids: list[int]) -> dict[int, float]:
            """chunk id → cosine similarity of its vector to `blob` (chunks with no vector left out)."""

CANDIDATES = 100  # notes taken from each side before fusion (LoCoMo R@10 +0.002 over 50, no latency cost)
MAX_IDENTIFIERS = 16  # exact identifiers of a query pinned first (each is one more FTS lookup)
CHUNKS_PER_NOTE = 3  # vector side: how many chunks to fetch per wanted note
# Which chunk of a hit is shown, with a query vector: the one of highest cosine + this × keyword coverage among
# all the note's chunks (notes of at most SHOWN_MAX_CHUNKS). Chosen on the dev conversations of LoCoMo session
# notes (0.5, 1, 1.5 and 2 tried; wiki/explanation/recall.md): R@10 0.715 → 0.735, held-out 0.728 → 0.744.
SHOWN_COVERAGE_WEIGHT = spans.SHOWN_COVERAGE_WEIGHT
SHOWN_MAX_CHUNKS = spans.SHOWN_MAX_CHUNKS
FLOOR_REASON = "nothing passed the relevance floor"  # how a result emptied by the floor starts its reason
# How a result starts when the index exists but its first full sync has not finished (the session-start
# reindex still running): it holds only part of the vault, so the caller scans the files instead.
UNBUILT_REASON = "the index has not finished its first build"
# bm25 column weights: title, tags, heading path, the chunk's text, its neighbours' window (index.chunking)
BM25_WEIGHTS = "4.0, 3.0, 2.0, 1.0, 0.4"
# (query text, timeout in seconds) → (model name, float32 blob), or None when no vector is available in time.
QueryEmbedder = Callable[[str, float], "tuple[str, bytes] | None"]


class Options(Record):
    k: int = 5
    group: str | None = None
    include_inbox: bool = False
    include_private: bool = False  # for a human at a terminal only; never for agent context
    memory_only: bool = False  # only notes under MemoryVault/, not the user's own notes
    exclude: frozenset[str] = frozenset()  # paths already injected in this session
    fusion: str = "adaptive"
    vector_weight: float = 0.7
    keyword_weight: float = 0.3
    budget_ms: float = 300.0
    # The relevance floor (see `relevance.Floor`); min_relevance 0 (the default here) turns it off.
    min_relevance: float = 0.0
    coverage_weight: float = relevance.COVERAGE_WEIGHT
    min_coverage: float = relevance.MIN_COVERAGE
    min_shared_words: int = relevance.MIN_SHARED_WORDS
    min_probability: float = relevance.MIN_PROBABILITY  # 0: the hand-set floor; > 0: the judge at this P
    # The vault's daily-notes folder (`eligible.daily_folder`): its notes, like the idea ledger, need a reason.
    daily_folder: str = ""
    # The characters of each hit's shown passage, and how it is filled past the best chunk (`passages`).
    passage_chars: int = passages.per_hit(6000, 5)  # the defaults of recall.max_context_chars and recall.k
    passage_fill: str = passages.FILL
    # "spread" (`passages.spread`) spends passage_chars × the hits shown across the first `shown` hits (0: k) not
    # in `given` (what the hook gave this session already: ranked and judged as any, shown no passage).
    shown: int = 0
    given: frozenset[str] = frozenset()

    @property
    def floor(self) -> relevance.Floor:
        return relevance.Floor(
            self.min_relevance, self.coverage_weight, self.min_coverage, self.min_shared_words, self.min_probability
        )


DEFAULT_OPTIONS = Options()


def options_from(data: dict[str, object]) -> Options:
    """Options from plain JSON (the service's recall request): known keys only, each checked for its type."""
    defaults = DEFAULT_OPTIONS
    values: dict[str, object] = {}
    for key, value in data.items():
        default = getattr(defaults, key, None)
        if key not in Options._fields:
            raise ValueError(f"unknown recall option {key!r}")
        if key in ("exclude", "given"):
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"{key} must be a list of paths")
            values[key] = frozenset(value)
        elif isinstance(default, bool) or default is None:
            if value is not None and not isinstance(value, (bool, str)):
                raise ValueError(f"{key} must be a {'flag' if isinstance(default, bool) else 'string'}")
            values[key] = value
        elif isinstance(default, (int, float)) and not isinstance(value, bool) and isinstance(value, (int, float)):
            values[key] = type(default)(value)
        elif isinstance(default, str) and isinstance(value, str):
            values[key] = value
        else:
            raise ValueError(f"{key} has the wrong type")
    return Options(**values)  # type: ignore[arg-type]


class Hit(Record):
    path: str
    title: str
    score: float
    vec_score: float
    kw_score: float
    snippet: str
    heading: str = ""
    chunk: int = 0  # which chunk of the note the snippet comes from (its position, 0 = first)
    kind: str | None = None
    group: str | None = None
    always_load: bool = False
    # The raw signals of that chunk the relevance floor judged (see `relevance`), and its verdict in words.
    cosine: float | None = None
    coverage: float = 0.0
    identifier: bool = False
    shared_words: int = 0
    special: str = ""  # a note that needs a reason to be given (`eligible.special`), or ""
    named: bool = False  # the prompt names the note (a skill entry's name)
    # The judge's other inputs (`relevance.Signals`; kw_score is its `keyword`, score its fusion score).
    rare: float = 0.0
    rank: int = 0
    margin: float = 0.0
    words: int = 0
    memory: bool = False
    judged_seq: int = 0  # the judged chunk's place in its note (the shown one is `chunk`)
    chunks: int = 1
    part_coverage: float = 0.0
    probability: float = 0.0  # P(relevant) by the judge, or the hand-set floor's relevance (`relevance.relevance`)
    why: str = ""
    passage: str = ""  # what is shown of the note to an agent: its best spans, chosen with the others' (`passages`)
    clean: bool = False  # its title and text were stored with secrets redacted and its path has none: shown unscanned

    def as_dict(self) -> dict[str, object]:
        return dict(self._asdict())


class Result:
    """What one recall found: the hits to inject, the ones the floor dropped, and how the search went."""

    __slots__ = ("dropped", "hits", "kw_hits", "mode", "ms", "partial", "reason", "stages", "vec_hits", "vectors")

    def __init__(self, mode: str = "none", reason: str | None = None, partial: bool = False) -> None:
        self.hits: list[Hit] = []
        self.dropped: list[Hit] = []  # among the top k, the hits below the relevance floor
        self.mode = mode  # "hybrid", "keyword", "vector" or "none"
        self.partial = partial  # a part was skipped (budget, service down, model change); see `reason`
        self.reason = reason
        self.vec_hits = 0
        self.kw_hits = 0
        self.ms = 0.0
        self.stages: dict[str, float] = {}  # where `ms` went: stage → ms (`Stages`), for the hook log and benchmarks
        self.vectors = ""  # where the vector side read: "memory" (the warm service's copy), "index" (sqlite-vec), or ""

    def as_dict(self) -> dict[str, object]:
        return {
            "mode": self.mode, "partial": self.partial, "reason": self.reason, "vec_hits": self.vec_hits,
            "kw_hits": self.kw_hits, "ms": round(self.ms, 1), "hits": [h.as_dict() for h in self.hits],
            "dropped": [h.as_dict() for h in self.dropped], "stages": self.stages, "vectors": self.vectors,
        }  # fmt: skip


class Stages:
    """Marks the end of each stage of one recall: `stage(name)` books the time since the last mark to `name`."""

    __slots__ = ("last", "spent")

    def __init__(self, since: float) -> None:
        self.last = since
        self.spent: dict[str, float] = {}

    def stage(self, name: str) -> None:
        now = time.monotonic()
        self.spent[name] = round(self.spent.get(name, 0.0) + (now - self.last) * 1000, 2)
        self.last = now


def recall(
    index: Index,
    query: str,
    options: Options = DEFAULT_OPTIONS,
    embed: QueryEmbedder | None = None,
    vectors: VectorSource | None = None,
) -> Result:
    """Top-k notes for `query`; a vector part that misses the budget is dropped and the result marked partial.

    The one recall of the hook, the CLI and MCP: the query is shaped here (bounded, `<private>` spans removed) and,
    with the floor on, every hit is judged here, the notes that need a reason included (`relevance.verdict`).
    """
    query = shape(query)
    started = time.monotonic()
    deadline = started + options.budget_ms / 1000
    result = Result()
    stages = Stages(started)
    terms = chunking.query_terms(query)
    source = vectors or SQLITE_VECTORS
    space = index.vector_model() if index.vector else None
    vector_job = _VectorJob(embed, query, space[0] if space else None, deadline) if embed and space else None
    postings = _postings(index, terms)
    stages.stage("postings")
    keyword = _keyword(index, terms, options, postings)
    stages.stage("keyword")
    vector: dict[int, tuple[float, int]] = {}
    blob: bytes | None = None
    if vector_job is not None:
        blob, why = vector_job.result()
        stages.stage("encode_wait")  # what the query vector took past the keyword side, which ran meanwhile
        if blob is not None and time.monotonic() >= deadline:
            blob = None
        if blob is not None:
            vector = _vector(index, blob, options, source)
            result.vectors = source.kind
            stages.stage("vector")
        else:
            result.partial, result.reason = True, why or "time budget spent before the vector search"
    elif not space:
        result.reason = "no vectors in the index yet (keyword-only)"
    else:
        result.partial, result.reason = True, "no embedding service available (keyword-only)"
    if space and index.has_pending() and not result.reason:
        result.reason = "some notes are not embedded yet; they are found by keywords only"
    result.kw_hits, result.vec_hits = len(keyword), len(vector)
    result.mode = "hybrid" if keyword and vector else "vector" if vector else "keyword" if keyword else "none"
    ranked = fusion.fuse(
        {n: s for n, (s, _) in vector.items()},
        {n: s for n, (s, _) in keyword.items()},
        method=options.fusion,
        vector_weight=options.vector_weight,
        keyword_weight=options.keyword_weight,
        sizes=_sizes(index, [*vector, *keyword]) if options.fusion == "adaptive" else None,
    )
    if options.fusion == "adaptive":  # the fixed-weight fusions stay the seed's formulas, untouched
        ranked = _pin_identifiers(index, query, ranked, keyword)
    stages.stage("fusion")
    after = ranked[options.k][1] if len(ranked) > options.k else None
    scored: dict[str, tuple[int, dict[int, float]]] = {}  # path → its note id, {chunk id: how well it matches}
    hits = _hits(index, query, ranked[: options.k], vector, keyword, postings, blob, options, source, after, scored)
    stages.stage("hits")  # each hit's signals, the floor's verdict and its passage
    floor = options.floor
    result.hits = [h for h in hits if not floor.on or relevance.verdict(signals_of(h), floor)[0]]
    if floor.on:  # what is injected goes by the judge's P (fusion's order among equals)
        result.hits.sort(key=lambda h: -h.probability)
    result.dropped = [h for h in hits if h not in result.hits]
    if options.passage_fill == passages.SPREAD:
        result.hits = spans.spread(index, result.hits, scored, options, terms)
    stages.stage("passages")
    result.stages = stages.spent
    if hits and not result.hits:
        best = max(hits, key=lambda h: relevance.relevance(signals_of(h), floor))
        floor_reason = f"{FLOOR_REASON} (best: {best.why})"
        result.reason = f"{result.reason}; {floor_reason}" if result.reason else floor_reason
    result.ms = (time.monotonic() - started) * 1000
    return result


def shape(query: str) -> str:
    """The query recall searches for: bounded (a multi-megabyte prompt costs what a page costs), `<private>`
    spans removed (never searched for, as they are never indexed)."""
    return privacy.strip_private(bounded_query(query))


def signals_of(hit: Hit) -> relevance.Signals:
    """The raw signals the floor judged for a hit."""
    return relevance.Signals(
        hit.cosine, hit.coverage, hit.identifier, hit.shared_words, hit.special, hit.named, hit.rare, hit.kw_score,
        hit.rank, hit.score, hit.margin, hit.words, hit.kind, hit.memory, hit.judged_seq, hit.chunks, hit.part_coverage,
    )  # fmt: skip


class _VectorJob:
    """Fetches the query vector on a thread while the keyword search runs."""

    def __init__(self, embed: QueryEmbedder, query: str, model: str | None, deadline: float) -> None:
        self.model, self.deadline = model, deadline
        self.value: tuple[str, bytes] | None = None
        self.error: str | None = None
        import threading  # here, not at the top: a keyword-only prompt hook never starts the thread

        self.thread = threading.Thread(target=self._run, args=(embed, query), daemon=True)
        self.thread.start()

    def _run(self, embed: QueryEmbedder, query: str) -> None:
        try:
            self.value = embed(query, max(0.01, self.deadline - time.monotonic()))
        except Exception as exc:  # the vector half is optional; keyword results still count
            self.error = f"embedding failed: {exc}"

    def result(self) -> tuple[bytes | None, str | None]:
        self.thread.join(max(0.0, self.deadline - time.monotonic()))
        if self.thread.is_alive():
            return None, "the query embedding did not arrive within the time budget (keyword-only)"
        if self.value is None:
            return None, self.error or "no embedding service available (keyword-only)"
        model, blob = self.value
        if model != self.model:
            return None, f"the index holds {self.model} vectors, the service runs {model} (keyword-only until reindex)"
        return blob, None


def _pin_identifiers(
    index: Index, query: str, ranked: list[tuple[int, float]], keyword: dict[int, tuple[float, int]]
) -> list[tuple[int, float]]:
    """Notes containing an exact identifier of the query (an error code, a function name) go first.

    Neither side can be trusted to rank them: a lone exact match gives the keyword side no spread
    to be confident about, and to the vector side `KX-4471` looks like every other code.
    """
    phrases = chunking.identifiers(query)[:MAX_IDENTIFIERS]
    if not phrases or not keyword:
        return ranked
    exact = _notes_matching(index, " OR ".join(phrases), list(keyword))
    return [r for r in ranked if r[0] in exact] + [r for r in ranked if r[0] not in exact]


def _sizes(index: Index, notes: list[int]) -> dict[int, int]:
    """note id → its number of chunks."""
    ids = list(dict.fromkeys(notes))
    if not ids:
        return {}
    sql = f"SELECT note_id, count(*) FROM chunks WHERE note_id IN ({','.join('?' * len(ids))}) GROUP BY note_id"
    return {int(n): int(c) for n, c in index.conn.execute(sql, ids)}


def _levels(options: Options) -> list[int]:
    """The visibility levels (see index.NoteRow.visibility) these options let into the result."""
    return [VISIBLE] + ([INBOX] if options.include_inbox else []) + ([PRIVATE] if options.include_private else [])


def _allowed(options: Options) -> tuple[str, list[object]]:
    """The SQL form of `admits`, over the `notes` table aliased `n`."""
    levels = _levels(options)
    sql = f"n.visibility IN ({','.join('?' * len(levels))})"
    params: list[object] = list(levels)
    if not options.include_inbox:
        sql += " AND n.area NOT IN ('_inbox', '_review')"
    if options.group:
        sql += " AND n.grp = ?"
        params.append(options.group)
    if options.memory_only:
        sql += " AND n.in_memory = 1"
    return sql, params


def _postings(index: Index, terms: list[str]) -> dict[str, int]:
    """term → how many chunks contain it (any column), counted in SQLite: the floor's IDF weights. (The chunks
    themselves are read only for the candidates, by `_coord`: a Python set of every id cost 5 ms at 20,000 notes.)"""
    sql = "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?"
    return {term: int(index.conn.execute(sql, (chunking.fts_query([term]) or "",)).fetchone()[0]) for term in terms}


def _keyword(
    index: Index, terms: list[str], options: Options, postings: dict[str, int]
) -> dict[int, tuple[float, int]]:
    """note id → (bm25 relevance, higher is better; best chunk id)."""
    match = chunking.fts_query(terms)
    if match is None:
        return {}
    where, params = _allowed(options)
    limit = (CANDIDATES + len(options.exclude)) * CHUNKS_PER_NOTE
    rank = f"bm25(chunks_fts, {BM25_WEIGHTS})"
    joined = "JOIN chunks c ON c.id = f.rowid JOIN notes n ON n.id = c.note_id"
    # Fast path: rank inside FTS5 first, then filter the top chunks (half the time at 20k notes). A
    # narrow scope (a group) or a vault of mostly hidden notes can filter too many: rank after filtering.
    top = f"SELECT rowid, {rank} AS s FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY s LIMIT ?"
    fast = f"SELECT c.note_id, c.id, -f.s, n.path FROM ({top}) f {joined} WHERE {where} ORDER BY f.s"
    full = (
        f"SELECT c.note_id, c.id, -{rank} AS s, n.path FROM chunks_fts f {joined} "
        f"WHERE chunks_fts MATCH ? AND {where} ORDER BY s DESC LIMIT ?"
    )
    rows = [] if options.group else index.conn.execute(fast, [match, limit, *params]).fetchall()
    if options.group or len({r[0] for r in rows}) < CANDIDATES:
        rows = index.conn.execute(full, [match, *params, limit]).fetchall()
    out: dict[int, tuple[float, int]] = {}
    for note_id, chunk_id, score, path in rows:
        if path not in options.exclude and note_id not in out:
            out[note_id] = (float(score), chunk_id)
    return _coord(index, dict(list(out.items())[:CANDIDATES]), terms, postings)


def _coord(
    index: Index, found: dict[int, tuple[float, int]], terms: list[str], postings: dict[str, int]
) -> dict[int, tuple[float, int]]:
    """Scale each note's bm25 by the share of the query's terms it contains (Lucene's "coord").

    BM25 alone lets one rare word outrank a note that matches the whole question; on LoCoMo this
    lifts keyword recall@10 from 0.605 to 0.619 (the candidates' chunks against each term's postings).
    """
    if len(terms) < 2 or not found:
        return found
    ids = list(found)
    sql = f"SELECT id, note_id FROM chunks WHERE note_id IN ({','.join('?' * len(ids))})"
    note_of = dict(index.conn.execute(sql, ids).fetchall())
    matched = dict.fromkeys(ids, 0)
    chunks = list(note_of)
    for term in terms:
        if not postings[term]:  # a word no chunk holds
            continue
        holding = relevance.matching_chunks(index, chunking.fts_query([term]) or "", chunks, postings[term])
        for note_id in {note_of[c] for c in holding}:
            matched[note_id] += 1
    scaled = {n: (score * matched[n] / len(terms), chunk) for n, (score, chunk) in found.items()}
    return dict(sorted(scaled.items(), key=lambda item: -item[1][0]))


def _notes_matching(index: Index, match: str, ids: list[int]) -> set[int]:
    """Which of the notes `ids` have a chunk matching the FTS5 query `match`."""
    sql = (
        "SELECT DISTINCT c.note_id FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid "
        f"WHERE chunks_fts MATCH ? AND c.note_id IN ({','.join('?' * len(ids))})"
    )
    return {row[0] for row in index.conn.execute(sql, [match, *ids])}


def _vector(index: Index, blob: bytes, options: Options, vectors: VectorSource) -> dict[int, tuple[float, int]]:
    """note id → (cosine similarity of its best chunk, that chunk id)."""
    cap = PRIVATE if options.include_private else INBOX if options.include_inbox else VISIBLE
    found = vectors.nearest(index, blob, (CANDIDATES + len(options.exclude)) * CHUNKS_PER_NOTE, cap, options.group)
    if not found:
        return {}
    note_of = vectors.notes(index, list(found))
    ids = list(dict.fromkeys(note_of.values()))
    if not ids:
        return {}
    where, params = _allowed(options)
    sql = f"SELECT n.id, n.path FROM notes n WHERE n.id IN ({','.join('?' * len(ids))}) AND {where}"
    paths = dict(index.conn.execute(sql, [*ids, *params]).fetchall())
    out: dict[int, tuple[float, int]] = {}
    for chunk_id, distance in found.items():  # nearest first
        note_id = note_of.get(chunk_id, -1)  # (no note has id -1)
        path = paths.get(note_id)
        if path is not None and path not in options.exclude and note_id not in out:
            out[note_id] = (1.0 - distance, chunk_id)
    return dict(list(out.items())[:CANDIDATES])


def sqlite_nearest(index: Index, blob: bytes, limit: int, cap: int, group: str | None) -> dict[int, float]:
    """chunk id → cosine distance of the `limit` chunks nearest `blob`, nearest first: a vec0 KNN with pre-filters."""
    prefilter = " AND visibility <= ?" + (" AND grp = ?" if group else "")
    params: list[object] = [blob, limit, cap] + ([group] if group else [])
    return {int(r[0]): float(r[1]) for r in index.conn.execute(db.knn_sql(VEC_TABLE) + prefilter, params)}


class SqliteVectors:
    """The vector side read from the index itself: sqlite-vec's scan, the chunks' notes, their stored vectors."""

    kind = "index"
    nearest = staticmethod(sqlite_nearest)

    @staticmethod
    def notes(index: Index, chunk_ids: list[int]) -> dict[int, int]:
        sql = f"SELECT id, note_id FROM chunks WHERE id IN ({','.join('?' * len(chunk_ids))})"
        return {int(c): int(n) for c, n in index.conn.execute(sql, chunk_ids)} if chunk_ids else {}

    cosines = staticmethod(relevance.cosines)


SQLITE_VECTORS = SqliteVectors()


def _hits(
    index: Index,
    query: str,
    ranked: list[tuple[int, float]],
    vector: dict[int, tuple[float, int]],
    keyword: dict[int, tuple[float, int]],
    postings: dict[str, int],
    blob: bytes | None,
    options: Options,
    source: VectorSource,
    after: float | None = None,
    scored: dict[str, tuple[int, dict[int, float]]] | None = None,
) -> list[Hit]:
    """The ranked notes as hits, each with the chunk that best shows why it is relevant and that chunk's signals.

    `after`: the fusion score of the note just past these (the last hit's margin is over it). `scored` is filled
    with each hit's chunks' match (cosine + coverage; keyword-only, the shown chunk's coverage) for `_spread`.
    """
    floor = options.floor
    kw_top = max((s for s, _ in keyword.values()), default=0.0) or 1.0
    choices = {n: list(dict.fromkeys(side[n][1] for side in (keyword, vector) if n in side)) for n, _ in ranked}
    judged_ids = [c for options in choices.values() for c in options]  # the floor judges these (as calibrated)
    pools = spans.note_chunks(index, [n for n, _ in ranked]) if blob is not None else {}  # the shown chunk is in one
    chunk_ids = [*judged_ids, *(c for pool in pools.values() for c in pool)]
    terms = list(postings)
    words = relevance.terms(index, terms, [postings[t] for t in terms])
    detail = relevance.coverage_rare(index, words, chunk_ids, sentences=relevance.parts(query, terms))
    covered = {c: (got[0], got[1]) for c, got in detail.items()}
    shape = _shape(index, [n for n, _ in ranked], judged_ids)  # the judge's view of where each chunk sits
    # keyword-only, a rare name the prompt and a chunk share counts as an exact identifier (relevance.rare_names)
    exact = relevance.identifier_chunks(index, query, judged_ids, postings if blob is None else None)
    near: dict[int, float] = {}  # the cosine of every candidate chunk, when there is a query vector
    if blob is not None:
        known = {chunk: score for score, chunk in vector.values()}
        near = {c: known[c] for c in chunk_ids if c in known}
        near.update(source.cosines(index, blob, [c for c in chunk_ids if c not in known]))
    hits = []
    for rank, (note_id, score) in enumerate(ranked):
        path, title, kind, grp, always, clean = index.conn.execute(
            "SELECT path, title, kind, grp, always_load, clean FROM notes WHERE id = ?", (note_id,)
        ).fetchone()
        special = eligible.special(path, kind, options.daily_folder)
        named = special == eligible.SKILL_ENTRY and eligible.names(query, title)
        signals = {}
        for c in choices[note_id]:
            share, shared = covered.get(c, (0.0, 0))
            cosine = near.get(c) if blob is not None else None
            signals[c] = relevance.Signals(cosine, share, c in exact, shared, special, named, *_judged(
                detail.get(c, (0.0, 0, 0.0, 0.0))[2], round(keyword.get(note_id, (0.0, 0))[0] / kw_top, 4), rank,
                round(score, 4), _margin(ranked, rank, after), len(terms), kind, shape, note_id, c),
                part=detail.get(c, (0.0, 0, 0.0, 0.0))[3])  # fmt: skip
        # The floor judges the note by the better of its two chunks (as calibrated). The snippet comes from the
        # chunk that best matches by meaning and words together, else from the keyword side's chunk.
        # A ledger or a daily note is judged on words alone (`relevance.verdict`): by its chunk of most words.
        by_words = special in (eligible.IDEA_LEDGER, eligible.DAILY_NOTE)
        judged = max(signals, key=lambda c: (signals[c].identifier, signals[c].coverage if by_words else 0.0,
                                             relevance.relevance(signals[c], floor)))  # fmt: skip
        chunk_id = choices[note_id][0]
        if blob is not None:
            pool = pools.get(note_id) or choices[note_id]
            chunk_id = max(pool, key=lambda c: near.get(c, -1.0) + SHOWN_COVERAGE_WEIGHT * covered.get(c, (0.0, 0))[0])
        seq, heading, text = index.conn.execute(
            "SELECT seq, heading, text FROM chunks WHERE id = ?", (chunk_id,)
        ).fetchone()
        pool = pools.get(note_id, [])
        shown_by = {c: near.get(c, 0.0) + SHOWN_COVERAGE_WEIGHT * covered.get(c, (0.0, 0))[0] for c in pool}
        passage = spans.passage(index, note_id, seq, options, terms, shown_by)
        if scored is not None:
            scored[path] = (note_id, shown_by or {chunk_id: near.get(chunk_id, 0.0) + SHOWN_COVERAGE_WEIGHT *
                                                  covered.get(chunk_id, (0.0, 0))[0]})  # fmt: skip
        chosen = signals[judged]
        hits.append(
            Hit(
                path=path,
                title=title,
                score=round(score, 4),
                vec_score=round(vector.get(note_id, (0.0, 0))[0], 4),
                kw_score=round(keyword.get(note_id, (0.0, 0))[0] / kw_top, 4),
                snippet=chunking.snippet(text, terms),
                heading=heading,
                chunk=seq,
                kind=kind,
                group=grp,
                always_load=bool(always),
                cosine=None if chosen.cosine is None else round(chosen.cosine, 4),
                coverage=round(chosen.coverage, 4),
                identifier=chosen.identifier,
                shared_words=chosen.shared_words,
                special=special,
                named=named,
                rare=chosen.rare,
                rank=rank,
                margin=chosen.margin,
                words=chosen.words,
                memory=chosen.memory,
                judged_seq=chosen.seq,
                chunks=chosen.chunks,
                part_coverage=round(chosen.part, 4),
                probability=round(relevance.relevance(chosen, floor), 4),
                why=relevance.verdict(chosen, floor)[1],
                passage=passage,
                clean=bool(clean),
            )
        )
    return hits


def _margin(ranked: list[tuple[int, float]], rank: int, after: float | None) -> float:
    """How far the note at `rank` leads the next one in fusion's scores (0 when nothing follows)."""
    following = ranked[rank + 1][1] if rank + 1 < len(ranked) else after
    return 0.0 if following is None else round(max(0.0, ranked[rank][1] - following), 4)


class _Shape(Record):
    """Where the judged chunks sit: chunk id → its seq; note id → in the MemoryVault folder, its number of chunks."""

    seqs: dict[int, int]
    memory: dict[int, bool]
    sizes: dict[int, int]


def _shape(index: Index, note_ids: list[int], chunk_ids: list[int]) -> _Shape:
    if not note_ids:
        return _Shape({}, {}, {})
    marks = ",".join("?" * len(note_ids))
    memory = {int(n): bool(m) for n, m in index.conn.execute(f"SELECT id, in_memory FROM notes WHERE id IN ({marks})",
                                                             note_ids)}  # fmt: skip
    ids = list(dict.fromkeys(chunk_ids))
    seqs = {int(c): int(s) for c, s in index.conn.execute(
        f"SELECT id, seq FROM chunks WHERE id IN ({','.join('?' * len(ids))})", ids)} if ids else {}  # fmt: skip
    return _Shape(seqs, memory, _sizes(index, note_ids))


def _judged(
    rare: float, kw: float, rank: int, score: float, margin: float, words: int, kind: str | None, shape: _Shape,
    note_id: int, chunk_id: int,
) -> tuple[float, float, int, float, float, int, str | None, bool, int, int]:
    """The judge's inputs of `relevance.Signals` after `named`, in its order."""
    return (rare, kw, rank, score, margin, words, kind, shape.memory.get(note_id, False),
            shape.seqs.get(chunk_id, 0), shape.sizes.get(note_id, 1))  # fmt: skip


def admits(row: NoteRow, options: Options) -> bool:
    """Whether a note passes recall's filters (what `_allowed` says in SQL)."""
    return (
        row.visibility in _levels(options)
        and (options.include_inbox or row.area not in ("_inbox", "_review"))
        and (not options.group or row.group == options.group)
        and (not options.memory_only or row.in_memory)
    )


def recall_file(
    path: Path,
    query: str,
    options: Options,
    embed: QueryEmbedder | None,
    vectors: VectorSource | None = None,
    *,
    built_only: bool = False,
    readers: Readers | None = None,
) -> Result:
    """The prompt-path entry point: recall from the index file at `path` without migrating or writing it.

    A missing or damaged index gives an empty result with the reason set (the caller may fall back
    to scanning the files); it never raises for that. With `built_only` (the prompt hook, which can scan
    instead), so does an index whose first whole-vault sync has not finished (`UNBUILT_REASON`). `readers`: the
    warm service's kept connections (`index.readers`), else the index is opened for this query and closed.
    """
    opened = time.monotonic()
    try:
        with readers.reader(path) if readers is not None else _opened(path) as index:
            if built_only and index.get_meta("last_sync") is None:  # set when a whole-vault sync ends
                return Result(reason=f"{UNBUILT_REASON} (a reindex is running or never finished)", partial=True)
            open_ms = round((time.monotonic() - opened) * 1000, 2)
            result = recall(index, query, options, embed, vectors)
            result.stages = {"open": open_ms, **result.stages}
            return result
    except CorruptIndex as exc:
        return Result(reason=str(exc), partial=True)
    except db.dbapi().Error as exc:
        return Result(reason=f"the index could not be read ({exc})", partial=True)


@contextlib.contextmanager
def _opened(path: Path) -> Iterator[Index]:
    index = open_reader(path)
    try:
        yield index
    finally:
        index.close()
