"""How alike a capture and an existing note are, in words: shared search terms, provenance aside, a change of mind.

Used by the reflection pass beside the embedding similarity: keyword-only duplicate detection
(`term_share`), the statement a capture makes without the provenance lines every capture shares
(`statement`), and the case embeddings miss, a statement that turns away from what a note says
(`changes_its_mind`).
"""

from __future__ import annotations

import re

from memvault.index import chunking

_PROVENANCE = re.compile(r"^(?:— the user, L\d+|Said (?:in reply to the agent: .*|\d+ times in this session\.))$", re.M)


def statement(body: str) -> str:
    """A capture's text without its provenance lines, which every capture shares ("— the user, L12")."""
    return _PROVENANCE.sub("", body).strip()


_CONTRAST = re.compile(
    r"\b(?:not|never|instead of|rather than|no longer|no more|over)\s+(?:the\s+|a\s+)?([\w.-]+)", re.IGNORECASE
)


_RULE_WORDS = frozenset(
    ["never", "always", "instead", "rather", "from", "now", "only", "please", "should", "must", "don't", "dont",
     "anymore", "longer", "more", "use", "using", "prefer", "prefers", "user", "users", "said", "times", "session"]
)  # fmt: skip


def changes_its_mind(statement: str, note: str) -> bool:
    """Whether `statement` turns away from something `note` says for something new ("rebase, not squash").

    Embeddings place "use rebase merges, not squash" next to "always squash merge": both talk about
    squash merges. A statement that sets a term of the note aside and brings a term the note lacks is a
    change of mind (a supersede proposal), not the same entry again.
    """
    have = set(chunking.query_terms(note, limit=100_000))
    dropped = {m.group(1).lower() for m in _CONTRAST.finditer(statement)}
    if not dropped & have:
        return False
    said = set(chunking.query_terms(statement, limit=400)) - _RULE_WORDS
    return bool({t for t in said - have - dropped if len(t) >= 4 and not t.isdigit()})


def term_share(query: str, text: str) -> float:
    """The share of the query's search terms that occur in `text` (keyword-only duplicate measure)."""
    wanted = set(chunking.query_terms(query, limit=400))
    if not wanted:
        return 0.0
    have = set(chunking.query_terms(text, limit=100_000))
    return len(wanted & have) / len(wanted)
