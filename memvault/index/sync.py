"""Incremental sync of the index with the markdown: stat, hash, parse and chunk what changed, embed what is pending."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from memvault.errors import MemvaultError
from memvault.store import disk, model, notes, privacy, safety, secrets

from . import chunking, db
from .core import Index
from .schema import UNREADABLE, NoteRow, content_hash, place

INDEX_MAX_BYTES = disk.MAX_NOTE_BYTES  # a bigger file is recorded as unreadable, not indexed
IDEAS_LEDGER = "Ideas.md"  # the idea ledger at the vault root (ideas.ledger.LEDGER; ideas sits above index)
# A ledger section (`## date: title` up to the next `#`/`##` heading) marked `→ archived …` or `→ deleted …`.
_RETIRED_IDEA = re.compile(r"(?m)^##[ \t][^\n]*\n(?:(?!#{1,2}[ \t])[^\n]*\n)*?→ (?:archived|deleted)\b[^\n]*(?:\n|\Z)")
EMBED_BATCH_NOTES = 32
# A sync that rewrote this many notes merges the FTS5 index into one b-tree: rows written one note at a time (and the
# deletions a re-read leaves) sit in many segments, and every keyword query reads them all. At 20,000 notes after a
# re-read of every note, merging took 0.14 s and cut a keyword-only recall from 7.5 to 6.0 ms (recall.md).
MERGE_AFTER = 100
SCAN_BATCH = 200

Progress = Callable[[str, int, int], None]  # (phase, done, total)


class Embedder(Protocol):
    name: str
    dim: int

    def encode(self, texts: list[str]) -> list[bytes]: ...


@dataclass(frozen=True)
class Layout:
    """What sync needs to know about a vault, without the vault layer: root, write folder, ignore globs."""

    root: Path
    folder: str
    ignore: tuple[str, ...]

    def row(self, rel: str, text: str, mtime_ns: int, size: int, digest: str) -> tuple[NoteRow, list, list[str]]:
        """The index row, chunks and wikilinks of one note's text (pure; `<private>` spans never indexed, secrets
        redacted from the title and the text: the index never holds one, and a `clean` row is shown unscanned)."""
        note = notes.parse(text)
        in_memory, group, area = place(rel, self.folder)
        body = secrets.redact(safety.strip_private(note.body))[0]
        title = secrets.redact(notes.title_of(note, Path(rel).stem))[0]
        meta = note.meta if note.ok else {}
        # Frontmatter YAML rejects (Obsidian accepts `- @kepano`): the note is indexed by its text, and a
        # `private:` line in it still counts (store.privacy reads the raw lines, failing closed).
        row = NoteRow(
            path=rel,
            mtime_ns=mtime_ns,
            size=size,
            hash=digest,
            title=title,
            kind=model.to_str(meta.get("kind")),
            status=model.to_str(meta.get("status")) or "active",
            group=group,
            tags=tuple(str(t).lstrip("#") for t in model.as_list(meta.get("tags")) if t is not None),
            always_load=meta.get("always_load") is True or area == model.ALWAYS_LOAD,
            private=privacy.note_is_private(meta, note.frontmatter),
            updated=model.to_str(meta.get("updated")),
            in_memory=in_memory,
            area=area,
            error=None if note.ok else f"invalid frontmatter: {note.error}",
            created=model.to_str(meta.get("created")),
            clean=not secrets.scan(rel),  # the title and text are redacted above; the path is shown as it is
        )
        links = chunking.wikilinks((note.frontmatter or "") + "\n" + body)
        if rel == IDEAS_LEDGER:  # an idea archived or deleted from the ledger is not recalled through it
            body = _RETIRED_IDEA.sub("", body)
        return row, chunking.chunks(body), links


@dataclass
class SyncReport:
    scanned: int = 0
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    embedded: int = 0
    pending: int = 0
    seconds: float = 0.0
    model: str | None = None
    rebuilt: str | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def changed(self) -> int:
        return self.added + self.updated + self.removed


def sync(
    index: Index,
    layout: Layout,
    *,
    full: bool = False,
    only: Iterable[str] | None = None,
    progress: Progress | None = None,
) -> SyncReport:
    """Bring the index's notes, chunks, keywords and links up to date with the files (no embedding).

    `only` limits the work to those vault-relative paths (after a write); otherwise the whole read
    scope is walked, deleted notes are dropped, and `full` re-reads every file even if its stat matches.
    """
    started = time.monotonic()
    report = SyncReport(rebuilt=index.rebuilt)
    known = index.known()
    if only is None:
        listing = disk.list_markdown(layout.root, layout.ignore)
        paths = [p for p in listing.notes if not disk.is_conflict_copy(p)]  # a sync tool's copy: never recalled twice
        present = set(paths)
        gone = [p for p in known if p not in present]
    else:
        wanted = [p for p in only if p.lower().endswith(".md") and not disk.is_ignored(p, layout.ignore)]
        paths = [p for p in wanted if (layout.root / p).is_file()]
        present = set(paths)
        gone = [p for p in wanted if p not in present and p in known]
    report.scanned = len(paths)
    with db.transaction(index.conn):
        report.removed = index.delete(gone)
    # Short transactions: a save in another process must not wait for a whole-vault scan.
    for start in range(0, len(paths), SCAN_BATCH):
        with db.transaction(index.conn):
            for rel in paths[start : start + SCAN_BATCH]:
                _sync_one(index, layout, rel, known.get(rel), full, report)
        if progress:
            progress("scan", min(start + SCAN_BATCH, len(paths)), len(paths))
    with db.transaction(index.conn):
        if report.changed:
            index.resolve_links()
        if only is None:
            index.set_meta("last_sync", time.strftime("%Y-%m-%dT%H:%M:%S"))
    if report.changed >= MERGE_AFTER:
        with db.transaction(index.conn):  # the keyword rows in one merged b-tree again (see MERGE_AFTER)
            index.conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('optimize')")
    report.pending = index.pending_count()
    report.seconds = time.monotonic() - started
    return report


def _sync_one(
    index: Index, layout: Layout, rel: str, old: tuple[int, int, int, str] | None, full: bool, report: SyncReport
) -> None:
    path = layout.root / rel
    try:
        st = path.stat()
    except OSError:
        return
    if old and not full and (old[1], old[2]) == (st.st_mtime_ns, st.st_size):
        report.unchanged += 1
        return
    text: str | None = None
    try:
        text = disk.read_text(path, INDEX_MAX_BYTES)
        digest = content_hash(text.encode("utf-8", "surrogatepass"))
    except MemvaultError as exc:
        digest, error = f"error:{exc.code}:{st.st_mtime_ns}", str(exc)
    if old and old[3] == digest and not full:
        index.touch(rel, st.st_mtime_ns, st.st_size)
        report.unchanged += 1
        return
    if text is None:
        row = NoteRow(rel, st.st_mtime_ns, st.st_size, digest, Path(rel).stem, status=UNREADABLE, error=error)
        index.upsert(row, [], [])
    else:
        row, parts, links = layout.row(rel, text, st.st_mtime_ns, st.st_size, digest)
        index.upsert(row, parts, links)
    if old:
        report.updated += 1
    else:
        report.added += 1


def embed_pending(
    index: Index,
    embedder: Embedder,
    *,
    progress: Progress | None = None,
    deadline: float | None = None,
    batch_notes: int = EMBED_BATCH_NOTES,
    first: Iterable[str] = (),
) -> int:
    """Embed every note still lacking vectors for `embedder`'s model; returns how many notes were embedded.

    A different model or dimension than the index holds resets every vector first. Each batch is
    committed on its own, so an interrupted run keeps its work. Notes at the paths in `first` go
    first; the run stops early at `deadline` (a time.monotonic() value).
    """
    index.use_model(embedder.name, embedder.dim)
    total, done = index.pending_count(), 0
    while deadline is None or time.monotonic() < deadline:
        batch = index.pending(batch_notes, first=first)
        if not batch:
            break
        texts = [text for _, parts in batch for _, text in parts]
        vectors = iter(embedder.encode(texts)) if texts else iter(())
        with db.transaction(index.conn):
            for note_id, parts in batch:
                index.store_vectors(note_id, [(cid, next(vectors)) for cid, _ in parts], embedder.name)
        done += len(batch)
        if progress:
            progress("embed", done, total)
    return done
