"""Chunks carry their context: title, heading path and a bounded window of their neighbours, in the embedded
text and in the keyword row; an edit re-embeds only what it touched; an older index migrates in place."""

from __future__ import annotations

import json
from pathlib import Path

from memvault import open_vault
from memvault.index import chunking, db, sync
from memvault.index import core as ix
from memvault.index.chunking import Chunk
from memvault.index.schema import MIGRATIONS
from memvault.vault import indexing

PARAGRAPHS = [f"Paragraph {i}: " + " ".join(f"word{i}x{j}" for j in range(60)) for i in range(12)]


def test_the_window_is_bounded_cut_at_words_and_stays_in_its_section() -> None:
    body = "# Log\n\n" + "\n\n".join(PARAGRAPHS) + "\n\n## Other\n\nA short section.\n"
    parts = chunking.chunks(body)
    log = [p for p in parts if p.heading == "Log"]
    assert len(log) >= 4
    assert log[0].before == "" and log[-1].after == ""
    for prev, part, nxt in zip(log, log[1:], log[2:], strict=False):
        assert 0 < len(part.before) <= chunking.CONTEXT_CHARS and prev.text.endswith(part.before)
        assert 0 < len(part.after) <= chunking.CONTEXT_CHARS and nxt.text.startswith(part.after)
        assert not part.before.startswith(("x", "0", "1")) and not part.after.endswith("x")  # whole words
    other = next(p for p in parts if p.heading == "Log › Other")
    assert other.before == "" and other.after == ""  # another section's text is not this chunk's context
    assert chunking.with_neighbours(log, window=0)[1].before == ""


def test_the_embedded_text_puts_the_text_before_first_and_keeps_the_chunk_whole() -> None:
    parts = chunking.chunks("\n\n".join(PARAGRAPHS))
    second = parts[1]
    text = chunking.embed_text("Build log", ["ci"], second)
    assert text.startswith("Build log\n") and "#ci" not in text  # tags only on the first chunk
    assert text.endswith(second.text)  # the chunk itself is never the part cut off
    assert second.before[-40:] in text and len(text) <= chunking.EMBED_CHARS
    short = Chunk(3, "", "One line.", before="The end of the previous chunk.")
    assert chunking.embed_text("T", [], short) == "T\nThe end of the previous chunk.\nOne line."


def test_every_keyword_row_carries_the_title_tags_and_the_neighbours() -> None:
    parts = chunking.chunks("\n\n".join(PARAGRAPHS))
    title, tags, heading, body, context = chunking.keyword_row("Build log", ["ci", "infra"], parts[2])
    assert (title, tags, heading, body) == ("Build log", "ci infra", "", parts[2].text)
    assert parts[2].before in context and parts[2].after in context


def _vectors(index: ix.Index, path: str) -> dict[str, bytes]:
    rows = index.conn.execute(
        "SELECT c.text, v.embedding FROM chunks c JOIN vec_chunks v ON v.rowid = c.id JOIN notes n ON n.id = c.note_id "
        "WHERE n.path = ?",
        (path,),
    )
    return {text: bytes(blob) for text, blob in rows}


def test_an_edit_re_embeds_the_changed_chunk_and_the_one_after_it_only(tmp_path: Path, embedder) -> None:
    root = tmp_path / "vault"
    note = root / "Notes" / "long.md"
    note.parent.mkdir(parents=True)
    note.write_text("# Long\n\n" + "\n\n".join(PARAGRAPHS) + "\n", encoding="utf-8")
    vault = open_vault(root)
    index, _ = indexing.open_index(vault.root, vault.config)
    layout = indexing.layout(vault.root, vault.config)
    sync.sync(index, layout)
    sync.embed_pending(index, embedder)
    before = _vectors(index, "Notes/long.md")
    assert len(before) >= 5

    edited = list(PARAGRAPHS)
    edited[5] = edited[5].replace("word5x59", "wxrd5x59")  # its last word, same length: no boundary moves
    note.write_text("# Long\n\n" + "\n\n".join(edited) + "\n", encoding="utf-8")
    sync.sync(index, layout)
    [(_, todo)] = index.pending(10)
    assert len(todo) == 2, [t[:40] for _, t in todo]  # the chunk that changed, and the next: its window did
    assert all("wxrd5x59" in text for _, text in todo)
    assert len(_vectors(index, "Notes/long.md")) == len(before) - 1  # the next one keeps its old vector meanwhile
    sync.embed_pending(index, embedder)
    after = _vectors(index, "Notes/long.md")
    assert len(after) == len(before) and len(set(before) & set(after)) == len(before) - 1
    renewed = [t for t in before if t in after and before[t] != after[t]]
    assert len(renewed) == 1 and renewed[0].startswith("Paragraph 6")  # every other vector kept as it was
    index.close()


def test_an_index_of_the_previous_release_migrates_in_place(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite3"
    conn = db.connect(path)
    db.migrate(conn, MIGRATIONS[:5])  # the schema before chunk context
    with db.transaction(conn):
        conn.execute(
            "INSERT INTO notes (id, path, mtime_ns, size, hash, title, kind, status, grp, tags, always_load, private,"
            " updated, in_memory, area, error, visibility, embedded) VALUES (1, 'Notes/a.md', 1, 1, 'h', 'Alpha',"
            " NULL, 'active', NULL, ?, 0, 0, NULL, 0, '', NULL, 0, 'toy')",
            (json.dumps(["greek"]),),
        )
        for seq, text in enumerate(["first part about apples", "second part about pears"]):
            conn.execute(
                "INSERT INTO chunks (id, note_id, seq, heading, text, ehash) VALUES (?, 1, ?, '', ?, ?)",
                (seq + 1, seq, text, f"old{seq}"),
            )
            conn.execute(
                "INSERT INTO chunks_fts (rowid, title, tags, heading, body) VALUES (?, ?, ?, '', ?)",
                (seq + 1, "Alpha" if seq == 0 else "", "greek" if seq == 0 else "", text),
            )
        conn.execute("INSERT INTO meta (key, value) VALUES ('vec_model', 'toy'), ('vec_dim', '4')")
        conn.execute(
            "CREATE VIRTUAL TABLE vec_chunks USING vec0(embedding float[4] distance_metric=cosine, grp text, "
            "visibility integer)"
        )
        for rowid in (1, 2):
            conn.execute(
                "INSERT INTO vec_chunks (rowid, embedding, grp, visibility) VALUES (?, ?, '', 0)",
                (rowid, db.serialize_f32([1.0, 0.0, 0.0, 0.0])),
            )
    conn.close()

    index = ix.open_index(path)
    match = "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rowid"
    assert [r[0] for r in index.conn.execute(match, ("alpha",))] == [1, 2]  # the title is on every chunk now
    assert [r[0] for r in index.conn.execute(match, ("context: pears",))] == [1]  # the neighbour's words
    assert index.conn.execute("SELECT count(*) FROM vec_chunks").fetchone()[0] == 2  # old vectors serve meanwhile
    [(note_id, todo)] = index.pending(10)
    assert note_id == 1 and [chunk for chunk, _ in todo] == [1, 2]  # both are embedded again with their context
    assert "first part about apples" in todo[1][1]  # the second chunk is embedded with the end of the first
    index.close()
