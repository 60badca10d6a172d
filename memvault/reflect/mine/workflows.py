"""Workflows: multi-step answers the user confirmed worked (offline miner, pass 1)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from memvault.reflect.transcript import CONTEXT_ROLES, Turn

from .text import Candidate, clip, make_key, make_title, sentences, turn_ref

_CONFIRM = re.compile(
    r"^(?:(?:ok(?:ay)?|yes|yep|wow|nice|cool)[,!.]?\s+)?"
    r"(?:(?:that|it|this) (?:worked|works)\b|works (?:now|great|perfectly)|perfect\b|great\b|awesome\b"
    r"|excellent\b|exactly\b|brilliant\b|fantastic\b|that did it|that fixed it|nailed it)"
)
_NOT_CONFIRM = re.compile(r"\b(?:but|except|however|though|still|not|doesn't|didn't|isn't|no longer|question)\b|\?")


def workflows(turns: Sequence[Turn]) -> list[Candidate]:
    """A request, at least two assistant turns, then the user's confirmation that it worked."""
    out = []
    request: Turn | None = None
    steps: list[Turn] = []
    for turn in turns:
        if turn.sidechain or turn.role in CONTEXT_ROLES:
            continue
        if turn.role == "assistant":
            steps.append(turn)
            continue
        if turn.role != "user":
            continue
        text = " ".join(sentences(turn.text)).lower()
        first = next(iter(sentences(turn.text)), "").lower()
        confirmed = _CONFIRM.match(first) and not _NOT_CONFIRM.search(first) and len(text) <= 300
        if request is not None and len(steps) >= 2 and confirmed:
            out.append(_workflow(request, steps, turn))
        request, steps = turn, []
    return out


def _workflow(request: Turn, steps: Sequence[Turn], confirmation: Turn) -> Candidate:
    asked = clip(" ".join(sentences(request.text)), 400)
    done = clip(" ".join(sentences(steps[-1].text)), 700)
    body = "\n".join(
        [
            f"**Task:** {asked}",
            "",
            f"**What worked:** {done}",
            "",
            f'**Confirmed by the user:** "{clip(confirmation.text, 200)}"',
        ]
    )
    return Candidate(
        "workflow",
        make_title(asked, "Workflow: "),
        body,
        (turn_ref(request), turn_ref(steps[-1]), turn_ref(confirmation)),
        "medium",
        "confirmed-workflow",
        make_key("workflow", asked),
    )
