"""Team entries on the server: publish, tombstone, the incremental pull, and hybrid search; plain SQL over a connection.

Every function takes a psycopg connection made by `db.connect` as the member (row-level security decides what it
sees and may change), and commits or raises. The security model: wiki/explanation/team-memory.md.

Beyond the contract with the client (T32common): `my_teams` (added). A pull's cursor covers the teams the member was
in when it pulled; entries of a team joined later that changed before the cursor are never in `changes_since`'s
answer, so a client whose `my_teams` grew pulls again from 0 (rows are idempotent by uid and version).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ParamSpec, TypeVar

from memvault.errors import MemvaultError
from memvault.index import chunking
from memvault.recall import fusion, relevance
from memvault.store import privacy, secrets

from .schema import SchemaError, migrations

P = ParamSpec("P")
R = TypeVar("R")

DIMENSIONS = 384  # the packaged model's; the column is vector(384)
CANDIDATES = 100  # entries taken from each side before fusion (as the local index)
# Search: a word's entries are counted exactly up to EXACT_COUNT, a commoner word's estimated from a sample of about
# SAMPLE_ROWS entries (memvault.term_stats); its weight (IDF) is then near its floor either way.
EXACT_COUNT, SAMPLE_ROWS = 100, 2000
LOCK_TIMEOUT_S = 5.0  # how long a pull waits for writes in flight before saying the server is busy
_CURSOR_LOCK = "SELECT pg_advisory_xact_lock(memvault.cursor_lock_key())"

_COLUMNS = (
    "uid::text, scope, team, author, editor, kind, title, slug, body, frontmatter, content_hash, version, "
    "supersedes::text, deleted, created_at, updated_at, model_id, change_seq"
)


class VersionConflict(MemvaultError):
    """The entry changed on the server since the version the edit started from; `current` is the server's row."""

    code = "team-conflict"

    def __init__(self, message: str, current: EntryRow) -> None:
        super().__init__(message)
        self.current = current


class TeamBusy(MemvaultError):
    """A write in flight held the pull cursor past the lock timeout (try again later)."""

    code = "team-busy"


@dataclass(frozen=True)
class EntryIn:
    uid: str
    scope: str  # "team" | "org"
    team: str | None  # None iff scope is "org"
    kind: str
    title: str
    slug: str
    body: str
    frontmatter: dict[str, Any]
    content_hash: str
    embedding: list[float] | None = None
    model_id: str | None = None
    supersedes: str | None = None
    base_version: int | None = None  # None: a new entry; else the version this edit started from


@dataclass(frozen=True)
class EntryRow:
    uid: str
    scope: str
    team: str | None
    author: str
    editor: str  # the role that wrote this version
    kind: str
    title: str
    slug: str
    body: str
    frontmatter: dict[str, Any]
    content_hash: str
    version: int
    supersedes: str | None
    deleted: bool
    created_at: datetime
    updated_at: datetime
    model_id: str | None
    change_seq: int
    embedding: list[float] | None = field(default=None, repr=False)


@dataclass(frozen=True)
class Hit:
    """One entry found by `search`, with the signals the relevance floor judged and its verdict in words."""

    entry: EntryRow  # without its embedding
    score: float  # fusion's score
    cosine: float | None  # None without a query vector (or an entry without one of that model)
    keyword: float  # ts_rank (length-normalised) × the share of query words it has, relative to the best keyword hit
    coverage: float
    shared_words: int
    identifier: bool
    relevance: float
    why: str
    snippet: str


def _needs_schema(func: Callable[P, R]) -> Callable[P, R]:
    """A database without memvault's schema, or at an older version than this memvault's, is a clear error
    (`team-schema`: the admin runs `memvault team init-db`), not a missing table or function."""

    @functools.wraps(func)
    def checked(*args: P.args, **kwargs: P.kwargs) -> R:
        from psycopg import errors as pg

        try:
            return func(*args, **kwargs)
        except (pg.UndefinedTable, pg.UndefinedFunction, pg.InvalidSchemaName, pg.UndefinedObject) as exc:
            raise SchemaError(
                f"the team database lacks part of memvault's schema ({_first_line(exc)}): "
                f"ask its admin to run `memvault team init-db` (this memvault needs version {len(migrations())})"
            ) from exc

    return checked


def _row(values: Sequence[Any], embedding: str | None = None) -> EntryRow:
    vector = [float(x) for x in json.loads(embedding)] if embedding else None
    return EntryRow(*values, embedding=vector)  # type: ignore[arg-type, misc]


def _vector_text(vector: Sequence[float]) -> str:
    if len(vector) != DIMENSIONS or not all(math.isfinite(x) for x in vector):
        raise MemvaultError(f"an entry's vector must have {DIMENSIONS} finite numbers", code="team-invalid")
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def _guard(entry: EntryIn) -> None:
    """The server's last check of what leaves the machine (the client's envelope runs first): no secret, no
    `<private>` span, no note marked private, a well-formed scope."""
    if (entry.scope == "team") != bool(entry.team) or entry.scope not in ("team", "org"):
        raise MemvaultError("a team entry names its team; an org entry names none", code="team-invalid")
    if (entry.embedding is None) != (entry.model_id is None):
        raise MemvaultError("an entry's vector comes with its model's id", code="team-invalid")
    text = "\n".join([entry.title, entry.body, json.dumps(entry.frontmatter, ensure_ascii=False)])
    found = secrets.scan(text)
    if found:
        raise MemvaultError(f"not published: {secrets.describe(found)}", code="secret")
    if privacy.has_private_span(text) or privacy.is_private_value(entry.frontmatter.get("private")):
        raise MemvaultError("not published: the note is private or has a <private> span", code="private")


def _get(conn: Any, uid: str) -> EntryRow | None:
    row = conn.execute(f"SELECT {_COLUMNS} FROM memvault.entries WHERE uid = %s", (uid,)).fetchone()
    return _row(row) if row else None


@_needs_schema
def publish(conn: Any, entry: EntryIn) -> EntryRow:
    """Insert a new entry (a retry with the same uid and content returns the stored row) or, with `base_version`,
    replace the entry if the server still has that version; else VersionConflict with the server's row."""
    from psycopg import errors as pg

    _guard(entry)
    vector = _vector_text(entry.embedding) if entry.embedding is not None else None
    values = (entry.kind, entry.title, entry.slug, entry.body, json.dumps(entry.frontmatter), entry.content_hash,
              vector, entry.model_id, entry.supersedes)  # fmt: skip
    try:
        with conn.transaction():
            if entry.base_version is None:
                row = conn.execute(
                    "INSERT INTO memvault.entries (uid, scope, team, kind, title, slug, body, frontmatter, "
                    "content_hash, embedding, model_id, supersedes) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s, %s::vector, %s, %s) "
                    f"ON CONFLICT (uid) DO NOTHING RETURNING {_COLUMNS}",
                    (entry.uid, entry.scope, entry.team, *values),
                ).fetchone()
            else:
                row = conn.execute(
                    "UPDATE memvault.entries SET kind = %s, title = %s, slug = %s, body = %s, frontmatter = %s::jsonb, "
                    "content_hash = %s, embedding = %s::vector, model_id = %s, supersedes = %s, deleted = false "
                    f"WHERE uid = %s AND version = %s RETURNING {_COLUMNS}",
                    (*values, entry.uid, entry.base_version),
                ).fetchone()
            if row is not None:
                return _row(row)
            current = _get(conn, entry.uid)
    except pg.UniqueViolation as exc:
        raise MemvaultError(
            f"another live entry of this team has the slug {entry.slug!r}", code="team-slug-taken"
        ) from exc
    except pg.InsufficientPrivilege as exc:
        where = f"team {entry.team!r}" if entry.team else "the org"
        raise MemvaultError(f"not allowed to publish to {where}: {_first_line(exc)}", code="team-denied") from exc
    except (pg.CheckViolation, pg.ForeignKeyViolation, pg.InvalidTextRepresentation, pg.DataException) as exc:
        raise MemvaultError(f"the server refused the entry: {_first_line(exc)}", code="team-invalid") from exc
    if current is None:
        if entry.base_version is None:  # the uid exists but is not visible to this member
            raise MemvaultError(f"entry {entry.uid} exists and is not yours to see", code="team-denied")
        raise MemvaultError(f"entry {entry.uid} is not on the server (or not visible to you)", code="team-missing")
    if current.content_hash == entry.content_hash and not current.deleted:
        return current  # a retry of what the server has already (its answer was lost): nothing to do
    said = (
        "exists already" if entry.base_version is None else f"is at version {current.version}, not {entry.base_version}"
    )
    raise VersionConflict(f"entry {entry.uid} {said} on the server (last by {current.editor})", current)


@_needs_schema
def delete(conn: Any, uid: str, base_version: int) -> EntryRow:
    """Tombstone an entry (kept, flagged deleted, so the deletion reaches every mirror) if still at base_version."""
    from psycopg import errors as pg

    try:
        with conn.transaction():
            row = conn.execute(
                f"UPDATE memvault.entries SET deleted = true WHERE uid = %s AND version = %s AND NOT deleted "
                f"RETURNING {_COLUMNS}",
                (uid, base_version),
            ).fetchone()
            current = _row(row) if row else _get(conn, uid)
    except pg.InsufficientPrivilege as exc:
        raise MemvaultError(f"not allowed to delete entry {uid}: {_first_line(exc)}", code="team-denied") from exc
    if current is None:
        raise MemvaultError(f"entry {uid} is not on the server (or not visible to you)", code="team-missing")
    if row is None and not current.deleted:
        raise VersionConflict(f"entry {uid} is at version {current.version}, not {base_version}", current)
    return current


@_needs_schema
def changes_since(
    conn: Any, cursor: int, limit: int = 500, *, vectors: bool = True, lock_timeout_s: float = LOCK_TIMEOUT_S
) -> tuple[list[EntryRow], int]:
    """The entries (tombstones included) changed after `cursor` that this member may see, oldest change first, and
    the cursor to ask with next time (less than `limit` rows: there is nothing more now).

    Safe against out-of-order commits: a change takes its cursor value when written but may commit later than
    a change that took a higher one. Every write holds a shared advisory lock from taking its value to its
    commit (the trigger memvault.stamp_entry); here the exclusive lock is taken for a moment, so every write
    that has a value has finished, and the sequence's last value read under it is the highest value whose
    change is settled. Rows are read up to that value only, in a snapshot taken after it.
    """
    from psycopg import errors as pg

    if conn.info.transaction_status != 0:
        conn.commit()
    try:
        with conn.transaction():
            conn.execute(f"SET LOCAL lock_timeout = '{max(1, int(lock_timeout_s * 1000))}ms'")
            conn.execute(_CURSOR_LOCK)
            last, called = conn.execute("SELECT last_value, is_called FROM memvault.change_seq").fetchone()
    except pg.LockNotAvailable as exc:
        raise TeamBusy(f"a write to the team database held the pull for over {lock_timeout_s:g} s") from exc
    settled = int(last) if called else 0
    vector = ", embedding::text" if vectors else ""
    with conn.transaction():
        rows = conn.execute(
            f"SELECT {_COLUMNS}{vector} FROM memvault.entries WHERE change_seq > %s AND change_seq <= %s "
            "ORDER BY change_seq LIMIT %s",
            (cursor, settled, limit),
        ).fetchall()
    entries = [_row(r[:18], r[18] if vectors else None) for r in rows]
    return entries, (entries[-1].change_seq if len(entries) == limit else max(settled, cursor))


@_needs_schema
def my_teams(conn: Any) -> list[str]:
    """The teams this member is in (what their pulls and searches cover, with the org's entries)."""
    with conn.transaction():
        rows = conn.execute("SELECT team FROM memvault.team_members WHERE role_name = current_user ORDER BY team")
        return [r[0] for r in rows.fetchall()]


@_needs_schema
def search(
    conn: Any,
    text: str,
    vector: list[float] | None,
    model_id: str | None,
    k: int = 10,
    teams: Sequence[str] | None = None,
    *,
    floor: relevance.Floor | None = None,
    method: str = "adaptive",
) -> list[Hit]:
    """The entries this member may see that best match `text`: pgvector cosine (HNSW) and ts_rank over the
    entries' tsvector, fused and floored by the local index's own functions (`fusion.fuse`, `relevance.verdict`).

    `vector` is the query's embedding by the model `model_id` (None: keyword-only); `teams` narrows to those
    teams (org entries always count); `floor` defaults to the hand-set floor (`relevance.Floor`'s constants);
    `relevance.Floor()` (min_relevance 0) turns it off.
    """
    floor = floor if floor is not None else relevance.Floor(min_relevance=relevance.MIN_RELEVANCE)
    query = privacy.strip_private(text)[:4000]
    terms = chunking.query_terms(query)
    only = list(teams) if teams is not None else None
    qvec = _vector_text(vector) if vector is not None and model_id else None
    with conn.transaction():
        vec_side: dict[str, float] = {}
        if qvec is not None:
            conn.execute(f"SET LOCAL hnsw.ef_search = {CANDIDATES * 2}")
            narrow = "" if only is None else " AND (scope = 'org' OR team = ANY(%(only)s))"
            vec_side = dict(conn.execute(
                "SELECT uid::text, 1 - (embedding <=> %(v)s::vector) FROM memvault.entries "
                f"WHERE NOT deleted AND model_id = %(m)s{narrow} ORDER BY embedding <=> %(v)s::vector LIMIT %(k)s",
                {"v": qvec, "m": model_id, "only": only, "k": CANDIDATES}).fetchall())  # fmt: skip
        counts: list[int] = [0]
        kw_side: dict[str, float] = {}
        if terms:
            stats = conn.execute("SELECT memvault.term_stats(%s, %s, %s, %s)", (terms, only, EXACT_COUNT, SAMPLE_ROWS))
            counts = [int(n) for n in stats.fetchone()[0]]
            matching, every = _matching(terms, counts[1:])
            kw_side = {str(u): float(r) for u, r in conn.execute(
                "SELECT uid, rank FROM memvault.keyword_candidates(%s, %s, %s, %s, %s)",
                (matching, every, terms, only, CANDIDATES)).fetchall()}  # fmt: skip
        uids = list(dict.fromkeys([*vec_side, *kw_side]))
        if not uids:
            return []
        ids = chunking.identifiers(query)
        has = ", ".join(["tsv @@ plainto_tsquery('simple', %s)"] * len(terms))
        ident = " OR ".join(["tsv @@ phraseto_tsquery('simple', %s)"] * len(ids)) or "false"
        cosine = "1 - (embedding <=> %s::vector)" if qvec is not None else "NULL::float8"
        rows = conn.execute(
            f"SELECT {_COLUMNS}, ARRAY[{has}]::boolean[], ({ident}), "
            f"CASE WHEN model_id = %s THEN {cosine} END FROM memvault.entries WHERE uid = ANY(%s::uuid[])",
            (*terms, *[i.strip('"') for i in ids], model_id, *([qvec] if qvec is not None else []), uids),
        ).fetchall()
    total = counts[0] or 1
    weights = [relevance.idf(total, n) for n in counts[1:]]
    info = {r[0]: (_row(r[:18]), r[18], bool(r[19]), r[20]) for r in rows}
    words = len(terms)
    keyword = {u: s * sum(info[u][1]) / words for u, s in kw_side.items() if u in info} if words else {}
    top = max(keyword.values(), default=0.0) or 1.0
    ranked = fusion.fuse({u: c for u, c in vec_side.items() if u in info}, keyword, method=method)
    ranked = sorted(ranked, key=lambda item: not info[item[0]][2])  # an exact identifier first (as the local index)
    hits = []
    for uid, score in ranked[:k]:
        entry, have, identifier, cos = info[uid]
        share = sum(w for w, h in zip(weights, have, strict=True) if h) / (sum(weights) or 1.0)
        signals = relevance.Signals(
            None if qvec is None else float(cos or 0.0), share, identifier, sum(have), kind=entry.kind
        )
        passed, why = relevance.verdict(signals, floor)
        if floor.on and not passed:
            continue
        hits.append(Hit(entry, round(score, 4), signals.cosine, round(keyword.get(uid, 0.0) / top, 4),
                        round(share, 4), sum(have), identifier, round(relevance.relevance(signals, floor), 4), why,
                        chunking.snippet(entry.body, terms)))  # fmt: skip
    return hits


def _matching(terms: list[str], counts: list[int]) -> tuple[list[str], bool]:
    """Which words make an entry a keyword candidate, and whether it needs all of them: any word in fewer than
    EXACT_COUNT entries; when every word is commoner, both of the two rarest (a common word would make every
    entry a candidate, each to be ranked). Every word still counts in the rank and the coverage."""
    rare = [t for t, n in zip(terms, counts, strict=True) if n < EXACT_COUNT]
    if rare:
        return rare, False
    return [t for _, t in sorted(zip(counts, terms, strict=True))[:2]], True


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0]
