"""Mine transcript turns for what is worth keeping: preferences, fixes, workflows (pass 1) and ideas (pass 2).

Pure: turns in, candidates out. `mine` is the deterministic offline miner (the default); `mine_llm`
asks headless Claude Code (`claude -p … --output-format json`) and validates its answer strictly;
`run` picks one and falls back to the offline miner on any `MinerError`.

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
candidate left with almost nothing but a redaction is dropped).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, replace

from . import secrets
from .chunking import STOP_WORDS, strip_private
from .transcript import Turn

CATEGORIES = ("preference", "fix", "workflow", "idea")
CONFIDENCES = ("high", "medium", "low")
IDEA_KINDS = ("follow-up", "project", "research")

TITLE_CHARS = 80
QUOTE_CHARS = 600  # longest user statement quoted in a body
KEY_WORDS = 8
EXPLAIN_WINDOW = 3  # assistant turns after an error in which its explanation is looked for
FIX_WINDOW = 12  # assistant turns after an error in which its success is looked for
LLM_PROMPT_CHARS = 120_000  # transcript text given to the LLM miner (the most recent part when longer)


@dataclass(frozen=True)
class Candidate:
    category: str  # one of CATEGORIES; it is also the note kind
    title: str  # short, human
    body: str  # self-contained markdown in the user's terms, no transcript noise
    evidence: tuple[str, ...]  # turn refs "L<line>"
    confidence: str  # "high" | "medium" | "low"
    rule: str  # the rule that fired: "explicit-always", "correction", "error-then-fix", …
    key: str  # normalised identity of the pattern (stable across sessions): candidate ledger and dedup
    idea_kind: str | None = None  # ideas only: "follow-up" | "project" | "research"


class MinerError(Exception):
    """The LLM miner failed (missing, timed out, exited non-zero, or answered something invalid)."""


# ---------------------------------------------------------------- text helpers

_FENCE_BLOCK = re.compile(r"^[ \t]*(```|~~~).*?(?:^[ \t]*\1[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)
_INLINE_TAG = re.compile(r"</?[a-z]+(?:[-_][a-z]+)+(?:\s[^<>]*)?>")  # <command-name>, <tool_use_error>: wrapper noise
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_ABBREVIATION = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|cf|approx|incl|no|fig|resp)|\.\.)\.$", re.IGNORECASE)
_SPACES = re.compile(r"[ \t]+")
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_QUOTES = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "\u00a0": " "})


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_KEEP_WORDS = _words(  # negations and quantities change a preference's meaning: never dropped from a key
    "no not nor never don doesn didn isn aren wasn weren won wouldn shouldn couldn only all any off against"
)
_KEY_STOP = (STOP_WORDS - _KEEP_WORDS) | _words(
    "please always from now going forward future remember make sure note keep mind prefer rather would "
    "actually wrong right ok okay hey also really just"
)


def _normalise(text: str) -> str:
    return unicodedata.normalize("NFKC", text).translate(_QUOTES)


def _prose(text: str) -> str:
    """Text without fenced code, quoted lines and wrapper tags: what a person wrote as sentences."""
    text = _FENCE_BLOCK.sub("\n", _normalise(text))
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith((">", "$ ", "    "))]
    return _INLINE_TAG.sub("", "\n".join(lines))


def sentences(text: str) -> list[str]:
    """Sentences (and separate lines) of the prose in `text`, whitespace collapsed."""
    out: list[str] = []
    glue = False
    for piece in _SENTENCE.split(_prose(text)):
        piece = _SPACES.sub(" ", piece).strip(" -*•\t")
        if not piece:
            continue
        if glue and out:  # "e.g. foo" is one sentence
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
        glue = _ABBREVIATION.search(piece) is not None
    return out


_DO_NOT = re.compile(r"\bdo not\b")


def make_key(category: str, text: str) -> str:
    """A stable identity for a pattern: category, then the first content words of `text`, slugged.

    Case, punctuation, stop words and filler ("please", "always", "from now on") are dropped, so the
    same instruction phrased the same way in another session gets the same key; negations are kept.
    """
    words = [w.replace("'", "") for w in _WORD.findall(_DO_NOT.sub("dont", _normalise(text).lower()))]
    words = ["dont" if w in ("don", "dont") else w for w in words]
    content = [w for w in words if w not in _KEY_STOP and not w.isdigit() and len(w) > 1]
    slug = "-".join(content[:KEY_WORDS])[:80].strip("-")
    return f"{category}:{slug or 'untitled'}"


def _title(text: str, prefix: str = "") -> str:
    text = _SPACES.sub(" ", _INLINE_TAG.sub("", text)).strip()
    if len(text) > 1 and text[0] == text[-1] and text[0] in "\"'`":  # wrapped in quotes: unwrap, keep inner quotes
        text = text[1:-1].strip()
    text = text.rstrip(" .!:;,")
    room = TITLE_CHARS - len(prefix)
    if len(text) > room:
        cut = text[: room - 1].rsplit(" ", 1)[0] if " " in text[: room - 1] else text[: room - 1]
        text = cut.rstrip(" ,;:-") + "…"
    text = text[:1].upper() + text[1:]
    return prefix + text


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    cut = cut.rsplit(" ", 1)[0] if " " in cut[limit // 2 :] else cut
    return cut.rstrip() + "…"


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" if line.strip() else ">" for line in text.strip().splitlines())


def _ref(turn: Turn) -> str:
    return f"L{turn.line}"


# ---------------------------------------------------------------- preferences

_TASK_SCOPED = re.compile(
    r"\b(?:for now|right now|yet|this time|until|today|tonight|for this (?:task|pr|commit|session|one|file|change)"
    r"|in this (?:task|pr|commit|session|file|change)|at the moment|temporarily)\b"
)
_HEDGE = re.compile(
    r"\b(?:not sure|don't know|do not know|no idea|wonder|whether|maybe|perhaps|i guess|i think|not always|almost never"
    r"|if you|when you|unless)\b"
)
_QUESTION_START = re.compile(
    r"^(?:do|does|did|can|could|would|should|shall|is|are|was|were|will|why|how|what|when|where|which|who)"
    r"\s+(?:we|you|i|it|they|this|that|there)\b"
)
_PREF_VERBS = (
    r"(?:use|run|prefer|want|write|put|keep|name|format|commit|push|deploy|work|test|start|do|add|pin|squash|rebase"
    r"|merge|build|install|check|review|document|type|lint|sign|tag|branch|ask|include|avoid|leave|touch|mock|call"
    r"|import|return|log|handle|edit|create|delete|remove|rename|split|open|close|wrap|prefix|indent|sort|store|skip)"
)
_DIRECTIVE_VERBS = _PREF_VERBS[:-1] + r"|make|change|modify|introduce|rely|hardcode|hard-code|assume|trust|break|bypass"
_DIRECTIVE_VERBS += (
    r"|amend|force|bump|update|upgrade|downgrade|generate|print|catch|swallow|ignore|reformat|refactor|restart"
)
_DIRECTIVE_VERBS += r"|disable|enable|comment|install|mix|stop|go|be|let|send|reply|answer|respond|explain|add|say)"
_FROM_NOW_ON = re.compile(r"\b(?:from now on|going forward|from here on(?: out)?|henceforth|for all future)\b")
_FUTURE = re.compile(r"\b(?:in (?:the )?future|next time|in later sessions|for future reference)\b")
_IMPERATIVE = re.compile(
    r"(?:^|[,:;]\s*)(?:please\s+)?(?:always\s+|never\s+|don't\s+|do not\s+|make sure (?:to|you)\s+)?"
    rf"{_DIRECTIVE_VERBS}\b"
)
_ALWAYS_START = re.compile(  # "Always use …", "Never commit …" — not "never mind", "always been", "never worked"
    r"^(?:please\s+)?(?:always|never)\s+(?!(?:mind|been|was|were|had|knew|heard|seen|saw|thought|worked|works|happens"
    r"|happened|fails|failed|forget|forgot|remember|understood|gets?|got|is|are|am|the|a|an|again|ever|before)\b)\w+"
)
_SUBJECT_ALWAYS = re.compile(
    rf"\b(?:(?:you|we|claude) (?:should|must|need to|have to|are to) (?:always|never)\b"
    rf"|(?:i|we) (?:always|never) {_PREF_VERBS}\b)"
)
_PREFER = re.compile(
    r"\b(?:i(?: would|'d)? (?:really |much |strongly )?prefer|my preference is|i'd rather|i would rather)\b"
)
_REMEMBER = re.compile(
    r"^(?:please\s+|and\s+)?(?:remember|keep in mind|don't forget|do not forget)\b(?!\s+(?:when|how|if|why|what|where))"
)
_STOP_DOING = re.compile(r"^(?:please\s+)?(?:stop|quit) (?:\w+ing)\b")
_DONT = re.compile(rf"^(?:please\s+)?(?:don't|do not|dont)\s+(?:ever\s+)?{_DIRECTIVE_VERBS}\b")
_LASTING = re.compile(r"\b(?:ever|again|anymore|any more|in general|in any|any\s+\w+|every ?time|whenever)\b")
_USE_INSTEAD = re.compile(
    r"^(?:please\s+)?(?:(?:always\s+)?use|we use|switch to)\s+(?P<a>.+?)\s*(?:,\s*)?"
    r"(?:instead of|rather than|over|not)\s+(?P<b>.+)$"
)
_PLEASE_USE = re.compile(r"^please (?:always )?use\b")
_CORRECTION = re.compile(
    r"^(?:no|nope|wrong|incorrect|not quite|not like that"
    r"|that's (?:wrong|not right|incorrect|not what i (?:asked|meant|wanted))"
    r"|that is (?:wrong|not right|incorrect)|you're wrong|actually)\b[\s,.!:;—–-]*"
)
_SAID_WRONG = re.compile(
    r"^(?:wrong|incorrect|that's (?:wrong|not right|incorrect)|that is (?:wrong|not right|incorrect)|you're wrong)"
)
_APPROVAL = re.compile(
    r"^(?:thanks|thank you|worries|problem|need|that's fine|it's fine|fine|good|great|ok|okay|perfect|looks good"
    r"|lgtm|sounds good)\b"
)


def _preference_rule(sentence: str, *, after_assistant: bool, first_in_turn: bool) -> tuple[str, str] | None:
    """(rule, confidence) when `sentence` is an instruction meant to last, else None."""
    low = sentence.lower().strip()
    if not low or len(low) > 400 or low.endswith("?") or _QUESTION_START.match(low):
        return None
    if _TASK_SCOPED.search(low):
        return None
    if _FROM_NOW_ON.search(low):
        return ("from-now-on", "high") if len(_WORD.findall(low)) >= 4 else None
    if _HEDGE.search(low):
        return None
    if _FUTURE.search(low) and _IMPERATIVE.search(low):
        return "from-now-on", "high"
    if _ALWAYS_START.match(low) or _SUBJECT_ALWAYS.search(low):
        return "explicit-always", "high"
    if _PREFER.search(low):
        return "explicit-prefer", "high"
    if _REMEMBER.match(low) and len(_WORD.findall(low)) >= 4:
        return "remember", "high"
    if _STOP_DOING.match(low):
        return "stop-doing", "high"
    if _USE_INSTEAD.match(low):
        return "use-instead", "high"
    if _DONT.match(low):
        return ("explicit-dont", "high") if _LASTING.search(low) else ("dont", "low")
    if _PLEASE_USE.match(low):
        return "please-use", "low"
    if after_assistant and first_in_turn:
        m = _CORRECTION.match(low)
        if m and m.end() < len(low):
            rest = low[m.end() :]
            said_wrong = _SAID_WRONG.match(low) is not None  # "that's wrong: …" is a correction even without a verb
            if not _APPROVAL.match(rest) and (said_wrong or _IMPERATIVE.search(rest)) and len(_WORD.findall(rest)) >= 3:
                return "correction", "high"
    return None


def _preferences(turns: Sequence[Turn]) -> list[Candidate]:
    out = []
    previous: Turn | None = None
    for turn in turns:
        if turn.sidechain or turn.role == "summary":
            continue
        if turn.role == "user":
            after_assistant = previous is not None and previous.role in ("assistant", "tool_error")
            parts = sentences(turn.text)
            for i, sentence in enumerate(parts):
                found = _preference_rule(sentence, after_assistant=after_assistant, first_in_turn=i == 0)
                if found is None:
                    continue
                rule, confidence = found
                statement = sentence
                if rule == "correction" and len(parts) > 1:  # "No." alone says little: quote the whole reply
                    statement = " ".join(parts[: 1 + min(3, len(parts) - 1)])
                out.append(_preference(turn, statement, rule, confidence, previous if after_assistant else None))
        previous = turn
    return out


def _preference(turn: Turn, statement: str, rule: str, confidence: str, answered: Turn | None) -> Candidate:
    statement = _clip(statement, QUOTE_CHARS)
    said = {
        "correction": "The user corrected the agent",
        "from-now-on": "The user's standing instruction",
        "explicit-prefer": "The user's stated preference",
    }.get(rule, "The user's instruction")
    body = f"{_quote(statement)}\n\n{said}, in their own words."
    if answered is not None and rule == "correction":
        context = next(iter(sentences(answered.text)), "")
        if context:
            body += f' It was replying to: "{_clip(context, 200)}"'
    key_text = statement
    if rule == "correction":
        key_text = _CORRECTION.sub("", statement.lower(), count=1)
    return Candidate(
        "preference", _title(statement), body, (_ref(turn),), confidence, rule, make_key("preference", key_text)
    )


# ---------------------------------------------------------------- fixes

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
    lines = [ln.strip() for ln in _prose(text.replace("\\n", "\n")).splitlines() if ln.strip()]
    useful = [ln for ln in lines if not _NOISE_LINE.match(ln)] or lines or [text.strip()]
    at = next((i for i, ln in enumerate(useful) if _ERROR_LINE.search(ln)), 0)
    best = useful[at]
    if best.endswith(":") and at + 1 < len(useful):  # "Pre-commit validation failed:" says little alone
        best = f"{best} {useful[at + 1]}"
    best = re.sub(r"^[^\w\"'`(\[]+", "", best)  # "✘ [ERROR] …" → "[ERROR] …" → below
    best = re.sub(r"^\[?(?:error|fatal|err)\]?:?\s*", "", best, flags=re.IGNORECASE)
    return _clip(best, 200)


def _error_signature(line: str) -> str:
    """The error without the parts that change between runs (paths, numbers), for a stable key."""
    return _NUMBER.sub(" ", _PATH.sub(r"\1", line))


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


def _fixes(turns: Sequence[Turn]) -> list[Candidate]:
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
            close((turn, _clip(turn.text, 200)) if confirmed else None)
            if problem is not None:
                episode = _new_episode(turn, *problem)
            continue
        if turn.role == "tool_error":
            if problem is None:  # tool mechanics: not part of the story
                continue
            if make_key("fix", _error_signature(problem[0])) in episode.signatures:
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
    key = make_key("fix", _error_signature(problem))
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
            return _clip(text, 200), "reported-problem-then-fix", []
        return None
    if turn.role == "assistant":
        parts = sentences(turn.text)
        for j, s in enumerate(parts[:3]):
            if _AGENT_PROBLEM.search(s.lower()):
                inline = [p for p in parts[max(0, j - 1) : j + 3] if len(p) <= 400 and not _NARRATION.match(p.lower())]
                if len(_WORD.findall(s.lower())) < 6 and j + 1 < len(parts):  # "I see the issue." → what it is
                    s = parts[j + 1]
                return _clip(s, 200), "problem-then-fix", inline
    return None


def _fix(episode: _Episode, success: tuple[Turn, str] | None) -> Candidate:
    recent = episode.explained[-2:]
    picked = [s for _, ss in recent for s in ss if s not in episode.problem and episode.problem not in s]
    said = " ".join(dict.fromkeys(re.sub(r":$", ".", s) for s in picked)) or episode.problem
    lines = [f"**Problem:** {episode.problem}", "", f"**What fixed it:** {_clip(said, 700)}"]
    refs = [_ref(episode.start)] + [_ref(t) for t, _ in episode.explained]
    if success is not None:
        lines += ["", f"**Outcome:** {_clip(success[1], 200)}"]
        refs.append(_ref(success[0]))
    title = episode.problem
    if episode.rule == "problem-then-fix":
        title = _PROBLEM_LEAD.sub("", title)
    return Candidate(
        "fix",
        _title(title, "Fix: "),
        "\n".join(lines),
        tuple(dict.fromkeys(refs)),
        "medium" if success is not None else "low",
        episode.rule,
        next(iter(sorted(episode.signatures))),
    )


# ---------------------------------------------------------------- workflows

_CONFIRM = re.compile(
    r"^(?:(?:ok(?:ay)?|yes|yep|wow|nice|cool)[,!.]?\s+)?"
    r"(?:(?:that|it|this) (?:worked|works)\b|works (?:now|great|perfectly)|perfect\b|great\b|awesome\b"
    r"|excellent\b|exactly\b|brilliant\b|fantastic\b|that did it|that fixed it|nailed it)"
)
_NOT_CONFIRM = re.compile(r"\b(?:but|except|however|though|still|not|doesn't|didn't|isn't|no longer|question)\b|\?")


def _workflows(turns: Sequence[Turn]) -> list[Candidate]:
    out = []
    request: Turn | None = None
    steps: list[Turn] = []
    for turn in turns:
        if turn.sidechain or turn.role == "summary":
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
    asked = _clip(" ".join(sentences(request.text)), 400)
    done = _clip(" ".join(sentences(steps[-1].text)), 700)
    body = "\n".join(
        [
            f"**Task:** {asked}",
            "",
            f"**What worked:** {done}",
            "",
            f'**Confirmed by the user:** "{_clip(confirmation.text, 200)}"',
        ]
    )
    return Candidate(
        "workflow",
        _title(asked, "Workflow: "),
        body,
        (_ref(request), _ref(steps[-1]), _ref(confirmation)),
        "medium",
        "confirmed-workflow",
        make_key("workflow", asked),
    )


# ---------------------------------------------------------------- ideas

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


def _ideas(turns: Sequence[Turn]) -> list[Candidate]:
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
            out[-1] = replace(out[-1], evidence=tuple(dict.fromkeys((*out[-1].evidence, _ref(turn)))))
        else:
            context = " ".join(parts[max(0, j - 1) : j + 1])
            out.append(_idea(turn, context, "follow-up", "low", "agent-follow-up"))
            open_agent_idea = True
    return out


def _idea(turn: Turn, statement: str, kind: str, confidence: str, rule: str) -> Candidate:
    statement = _clip(statement, QUOTE_CHARS)
    who = "The agent noted, while working" if turn.role == "assistant" else "The user said"
    label = {"follow-up": "Follow-up", "project": "Project idea", "research": "To research"}[kind]
    body = f"{_quote(statement)}\n\n{who} ({label.lower()})."
    return Candidate(
        "idea",
        _title(statement, f"{label}: "),
        body,
        (_ref(turn),),
        confidence,
        rule,
        make_key("idea", statement),
        kind,
    )


# ---------------------------------------------------------------- the miner


def mine(turns: Sequence[Turn]) -> list[Candidate]:
    """The deterministic offline miner: pass 1 (preferences, fixes, workflows), then pass 2 (ideas)."""
    clean = [replace(t, text=strip_private(t.text)) for t in turns]
    found = _preferences(clean) + _fixes(clean) + _workflows(clean) + _ideas(clean)
    return _finish(found)


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
    key = cand.key
    if _REDACTED.search(secrets.redact(key)[0]) or secrets.scan(key):
        key = make_key(cand.category, _REDACTED.sub("", title))
    return replace(cand, title=title, body=body, key=key)


def _content_words(text: str) -> int:
    return sum(1 for w in _WORD.findall(text.lower()) if w not in _KEY_STOP and len(w) > 1)


def _first_line(cand: Candidate) -> int:
    try:
        return int(cand.evidence[0][1:])
    except (IndexError, ValueError):
        return 0


# ---------------------------------------------------------------- the LLM miner

_SCHEMA = """{"candidates": [{"category": "preference" | "fix" | "workflow" | "idea",
  "title": "short title, at most 80 characters",
  "body": "self-contained markdown in the user's own words: quote the user's statement; no tool output, no XML",
  "evidence": ["L12", "L15"],
  "confidence": "high" | "medium" | "low",
  "rule": "short name of why, e.g. explicit-always, correction, error-then-fix, confirmed-workflow, follow-up",
  "idea_kind": "follow-up" | "project" | "research" | null}]}"""

PROMPT = f"""You extract long-term memory from a coding-agent transcript given on standard input.
Each turn starts with its reference (L<number>) and speaker. Find only what a careful person would keep:
- preference: an instruction from the USER meant to last (always / never / I prefer / from now on / remember /
  don't / stop doing), or the user correcting the agent. Never from the assistant. Not task-scoped requests,
  not questions.
- fix: an error and what resolved it, with the resolution confirmed (tests pass, the user says it worked).
- workflow: a multi-step procedure the user confirmed worked.
- idea: deferred work: a follow-up ("we should also … later"), a project idea, something to research.
Confidence: explicit user statements and corrections are high; an error followed by a clear fix is medium;
weak inferences are low. Evidence must cite the L-references of the turns you used. Never copy secrets.
Return an empty list when nothing qualifies: precision matters more than recall.
Answer with JSON only, no prose and no code fence, exactly this shape:
{_SCHEMA}"""


def mine_llm(turns: Sequence[Turn], *, command: str = "claude", timeout: float = 120.0) -> list[Candidate]:
    """Ask headless Claude Code; validate its JSON strictly. Any failure raises MinerError."""
    clean = [replace(t, text=strip_private(t.text)) for t in turns]
    document = render(clean)
    if not document:
        return []
    env = dict(os.environ, MEMVAULT_ENABLED="0")  # the child session must not reflect (or recall) itself
    try:
        proc = subprocess.run(
            [command, "-p", PROMPT, "--output-format", "json"],
            input=document,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            check=False,
        )
    except FileNotFoundError as exc:
        raise MinerError(f"{command!r} is not installed") from exc
    except subprocess.TimeoutExpired as exc:
        raise MinerError(f"{command} did not answer within {timeout:g} s") from exc
    except OSError as exc:
        raise MinerError(f"could not run {command}: {exc}") from exc
    if proc.returncode != 0:
        raise MinerError(f"{command} exited with {proc.returncode}: {_clip(proc.stderr or proc.stdout, 200)}")
    lines = {t.line for t in clean if t.role != "summary" and not t.sidechain}
    return _finish(parse_llm(proc.stdout, lines))


def render(turns: Sequence[Turn], limit: int = LLM_PROMPT_CHARS) -> str:
    """The transcript as the LLM miner reads it: main-conversation turns, most recent kept when too long."""
    blocks = []
    for turn in turns:
        if turn.sidechain or turn.role == "summary":
            continue
        text = _clip(turn.text, 4000 if turn.role == "user" else 1500)
        blocks.append(f"L{turn.line} [{turn.role}]: {text}")
    out: list[str] = []
    size = 0
    for block in reversed(blocks):
        size += len(block) + 2
        if size > limit and out:
            break
        out.append(block)
    return "\n\n".join(reversed(out))


def parse_llm(stdout: str, lines: set[int]) -> list[Candidate]:
    """Validate `claude -p --output-format json` output; return its candidates or raise MinerError."""
    try:
        envelope = json.loads(stdout)
    except ValueError as exc:
        raise MinerError("the output is not JSON") from exc
    if not isinstance(envelope, dict):
        raise MinerError("the output is not a JSON object")
    if envelope.get("is_error") is True or envelope.get("subtype", "success") != "success":
        raise MinerError(f"claude reported an error: {_clip(str(envelope.get('result', '')), 200)}")
    result = envelope.get("result")
    if not isinstance(result, str):
        raise MinerError("the envelope has no 'result' text")
    text = result.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*\n(.*)\n```", text, re.DOTALL)
    if fenced:  # the one liberty taken: a model often wraps JSON in a code fence
        text = fenced.group(1)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise MinerError("the result is not JSON") from exc
    if not isinstance(data, dict) or set(data) != {"candidates"} or not isinstance(data["candidates"], list):
        raise MinerError('the result must be {"candidates": [...]}')
    return [_llm_candidate(item, n, lines) for n, item in enumerate(data["candidates"])]


_LLM_KEYS = {"category", "title", "body", "evidence", "confidence", "rule", "idea_kind"}


def _llm_candidate(item: object, n: int, lines: set[int]) -> Candidate:
    where = f"candidate {n}"
    if not isinstance(item, dict):
        raise MinerError(f"{where} is not an object")
    keys = set(item)
    if not keys <= _LLM_KEYS or not keys >= _LLM_KEYS - {"idea_kind"}:
        raise MinerError(f"{where}: keys must be {sorted(_LLM_KEYS)}")
    category, title, body = item["category"], item["title"], item["body"]
    evidence, confidence, rule = item["evidence"], item["confidence"], item["rule"]
    idea_kind = item.get("idea_kind")
    if category not in CATEGORIES:
        raise MinerError(f"{where}: unknown category {category!r}")
    if confidence not in CONFIDENCES:
        raise MinerError(f"{where}: unknown confidence {confidence!r}")
    for name, value, limit in (("title", title, 200), ("body", body, 4000), ("rule", rule, 60)):
        if not isinstance(value, str) or not value.strip() or len(value) > limit:
            raise MinerError(f"{where}: {name} must be a non-empty string of at most {limit} characters")
    if not isinstance(evidence, list) or not evidence:
        raise MinerError(f"{where}: evidence must be a non-empty list")
    for ref in evidence:
        if not isinstance(ref, str) or not re.fullmatch(r"L\d+", ref) or int(ref[1:]) not in lines:
            raise MinerError(f"{where}: evidence {ref!r} is not a turn of this transcript")
    if category == "idea":
        if idea_kind not in IDEA_KINDS:
            raise MinerError(f"{where}: an idea needs idea_kind in {IDEA_KINDS}")
    elif idea_kind is not None:
        raise MinerError(f"{where}: idea_kind is only for ideas")
    title = _title(title)
    return Candidate(
        category,
        title,
        body.strip(),
        tuple(evidence),
        confidence,
        f"llm:{rule.strip()}",
        make_key(category, title),
        idea_kind,
    )


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
