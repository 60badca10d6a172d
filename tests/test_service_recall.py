"""Recall inside the warm service: the in-memory vector copy agrees with sqlite-vec, and the `recall` request."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from memvault import open_vault, paths
from memvault.index import db, readers, sync
from memvault.recall import search, service, vecmem
from memvault.vault import indexing

from .test_recall import NOTES, local

QUERIES = ["when should my vehicle get fresh lubricant", "printer error on the office machine", "bake bread"]


@pytest.fixture
def indexed(tmp_path: Path, embedder) -> tuple[Path, Path]:
    """A small vault in two groups, embedded with the real model; (vault root, index file)."""
    root = tmp_path / "vault"
    for n, (name, body) in enumerate(NOTES.items()):
        group = "personal-private" if n % 2 else "work"
        target = root / "MemoryVault" / group / "domain" / f"{name}.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body, encoding="utf-8")
    (root / "MemoryVault/work/_inbox").mkdir(parents=True)
    (root / "MemoryVault/work/_inbox/oil.md").write_text("# Oil\n\nEngine oil every 10,000 km.\n", encoding="utf-8")
    vault = open_vault(root)
    index, _ = indexing.open_index(vault.root, vault.config)
    sync.sync(index, indexing.layout(vault.root, vault.config))
    sync.embed_pending(index, embedder)
    index.close()
    return root, vault.index_file


def fresh(cache: vecmem.VectorCache, path: Path) -> vecmem.Vectors:
    assert cache.source_for(path) is None  # the first call starts the copy; recall goes to sqlite-vec meanwhile
    assert cache.wait_idle(30)
    found = cache.source_for(path)
    assert found is not None
    return found


def test_in_memory_nearest_chunks_match_sqlite_vec(indexed, embedder) -> None:
    _, index_file = indexed
    in_memory = fresh(vecmem.VectorCache(), index_file)
    index = search.open_reader(index_file)
    try:
        for query in QUERIES:
            blob = embedder.encode([query])[0]
            for cap, group in ((0, None), (1, None), (0, "work"), (1, "personal-private")):
                expected = search.sqlite_nearest(index, blob, 6, cap, group)
                got = in_memory.nearest(index, blob, 6, cap, group)
                assert list(got) == list(expected), (query, cap, group)
                assert all(abs(got[c] - expected[c]) < 1e-4 for c in got)
        assert in_memory.nearest(index, embedder.encode(["x"])[0], 5, 0, "no-such-group") == {}
        # The copy also answers each chunk's note and cosine, as the index does (with no chunk made up).
        chunks = [int(r[0]) for r in index.conn.execute("SELECT id FROM chunks")] + [10**9]
        assert in_memory.notes(index, chunks) == search.SQLITE_VECTORS.notes(index, chunks[:-1])
        assert len(chunks) > 5
        expected = search.SQLITE_VECTORS.cosines(index, blob, chunks)
        got = in_memory.cosines(index, blob, chunks)
        assert set(got) == set(expected) and all(abs(got[c] - expected[c]) < 1e-5 for c in got)
    finally:
        index.close()


def test_a_write_of_the_vectors_makes_the_copy_stale_until_it_is_reloaded(indexed, embedder) -> None:
    root, index_file = indexed
    cache = vecmem.VectorCache()
    fresh(cache, index_file)
    vault = open_vault(root)
    vault.save("fix", "clutch", "# Clutch\n\nA slipping clutch needs new friction plates.\n")
    index, _ = indexing.open_index(vault.root, vault.config)
    try:
        assert sync.embed_pending(index, embedder) >= 1  # the new note's vectors written
    finally:
        index.close()
    assert cache.source_for(index_file) is None  # never an old copy after that (this call starts the reload)
    assert cache.wait_idle(30)
    found = cache.source_for(index_file)  # (`fresh` would race the reload just started)
    assert found is not None
    index = search.open_reader(index_file)
    try:
        blob = embedder.encode(["the clutch is slipping"])[0]
        assert list(found.nearest(index, blob, 3, 0, None)) == list(search.sqlite_nearest(index, blob, 3, 0, None))
        clutch = index.conn.execute("SELECT c.id FROM chunks c JOIN notes n ON n.id = c.note_id "
                                    "WHERE n.path LIKE '%clutch.md'").fetchone()[0]  # fmt: skip
        assert next(iter(found.nearest(index, blob, 3, 0, None))) == clutch
    finally:
        index.close()

    # A note made private keeps its vectors' values but not their visibility: a write of the vectors too.
    note = next(root.glob("MemoryVault/*/domain/*.md"))
    note.write_text("---\nprivate: true\n---\n" + note.read_text(encoding="utf-8"), encoding="utf-8")
    index, _ = indexing.open_index(vault.root, vault.config)
    try:
        sync.sync(index, indexing.layout(vault.root, vault.config))
    finally:
        index.close()
    assert cache.source_for(index_file) is None
    assert cache.wait_idle(30)
    found = cache.source_for(index_file)
    assert found is not None
    index = search.open_reader(index_file)
    try:
        blob = embedder.encode([note.read_text(encoding="utf-8")])[0]
        assert list(found.nearest(index, blob, 5, 0, None)) == list(search.sqlite_nearest(index, blob, 5, 0, None))
    finally:
        index.close()


def test_writes_that_leave_the_vectors_alone_keep_the_copy(indexed, embedder, memvault_home: Path) -> None:
    # After every turn of a session a background job writes the index (recall counts, a reindex's time, a note
    # saved before its vectors): the copy must stay in use, not send the next prompt to a sqlite-vec scan.
    root, index_file = indexed
    cache = vecmem.VectorCache()
    fresh(cache, index_file)
    vault = open_vault(root)
    vault.save("fix", "clutch", "# Clutch\n\nA slipping clutch needs new friction plates.\n")  # no vectors yet
    index, _ = indexing.open_index(vault.root, vault.config)
    try:
        sync.sync(index, indexing.layout(vault.root, vault.config))  # marks the whole-vault sync done
        with db.transaction(index.conn):
            index.conn.execute("INSERT OR REPLACE INTO recalls (path, count, last_recalled) VALUES ('x.md', 1, 'now')")
    finally:
        index.close()
    found = cache.source_for(index_file, readers.Readers(keep_per_file=2))  # the version read as the service reads it
    assert found is not None and not cache._loading  # served from the copy, and no reload started
    assert cache.source_for(index_file) is found  # the same copy, now under the file's new stamp
    index = search.open_reader(index_file)
    try:
        for query in QUERIES:
            blob = embedder.encode([query])[0]
            assert list(found.nearest(index, blob, 6, 1, None)) == list(search.sqlite_nearest(index, blob, 6, 1, None))
    finally:
        index.close()


def test_service_recall_request(indexed, embedder, memvault_home: Path) -> None:
    _, index_file = indexed
    server = service.Server(embedder, paths.runtime_dir(), idle_minutes=1)
    try:

        def ask(**request: object) -> dict:
            reply, after = server.handle(json.dumps({"token": server.token, "op": "recall", **request}).encode())
            assert after is None
            return reply

        query = "when should my vehicle get fresh lubricant"
        reply = ask(index=str(index_file), query=query, options={"k": 3, "budget_ms": 5000})
        assert reply["ok"] and reply["result"]["mode"] == "vector"
        assert Path(reply["result"]["hits"][0]["path"]).stem == "car"
        expected = search.recall_file(index_file, query, search.Options(k=3, budget_ms=5000), local(embedder))
        assert [h["path"] for h in reply["result"]["hits"]] == [h.path for h in expected.hits]
        assert server.vectors.wait_idle(30)  # the second request uses the in-memory copy: same answer
        again = ask(index=str(index_file), query=query, options={"k": 3, "budget_ms": 5000})
        assert again["result"]["hits"] == reply["result"]["hits"]
        # Each request is answered on its own thread, with the read connection an earlier one left open.
        server.readers.keep_per_file = 2  # (on Windows the service keeps none)
        ask(index=str(index_file), query=query, options={"k": 3, "budget_ms": 5000})
        kept = server.readers._idle[str(index_file)][0][2]
        answers: list[dict] = []
        asking = threading.Thread(target=lambda: answers.append(ask(index=str(index_file), query=query,
                                                                     options={"k": 3, "budget_ms": 5000})))  # fmt: skip
        asking.start()
        asking.join()
        assert answers[0]["ok"], answers[0]
        assert answers[0]["result"]["hits"] == reply["result"]["hits"] and not answers[0]["result"]["reason"]
        assert server.readers._idle[str(index_file)][0][2] is kept

        assert not ask(index=str(index_file), query=query, options={"k": "three"})["ok"]
        assert not ask(index=str(index_file), query=query, options={"nope": 1})["ok"]
        assert not ask(index="/etc/passwd", query=query, options={})["ok"]
        missing = ask(index=str(index_file.with_name("gone.sqlite3")), query=query, options={})
        assert missing["ok"] and missing["result"]["hits"] == [] and missing["result"]["reason"]
        assert server.handle(json.dumps({"token": "bad", "op": "recall"}).encode())[0]["ok"] is False
        told = server.handle(json.dumps({"token": server.token, "op": "vectors_changed"}).encode())[0]
        assert told["ok"] is False and "index" in told["error"]
    finally:
        server.close()
