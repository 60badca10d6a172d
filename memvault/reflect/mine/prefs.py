"""Preferences: the user's lasting instructions and corrections, found sentence by sentence (offline miner, pass 1)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from memvault.reflect.transcript import Turn

from .text import QUOTE_CHARS, WORD, Candidate, clip, make_key, make_title, quote, sentences, turn_ref

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
        return ("from-now-on", "high") if len(WORD.findall(low)) >= 4 else None
    if _HEDGE.search(low):
        return None
    if _FUTURE.search(low) and _IMPERATIVE.search(low):
        return "from-now-on", "high"
    if _ALWAYS_START.match(low) or _SUBJECT_ALWAYS.search(low):
        return "explicit-always", "high"
    if _PREFER.search(low):
        return "explicit-prefer", "high"
    if _REMEMBER.match(low) and len(WORD.findall(low)) >= 4:
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
            if not _APPROVAL.match(rest) and (said_wrong or _IMPERATIVE.search(rest)) and len(WORD.findall(rest)) >= 3:
                return "correction", "high"
    return None


def preferences(turns: Sequence[Turn]) -> list[Candidate]:
    """The user's lasting instructions and corrections in the main conversation, one candidate per sentence."""
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
    statement = clip(statement, QUOTE_CHARS)
    said = {
        "correction": "The user corrected the agent",
        "from-now-on": "The user's standing instruction",
        "explicit-prefer": "The user's stated preference",
    }.get(rule, "The user's instruction")
    body = f"{quote(statement)}\n\n{said}, in their own words."
    if answered is not None and rule == "correction":
        context = next(iter(sentences(answered.text)), "")
        if context:
            body += f' It was replying to: "{clip(context, 200)}"'
    key_text = statement
    if rule == "correction":  # the key from what follows "no," / "actually," — cut, not lowercased: make_key redacts
        lead = _CORRECTION.match(statement.lower())
        key_text = statement[lead.end() :] if lead else statement
    return Candidate(
        "preference", make_title(statement), body, (turn_ref(turn),), confidence, rule, make_key("preference", key_text)
    )
