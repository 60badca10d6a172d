"""Fixes: error → explanation → success episodes in a transcript (offline miner, pass 1)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memvault.reflect.transcript import Turn

from .text import WORD, Candidate, clip, make_key, make_title, prose, sentences, turn_ref, without_secrets

EXPLAIN_WINDOW = 3  # assistant turns after an error in which its explanation is looked for
FIX_WINDOW = 12  # assistant turns after an error in which its success is looked for

_TOOL_MECHANICS = re.compile(  # Claude Code's own tool errors: how the agent used a tool, not project knowledge
    r"exceeds maximum allowed tokens|String to replace not found|File has not been read yet|File does not exist"
    r"|File has been modified since read|EISDIR|Found \d+ matches of the string|has not been read|No such tool"
    r"|InputValidationError|Sibling tool call errored|The user doesn't want to proceed|was rejected",
    re.IGNORECASE,
)
_USER_PROBLEM = re.compile(
    r"\b(?:error|exception|traceback|fails|failing|failed|broken|crash(?:es|ed|ing)?|doesn't work|does not work"
    r"|not working|won't (?:start|build|compile|run)|doesn't (?:start|build|compile|run))\b"
)
_AGENT_PROBLEM = re.compile(
    r"^(?:i see\W+)?(?:the|what the) (?:real |root )?(?:issue|problem|bug|cause) (?:is|was|here is)\b"
    r"|^i see the (?:issue|problem)\b|^(?:this|that|it) (?:fails|failed|breaks|broke) because\b"
    r"|^the (?:test|tests|build|compile|compilation) (?:fails|failed)\b|\bthat's the (?:bug|issue|problem)\b"
)
_NARRATION = re.compile(
    r"^(?:now |first,? |ok,? |good[.!]? )?(?:let me|let's|i'll|i will|i am going to|i'm going to)\s+"
    r"(?:\w+ )?(?:check|look|read|search|find|see|verify|run|try|fetch|explore|examine|inspect|understand|wait"
    r"|investigate)"
)
_EXPLANATION = re.compile(
    r"\b(?:the (?:real |root )?(?:issue|problem|error|cause|fix|bug|solution) (?:is|was)|(?:is|was|were) caused by"
    r"|because\b|the reason|needs? to be|has to be|must be|should be|instead\b|doesn't exist|does not exist|don't exist"
    r"|\bneed(?:s|ed)? (?:the |a |an )?`?[\w./:-]+`? "
    r"(?:dependency|package|config\w*|setting|flag|option|module|plugin)\b"
    r"|\b(?:tests?|it|this|they|that) needs?\b"
    r"|isn't|wasn't|aren't|can't|cannot|expects?\b|requires?\b|is missing|was missing|are missing|fixed by|turns out"
    r"|the way to|the correct (?:way|format|api|syntax)|not (?:wrapped|a map|a struct|supported|available|tracked)"
    r"|gitignored|force-added|relative\b|returns?\b|false positive)"
)
_REMEDY = re.compile(r"\b(?:run|use|try) .{1,60}? to fix\b|\bdid you mean\b", re.IGNORECASE)
_SUCCESS = re.compile(
    r"\b(?:all (?:\d+ )?(?:\w+ )?(?:tests|checks) pass|tests? pass(?:es|ed)?|now passes|now works|works now|it works"
    r"|(?:build|compile|compilation|command|push|commit) succeed(?:s|ed)|succeeds\b|clean compile|compiles cleanly"
    r"|compiles now|all green|all clean|no (?:more )?(?:errors|issues|warnings|failures)"
    r"|zero (?:\w+ )?(?:issues|errors|warnings)|\w+ passes|is now fixed|now fixed|is resolved)"
)
_USER_SUCCESS = re.compile(r"\b(?:that worked|it works|works now|fixed it|that fixed|perfect|great|thanks|thank you)\b")
_FAILURE_WORDS = re.compile(r"\b(?:still|again|fail|fails|failed|failing|error|errors|not)\b")
_NOISE_LINE = re.compile(r"^(?:exit code \d+|error:?|\[stderr\]|\W*)$", re.IGNORECASE)
_ERROR_LINE = re.compile(
    r"error|fatal|failed|failure|exception|not found|cannot|can't|could not|unable|denied|undefined|invalid|refused"
    r"|no such|missing|unknown|conflict|timed? ?out|ignored",
    re.IGNORECASE,
)
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[\w.~-]*/)+([\w.-]+)")
_NUMBER = re.compile(r"\b\d[\d_.:]*\b")
_PROBLEM_LEAD = re.compile(
    r"^(?:i see (?:the|what the) (?:issue|problem)\W+|(?:i see\W+)?(?:the|what the) (?:real |root )?(?:issue|problem) "
    r"(?:is|was)(?: that)?\W*|that's the (?:bug|issue|problem)\W+)",
    re.IGNORECASE,
)


def _error_line(text: str) -> str:
    """The most telling line of an error output, without exit codes, decorations or long paths."""
    lines = [ln.strip() for ln in prose(text.replace("\\n", "\n")).splitlines() if ln.strip()]
    useful = [ln for ln in lines if not _NOISE_LINE.match(ln)] or lines or [text.strip()]
    at = next((i for i, ln in enumerate(useful) if _ERROR_LINE.search(ln)), 0)
    best = useful[at]
    if best.endswith(":") and at + 1 < len(useful):  # "Pre-commit validation failed:" says little alone
        best = f"{best} {useful[at + 1]}"
    best = re.sub(r"^[^\w\"'`(\[]+", "", best)  # "✘ [ERROR] …" → "[ERROR] …" → below
    best = re.sub(r"^\[?(?:error|fatal|err)\]?:?\s*", "", best, flags=re.IGNORECASE)
    return clip(best, 200)


def _error_signature(line: str) -> str:
    """The error without the parts that change between runs (paths, numbers), for a stable key.

    Secrets go first: cutting paths could break a credential (a connection string) past the scanner.
    """
    return _NUMBER.sub(" ", _PATH.sub(r"\1", without_secrets(line)))


def _fix_key(problem: str) -> str:
    """A fix's key: its error signature, numbers dropped (line numbers, ports, counts change between runs)."""
    return make_key("fix", _error_signature(problem), numbers=False)


def _explanation(turn: Turn) -> list[str]:
    """The sentences of an assistant turn that say why something failed or what the fix is."""
    picked = []
    for s in sentences(turn.text):
        low = s.lower()
        if len(s) <= 400 and not _NARRATION.match(low) and (_EXPLANATION.search(low) or _AGENT_PROBLEM.search(low)):
            picked.append(s)
    return picked[:3]


@dataclass
class _Episode:
    """A problem being worked on: the errors seen, the explanations given, until success or the agent moves on."""

    start: Turn
    problem: str
    rule: str
    signatures: set[str]
    explained: list[tuple[Turn, list[str]]]
    since: int = 0  # assistant turns since the last error or problem statement
    moved_on: int = 0  # assistant turns after the last explanation


def fixes(turns: Sequence[Turn]) -> list[Candidate]:
    """Error → explanation → success episodes, one per distinct error (repeats of the same error extend it)."""
    out: list[Candidate] = []
    episode: _Episode | None = None

    def close(success: tuple[Turn, str] | None, *, progressed: bool = False) -> None:
        nonlocal episode
        if episode is not None and episode.explained and (success or progressed or episode.moved_on >= 2):
            out.append(_fix(episode, success))
        episode = None

    for turn in turns:
        if turn.role == "summary":
            close(None)
            continue
        if episode is not None and turn.sidechain != episode.start.sidechain:
            continue
        problem = _problem(turn)
        if episode is None:
            if problem is not None:
                episode = _new_episode(turn, *problem)
            continue
        if turn.role == "user":
            text = turn.text.lower()
            confirmed = _USER_SUCCESS.search(text) and not _FAILURE_WORDS.search(text)
            close((turn, clip(turn.text, 200)) if confirmed else None)
            if problem is not None:
                episode = _new_episode(turn, *problem)
            continue
        if turn.role == "tool_error":
            if problem is None:  # tool mechanics: not part of the story
                continue
            if _fix_key(problem[0]) in episode.signatures:
                episode.since = episode.moved_on = 0  # the same error again: still the same problem
                continue
            close(None, progressed=True)  # a different error: the first one got past
            episode = _new_episode(turn, *problem)
            continue
        episode.since += 1
        if problem is not None and episode.since > EXPLAIN_WINDOW:
            close(None)  # the agent names a new problem long after the last one
            episode = _new_episode(turn, *problem)
            continue
        picked = problem[2] if problem is not None else _explanation(turn)
        if problem is not None:
            episode.since = 0
        if picked and episode.since <= EXPLAIN_WINDOW:
            episode.explained.append((turn, picked))
            episode.moved_on = 0
        elif episode.explained:
            episode.moved_on += 1
        hit = _success(turn)
        if hit is not None and episode.explained:
            close((turn, hit))
        elif episode.since > FIX_WINDOW:
            close(None)
    close(None)
    return out


def _success(turn: Turn) -> str | None:
    for s in sentences(turn.text):
        low = s.lower()
        if (
            _SUCCESS.search(low)
            and not _NARRATION.match(low)
            and not low.endswith(":")
            and not re.search(r"\b(?:fail\w*|still|but|except|unless)\b", low)
        ):
            return s
    return None


def _new_episode(turn: Turn, problem: str, rule: str, inline: list[str]) -> _Episode:
    key = _fix_key(problem)
    return _Episode(turn, problem, rule, {key}, [(turn, inline)] if inline else [])


def _problem(turn: Turn) -> tuple[str, str, list[str]] | None:
    """(problem line, rule, explanation given in the same turn) when `turn` starts a problem, else None."""
    if turn.role == "tool_error":
        if _TOOL_MECHANICS.search(turn.text):
            return None
        remedy = [m.group(0) for m in _REMEDY.finditer(turn.text.replace("\\n", "\n"))][:1]
        return _error_line(turn.text), "error-then-fix", remedy
    if turn.role == "user" and not turn.sidechain:
        text = " ".join(sentences(turn.text))
        if len(text) <= 600 and _USER_PROBLEM.search(text.lower()) and not text.rstrip().endswith("?"):
            return clip(text, 200), "reported-problem-then-fix", []
        return None
    if turn.role == "assistant":
        parts = sentences(turn.text)
        for j, s in enumerate(parts[:3]):
            if _AGENT_PROBLEM.search(s.lower()):
                inline = [p for p in parts[max(0, j - 1) : j + 3] if len(p) <= 400 and not _NARRATION.match(p.lower())]
                if len(WORD.findall(s.lower())) < 6 and j + 1 < len(parts):  # "I see the issue." → what it is
                    s = parts[j + 1]
                return clip(s, 200), "problem-then-fix", inline
    return None


def _fix(episode: _Episode, success: tuple[Turn, str] | None) -> Candidate:
    recent = episode.explained[-2:]
    picked = [s for _, ss in recent for s in ss if s not in episode.problem and episode.problem not in s]
    said = " ".join(dict.fromkeys(re.sub(r":$", ".", s) for s in picked)) or episode.problem
    lines = [f"**Problem:** {episode.problem}", "", f"**What fixed it:** {clip(said, 700)}"]
    refs = [turn_ref(episode.start)] + [turn_ref(t) for t, _ in episode.explained]
    if success is not None:
        lines += ["", f"**Outcome:** {clip(success[1], 200)}"]
        refs.append(turn_ref(success[0]))
    title = episode.problem
    if episode.rule == "problem-then-fix":
        title = _PROBLEM_LEAD.sub("", title)
    return Candidate(
        "fix",
        make_title(title, "Fix: "),
        "\n".join(lines),
        tuple(dict.fromkeys(refs)),
        "medium" if success is not None else "low",
        episode.rule,
        next(iter(sorted(episode.signatures))),
    )
