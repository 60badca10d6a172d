"""Recall quality benchmark: LoCoMo evidence retrieval and a preference paraphrase set, per fusion method.

    python scripts/bench_recall.py [--locomo PATH] [--sections turns,sessions] [--conversations N] [--cache DIR]
    python scripts/bench_recall.py --set spans   # the passage fill's choice, on the training data's dev split

LoCoMo is read from --locomo FILE, else from $MEMVAULT_BENCH_DATA/locomo/locomo10.json; without it
the LoCoMo part is skipped with one line. Two vault shapes: one note per dialogue turn ("turns"), and
one note per session with each turn a paragraph ("sessions"), scored by the evidence turns the returned
chunks contain. For LoCoMo it also draws the shown-passage curve: the evidence held by the passages the
hook would show, against the characters shown and the time per query, for each passage strategy
(`recall.passages`), today's (the best chunk alone, and the one-line snippet shown before) beside the
shipped one. `--set spans` scores the same strategies on the recall training data's dev and train splits
(the kepano vault's long notes: is the labelled passage in what is shown?), where the fill was chosen.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import bench_data

from memvault.index import chunking, embed, sync
from memvault.index import core as ix
from memvault.recall import fusion, passages, relevance, search
from memvault.store import disk

HERE = Path(__file__).resolve().parent
PREFERENCES = HERE / "data" / "preference_set.json"
FOLDER = "MemoryVault"
MODES = ("keyword", "vector", "weighted", "rrf", "adaptive")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
K = 10
_DIA = re.compile(r"D\s*:?\s*(\d+)\s*:\s*0*(\d+)")


# ---- corpus ------------------------------------------------------------------------------------------------


@dataclass
class Query:
    text: str
    targets: set[str]  # note keys (dia ids, or preference note ids) that answer it
    category: int
    group: str


@dataclass
class Corpus:
    name: str
    notes: dict[str, str] = field(default_factory=dict)  # vault-relative path → markdown
    keys: dict[str, frozenset[str]] = field(default_factory=dict)  # unit → the keys it covers
    queries: list[Query] = field(default_factory=list)
    skipped: int = 0  # questions without any usable evidence
    unit: str = "note"  # what a hit is scored by: the note ("path"), or the chunk it shows ("path#seq")
    turns: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # chunk units: path → (dia id, paragraph)

    def item(self, hit: search.Hit) -> str:
        return hit.path if self.unit == "note" else f"{hit.path}#{hit.chunk}"


def dia_ids(raw: object) -> list[str]:
    """Normalised dialogue ids from LoCoMo's evidence strings ("D8:6; D9:17", "D:11:26", "D30:05")."""
    items = raw if isinstance(raw, list) else [raw]
    return [f"D{a}:{b}" for item in items for a, b in _DIA.findall(str(item))]


def yaml_value(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)  # JSON scalars and lists are valid YAML


def markdown(meta: dict[str, object], body: str) -> str:
    head = "\n".join(f"{key}: {yaml_value(value)}" for key, value in meta.items())
    return f"---\n{head}\n---\n{body}\n"


def sessions(conv: dict[str, Any]) -> Iterator[tuple[int, str, list[dict[str, Any]]]]:
    for key in sorted((k for k in conv if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1])):
        number = int(key.split("_")[1])
        yield number, str(conv.get(f"{key}_date_time", "")), conv[key]


def locomo(samples: list[dict[str, Any]], section: str, context: int = 0) -> Corpus:
    """One note per dialogue turn ("turns"), per session ("sessions") or per observation fact ("observations").

    `context` > 0 (an experiment) quotes that many preceding turns of the session in each turn's note.
    """
    corpus = Corpus(f"locomo-{section}", unit="chunk" if section == "sessions" else "note")
    for sample in samples:
        group, conv = sample["sample_id"], sample["conversation"]
        known: set[str] = set()
        for number, date, turns in sessions(conv):
            lines = [turn_line(turn) for turn in turns]
            known.update(turn["dia_id"] for turn in turns)
            if section == "sessions":
                session_note(corpus, group, number, date, turns)
            for i, turn in enumerate(turns):
                if section != "turns":
                    continue
                body = "".join(f"> {line}\n" for line in lines[max(0, i - context) : i]) + lines[i]
                meta = {"conversation": group, "session": number, "date": date, "speaker": turn["speaker"],
                        "dia_id": turn["dia_id"]}  # fmt: skip
                path = f"{FOLDER}/{group}/locomo/{turn['dia_id'].lower().replace(':', '-')}.md"
                corpus.notes[path] = markdown(meta, body)
                corpus.keys[path] = frozenset({turn["dia_id"]})
            if section == "observations":
                facts = conv_observations(sample, number)
                for i, (speaker, fact, ids) in enumerate(facts, 1):
                    meta = {"conversation": group, "session": number, "date": date, "speaker": speaker,
                            "dia_ids": ids}  # fmt: skip
                    path = f"{FOLDER}/{group}/observation/s{number}-{i:03d}.md"
                    corpus.notes[path] = markdown(meta, fact)
                    corpus.keys[path] = frozenset(ids)
        for qa in sample["qa"]:
            targets = {d for d in dia_ids(qa.get("evidence", [])) if d in known}
            if not targets:
                corpus.skipped += 1
                continue
            corpus.queries.append(Query(qa["question"], targets, int(qa["category"]), group))
    return corpus


def session_note(corpus: Corpus, group: str, number: int, date: str, turns: list[dict[str, Any]]) -> None:
    """One session as a note a person might keep: a title, then each turn a paragraph with speaker and date."""
    speakers = " and ".join(dict.fromkeys(t["speaker"] for t in turns))
    paragraphs = [(t["dia_id"], f"**{t['speaker']}** ({date}): {turn_line(t, speaker=False)}") for t in turns]
    meta = {"conversation": group, "session": number, "date": date, "speakers": sorted({t["speaker"] for t in turns})}
    body = f"# Session {number}: {speakers}, {date}\n\n" + "\n\n".join(text for _, text in paragraphs)
    path = f"{FOLDER}/{group}/sessions/session-{number:02d}.md"
    corpus.notes[path] = markdown(meta, body)
    corpus.turns[path] = paragraphs


def chunk_keys(corpus: Corpus, index: ix.Index) -> None:
    """For a corpus scored by chunks: which evidence turns each indexed chunk holds (a paragraph split
    across two chunks counts for both)."""
    rows = index.conn.execute("SELECT n.path, c.seq, c.text FROM chunks c JOIN notes n ON n.id = c.note_id")
    for path, seq, text in rows:
        flat = " ".join(text.split())
        found = set()
        for dia, paragraph in corpus.turns.get(path, []):
            words = " ".join(paragraph.split())
            if words in flat or words[:80] in flat or words[-80:] in flat:
                found.add(dia)
        corpus.keys[f"{path}#{seq}"] = frozenset(found)


def turn_line(turn: dict[str, Any], speaker: bool = True) -> str:
    line = f"{turn['speaker']}: {turn['text']}" if speaker else turn["text"]
    return line + (f" [shared an image: {turn['blip_caption']}]" if turn.get("blip_caption") else "")


def conv_observations(sample: dict[str, Any], number: int) -> list[tuple[str, str, list[str]]]:
    facts = sample.get("observation", {}).get(f"session_{number}_observation", {})
    return [(speaker, str(fact[0]), dia_ids(fact[1])) for speaker, items in facts.items() for fact in items]


def preferences(path: Path) -> Corpus:
    """The hand-written paraphrase set: coding-agent memory notes and queries sharing few words with them."""
    data = json.loads(path.read_text(encoding="utf-8"))
    corpus = Corpus("preference")
    for note in data["notes"]:
        meta = {"kind": note["kind"], "status": "active", "tags": note.get("tags", []), "group": "prefs"}
        rel = f"{FOLDER}/prefs/{note['kind']}/{note['id']}.md"
        corpus.notes[rel] = markdown(meta, f"# {note['title']}\n\n{note['body']}")
        corpus.keys[rel] = frozenset({note["id"]})
    ids = {n["id"] for n in data["notes"]}
    for q in data["queries"]:
        if q["target"] not in ids:
            raise SystemExit(f"{path}: query {q['query']!r} targets unknown note {q['target']!r}")
        corpus.queries.append(Query(q["query"], {q["target"]}, 0, "prefs"))
    return corpus


# ---- index -------------------------------------------------------------------------------------------------


@dataclass
class Built:
    index: ix.Index
    path_of: dict[int, str]  # note id → vault-relative path
    times: dict[str, float]


def build(corpus: Corpus, work: Path, embedder: embed.Embedder, cache: Path | None, tag: str) -> Built:
    """Write the notes as files, sync them into a fresh (or cached) index and embed them with the real model."""
    times: dict[str, float] = {}
    root = work / corpus.name
    started = time.perf_counter()
    for rel, text in corpus.notes.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    times["write_s"] = time.perf_counter() - started
    db_dir = cache or work
    db_dir.mkdir(parents=True, exist_ok=True)
    index = ix.open_index(db_dir / f"{corpus.name}{tag}.sqlite3", rebuild=True)
    layout = sync.Layout(root, FOLDER, disk.ignore_patterns(root))
    started = time.perf_counter()
    report = sync.sync(index, layout)
    times["sync_s"] = time.perf_counter() - started
    started = time.perf_counter()
    times["embedded_notes"] = sync.embed_pending(index, embedder, batch_notes=256)
    times["embed_s"] = time.perf_counter() - started
    times["notes"] = report.scanned
    path_of = {int(i): str(p) for i, p in index.conn.execute("SELECT id, path FROM notes")}
    return Built(index, path_of, times)


# ---- runs --------------------------------------------------------------------------------------------------


def mode_options(mode: str, group: str, k: int) -> tuple[search.Options, bool]:
    """Options for one mode and whether the query vector is passed (keyword-only runs without one)."""
    if mode == "keyword":
        return search.Options(k=k, group=group, fusion="rrf", budget_ms=60_000), False
    if mode == "vector":  # fused by weights 1/0: only the vector side orders the top-k
        return search.Options(k=k, group=group, fusion="weighted", vector_weight=1.0, keyword_weight=0.0,
                              budget_ms=60_000), True  # fmt: skip
    return search.Options(k=k, group=group, fusion=mode, vector_weight=0.7, keyword_weight=0.3, budget_ms=60_000), True


@dataclass
class Capture:
    """The two candidate lists recall handed to fusion for one query (note id → score)."""

    vector: dict[int, float]
    keyword: dict[int, float]


@contextmanager
def capturing(into: list[Capture]) -> Iterator[None]:
    real = fusion.fuse

    def spy(vector: dict[int, float], keyword: dict[int, float], **kw: Any) -> list[tuple[int, float]]:
        into.append(Capture(dict(vector), dict(keyword)))
        return real(vector, keyword, **kw)

    fusion.fuse = spy  # type: ignore[assignment]
    try:
        yield
    finally:
        fusion.fuse = real  # type: ignore[assignment]


@dataclass
class Run:
    ranked: dict[str, list[list[str]]]  # mode → per query, the recalled paths in order
    seconds: dict[str, float]
    captures: list[Capture]
    mismatches: dict[str, int]


def run_queries(built: Built, corpus: Corpus, embedder: embed.Embedder, modes: Sequence[str], k: int) -> Run:
    texts = [q.text for q in corpus.queries]
    started = time.perf_counter()
    vectors = dict(zip(texts, embedder.encode_query(texts), strict=True))
    seconds = {"query_embed_s": time.perf_counter() - started}

    def query_vector(text: str, timeout: float) -> tuple[str, bytes]:
        return embedder.name, vectors[text]

    for q in corpus.queries[:20]:  # warm SQLite's page cache so the first timed mode is not penalised
        search.recall(built.index, q.text, mode_options("rrf", q.group, k)[0], query_vector)
    ranked: dict[str, list[list[str]]] = {}
    captures: list[Capture] = []
    floor = relevance.Floor(relevance.MIN_RELEVANCE)  # the shipped floor: the other thresholds are its defaults
    for mode in dict.fromkeys(["adaptive", *modes]):  # the first pass also records fusion's inputs
        out: list[list[str]] = []
        floored: list[list[str]] = []  # the same hits, less those below the shipped relevance floor
        started = time.perf_counter()
        with capturing(captures) if mode == "adaptive" else _nothing():
            for q in corpus.queries:
                options, use_vector = mode_options(mode, q.group, k)
                res = search.recall(built.index, q.text, options, query_vector if use_vector else None)
                out.append([corpus.item(h) for h in res.hits])
                passed = [h for h in res.hits if relevance.verdict(search.signals_of(h), floor)[0]]
                floored.append([corpus.item(h) for h in passed])
        seconds[mode] = time.perf_counter() - started
        ranked[mode] = out
        if mode in ("adaptive", "keyword"):
            ranked[f"{mode} + floor"] = floored
    # The pure sides, straight from the captured candidates: keyword-only and vector-only must equal them.
    pure = {
        "keyword": [[built.path_of[n] for n in _order(c.keyword)][:k] for c in captures],
        "vector": [[built.path_of[n] for n in _order(c.vector)][:k] for c in captures],
    }
    mismatches = {
        m: sum([x.split("#")[0] for x in a] != b for a, b in zip(ranked[m], pure[m], strict=True))
        for m in pure
        if m in ranked
    }
    if "adaptive" not in modes:
        del ranked["adaptive"], ranked["adaptive + floor"]
        seconds.pop("adaptive")
    return Run(ranked, seconds, captures, mismatches)


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def _order(scores: dict[int, float]) -> list[int]:
    return [key for key, _ in sorted(scores.items(), key=lambda kv: -kv[1])]


# ---- metrics -----------------------------------------------------------------------------------------------


def score(paths: list[str], query: Query, keys: dict[str, frozenset[str]]) -> dict[str, float]:
    """Evidence recall@1/5/10, hit@1/5/10 and MRR (first evidence, within the list) for one query."""
    found: list[set[str]] = []
    seen: set[str] = set()
    first = 0
    for rank, path in enumerate(paths, 1):
        got = keys.get(path, frozenset()) & query.targets
        if got and not first:
            first = rank
        seen |= got
        found.append(set(seen))
    out: dict[str, float] = {}
    for cut in (1, 5, 10):
        have = found[min(cut, len(found)) - 1] if found else set()
        out[f"R@{cut}"] = len(have) / len(query.targets)
        out[f"H@{cut}"] = float(bool(have))
    out["MRR"] = 1 / first if first else 0.0
    return out


def aggregate(rows: Iterable[dict[str, float]]) -> dict[str, float]:
    rows = list(rows)
    if not rows:
        return {}
    return {key: sum(r[key] for r in rows) / len(rows) for key in rows[0]} | {"n": float(len(rows))}


def buckets(corpus: Corpus) -> dict[str, list[int]]:
    """Query indexes per reported bucket: each category, categories 1–4 together ("all"), and all queries."""
    out: dict[str, list[int]] = {}
    for i, q in enumerate(corpus.queries):
        out.setdefault(f"c{q.category}", []).append(i)
        if 1 <= q.category <= 4:
            out.setdefault("all", []).append(i)
    return dict(sorted(out.items()))


def evaluate(ranked: dict[str, list[list[str]]], corpus: Corpus) -> dict[str, dict[str, dict[str, float]]]:
    """mode → bucket → metrics."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for mode, lists in ranked.items():
        per = [score(paths, q, corpus.keys) for paths, q in zip(lists, corpus.queries, strict=True)]
        out[mode] = {name: aggregate(per[i] for i in idx) for name, idx in buckets(corpus).items()}
    return out


# ---- output ------------------------------------------------------------------------------------------------


def table(title: str, headers: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows, strict=True)]
    print(f"\n{title}")
    print("  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(headers, widths, strict=True))))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))))


def report_locomo(name: str, result: dict[str, dict[str, dict[str, float]]], run: Run, corpus: Corpus) -> None:
    modes = list(result)
    names = [b for b in next(iter(result.values())) if b.startswith("c")] + ["all"]
    labels = {b: (f"{b} {CATEGORIES[int(b[1:])]}" if b[1:].isdigit() else "1–4") for b in names}
    counts = {b: int(result[modes[0]][b]["n"]) for b in names}
    for metric in ("R@10", "R@5", "H@10", "H@5", "MRR"):
        rows = [[m] + [f"{result[m][b][metric]:.3f}" for b in names] for m in modes]
        table(f"{name}: {metric} per category (n = {', '.join(str(counts[b]) for b in names)})",
              ["mode", *[labels[b] for b in names]], rows)  # fmt: skip
    rows = []
    for m in modes:
        qps = len(corpus.queries) / run.seconds[m] if run.seconds.get(m) else 0.0
        rows.append([m, *(f"{result[m]['all'][x]:.3f}" for x in ("R@5", "R@10", "H@5", "H@10", "MRR")), f"{qps:.0f}"])
    table(f"{name}: categories 1–4 together", ["mode", "R@5", "R@10", "H@5", "H@10", "MRR", "q/s"], rows)


def report_preference(result: dict[str, dict[str, dict[str, float]]], run: Run, corpus: Corpus) -> None:
    rows = []
    for m, per in result.items():
        qps = len(corpus.queries) / run.seconds[m] if run.seconds.get(m) else 0.0
        r = per["c0"]
        rows.append([m, f"{r['R@1']:.3f}", f"{r['R@5']:.3f}", f"{r['R@10']:.3f}", f"{r['MRR']:.3f}", f"{qps:.0f}"])
    table(f"preference set ({len(corpus.queries)} queries, {len(corpus.notes)} notes)",
          ["mode", "R@1", "R@5", "R@10", "MRR", "q/s"], rows)  # fmt: skip


# ---- fusion analysis ---------------------------------------------------------------------------------------

Fuser = Callable[[dict[int, float], dict[int, float]], list[int]]


def fusers() -> dict[str, Fuser]:
    """Fusion variants compared on the captured candidates (`--analyse`); the shipped methods come first."""

    def shipped(method: str, wv: float = 0.7, wk: float = 0.3) -> Fuser:
        return lambda v, k: [n for n, _ in fusion.fuse(v, k, method=method, vector_weight=wv, keyword_weight=wk)]

    out: dict[str, Fuser] = {m: shipped(m) for m in fusion.METHODS}
    for wv in (0.3, 0.5, 0.9):
        out[f"weighted {wv:.1f}/{1 - wv:.1f}"] = shipped("weighted", wv, round(1 - wv, 1))
    for wk in (0.5, 2.0):
        out[f"rrf 1/{wk:g}"] = shipped("rrf", 1.0, wk)
    return out


def oracle(caps: list[Capture], corpus: Corpus, path_of: dict[int, str], k: int) -> dict[str, float]:
    """The share of evidence present in each candidate list and in their union (no fusion can beat the union)."""
    totals = {"vector": 0.0, "keyword": 0.0, "union": 0.0}
    for cap, q in zip(caps, corpus.queries, strict=True):
        sides = {"vector": set(cap.vector), "keyword": set(cap.keyword)}
        sides["union"] = sides["vector"] | sides["keyword"]
        for name, ids in sides.items():
            have: set[str] = set()
            for n in ids:
                have |= corpus.keys.get(path_of[n], frozenset()) & q.targets
            totals[name] += len(have) / len(q.targets)
    return {name: value / max(1, len(caps)) for name, value in totals.items()}


def analyse(run: Run, corpus: Corpus, built: Built, k: int) -> dict[str, dict[str, float]]:
    only = [i for i, q in enumerate(corpus.queries) if q.category <= 4]
    caps = [run.captures[i] for i in only]
    sub = Corpus(corpus.name, corpus.notes, corpus.keys, [corpus.queries[i] for i in only])
    bound = oracle(caps, sub, built.path_of, k)
    print(f"\n{corpus.name}: evidence among the candidates (before the top-{k} cut): "
          + ", ".join(f"{n} {v:.3f}" for n, v in bound.items()))  # fmt: skip
    rows, out = [], {}
    for name, fuse in fusers().items():
        per = []
        for cap, q in zip(caps, sub.queries, strict=True):
            paths = [built.path_of[n] for n in fuse(cap.vector, cap.keyword)[:k]]
            per.append(score(paths, q, corpus.keys))
        agg = aggregate(per)
        out[name] = agg
        rows.append([name, *(f"{agg[x]:.3f}" for x in ("R@1", "R@5", "R@10", "MRR"))])
    table(f"{corpus.name}: fusion variants on the captured candidates", ["fusion", "R@1", "R@5", "R@10", "MRR"], rows)
    return out


# ---- shown passages: evidence held against characters shown --------------------------------------------------

# (label, fill, characters per hit); "snippet" is the one-line excerpt a hit showed before `recall.passages`.
SPANS: list[tuple[str, str, int]] = [
    ("today: snippet line", "snippet", 0),
    ("today: best chunk", "chunk", chunking.MAX_CHUNK_CHARS),
    ("best chunk + neighbours, whole", "neighbours", 3 * chunking.MAX_CHUNK_CHARS),
    *[(f"neighbour chunks {b}", "neighbours", b) for b in (1260, 2000)],
    ("best chunks 1260", "best", 1260),
    *[(f"excerpt {b}", "excerpt", b) for b in (840, 1010, 1260, 1500, 2000)],
    # the budget of all the hits spent on their best chunks together (`passages.spread`, as shipped), then next to them
    *[(f"spread {b}", "spread", b) for b in (840, 1010, 1260, 1500)],
]
# The spread's variants, scored on the training data only (--set spans), where its windows were chosen.
SPREAD_VARIANTS: list[tuple[str, str, int]] = [
    *[(f"spread, {w} windows {b}", f"spread-{w}", b) for w in ("paragraph", "chunk") for b in (1010, 1260)],
    *[(f"spread, {w} windows, widened in turn {b}", f"spread-{w}-turn", b) for w in ("paragraph", "chunk", "first")
      for b in (1010, 1260)],
    *[(f"spread, best chunks only {b}", "spread-chunks", b) for b in (1010, 1260)],
]
SPREAD_WINDOW = passages.SPREAD_WINDOW  # the shipped one (span_options sets the module's for a variant)
SHIPPED = (passages.FILL, search.DEFAULT_OPTIONS.passage_chars)  # the fill and per-hit characters recall ships


def with_shipped(spans: list[tuple[str, str, int]]) -> list[tuple[str, str, int]]:
    """`spans` and, unless one of them is it, the shipped fill at the defaults' budget (`per_hit(6000, 5)`)."""
    return spans if any((s[1], s[2]) == SHIPPED for s in spans) else [*spans, ("shipped", *SHIPPED)]


def span_options(fill: str, chars: int, **options: Any) -> search.Options:
    """Recall's options for a row of SPANS ("snippet": the best chunk's snippet is scored; "spread-chunks": the
    spread without its neighbour fill; "spread-chunk", "spread-first": its other windows; set on `passages` for
    this process)."""
    passages.SPREAD_NEIGHBOURS = fill != "spread-chunks"
    passages.SPREAD_SIDES = "turn" if fill.endswith("-turn") else "next"
    window = fill.removesuffix("-turn").removeprefix("spread-")
    passages.SPREAD_WINDOW = window if window in ("chunk", "first", "paragraph") else SPREAD_WINDOW
    actual = "chunk" if fill == "snippet" else "spread" if fill.startswith("spread") else fill
    return search.Options(budget_ms=60_000, passage_fill=actual, passage_chars=chars or chunking.MAX_CHUNK_CHARS,
                          **options)  # fmt: skip


def flat(text: str) -> str:
    return " ".join(text.replace(" …", " ").replace("… ", " ").split())


def held(hit: search.Hit, shown: str, corpus: Corpus) -> set[str]:
    """The evidence turns (dia ids) whose whole paragraph is in the text shown for `hit` (a turn note: the note)."""
    if hit.path not in corpus.turns:
        return set(corpus.keys.get(hit.path, frozenset())) if shown else set()
    text = flat(shown)
    return {dia for dia, paragraph in corpus.turns[hit.path] if flat(paragraph) in text}


def span_curve(built: Built, corpus: Corpus, embedder: embed.Embedder, k: int, spans: list[tuple[str, str, int]]
               ) -> dict[str, dict[str, float]]:  # fmt: skip
    """label → evidence held by the shown passages of the top k (categories 1–4), characters shown, ms per query."""
    texts = [q.text for q in corpus.queries]
    vectors = dict(zip(texts, embedder.encode_query(texts), strict=True))

    def query_vector(text: str, timeout: float) -> tuple[str, bytes]:
        return embedder.name, vectors[text]

    only = [q for q in corpus.queries if 1 <= q.category <= 4]
    out: dict[str, dict[str, float]] = {}
    for label, fill, chars in spans:
        options = span_options(fill, chars, k=k, fusion="adaptive")
        got, shown_chars, started = 0.0, 0, time.perf_counter()
        for q in only:
            res = search.recall(built.index, q.text, options._replace(group=q.group), query_vector)
            have: set[str] = set()
            for hit in res.hits:
                shown = hit.snippet if fill == "snippet" else hit.passage
                shown_chars += len(shown)
                have |= held(hit, shown, corpus) & q.targets
            got += len(have) / len(q.targets)
        seconds = time.perf_counter() - started
        out[label] = {"held": got / len(only), "chars": shown_chars / len(only), "ms": 1000 * seconds / len(only),
                      "fill": fill, "per_hit": chars}  # type: ignore[dict-item]  # fmt: skip
    return out


def report_spans(name: str, curve: dict[str, dict[str, float]], k: int) -> None:
    base = curve.get("today: best chunk", {}).get("chars") or 1.0
    rows = []
    for label, row in curve.items():
        mark = " (shipped)" if (row["fill"], row["per_hit"]) == SHIPPED and label != "shipped" else ""
        rows.append([label + mark, f"{row['held']:.3f}", f"{row['chars']:,.0f}", f"{row['chars'] / base:.2f}×",
                     f"{row['ms']:.1f}"])  # fmt: skip
    table(f"{name}: evidence held by the shown passages of the top {k} (categories 1–4) against characters shown",
          ["passage", f"held@{k}", "chars", "× best chunk", "ms/query"], rows)  # fmt: skip


def span_choice(kepano: Path, embedder: embed.Embedder, work: Path, cache: Path | None) -> dict[str, Any]:
    """The passage fills on the recall training data (kepano vault, notes longer than one passage): for each
    positive example whose note is in the top 10 for its prompt, the share of the labelled passage's paragraphs
    the shown passage holds; per split (dev and train choose; test is reported, never used to choose)."""
    import recall_data

    corpus = Corpus("kepano")
    for path in sorted(kepano.rglob("*.md")):
        rel = path.relative_to(kepano).as_posix()
        if not rel.startswith(".") and rel not in ("LICENSE", "SOURCE.md"):
            corpus.notes[rel] = path.read_text(encoding="utf-8")
    built = build(corpus, work, embedder, cache, "")
    examples = [ex for ex in recall_data.examples() if ex.source == "kepano-obsidian" and ex.label == 1
                and ex.group in corpus.notes and len(corpus.notes[ex.group]) > 2 * len(ex.passage)]  # fmt: skip
    vectors = dict(zip([e.prompt for e in examples], embedder.encode_query([e.prompt for e in examples]), strict=True))

    def query_vector(text: str, timeout: float) -> tuple[str, bytes]:
        return embedder.name, vectors[text]

    out: dict[str, Any] = {}
    for label, fill, chars in [*with_shipped(SPANS), *SPREAD_VARIANTS]:
        per: dict[str, list[float]] = {}
        for ex in examples:
            options = span_options(fill, chars, k=10)
            hit = next((h for h in search.recall(built.index, ex.prompt, options, query_vector).hits
                        if h.path == ex.group), None)  # fmt: skip
            if hit is None:
                continue
            shown = flat(hit.snippet if fill == "snippet" else hit.passage)
            parts = [flat(p) for p in ex.passage.split("\n\n") if p.strip()]
            per.setdefault(ex.split, []).append(sum(p in shown for p in parts) / len(parts))
        out[label] = {split: (sum(v) / len(v), len(v)) for split, v in sorted(per.items())}
    built.index.close()
    splits = ("dev", "train", "test")
    rows = [[label] + [f"{r[s][0]:.3f} (n={r[s][1]})" if s in r else "–" for s in splits] for label, r in out.items()]
    table("recall training data, kepano long notes: share of the labelled passage shown (its note in the top 10)",
          ["passage", *splits], rows)  # fmt: skip
    return out


# ---- experiments (monkeypatched in this process only) ------------------------------------------------------


def apply_experiments(args: argparse.Namespace) -> str:
    """Patch recall/chunking for an experiment; returns a tag naming the index variant (for --cache)."""
    tag = ""
    if args.candidates:
        search.CANDIDATES = args.candidates
    if args.embed_text == "body":
        chunking.embed_text = lambda title, tags, chunk: chunk.text  # type: ignore[assignment]
        tag += "-bodyonly"
    if args.bm25:
        weights = [float(w) for w in args.bm25.split(",")]
        if len(weights) != 5:
            raise SystemExit("--bm25 takes five weights: title,tags,heading,body,context")
        search.BM25_WEIGHTS = ", ".join(f"{w:g}" for w in weights)
    if args.stop_words:
        chunking.STOP_WORDS = chunking.STOP_WORDS | frozenset(args.stop_words.split(","))
    if args.context_chars is not None:
        chunking.CONTEXT_CHARS = args.context_chars
        tag += f"-ctx{args.context_chars}"
    if args.chunk_chars is not None:
        chunking.MAX_CHUNK_CHARS = args.chunk_chars
        tag += f"-chunk{args.chunk_chars}"
    if args.chance is not None:
        fusion.CHANCE = args.chance
    if args.embed_chars is not None:
        chunking.EMBED_CHARS = args.embed_chars
        tag += f"-embed{args.embed_chars}"
    return tag


# ---- main --------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--set", choices=("locomo", "preference", "spans", "all"), default="all")
    parser.add_argument("--locomo", type=Path, help="locomo10.json (default: $MEMVAULT_BENCH_DATA/locomo/)")
    parser.add_argument("--sections", default="turns,sessions", help="LoCoMo vaults: turns, sessions, observations")
    parser.add_argument("--conversations", type=int, default=0, help="only the first N LoCoMo conversations")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated subset of {', '.join(MODES)}")
    parser.add_argument("--k", type=int, default=K)
    parser.add_argument("--json", type=Path, help="write every number to this file")
    parser.add_argument("--cache", type=Path, help="keep the index databases here and reuse them (default: fresh)")
    parser.add_argument("--analyse", action="store_true", help="also compare fusion variants on the candidates")
    parser.add_argument("--kepano", type=Path, help="--set spans: the kepano vault (default: $MEMVAULT_BENCH_DATA/)")
    parser.add_argument("--spans", choices=("all", "shipped", "none"), default="all",
                        help="LoCoMo: the shown-passage curve for every strategy, today's and the shipped one, or none")
    parser.add_argument("--candidates", type=int, help="experiment: search.CANDIDATES per side")
    parser.add_argument("--bm25", help="experiment: bm25 column weights title,tags,heading,body,context")
    parser.add_argument("--embed-text", choices=("default", "body"), default="default",
                        help="experiment: embed the chunk text without the title")  # fmt: skip
    parser.add_argument("--stop-words", help="experiment: extra comma-separated stop words")
    parser.add_argument("--context", type=int, default=0, help="experiment: quote N preceding turns in each turn note")
    parser.add_argument("--context-chars", type=int, help="experiment: chunking.CONTEXT_CHARS (0: no neighbours)")
    parser.add_argument("--chunk-chars", type=int, help="experiment: chunking.MAX_CHUNK_CHARS")
    parser.add_argument("--embed-chars", type=int, help="experiment: chunking.EMBED_CHARS")
    parser.add_argument("--chance", type=float, help="experiment: fusion.CHANCE (the discount per chance)")
    parser.add_argument("--model", default=embed.DEFAULT, help="the embedding model (as embedding.model: a folder)")
    args = parser.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = set(modes) - set(MODES)
    if unknown:
        parser.error(f"unknown modes: {', '.join(sorted(unknown))}")
    tag = apply_experiments(args) + (f"-context{args.context}" if args.context else "")

    corpora: list[Corpus] = []
    if args.set == "spans":
        found_kepano = bench_data.require(args.kepano, "kepano-obsidian", "--kepano", "the kepano vault")
        embedder = embed.load(args.model)
        with tempfile.TemporaryDirectory(prefix="memvault-bench-") as tmp:
            result = span_choice(found_kepano, embedder, Path(tmp), args.cache)
        if args.json:
            args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")
        return 0
    if args.set in ("locomo", "all"):
        found = bench_data.find(args.locomo, bench_data.LOCOMO, "--locomo")
        what = ("LoCoMo (locomo10.json)", bench_data.LOCOMO, "--locomo")
        if found is None and args.set == "locomo":
            bench_data.skip(*what)
        if found is None:  # the preference set (in the repository) still runs
            print(bench_data.skipped(*what), flush=True)
        samples = json.loads(found.read_text(encoding="utf-8")) if found else []
        samples = samples[: args.conversations] if args.conversations else samples
        corpora += [locomo(samples, s.strip(), args.context) for s in args.sections.split(",") if s.strip()]
    if args.set in ("preference", "all"):
        corpora.append(preferences(PREFERENCES))

    started = time.perf_counter()
    embedder = embed.load(args.model)
    output: dict[str, Any] = {"model": embedder.name, "model_load_s": round(time.perf_counter() - started, 2),
                              "k": args.k, "candidates": search.CANDIDATES, "argv": sys.argv[1:]}  # fmt: skip
    print(f"model {embedder.name} loaded in {output['model_load_s']} s")
    with tempfile.TemporaryDirectory(prefix="memvault-bench-") as tmp:
        for corpus in corpora:
            size = f"-{args.conversations}conv" if args.conversations and corpus.name.startswith("locomo") else ""
            built = build(corpus, Path(tmp), embedder, args.cache, tag + size)
            if corpus.unit == "chunk":
                chunk_keys(corpus, built.index)
            run = run_queries(built, corpus, embedder, modes, args.k)
            result = evaluate(run.ranked, corpus)
            times = built.times | {k: round(v, 2) for k, v in run.seconds.items()}
            print(f"\n== {corpus.name}: {len(corpus.notes)} notes, {len(corpus.queries)} queries "
                  f"({corpus.skipped} without usable evidence skipped)")  # fmt: skip
            print("   times: " + ", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}"
                                          for k, v in times.items()))  # fmt: skip
            notes_s = built.times["embedded_notes"] / built.times["embed_s"] if built.times["embed_s"] > 0.5 else 0
            if notes_s:
                print(f"   embedding {notes_s:.0f} notes/s")
            query_ms = 1000 * run.seconds["query_embed_s"] / max(1, len(corpus.queries))
            print(f"   query embedding {query_ms:.1f} ms/query (batched); q/s below is recall alone, vectors given")
            if run.mismatches:
                print("   pure-side check (queries whose top-k differs from the side's own order): "
                      + ", ".join(f"{m} {n}" for m, n in run.mismatches.items()))  # fmt: skip
            if corpus.name == "preference":
                report_preference(result, run, corpus)
            else:
                report_locomo(corpus.name, result, run, corpus)
            entry: dict[str, Any] = {"notes": len(corpus.notes), "queries": len(corpus.queries),
                                     "skipped": corpus.skipped, "times": times, "metrics": result,
                                     "pure_side_mismatches": run.mismatches}  # fmt: skip
            if args.analyse and corpus.unit == "note":
                entry["variants"] = analyse(run, corpus, built, args.k)
            if corpus.name.startswith("locomo") and args.spans != "none":
                chosen = with_shipped([s for s in SPANS if s[0].startswith("today") or (s[1], s[2]) == SHIPPED])
                spans = with_shipped(SPANS) if args.spans == "all" and corpus.unit == "chunk" else chosen
                entry["spans"] = span_curve(built, corpus, embedder, args.k, spans)
                report_spans(corpus.name, entry["spans"], args.k)
            output[corpus.name] = entry
            built.index.close()
    if args.json:
        args.json.write_text(json.dumps(output, indent=1), encoding="utf-8")
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
