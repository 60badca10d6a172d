"""The chunks a hit's passage is chosen from, read from the index, and the passages chosen (`passages` decides).

Runs on the prompt path: the index layer and the standard library only.
"""

from __future__ import annotations

from memvault.index.core import Index

from . import passages

TYPE_CHECKING = False  # the prompt path does not import `typing`
if TYPE_CHECKING:  # search imports this module
    from .search import Hit, Options

SHOWN_COVERAGE_WEIGHT = 1.5  # how a chunk is scored for showing: cosine + this × keyword coverage (search.py)
SHOWN_MAX_CHUNKS = 32  # notes of at most this many chunks have every chunk scored


def passage(
    index: Index, note_id: int, seq: int, options: Options, terms: list[str], scores: dict[int, float]
) -> str:
    """The passage shown for a hit whose best chunk is `seq`: that chunk, then more of the note (`passages.choose`).

    The neighbour fills read only the chunks that can fit beside `seq`; "best" reads the note's chunks scored in
    `scores` (chunk id → cosine + coverage, known for the notes of at most SHOWN_MAX_CHUNKS chunks).
    """
    reach = options.passage_chars // 200 + 1  # no chunk is that short but the last of a section
    sql = "SELECT id, seq, text FROM chunks WHERE note_id = ?"
    params: list[object] = [note_id]
    if options.passage_fill != "best" or not scores:
        sql += " AND seq BETWEEN ? AND ?"
        params += [seq - reach, seq + reach]
    rows = index.conn.execute(sql + " ORDER BY seq", params).fetchall()
    pieces = [passages.Piece(s, t, scores.get(c, 0.0)) for c, s, t in rows]
    return passages.render(passages.choose(pieces, seq, options.passage_chars, options.passage_fill, terms))


def spread(
    index: Index, hits: list[Hit], scored: dict[str, tuple[int, dict[int, float]]], options: Options, terms: list[str]
) -> list[Hit]:
    """`hits` with the passages of the first `options.shown` (0: k) not in `options.given` chosen together
    (`passages.spread`, passage_chars × their number); a shown hit that gets no chunk shows its snippet."""
    shown = [h for h in hits if h.path not in options.given][: options.shown or options.k]
    notes: list[list[passages.Piece]] = []
    ranks: list[dict[int, float]] = []
    sql = "SELECT id, seq, text FROM chunks WHERE note_id = ? AND seq BETWEEN ? AND ? ORDER BY seq"
    for hit in shown:
        note_id, scores = scored[hit.path]
        rows = index.conn.execute(sql, (note_id, 0, SHOWN_MAX_CHUNKS)).fetchall()
        if len(rows) > SHOWN_MAX_CHUNKS:  # a note too long to score all its chunks: the shown one's neighbours
            rows = index.conn.execute(sql, (note_id, hit.chunk - 2, hit.chunk + 2)).fetchall()
        elif len(scores) < len(rows):  # keyword-only: each chunk by the share of the prompt's words it names
            scores = {c: SHOWN_COVERAGE_WEIGHT * passages.named(text, terms) for c, _, text in rows}
        notes.append([passages.Piece(seq, text) for _, seq, text in rows])
        ranks.append({seq: scores[c] for c, seq, _ in rows if c in scores})
    chosen = passages.spread(notes, ranks, options.passage_chars * len(shown), [len(h.snippet) for h in shown], terms)
    given = {h.path: text or h.snippet for h, text in zip(shown, chosen, strict=True)}
    return [h._replace(passage=given[h.path]) if h.path in given else h for h in hits]


def note_chunks(index: Index, note_ids: list[int]) -> dict[int, list[int]]:
    """note id → all its chunk ids, for the notes of at most SHOWN_MAX_CHUNKS chunks."""
    if not note_ids:
        return {}
    marks = ",".join("?" * len(note_ids))
    sql = f"SELECT note_id, id FROM chunks WHERE note_id IN ({marks}) ORDER BY seq"  # noqa: S608 (marks only)
    out: dict[int, list[int]] = {}
    for note_id, chunk_id in index.conn.execute(sql, note_ids):
        out.setdefault(note_id, []).append(chunk_id)
    return {n: ids for n, ids in out.items() if len(ids) <= SHOWN_MAX_CHUNKS}
