"""Mine transcript turns for what is worth keeping: preferences, fixes, workflows (pass 1) and ideas (pass 2).

Pure: turns in, candidates out. `mine` is the deterministic offline miner (the default); `mine_llm`
asks headless Claude Code (`claude -p … --output-format json`) and validates its answer strictly;
`run` picks one and falls back to the offline miner on any `MinerError`. This module is the public
surface and the last step both miners share (redact, drop, merge); the rules live in `mine_prefs`,
`mine_fixes`, `mine_workflows` and `mine_ideas`, the text helpers and `Candidate` in `mine_text`, the
headless-Claude miner in `mine_claude`.

How the offline miner decides (precise rather than greedy: a wrong HIGH preference is injected into
every later prompt):
- Preferences come only from what the user typed in the main conversation (never subagents,
  compaction summaries or the assistant). A sentence counts when it is an instruction meant to last:
  it starts with always / never / remember / stop doing …, says "from now on", "I prefer", "use X
  instead of Y", or corrects the agent ("no, use X", "that's wrong: …", "actually, …") right after an
  assistant turn. Questions, hedges ("I always forget …"), and task-scoped wording ("for now",
  "until", "this time", "yet") are ignored. Explicit statements and corrections are HIGH; a bare
  "don't …" or "please use …" without a marker that it should last is LOW.
- Fixes: a tool error (or the user reporting one, or the assistant naming the problem), the
  assistant's explanation within the next few turns, then a success ("tests pass", "build
  succeeds", the user's "that worked"). The same error again extends the episode. MEDIUM with a
  stated success; LOW when the work just moves on (a different error, or two more turns without
  one). Tool mechanics (file too large to read, edit string not found, rejected tool calls) are
  not fixes.
- Workflows: the user confirms ("that worked", "perfect", "great, thanks") after a multi-step
  answer (at least two assistant turns since their request). MEDIUM.
- Ideas: deferred work in the user's words ("we should also …", "later we could …", "TODO", "it
  would be cool to build …", "we should look into …"); the agent parking a found bug for later
  ("not something I should fix here", "file a bead/issue for …") is a LOW follow-up.
Every candidate's text passes `strip_private` and the secret scanner (secrets are redacted; a
candidate left with almost nothing but a redaction is dropped). Keys are built from the redacted
text (`make_key`), so they never hold a secret; they keep numbers, except a fix's error signature.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from memvault.reflect.mine import claude, fixes, ideas, prefs, workflows
from memvault.reflect.mine.claude import PROMPT, MinerError, parse_llm, render
from memvault.reflect.mine.text import (
    CATEGORIES,
    CONFIDENCES,
    IDEA_KINDS,
    KEY_STOP,
    TITLE_CHARS,
    WORD,
    Candidate,
    make_key,
    sentences,
)
from memvault.store import secrets
from memvault.store.privacy import strip_private

from .transcript import Turn

__all__ = [
    "CATEGORIES",
    "CONFIDENCES",
    "IDEA_KINDS",
    "PROMPT",
    "TITLE_CHARS",
    "Candidate",
    "MinerError",
    "make_key",
    "mine",
    "mine_llm",
    "parse_llm",
    "render",
    "run",
    "sentences",
]


def mine(turns: Sequence[Turn]) -> list[Candidate]:
    """The deterministic offline miner: pass 1 (preferences, fixes, workflows), then pass 2 (ideas)."""
    clean = [replace(t, text=strip_private(t.text)) for t in turns]
    found = prefs.preferences(clean) + fixes.fixes(clean) + workflows.workflows(clean) + ideas.ideas(clean)
    return _finish(found)


def mine_llm(turns: Sequence[Turn], *, command: str = "claude", timeout: float = 120.0) -> list[Candidate]:
    """Ask headless Claude Code; validate its JSON strictly. Any failure raises MinerError."""
    return _finish(claude.ask(turns, command=command, timeout=timeout))


def run(
    turns: Sequence[Turn], *, miner: str = "offline", errors: list[str] | None = None
) -> tuple[list[Candidate], str]:
    """Mine with `miner` ("offline" | "claude"); fall back to offline on any MinerError.

    Returns (candidates, the miner actually used). When given, `errors` collects why a fallback happened.
    """
    if miner not in ("offline", "claude"):
        raise ValueError(f"unknown miner {miner!r}: use 'offline' or 'claude'")
    if miner == "claude":
        try:
            return mine_llm(turns), "claude"
        except MinerError as exc:
            if errors is not None:
                errors.append(str(exc))
    return mine(turns), "offline"


def _finish(found: Sequence[Candidate]) -> list[Candidate]:
    """Redact secrets, drop what is left empty, merge candidates with the same key (evidence joined)."""
    out: dict[str, Candidate] = {}
    for cand in found:
        safe = _safe(cand)
        if safe is None:
            continue
        if safe.key in out:
            kept = out[safe.key]
            out[safe.key] = replace(kept, evidence=tuple(dict.fromkeys(kept.evidence + safe.evidence)))
        else:
            out[safe.key] = safe
    return sorted(out.values(), key=lambda c: (_first_line(c), CATEGORIES.index(c.category)))


_REDACTED = re.compile(r"\[REDACTED:[a-z_]+\]")


def _safe(cand: Candidate) -> Candidate | None:
    title, title_hits = secrets.redact(strip_private(cand.title))
    body, body_hits = secrets.redact(strip_private(cand.body))
    if not body_hits and not title_hits:
        return cand
    marked = [line for line in body.splitlines() if _REDACTED.search(line)]
    if marked and all(_content_words(_REDACTED.sub(" ", line)) < 3 for line in marked):
        return None  # the statement was little more than the secret: nothing worth keeping
    return replace(cand, title=title, body=body)  # the key is clean already: make_key builds it from redacted text


def _content_words(text: str) -> int:
    return sum(1 for w in WORD.findall(text.lower()) if w not in KEY_STOP and len(w) > 1)


def _first_line(cand: Candidate) -> int:
    try:
        return int(cand.evidence[0][1:])
    except (IndexError, ValueError):
        return 0
