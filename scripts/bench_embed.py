"""Embedding throughput: chunks per second through the real model, per batch shape, order, threads and backend.

    python scripts/bench_embed.py [--vault PATH] [--chunks 800] [--threads 1,2] [--json OUT]

The chunks are what reindex embeds: the real chunker and `embed_text` over a vault's notes (default:
the markdown in this repository: wiki/, README.md, examples/vault and the fixture vault in tests/data).
Each variant encodes the same chunks; the table gives chunks/s, and the share of chunks longer than the
model's sequence limit (their tail is not read).
Then `sync.embed_pending` (what `memvault reindex` runs) is timed end to end, as reindex did before
(32 notes per batch, in file order) and as it does now, and the 20,000-note estimate is printed.
Print `uptime` with the numbers: on a busy machine they are pessimistic.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from memvault.index import chunking, embed, sync  # noqa: E402
from memvault.index import core as ix  # noqa: E402
from memvault.store import disk  # noqa: E402

SOURCES = ["wiki", "README.md", "examples/vault", "tests/data/kepano-obsidian"]
TARGET_NOTES, TARGET_SECONDS = 20_000, 600
BATCH_SIZES = (16, 32)  # the service encodes slices of 16; sentence-transformers' default is 32


def corpus_notes(vault: Path | None) -> list[tuple[str, str]]:
    """(path, text) of every note of `vault`, or of this repository's markdown."""
    roots = [vault] if vault else [REPO / s for s in SOURCES]
    notes = []
    for root in roots:
        if root.is_file():
            notes.append((root.name, root.read_text(encoding="utf-8")))
            continue
        for rel in disk.list_markdown(root, disk.ignore_patterns(root)).notes:
            try:
                notes.append((f"{root.name}/{rel}", disk.read_text(root / rel)))
            except Exception:  # noqa: S112 (a benchmark reads what it can)
                continue
    return notes


def chunk_texts(notes: list[tuple[str, str]]) -> list[list[str]]:
    """The texts reindex embeds, note by note."""
    layout = sync.Layout(Path("/"), "MemoryVault", ())
    out = []
    for rel, text in notes:
        row, parts, _ = layout.row(rel, text, 0, len(text), "")
        out.append([chunking.embed_text(row.title, row.tags, c) for c in parts])
    return out


def timed(fn, repeat: int = 1) -> float:
    best = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        best.append(time.perf_counter() - started)
    return min(best)


def variants(model: embed.Embedder, per_note: list[list[str]], threads: list[int]) -> list[dict]:
    import torch

    texts = [t for note in per_note for t in note]
    rows = []

    def run(label: str, batches: list[list[str]], batch_size: int, n_threads: int, encoder=None) -> None:
        torch.set_num_threads(n_threads)
        enc = encoder or model.model
        seconds = timed(lambda: [enc.encode(b, batch_size=batch_size, normalize_embeddings=True,
                                            show_progress_bar=False) for b in batches])  # fmt: skip
        rows.append({"variant": label, "threads": n_threads, "batch": batch_size, "seconds": seconds,
                     "chunks_s": len(texts) / seconds})  # fmt: skip
        print(
            f"  {label:<44} threads {n_threads}  batch {batch_size:>3}: {len(texts) / seconds:6.1f} chunks/s",
            flush=True,
        )

    by_note = [[t for note in per_note[i : i + 32] for t in note] for i in range(0, len(per_note), 32)]
    ordered = sorted(texts, key=len)
    for n in threads:
        run("before: 32 notes per call, file order", by_note, 32, n)
        for size in BATCH_SIZES:
            run("all chunks sorted by length", [ordered[i : i + 256] for i in range(0, len(ordered), 256)], size, n)
    return rows


def token_lengths(model: embed.Embedder, texts: list[str]) -> list[int]:
    tok = model.model.tokenizer
    return [len(tok(t, add_special_tokens=True, truncation=False)["input_ids"]) for t in texts]


def end_to_end(model: embed.Embedder, notes: list[tuple[str, str]], batch_notes: int, label: str) -> float:
    """`sync.embed_pending` on a fresh index of the notes: chunks/s as `memvault reindex` sees it."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        for i, (_rel, text) in enumerate(notes):
            path = root / "Notes" / f"{i:05d}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        index = ix.open_index(Path(tmp) / "index.sqlite3")
        try:
            sync.sync(index, sync.Layout(root, "MemoryVault", ()))
            chunks = index.stats()["chunks"]
            started = time.perf_counter()
            sync.embed_pending(index, model, batch_notes=batch_notes)
            seconds = time.perf_counter() - started
        finally:
            index.close()
    rate = int(chunks) / seconds
    print(f"  {label}: {chunks} chunks in {seconds:.1f}s = {rate:.1f} chunks/s", flush=True)
    return rate


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vault", type=Path, help="a vault to take the chunks from (default: this repository's)")
    parser.add_argument("--chunks", type=int, default=800, help="how many chunks to encode per variant")
    parser.add_argument("--threads", default=",".join(str(n) for n in sorted({1, min(2, os.cpu_count() or 1)})))
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    if args.vault and not args.vault.is_dir():
        parser.error(f"--vault {args.vault}: no such folder")
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} "
          f"on {os.cpu_count()} cores", flush=True)  # fmt: skip
    notes = corpus_notes(args.vault)
    per_note = chunk_texts(notes)
    kept, count = [], 0  # whole notes, up to about --chunks chunks
    for note, texts in zip(notes, per_note, strict=True):
        if count >= args.chunks:
            break
        kept.append((note, texts))
        count += len(texts)
    notes, per_note = [n for n, _ in kept], [t for _, t in kept]
    texts = [t for note in per_note for t in note]
    model = embed.load()
    model.encode(["warm up"])
    lengths = token_lengths(model, texts)
    limit = model.model.max_seq_length
    print(f"{len(notes)} notes, {len(texts)} chunks, {statistics.mean(len(t) for t in texts):.0f} chars and "
          f"{statistics.median(lengths):.0f} tokens per chunk (median); {sum(n > limit for n in lengths)} chunks "
          f"over the model's {limit}-token limit, {sum(n > 128 for n in lengths)} over 128", flush=True)  # fmt: skip
    threads = [int(n) for n in args.threads.split(",")]
    rows = variants(model, per_note, threads)
    best_threads = max(threads)
    backends = {name: importlib.util.find_spec(name) is not None for name in ("onnxruntime", "optimum", "openvino")}
    print(f"  other backends installed: {backends}", flush=True)
    model.encode(["threads"], threads=best_threads)
    before = end_to_end(_Before(model), notes, 32, "reindex as before (32 notes per call, file order)")
    after = end_to_end(model, notes, sync.EMBED_BATCH_NOTES, "reindex now")
    chunks_per_note = len(texts) / len(notes)
    for label, rate in (("before", before), ("now", after)):
        minutes = TARGET_NOTES * chunks_per_note / rate / 60
        print(f"20,000 notes like these ({chunks_per_note:.1f} chunks each) {label}: {minutes:.1f} min "
              f"(target {TARGET_SECONDS // 60} min)")  # fmt: skip
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "variants": rows,
                    "before": before,
                    "after": after,
                    "chunks_per_note": chunks_per_note,
                    "loadavg": os.getloadavg(),
                },
                indent=1,
            )
        )
    return 0


class _Before:
    """The embedder as reindex used it before: every call encodes its texts in the order given."""

    def __init__(self, model: embed.Embedder) -> None:
        self.model, self.name, self.dim = model, model.name, model.dim

    def encode(self, texts: list[str]) -> list[bytes]:
        matrix = self.model.model.encode(texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False)
        return [row.astype("<f4").tobytes() for row in matrix]


if __name__ == "__main__":
    sys.exit(main())
