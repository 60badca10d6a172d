"""Search on the team's server for `memvault recall --team` and the MCP recall tool's `team` option.

For teams too big to mirror (`team.mirror: recent N | none`): the query goes to `server.search` (pgvector HNSW +
the entries' tsvector, fused and floored by the local index's own functions). The query's vector comes from the
warm embedding service when it runs (within `vector_wait_s`), else the search is keyword-only, as locally. What is
found is what row-level security lets this member read; private spans never leave in the query.
"""

from __future__ import annotations

import array
from dataclasses import dataclass
from typing import Any

from memvault.recall import client
from memvault.store import privacy
from memvault.vault.core import Vault

from . import mirror


@dataclass(frozen=True)
class TeamHit:
    title: str
    team: str  # the team, or "_org"
    author: str
    version: int
    score: float
    cosine: float | None
    coverage: float
    why: str
    snippet: str
    body: str
    mirrored: str | None  # the mirror file, when this machine has it


def search(
    vault: Vault, query: str, k: int = 5, *, timeout_s: float = 5.0, vector_wait_s: float = 1.0
) -> tuple[list[TeamHit], str]:
    """The team entries that best match `query` and the search's mode ("hybrid" or "keyword-only")."""
    from . import db, server

    text = privacy.strip_private(query)
    vector, model_id = None, None
    found = client.query_vector(text, vector_wait_s)
    if found is not None:
        model_id, blob = found
        floats = array.array("f")
        floats.frombytes(blob)
        vector = [float(x) for x in floats]
    settings = db.settings_from(vault.config)
    conn = db.connect(settings, timeout_s=timeout_s)
    try:
        hits = server.search(conn, text, vector, model_id, k, teams=list(settings.teams) or None)
    finally:
        conn.close()
    local = {uid: rel for uid, (rel, _, _) in mirror.scan(vault).items()}
    return [_hit(h, local) for h in hits], "hybrid" if vector is not None else "keyword-only"


def _hit(hit: Any, local: dict[str, str]) -> TeamHit:
    entry = hit.entry
    return TeamHit(
        title=entry.title,
        team=entry.team or mirror.ORG,
        author=entry.author,
        version=int(entry.version),
        score=float(hit.score),
        cosine=hit.cosine,
        coverage=float(hit.coverage),
        why=hit.why,
        snippet=hit.snippet,
        body=entry.body,
        mirrored=local.get(str(entry.uid)),
    )
