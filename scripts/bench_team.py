"""Team memory at scale: 100,000 entries in a real PostgreSQL with pgvector, measured as member roles.

    python scripts/bench_team.py [--entries 100000] [--queries 300] [--texts 3000]

Figures: server-side hybrid search p50/p95 (`team.server.search`, the floor on; and keyword-only), a first pull
of 10,000 entries and an incremental pull of 1,000 changes (`team.server.changes_since`, pages of 500, vectors
included), and a member's publish of an edit. The server is a throwaway one from the pgserver wheel (tests/pg.py),
removed at the end. The client's side of a pull (writing the mirror) is measured by the client's benchmark:
`build()` below gives it the same database, and `pull_figures()` the server part.

The entries: a few thousand real texts (paragraphs of this repository's wiki, the example vault, the kepano vault
in tests/data and the recall training data's passages), each encoded once with the packaged model (encode, as
notes are). Entry g takes text g mod N, plus the first 200 characters of another text (so bodies differ), and the
text's vector plus one of 1,000 Gaussian noise vectors (σ 0.025 per dimension: cosine about 0.9 to the original),
made in the server (vector + vector). One entry in ten is in team `small` (10,000), the rest in team `big`. The
HNSW index is built after the load (as an admin restoring a dump would). Queries: prompts of the recall training
data (each names a passage of the corpus) and prompts of scripts/data/unrelated_prompts.json (about nothing here),
encoded with encode_query outside the timed part.
"""

from __future__ import annotations

import argparse
import glob
import json
import random
import re
import signal
import statistics
import subprocess
import sys
import time
import uuid
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memvault.team import admin, server  # noqa: E402
from tests.pg import PgServer, TeamDb, new_database, start_server  # noqa: E402  (the throwaway server)

DATA = ROOT / "scripts" / "data"
NOISE_VECTORS, NOISE_SD = 1000, 0.025
SMALL_EVERY = 10  # one entry in ten is in team "small"
WIKI_AT = "d38bcf2"  # the wiki's paragraphs as of this commit: the corpus (and the cached vectors) stay the same


def corpus(limit: int) -> list[tuple[str, str]]:
    """(title, body) of up to `limit` distinct real paragraphs, in a fixed order, from sources that do not change:
    the wiki as of commit WIKI_AT, the example vault, the kepano vault and the transcripts in tests/data, the recall
    training passages; a paragraph with a secret or a `<private>` span is left out."""
    found: dict[str, str] = {}

    def paragraphs(text: str, title: str) -> None:
        for para in re.split(r"\n\s*\n", text):
            flat = " ".join(para.split())
            if 80 <= len(flat) <= 1500 and not flat.startswith(("|", "```", "---", "<")):
                found.setdefault(flat, title)

    listed = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "-r", "--name-only", WIKI_AT, "wiki"],
                            capture_output=True, text=True, check=False)  # fmt: skip
    for name in sorted(n for n in listed.stdout.split() if n.endswith(".md")):
        shown = subprocess.run(["git", "-C", str(ROOT), "show", f"{WIKI_AT}:{name}"], capture_output=True,
                               text=True, check=False)  # fmt: skip
        paragraphs(shown.stdout, Path(name).stem)
    for pattern in ("examples/vault/**/*.md", "tests/data/kepano-obsidian/**/*.md"):
        for name in sorted(glob.glob(str(ROOT / pattern), recursive=True)):
            paragraphs(Path(name).read_text(encoding="utf-8", errors="replace"), Path(name).stem)
    for name in sorted((ROOT / "tests/data/transcripts").rglob("*.jsonl")):
        for line in name.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                message = json.loads(line).get("message")
            except (ValueError, AttributeError):
                continue
            content = message.get("content") if isinstance(message, dict) else None
            blocks = content if isinstance(content, list) else []
            parts = [content] if isinstance(content, str) else []
            parts += [c.get("text", "") for c in blocks if isinstance(c, dict) and c.get("type") == "text"]
            for part in parts:
                paragraphs(part, name.parent.name)
    for name in sorted((DATA / "recall_train").glob("*.jsonl")):
        for line in name.read_text(encoding="utf-8").splitlines():
            passage = json.loads(line).get("passage") or ""
            title, _, body = passage.partition("\n\n")
            if body and len(body) >= 40:
                found.setdefault(" ".join(body.split()), title[:120])
    from memvault.store import privacy, secrets

    items = [(t, b) for b, t in found.items() if not privacy.has_private_span(b) and not secrets.scan(f"{t}\n{b}")]
    random.Random(7).shuffle(items)  # noqa: S311 (a fixed order, not security)
    return items[:limit]


def queries(limit: int) -> list[tuple[str, str]]:
    """(kind, prompt): two thirds prompts about a corpus passage, one third unrelated prompts."""
    related = []
    for name in sorted((DATA / "recall_train").glob("*.jsonl")):
        for line in name.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row.get("label") == 1:
                related.append(("related", row["prompt"]))
    unrelated = [("unrelated", p["text"][:500]) for p in json.loads((DATA / "unrelated_prompts.json").read_text())
                 ["prompts"] if not p.get("maybe_related")]  # fmt: skip
    rng = random.Random(11)  # noqa: S311 (a fixed sample)
    rng.shuffle(related)
    rng.shuffle(unrelated)
    n_unrelated = limit // 3
    return related[: limit - n_unrelated] + unrelated[:n_unrelated]


def encoded(embedder: Any, texts: list[str], log: Any = print) -> list[bytes]:
    """The texts' vectors (`encode`, as notes are), cached by text and model: encoding takes minutes here."""
    import hashlib

    import platformdirs

    key = hashlib.sha256(json.dumps([embedder.name, texts]).encode()).hexdigest()[:16]
    cache = platformdirs.user_cache_path("memvault", appauthor=False) / "bench_team" / f"{key}.f32"
    if cache.is_file():
        data = cache.read_bytes()
        size = len(data) // len(texts)
        log(f"corpus: {len(texts)} real texts, vectors from the cache {cache.name}")
        return [data[i * size : (i + 1) * size] for i in range(len(texts))]
    log(f"corpus: {len(texts)} real texts; encoding them with {embedder.name} ...")
    started = time.monotonic()
    blobs = embedder.encode(texts, batch_size=64)
    log(f"  encoded in {time.monotonic() - started:.0f} s")
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_bytes(b"".join(blobs))
    return blobs


def vector_text(blob: bytes) -> str:
    return "[" + ",".join(f"{x:.6g}" for x in array("f", blob)) + "]"


@dataclass
class Built:
    server: PgServer
    db: TeamDb
    model: str
    searcher: str  # in teams big and small: sees every entry
    newcomer: str  # in team small only: its first pull is 10,000 entries among 100,000
    editor: str  # in team small: makes the changes of the incremental pull
    load_s: float
    index_s: float


def build(embedder: Any, entries: int = 100_000, texts: int = 3000, log: Any = print) -> Built:
    """A throwaway server with `entries` team entries and three members (see `Built`); stop `built.server` after."""
    srv = start_server("-c fsync=off -c shared_buffers=1GB -c maintenance_work_mem=1GB -c max_wal_size=4GB")
    try:
        return _load(srv, embedder, entries, texts, log)
    except BaseException:
        srv.remove()
        raise


def _load(srv: PgServer, embedder: Any, entries: int, texts: int, log: Any) -> Built:
    db = new_database(srv)
    items = corpus(texts)
    blobs = encoded(embedder, [f"{t}\n{b}" for t, b in items], log)
    rng = random.Random(3)  # noqa: S311 (reproducible noise)
    roles = {r: db.role(r) for r in ("searcher", "newcomer", "editor")}
    with db.connect() as conn:
        admin.add_member(conn, roles["searcher"], ["big", "small"])
        admin.add_member(conn, roles["newcomer"], ["small"])
        admin.add_member(conn, roles["editor"], ["small"])
        conn.execute("CREATE TABLE bench_base (i int PRIMARY KEY, title text, body text, embedding vector(384))")
        conn.execute("CREATE TABLE bench_noise (j int PRIMARY KEY, v vector(384))")
        with conn.cursor().copy("COPY bench_base (i, title, body, embedding) FROM STDIN") as copy:
            for i, ((title, body), blob) in enumerate(zip(items, blobs, strict=True)):
                copy.write_row((i, title, body, vector_text(blob)))
        with conn.cursor().copy("COPY bench_noise (j, v) FROM STDIN") as copy:
            for j in range(NOISE_VECTORS):
                copy.write_row((j, "[" + ",".join(f"{rng.gauss(0, NOISE_SD):.5f}" for _ in range(384)) + "]"))
        conn.execute("DROP INDEX memvault.entries_embedding")
        conn.commit()
        started = time.monotonic()
        step = 10_000
        for first in range(0, entries, step):
            conn.execute(
                "INSERT INTO memvault.entries (uid, scope, team, kind, title, slug, body, frontmatter, content_hash, "
                "embedding, model_id) "
                "SELECT gen_random_uuid(), 'team', CASE WHEN g %% %(every)s = 0 THEN 'small' ELSE 'big' END, 'note', "
                "b.title, 'e-' || g, b.body || E'\\n\\n' || left(o.body, 200), '{}'::jsonb, md5(b.body || g), "
                "b.embedding + n.v, %(model)s "
                "FROM generate_series(%(first)s::int, %(last)s::int) g "
                "JOIN bench_base b ON b.i = g %% %(nb)s "
                "JOIN bench_base o ON o.i = (g::bigint * 7919 + 13) %% %(nb)s "
                "JOIN bench_noise n ON n.j = (g::bigint * 104729) %% %(nn)s",
                {"every": SMALL_EVERY, "model": embedder.name, "first": first, "last": min(entries, first + step) - 1,
                 "nb": len(items), "nn": NOISE_VECTORS},
            )  # fmt: skip
            conn.commit()
        load_s = time.monotonic() - started
        log(f"  loaded {entries:,} entries in {load_s:.0f} s; building the HNSW index ...")
        started = time.monotonic()
        conn.execute("CREATE INDEX entries_embedding ON memvault.entries USING hnsw (embedding vector_cosine_ops)")
        conn.commit()
        index_s = time.monotonic() - started
        conn.execute("DROP TABLE bench_base, bench_noise")
        conn.commit()
        conn.autocommit = True
        conn.execute("VACUUM ANALYZE memvault.entries")
        log(f"  HNSW index built in {index_s:.0f} s")
    return Built(srv, db, embedder.name, roles["searcher"], roles["newcomer"], roles["editor"], load_s, index_s)


def percentiles(ms: list[float]) -> str:
    q = statistics.quantiles(ms, n=20, method="inclusive")
    return f"p50 {statistics.median(ms):.1f} ms, p95 {q[18]:.1f} ms (n={len(ms)})"


def search_figures(built: Built, embedder: Any, n: int, log: Any = print) -> dict[str, Any]:
    asked = queries(n)
    vectors = embedder.encode_query([q for _, q in asked], batch_size=64)
    out: dict[str, Any] = {}
    with built.db.connect(built.searcher) as conn:
        for _, q in asked[:10]:  # warm the caches, as a server in use is
            server.search(conn, q, None, None, k=5)
        for mode in ("hybrid", "keyword"):
            ms: list[float] = []
            found = {"related": [0, 0], "unrelated": [0, 0]}
            for (kind, q), blob in zip(asked, vectors, strict=True):
                vec = list(array("f", blob)) if mode == "hybrid" else None
                started = time.perf_counter()
                hits = server.search(conn, q, vec, built.model if vec else None, k=5)
                ms.append((time.perf_counter() - started) * 1000)
                found[kind][0] += 1
                found[kind][1] += bool(hits)
            out[mode] = ms
            shares = ", ".join(f"{k} prompts with a hit {v[1]}/{v[0]}" for k, v in found.items())
            log(f"search {mode:7}: {percentiles(ms)}; {shares}")
    return out


def _pull_all(conn: Any, cursor: int) -> tuple[int, int]:
    """Every change past `cursor`, in pages of 500 as the client asks: how many rows, and the cursor reached."""
    rows = 0
    while True:
        page, cursor = server.changes_since(conn, cursor, 500)
        rows += len(page)
        if len(page) < 500:
            return rows, cursor


def pull_figures(built: Built, changes: int = 1000, log: Any = print) -> dict[str, float]:
    """The server's side of a member's pulls: the first (every entry of team small), then `changes` edits by
    another member pulled incrementally. Pages of 500 with vectors, as the client asks."""
    out: dict[str, float] = {}
    with built.db.connect(built.newcomer) as conn:
        started = time.perf_counter()
        rows, cursor = _pull_all(conn, 0)
        out["first_s"], out["first_rows"] = time.perf_counter() - started, rows
        log(f"first pull: {rows:,} entries in {out['first_s']:.2f} s (changes_since, pages of 500, vectors included)")
    with built.db.connect(built.editor) as conn:
        mine = conn.execute(
            "SELECT uid::text, version, title, slug, body FROM memvault.entries ORDER BY random() LIMIT %s", (changes,)
        ).fetchall()
        conn.commit()
        ms = []
        for uid, version, title, slug, body in mine:
            edit = server.EntryIn(uid, "team", "small", "note", title, slug, body + "\n\nEdited.", {},
                                  uuid.uuid4().hex, base_version=version)  # fmt: skip
            started = time.perf_counter()
            server.publish(conn, edit)
            ms.append((time.perf_counter() - started) * 1000)
        log(f"publish an edit: {percentiles(ms)}")
        out["publish_p50_ms"] = statistics.median(ms)
    with built.db.connect(built.newcomer) as conn:
        started = time.perf_counter()
        rows, cursor = _pull_all(conn, cursor)
        out["incremental_s"], out["incremental_rows"] = time.perf_counter() - started, rows
        log(f"incremental pull: {rows:,} changes in {out['incremental_s']:.2f} s")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--texts", type=int, default=3000)
    args = parser.parse_args()
    from tests.pg import unavailable

    reason = unavailable()
    if reason:
        print(f"skipped: {reason}")
        return
    from memvault.index import embed

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a kill still stops and removes the server
    embedder = embed.load()
    built = build(embedder, args.entries, args.texts)
    try:
        search_figures(built, embedder, args.queries)
        pull_figures(built)
    finally:
        built.server.remove()


if __name__ == "__main__":
    main()
