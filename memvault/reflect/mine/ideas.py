"""Ideas: deferred work, project ideas and things to research, in the user's words or parked by the agent (pass 2)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from memvault.reflect.transcript import Turn

from .text import QUOTE_CHARS, Candidate, clip, make_key, make_title, quote, sentences, turn_ref

_DEFERRED = r"(?:later|eventually|at some point|someday|some day|one day|in the future|down the road|sometime)"
_IDEA_RULES: tuple[tuple[str, str, str, re.Pattern[str]], ...] = (  # (idea kind, confidence, rule, pattern)
    (
        "research",
        "medium",
        "research",
        re.compile(
            r"\b(?:(?:we|i) (?:should|could|might|need to|want to) (?:\w+ )?"
            r"(?:look into|investigate|research|explore|evaluate|benchmark|try out)"
            r"|worth (?:looking into|investigating|exploring|checking|trying|a look)"
            r"|might want to (?:look into|investigate|explore)"
            r"|(?:should|could|might|worth) (?:\w+ )?(?:investigate|research) (?:whether|if|how))"
        ),
    ),
    (
        "project",
        "medium",
        "project-idea",
        re.compile(
            r"\b(?:it (?:would|'d) be (?:cool|nice|great|neat|fun|interesting|useful|awesome) to "
            r"(?:build|make|write|create|have|add)|(?:i|we) (?:could|should) (?:build|make|write) (?:a|an|our own)\b"
            r"|project idea|idea for a (?:tool|project|app|library))"
        ),
    ),
    (
        "follow-up",
        "medium",
        "follow-up",
        re.compile(
            rf"(?:^todo\b|\btodo:|\bas a follow[- ]?up\b|\bfollow[- ]?up:|\b(?:we|i) (?:should|could|can|might|will) "
            rf"(?:also )?(?:\w+ ){{0,6}}{_DEFERRED}\b|\b{_DEFERRED},? (?:we|i) (?:should|could|can|might|will)\b"
            rf"|\blet'?s (?:\w+ ){{0,6}}{_DEFERRED}\b|\bnext step (?:would|could|might) be\b)"
        ),
    ),
    ("follow-up", "low", "we-should-also", re.compile(r"\bwe (?:should|could) also\b")),
)
_AGENT_FOLLOW_UP = re.compile(
    r"\b(?:(?:file|filed|create|created|open|opened|log|logged|track|tracked) (?:a |an |the )?(?:new |separate )?"
    r"(?:refinement |follow[- ]?up )?(?:bead|issue|ticket|task) (?:for|about|to track)"
    r"|not something (?:i|we) should (?:fix|change|address|touch) (?:in|as part of|here|now)"
    r"|out of scope (?:for|of) this|pre-existing (?:bug|issue|problem)|should be (?:fixed|addressed|handled) "
    r"(?:separately|later|in a follow[- ]?up))"
)


def ideas(turns: Sequence[Turn]) -> list[Candidate]:
    """Deferred work the user names, and follow-ups the agent parks (one per finding until the user speaks)."""
    out: list[Candidate] = []
    open_agent_idea = False  # an agent follow-up with no user turn since: later mentions are the same finding
    for turn in turns:
        if turn.sidechain or turn.role not in ("user", "assistant"):
            continue
        parts = sentences(turn.text)
        if turn.role == "user":
            open_agent_idea = False
            for sentence in parts:
                low = sentence.lower()
                if low.endswith("?") and not low.startswith(("what if", "how about")):
                    continue
                for kind, confidence, rule, pattern in _IDEA_RULES:
                    if pattern.search(low):
                        out.append(_idea(turn, sentence, kind, confidence, rule))
                        break
            continue
        j = next((j for j, s in enumerate(parts) if _AGENT_FOLLOW_UP.search(s.lower())), None)
        if j is None:
            continue
        if open_agent_idea:
            out[-1] = replace(out[-1], evidence=tuple(dict.fromkeys((*out[-1].evidence, turn_ref(turn)))))
        else:
            context = " ".join(parts[max(0, j - 1) : j + 1])
            out.append(_idea(turn, context, "follow-up", "low", "agent-follow-up"))
            open_agent_idea = True
    return out


def _idea(turn: Turn, statement: str, kind: str, confidence: str, rule: str) -> Candidate:
    statement = clip(statement, QUOTE_CHARS)
    who = "The agent noted, while working" if turn.role == "assistant" else "The user said"
    label = {"follow-up": "Follow-up", "project": "Project idea", "research": "To research"}[kind]
    body = f"{quote(statement)}\n\n{who} ({label.lower()})."
    return Candidate(
        "idea",
        make_title(statement, f"{label}: "),
        body,
        (turn_ref(turn),),
        confidence,
        rule,
        make_key("idea", statement),
        kind,
    )
