"""Hybrid recall: FTS5 keywords and sqlite-vec vectors, fused, filtered for agent context, with snippets and a budget.

Runs on the hook's prompt path, so it imports only the index layer and the standard library:
the query vector comes from a callable (the warm service's client), never from a model loaded here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import chunking, db, fusion
from .index import INBOX, PRIVATE, VEC_TABLE, VISIBLE, CorruptIndex, Index, open_reader

CANDIDATES = 50  # notes taken from each side before fusion
CHUNKS_PER_NOTE = 3  # vector side: how many chunks to fetch per wanted note
# (query text, timeout in seconds) → (model name, float32 blob), or None when no vector is available in time.
QueryEmbedder = Callable[[str, float], "tuple[str, bytes] | None"]


@dataclass(frozen=True)
class Options:
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


@dataclass(frozen=True)
class Hit:
    path: str
    title: str
    score: float
    vec_score: float
    kw_score: float
    snippet: str
    heading: str = ""
    kind: str | None = None
    group: str | None = None
    always_load: bool = False

    def as_dict(self) -> dict[str, object]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass
class Result:
    hits: list[Hit] = field(default_factory=list)
    mode: str = "none"  # "hybrid", "keyword", "vector" or "none"
    partial: bool = False  # a part was skipped (budget, service down, model change); see `reason`
    reason: str | None = None
    vec_hits: int = 0
    kw_hits: int = 0
    ms: float = 0.0

    def as_dict(self) -> dict[str, object]:
        return {
            "mode": self.mode, "partial": self.partial, "reason": self.reason, "vec_hits": self.vec_hits,
            "kw_hits": self.kw_hits, "ms": round(self.ms, 1), "hits": [h.as_dict() for h in self.hits],
        }  # fmt: skip


def recall(index: Index, query: str, options: Options = Options(), embed: QueryEmbedder | None = None) -> Result:
    """Top-k notes for `query`; a vector part that misses the budget is dropped and the result marked partial."""
    started = time.monotonic()
    deadline = started + options.budget_ms / 1000
    result = Result()
    terms = chunking.query_terms(query)
    space = index.vector_model() if index.vector else None
    vector_job = _VectorJob(embed, query, space[0] if space else None, deadline) if embed and space else None
    keyword = _keyword(index, terms, options)
    vector: dict[int, tuple[float, int]] = {}
    if vector_job is not None:
        blob, why = vector_job.result()
        if blob is not None and time.monotonic() < deadline:
            vector = _vector(index, blob, options)
        else:
            result.partial, result.reason = True, why or "time budget spent before the vector search"
    elif not space:
        result.reason = "no vectors in the index yet (keyword-only)"
    else:
        result.partial, result.reason = True, "no embedding service available (keyword-only)"
    if space and index.pending_count() and not result.reason:
        result.reason = "some notes are not embedded yet; they are found by keywords only"
    result.kw_hits, result.vec_hits = len(keyword), len(vector)
    result.mode = "hybrid" if keyword and vector else "vector" if vector else "keyword" if keyword else "none"
    ranked = fusion.fuse(
        {n: s for n, (s, _) in vector.items()},
        {n: s for n, (s, _) in keyword.items()},
        method=options.fusion,
        vector_weight=options.vector_weight,
        keyword_weight=options.keyword_weight,
    )
    result.hits = _hits(index, ranked[: options.k], vector, keyword, terms)
    result.ms = (time.monotonic() - started) * 1000
    return result


class _VectorJob:
    """Fetches the query vector on a thread while the keyword search runs."""

    def __init__(self, embed: QueryEmbedder, query: str, model: str | None, deadline: float) -> None:
        self.model, self.deadline = model, deadline
        self.value: tuple[str, bytes] | None = None
        self.error: str | None = None
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


def _allowed(options: Options) -> tuple[str, list[object]]:
    levels = [VISIBLE] + ([INBOX] if options.include_inbox else []) + ([PRIVATE] if options.include_private else [])
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


def _keyword(index: Index, terms: list[str], options: Options) -> dict[int, tuple[float, int]]:
    """note id → (bm25 relevance, higher is better; best chunk id)."""
    match = chunking.fts_query(terms)
    if match is None:
        return {}
    where, params = _allowed(options)
    sql = (
        "SELECT c.note_id, c.id, -bm25(chunks_fts, 4.0, 3.0, 2.0, 1.0) AS s, n.path FROM chunks_fts "
        "JOIN chunks c ON c.id = chunks_fts.rowid JOIN notes n ON n.id = c.note_id "
        f"WHERE chunks_fts MATCH ? AND {where} ORDER BY s DESC LIMIT ?"
    )
    out: dict[int, tuple[float, int]] = {}
    limit = (CANDIDATES + len(options.exclude)) * CHUNKS_PER_NOTE
    for note_id, chunk_id, score, path in index.conn.execute(sql, [match, *params, limit]):
        if path not in options.exclude and note_id not in out:
            out[note_id] = (float(score), chunk_id)
    return dict(list(out.items())[:CANDIDATES])


def _vector(index: Index, blob: bytes, options: Options) -> dict[int, tuple[float, int]]:
    """note id → (cosine similarity of its best chunk, that chunk id)."""
    where, params = _allowed(options)
    cap = PRIVATE if options.include_private else INBOX if options.include_inbox else VISIBLE
    prefilter = " AND visibility <= ?" + (" AND grp = ?" if options.group else "")
    knn_params: list[object] = [blob, (CANDIDATES + len(options.exclude)) * CHUNKS_PER_NOTE, cap]
    if options.group:
        knn_params.append(options.group)
    sql = (
        f"WITH knn AS ({db.knn_sql(VEC_TABLE)}{prefilter}) "
        "SELECT c.note_id, c.id, 1.0 - knn.distance AS sim, n.path FROM knn "
        f"JOIN chunks c ON c.id = knn.rowid JOIN notes n ON n.id = c.note_id WHERE {where} ORDER BY knn.distance"
    )
    out: dict[int, tuple[float, int]] = {}
    for note_id, chunk_id, sim, path in index.conn.execute(sql, [*knn_params, *params]):
        if path not in options.exclude and note_id not in out:
            out[note_id] = (float(sim), chunk_id)
    return dict(list(out.items())[:CANDIDATES])


def _hits(
    index: Index,
    ranked: list[tuple[int, float]],
    vector: dict[int, tuple[float, int]],
    keyword: dict[int, tuple[float, int]],
    terms: list[str],
) -> list[Hit]:
    kw_top = max((s for s, _ in keyword.values()), default=0.0) or 1.0
    hits = []
    for note_id, score in ranked:
        path, title, kind, grp, always = index.conn.execute(
            "SELECT path, title, kind, grp, always_load FROM notes WHERE id = ?", (note_id,)
        ).fetchone()
        chunk_id = (keyword.get(note_id) or vector[note_id])[1]
        heading, text = index.conn.execute("SELECT heading, text FROM chunks WHERE id = ?", (chunk_id,)).fetchone()
        hits.append(
            Hit(
                path=path,
                title=title,
                score=round(score, 4),
                vec_score=round(vector.get(note_id, (0.0, 0))[0], 4),
                kw_score=round(keyword.get(note_id, (0.0, 0))[0] / kw_top, 4),
                snippet=chunking.snippet(text, terms),
                heading=heading,
                kind=kind,
                group=grp,
                always_load=bool(always),
            )
        )
    return hits


def index_exists(path: Path) -> bool:
    return path.is_file() and path.stat().st_size > 0


def recall_file(path: Path, query: str, options: Options, embed: QueryEmbedder | None) -> Result:
    """The prompt-path entry point: recall from the index file at `path` without migrating or writing it.

    A missing or damaged index gives an empty result with the reason set (the caller may fall back
    to scanning the files); it never raises for that.
    """
    try:
        index = open_reader(path)
    except (CorruptIndex, db.dbapi().Error) as exc:
        return Result(reason=str(exc), partial=True)
    try:
        return recall(index, query, options, embed)
    except db.dbapi().Error as exc:
        return Result(reason=f"the index could not be read ({exc})", partial=True)
    finally:
        index.close()
