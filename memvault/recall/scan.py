"""Recall before any index exists: the file scan (keyword-only, within the budget) and the file-level filters.

Reads note files directly with a line-level look at the frontmatter (no YAML on the prompt path).
"""

from __future__ import annotations

import time
from pathlib import Path

from memvault.errors import MemvaultError
from memvault.index import chunking
from memvault.index.schema import NoteRow, place
from memvault.store import privacy

from . import eligible, relevance, search


def scan(root: Path, folder: str, ignore: tuple[str, ...], query: str, options: search.Options) -> search.Result:
    """The fallback before any index exists (the seed's grep + frontmatter scan): keyword-only, within the budget.

    Reads the files directly with a line-level frontmatter check (no YAML), applies the same
    filters as `recall`, scores term counts with title and tag hits weighted up, and stops at the
    budget with what it has (marked partial).
    """
    from memvault.store import disk

    started = time.monotonic()
    deadline = started + options.budget_ms / 1000
    query = search.shape(query)  # as `search.recall` shapes it
    terms = chunking.query_terms(query)
    result = search.Result(mode="keyword", reason="no index yet: scanned the files (keyword-only)")
    if not terms:
        result.mode = "none"
        return result
    scored: list[tuple[float, str, str, str, str]] = []
    for rel in disk.list_markdown(root, ignore).notes:
        if time.monotonic() > deadline:
            result.partial, result.reason = True, "no index yet and the file scan ran out of time (keyword-only)"
            break
        if rel in options.exclude or disk.is_conflict_copy(rel):
            continue
        try:
            text = disk.read_text(root / rel)  # regular files only, bounded: a FIFO never blocks the prompt
        except MemvaultError:
            continue
        head, body = split_frontmatter(text)
        if not admits_file(rel, folder, head, options):
            continue
        body = privacy.strip_private(body)  # never scored, titled or quoted
        headings = (ln[2:].strip() for ln in body.splitlines() if ln.startswith("# "))
        title = next((t for t in headings if t), Path(rel).stem)
        lower_title, lower_head, lower_body = title.lower(), head.lower(), body.lower()
        score = sum(lower_body.count(t) + 3 * (lower_title.count(t) + lower_head.count(t)) for t in terms)
        if score:
            scored.append((float(score), rel, title, body, frontmatter_value(head, "kind")))
    scored.sort(key=lambda item: (-item[0], item[1]))
    best = scored[0][0] if scored else 1.0
    hits = []
    for points, rel, title, body, kind in scored[: options.k]:
        text = f"{title}\n{body}".lower()
        shared = sum(t in text for t in terms)
        covered = shared / len(terms)  # no index, so no IDF: the plain share of words
        special = eligible.special(rel, kind or None, options.daily_folder)
        named = special == eligible.SKILL_ENTRY and eligible.names(query, title)
        signals = relevance.Signals(None, covered, False, shared, special, named)
        hits.append(search.Hit(rel, title, round(points / best, 4), 0.0, round(points / best, 4),
                               chunking.snippet(body, terms), coverage=round(covered, 4), shared_words=shared,
                               special=special, named=named,
                               why=relevance.verdict(signals, options.floor, hand=True)[1]))  # fmt: skip
    floor = options.floor
    # The hand-set floor: without an index there is no IDF coverage, bm25 or vector, the judge's inputs.
    result.hits = [h for h in hits if relevance.verdict(search.signals_of(h), floor, hand=True)[0]]
    result.dropped = [h for h in hits if h not in result.hits]
    if hits and not result.hits:
        result.reason = f"{search.FLOOR_REASON} (best: {hits[0].why})"
    result.kw_hits, result.ms = len(scored), (time.monotonic() - started) * 1000
    return result


def split_frontmatter(text: str) -> tuple[str, str]:
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.startswith("---"):
        return "", text
    end = text.find("\n---", 3)
    return (text[3:end], text[end + 4 :]) if end > 0 else ("", text)


def frontmatter_value(head: str, key: str) -> str:
    """A top-level `key: value` of the frontmatter, lowercased, from a line-level read ("" when absent)."""
    for line in head.splitlines():
        if line.startswith(f"{key}:"):
            return line.split(":", 1)[1].strip().strip("'\"").lower()
    return ""


def admits_file(rel: str, folder: str, head: str, options: search.Options) -> bool:
    """The index's visibility rule and recall's filters, from a line-level read of the frontmatter (no YAML)."""

    def value(key: str) -> str:
        return frontmatter_value(head, key)

    in_memory, group, area = place(rel, folder)
    row = NoteRow(rel, 0, 0, "", "", status=value("status") or "active", group=group,
                  private=privacy.frontmatter_says_private(head), in_memory=in_memory, area=area)  # fmt: skip
    return search.admits(row, options)
