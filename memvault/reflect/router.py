"""Where a mined candidate goes: saved, `_review/`, `_inbox/`, the idea incubator, or nowhere (pure).

Inputs: the candidate's confidence and category, how many distinct sessions produced its key
(the candidate ledger kept by `reflect`), the nearest existing note found by recall, and
`memory.review_mode`. No I/O; `reflect` applies the route through the Vault.

Duplicate thresholds are cosine similarities of the packaged all-MiniLM-L6-v2 model between the
candidate text (title + body) and the best chunk of the nearest note (recall's `vec_score`); they
were measured on hand-made pairs against the example vault (see wiki/explanation/reflection.md):
duplicates 0.66–0.84, changed preferences 0.48–0.74, related-but-different 0.25–0.61, unrelated
≤ 0.42. Without vectors (keyword-only recall) the share of the candidate's terms found in the note
is used instead, with the KEYWORD_* thresholds below.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Protocol

from memvault.store.model import ALWAYS_LOAD, INBOX, INCUBATOR, REVIEW

# Actions a route can take.
SAVE, REVIEW_Q, INBOX_Q, IDEA = "save", "review", "inbox", "idea"
DUPLICATE, SUPERSEDE, PROMOTE = "duplicate", "supersede", "promote"
# How far each pending place is from a saved entry: a capture is promoted, never demoted.
_RANK = {INBOX_Q: 0, REVIEW_Q: 1, SAVE: 2}

# Defaults of the reflection.* config keys (ReflectionSettings), repeated here for callers without a config.
REVIEW_AFTER_SESSIONS = 3
DUPLICATE_COSINE = 0.80
SUPERSEDE_COSINE = 0.65
# Keyword-only fallback: the share of the candidate's search terms present in the note.
KEYWORD_DUPLICATE = 0.90
KEYWORD_SUPERSEDE = 0.70


class CandidateLike(Protocol):
    """What the router reads of a `miner.Candidate`."""

    @property
    def category(self) -> str: ...
    @property
    def confidence(self) -> str: ...
    @property
    def key(self) -> str: ...


@dataclass(frozen=True)
class Nearest:
    """The existing note most similar to a candidate."""

    path: str
    title: str
    similarity: float  # cosine (measure "cosine") or term share (measure "keyword")
    measure: str = "cosine"  # "cosine" | "keyword"
    kind: str | None = None
    status: str = "active"
    area: str = ""  # "_inbox", "_review", "_always-load", … or "" (a kind folder / the user's own notes)
    in_memory: bool = True  # under MemoryVault/ (only those may be superseded by reflection)
    updated: str | None = None  # ISO 8601
    key: str | None = None  # its `reflect_key`, when reflection wrote it
    protected: bool = False  # `protected: true` or a protected folder: never superseded automatically

    @property
    def pending(self) -> bool:
        """A capture still waiting in the inbox or the review queue."""
        return self.area in (INBOX, REVIEW)


@dataclass(frozen=True)
class Thresholds:
    duplicate: float = DUPLICATE_COSINE
    supersede: float = SUPERSEDE_COSINE
    review_after_sessions: int = REVIEW_AFTER_SESSIONS
    keyword_duplicate: float = KEYWORD_DUPLICATE
    keyword_supersede: float = KEYWORD_SUPERSEDE

    @classmethod
    def from_settings(cls, settings: object) -> Thresholds:
        """From a `config.ReflectionSettings` (missing keys keep the defaults)."""
        return cls(
            duplicate=getattr(settings, "duplicate_similarity", DUPLICATE_COSINE),
            supersede=getattr(settings, "supersede_similarity", SUPERSEDE_COSINE),
            review_after_sessions=getattr(settings, "review_after_sessions", REVIEW_AFTER_SESSIONS),
        )

    def band(self, nearest: Nearest) -> tuple[float, float]:
        """(duplicate, supersede) thresholds for the measure the similarity was taken with."""
        if nearest.measure == "keyword":
            return self.keyword_duplicate, self.keyword_supersede
        return self.duplicate, self.supersede


@dataclass(frozen=True)
class Route:
    action: str  # save | review | inbox | idea | duplicate | supersede | promote
    folder: str | None  # where a new note goes inside the group: "<kind>", "_review", "_inbox", "_idea-incubator"
    reason: str
    target: str | None = None  # the existing note (duplicate, supersede, promote)


def route(
    candidate: CandidateLike,
    *,
    sessions_seen: int = 1,
    nearest: Nearest | None = None,
    review_mode: str = "interactive",
    thresholds: Thresholds = Thresholds(),
    captured_at: dt.datetime | None = None,
) -> Route:
    """The route of one candidate (see the module docstring and wiki/explanation/reflection.md)."""
    if candidate.category == "idea":
        return route_idea(candidate, nearest, thresholds)
    base = confidence_route(candidate, sessions_seen, review_mode, thresholds)
    if nearest is None:
        return base
    duplicate_at, supersede_at = thresholds.band(nearest)
    same_key = nearest.key is not None and nearest.key == candidate.key
    if same_key or nearest.similarity >= duplicate_at:
        why = "same candidate key" if same_key else f"{nearest.measure} {nearest.similarity:.2f} ≥ {duplicate_at:.2f}"
        if nearest.pending and _RANK[base.action] > _RANK[INBOX_Q if nearest.area == INBOX else REVIEW_Q]:
            return Route(PROMOTE, base.folder, f"already captured, now {base.reason} ({why})", nearest.path)
        return Route(DUPLICATE, None, f"near-duplicate of an existing note ({why})", nearest.path)
    if (
        nearest.similarity >= supersede_at
        and nearest.in_memory
        and nearest.area in ("", ALWAYS_LOAD)
        and nearest.status == "active"
        and nearest.kind == candidate.category
        and _newer(captured_at, nearest.updated)
    ):
        if nearest.protected:  # to review whatever the review mode: never applied without a person
            return Route(
                SUPERSEDE,
                REVIEW,
                f"similar to the protected {nearest.kind} ({nearest.measure} {nearest.similarity:.2f}) but "
                "different: proposed in review, never applied automatically",
                nearest.path,
            )
        return Route(
            SUPERSEDE,
            INBOX if review_mode == "silent" else REVIEW,
            f"similar to an active {nearest.kind} ({nearest.measure} {nearest.similarity:.2f}) but different: "
            "proposed as its replacement",
            nearest.path,
        )
    return base


def confidence_route(candidate: CandidateLike, sessions_seen: int, review_mode: str, thresholds: Thresholds) -> Route:
    """HIGH → saved; MEDIUM, or LOW seen in enough sessions → review (inbox when silent); LOW → inbox."""
    pending = (INBOX_Q, INBOX) if review_mode == "silent" else (REVIEW_Q, REVIEW)
    if candidate.confidence == "high":
        return Route(SAVE, candidate.category, "high confidence: saved now")
    if candidate.confidence == "medium":
        return Route(
            *pending, "medium confidence: " + ("inbox (silent review mode)" if review_mode == "silent" else "review")
        )
    if sessions_seen >= thresholds.review_after_sessions:
        return Route(*pending, f"low confidence, but seen in {sessions_seen} sessions: " + pending[0])
    return Route(INBOX_Q, INBOX, f"low confidence (seen in {sessions_seen} session{'s' * (sessions_seen != 1)}): inbox")


def route_idea(candidate: CandidateLike, nearest: Nearest | None, thresholds: Thresholds = Thresholds()) -> Route:
    """An idea goes to the idea ledger, unless the same idea is already in the incubator.

    `nearest` is the closest incubator note. The IDEA route is written by `ideas.capture`: the
    incubator note and its Ideas.md section, together.
    """
    if nearest is not None:
        duplicate_at, _ = thresholds.band(nearest)
        if (nearest.key is not None and nearest.key == candidate.key) or nearest.similarity >= duplicate_at:
            return Route(DUPLICATE, None, "the idea is already in the incubator", nearest.path)
    return Route(IDEA, INCUBATOR, "idea: incubator note")


def _newer(captured_at: dt.datetime | None, updated: str | None) -> bool:
    """Whether the candidate was said after the entry was last written (unknown times count as newer)."""
    if captured_at is None or not updated:
        return True
    try:
        when = dt.datetime.fromisoformat(str(updated).replace("Z", "+00:00"))
    except ValueError:
        return True
    # A naive time is local wall-clock time (what notes.now() writes); astimezone() reads it so.
    return captured_at.astimezone(dt.timezone.utc) >= when.astimezone(dt.timezone.utc)
