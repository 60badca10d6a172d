"""Discovered patterns compared with what the user already has, and scored for fit with what they actually do.

Already had: a pattern is left out when the skills index (`personal-skills/`) holds the same skill (same file,
same bytes, same name, or a description that says the same: most of its search terms, or half of them and a
cosine of at least `SAME_COSINE` by recall), when Claude Code loads it already (the index's own sources,
indexed or not yet), or when the watchlist already holds it (waiting, dismissed, or approved into
`personal-skills/`).

Fit: the pattern's name and description are recalled against the vault, with the relevance floor the hooks
use, so only notes a prompt with those words would bring up count. Skill entries, the watchlist and the archive
are left out (they say what the user has, not what they do). The fit is the sum, over the best `CITED` notes,
of the relevance the floor compares (the cosine plus a weighted keyword coverage; the coverage alone without the
embedding service, when a note sharing `KEYWORD_SHARED` of the search terms counts even under the floor), each
weighed by what the user's sessions did with it: ×1.5 when reflection wrote it from
a session, and ×(1 + n/10), at most ×2, when the hooks gave it to n of their sessions' prompts (the recall counts
`health` reports). A pattern no note of the user's is about scores 0 and is never proposed on its own.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from memvault.errors import MemvaultError
from memvault.index import chunking, db
from memvault.recall import analytics
from memvault.reflect import likeness
from memvault.store import notes
from memvault.vault import indexing
from memvault.vault.core import Vault

from .sources import Pattern

SKILLS = "personal-skills"
WATCHLIST = "_skill-watchlist"
CITED = 5  # notes cited per candidate
SAME_TERMS = 0.8  # share of a description's search terms found in a skill entry that makes it the same skill
# By meaning (with the embedding service): an all-MiniLM-L6-v2 cosine (adapted query) of at least SAME_COSINE
# between a description and a skill entry's best chunk, and at least SAME_SHARE of its search terms in the entry.
# Paraphrases of an indexed skill's description scored 0.52-0.69 against its entry (0.42-0.60 of their terms in
# it), another skill entry 0.23-0.33: a cosine alone would also take a different skill of the same field
# ("deploy to production with canaries") for the one the user has.
SAME_COSINE = 0.5
SAME_SHARE = 0.5
SESSION_WEIGHT = 1.5  # a note reflection wrote from a session
# Without the embedding service the floor is keyword coverage, weighted toward rare words, and made for prompts:
# a description's words the vault never uses sink it (a note sharing 8 of a description's 14 search terms had
# 0.22 < 0.46). A note among the top hits sharing at least this many of its search terms counts too, unless it is
# one that needs a stated reason to be recalled at all (the idea ledger, a daily note: `recall.eligible`).
KEYWORD_SHARED = 4
RECALLED_FULL = 10  # a note the hooks recalled this many times or more weighs twice as much
_NOT_CITED_AREAS = (WATCHLIST, "_archive", "_inbox", "_review")


@dataclass(frozen=True)
class Cited:
    path: str
    title: str
    score: float
    words: tuple[str, ...]  # the search terms the note shares with the pattern

    @property
    def link(self) -> str:
        return f"[[{self.path.rsplit('/', 1)[-1].removesuffix('.md')}]]"


@dataclass
class Candidate:
    pattern: Pattern
    fit: float = 0.0
    cited: list[Cited] = field(default_factory=list)
    mode: str = "none"  # how recall searched: "hybrid" or "vector" with the embedding service, else "keyword"

    @property
    def slug(self) -> str:
        return self.pattern.slug

    def as_dict(self) -> dict[str, Any]:
        data = self.pattern.as_dict()
        data.pop("body")
        return {
            **data,
            "slug": self.slug,
            "key": self.pattern.key,
            "fit": round(self.fit, 4),
            "cited": [
                {"path": c.path, "title": c.title, "score": round(c.score, 4), "words": list(c.words)}
                for c in self.cited
            ],
        }


@dataclass
class Evaluation:
    candidates: list[Candidate] = field(default_factory=list)  # new to the user, best fit first
    had: list[dict[str, str]] = field(default_factory=list)  # {"name", "source", "why", "entry"}: already had


@dataclass(frozen=True)
class Known:
    """What the vault already holds: skill entries, and every watchlist key with its entry and state."""

    skills: list[tuple[str, dict[str, Any], str]]  # (rel, frontmatter, body) of personal-skills entries
    watched: dict[str, tuple[str, str]]  # pattern key or digest or slug → (rel, state)


def known(vault: Vault) -> Known:
    skills: list[tuple[str, dict[str, Any], str]] = []
    watched: dict[str, tuple[str, str]] = {}
    for group in _subdirs(vault.memory_dir):
        for folder in (vault.memory_dir / group, vault.memory_dir / group / WATCHLIST):
            for path in sorted(folder.glob("*.md")) if folder.is_dir() else []:
                rel = path.relative_to(vault.root).as_posix()
                try:
                    note = vault.read(rel).note
                except MemvaultError:
                    continue
                if not note.ok:
                    continue
                meta = dict(note.meta)
                key = meta.get("watchlist_key")
                if isinstance(key, str):  # an entry discovery wrote: waiting, dismissed, or approved
                    state = str(meta.get("watchlist") or "waiting")
                    for ident in (key, meta.get("pattern_digest"), f"slug:{path.stem}"):
                        if isinstance(ident, str):
                            watched.setdefault(ident, (rel, state))
                elif group == SKILLS and folder.name == SKILLS and meta.get("status") != "archived":
                    skills.append((rel, meta, note.body))
    return Known(skills, watched)


def _subdirs(folder: Any) -> list[str]:
    try:
        return sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
    except OSError:
        return []


def already_had(pattern: Pattern, have: Known) -> tuple[str, str] | None:
    """(why, the entry) when the user already has this pattern by what the files say; None when it may be new."""
    for ident, why in (
        (pattern.key, "in the watchlist"),
        (pattern.digest, "in the watchlist (same text)"),
        (f"slug:{pattern.slug}", "in the watchlist (same name)"),
    ):
        if ident and ident in have.watched:
            rel, state = have.watched[ident]
            return (f"{why}: {state}", rel)
    real = os.path.realpath(pattern.path) if pattern.path else None
    for rel, meta, body in have.skills:
        if pattern.digest and meta.get("skill_hash") == pattern.digest:
            return ("an installed skill (same text)", rel)
        if real and isinstance(meta.get("skill_file"), str) and os.path.realpath(meta["skill_file"]) == real:
            return ("an installed skill (same file)", rel)
        names = {notes.slugify(str(meta.get("name") or "")), rel.rsplit("/", 1)[-1].removesuffix(".md")}
        if pattern.slug in names:
            return ("a skill you have (same name)", rel)
        said = f"{meta.get('description') or ''}\n{body}"
        if len(chunking.query_terms(pattern.description, 400)) >= 4 and (
            likeness.term_share(pattern.description, said) >= SAME_TERMS
        ):
            return ("a skill you have (its description says the same)", rel)
    if pattern.installed:
        return ("installed in Claude Code (`memvault index-skills` gives it an entry)", pattern.source)
    return None


def same_meaning(vault: Vault, pattern: Pattern, *, wait_service: float = 0.0) -> tuple[str, str] | None:
    """(why, the entry) when a skill entry says what the pattern says, by meaning (a cosine of `SAME_COSINE`)."""
    if not pattern.description:
        return None
    result = vault.recall(pattern.description, k=3, group=SKILLS, wait_service=wait_service)
    for hit in result.hits:
        if hit.cosine is None or hit.cosine < SAME_COSINE:
            continue
        try:
            said = vault.read(hit.path).note.body
        except MemvaultError:
            continue
        share = likeness.term_share(pattern.description, said)
        if share >= SAME_SHARE:
            return (f"a skill you have (cosine {hit.cosine:.2f}, {share:.0%} of its words)", hit.path)
    return None


def query_of(pattern: Pattern) -> str:
    """What recall is asked: the name and the description, about a prompt's length (the floor is made for those:
    the section titles too would leave a short note on the subject under its keyword coverage)."""
    return f"{pattern.name.replace('-', ' ')}: {pattern.description}"[:600]


def score(
    vault: Vault, pattern: Pattern, *, wait_service: float = 0.0, used: dict[str, int] | None = None
) -> Candidate:
    """The pattern's fit with the user's notes: see the module's docstring. `used`: `recalled(vault)`."""
    query = query_of(pattern)
    wanted = chunking.query_terms(" ".join([query, *pattern.titles]), 400)
    result = vault.recall(query, k=12, floor=True, wait_service=wait_service)
    used = recalled(vault) if used is None else used
    cited: list[Cited] = []
    total = 0.0
    hits = result.hits
    if result.mode == "keyword":  # see KEYWORD_SHARED
        hits = sorted(
            [*hits, *(h for h in result.dropped if h.shared_words >= KEYWORD_SHARED and not h.special)],
            key=lambda h: h.rank,
        )
    for hit in hits:
        if hit.group == SKILLS or any(f"/{area}/" in hit.path for area in _NOT_CITED_AREAS):
            continue
        from_session, text = _note(vault, hit.path, f"{hit.title} {hit.snippet}")
        weight = (SESSION_WEIGHT if from_session else 1.0) * (1 + min(used.get(hit.path, 0), RECALLED_FULL) / 10)
        have = set(chunking.query_terms(text, 100_000))
        words = tuple(t for t in wanted if t in have)[:12]
        cited.append(Cited(hit.path, hit.title, hit.probability * weight, words))
        total += hit.probability * weight
        if len(cited) >= CITED:
            break
    return Candidate(pattern, total, cited, result.mode)


def recalled(vault: Vault) -> dict[str, int]:
    """How often the hooks gave each note to a session (the log folded into the index first, as `health` does);
    empty without an index, or when another process holds it."""
    if not indexing.index_file(vault.root, vault.config).exists():
        return {}
    try:
        index, _ = indexing.open_index(vault.root, vault.config)
    except MemvaultError:
        return {}
    try:
        with db.busy_timeout(index.conn, 1000):
            analytics.fold(index, vault.root)
        return {path: r.count for path, r in analytics.recalled(index).items()}
    except db.dbapi().OperationalError:
        return {}
    finally:
        index.close()


def _note(vault: Vault, rel: str, fallback: str) -> tuple[bool, str]:
    """(whether reflection wrote the note from a session, its text): a session id as its `source`, not a tool
    or `manual`."""
    try:
        note = vault.read(rel).note
    except MemvaultError:
        return False, fallback
    source = note.meta.get("source") if note.ok else None
    from_session = isinstance(source, str) and len(source) >= 32 and source.count("-") == 4
    return from_session, f"{fallback}\n{note.body}"


def evaluate(vault: Vault, patterns: list[Pattern], *, wait_service: float = 0.0) -> Evaluation:
    """The patterns new to the user, scored and ranked (best fit first); the others with why they are left out."""
    have, used = known(vault), recalled(vault)
    evaluation = Evaluation()
    seen: set[str] = set()
    for pattern in patterns:
        if pattern.key in seen or (pattern.digest and pattern.digest in seen):
            continue
        seen.update({pattern.key, pattern.digest})
        had = already_had(pattern, have)
        candidate = None
        if had is None:
            candidate = score(vault, pattern, wait_service=wait_service, used=used)
            if candidate.mode in ("hybrid", "vector"):  # a cosine to compare with: the service answered
                had = same_meaning(vault, pattern, wait_service=wait_service)
        if had is not None:
            evaluation.had.append({"name": pattern.name, "source": pattern.source, "why": had[0], "entry": had[1]})
        elif candidate is not None:
            evaluation.candidates.append(candidate)
    evaluation.candidates.sort(key=lambda c: (-c.fit, c.slug))
    return evaluation
