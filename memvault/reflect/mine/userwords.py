"""The user's own words: the sentences they typed (not pasted), rule words despite typos, titles that state a rule."""

from __future__ import annotations

import re
from collections.abc import Iterator

from .text import ATTACHMENT, TITLE_CHARS, clip, prose
from .typed import typed

CONTINUATION = "this session is being continued from a previous conversation"  # Claude Code's compaction text

# Words the preference rules hinge on, recognised through one typo (a letter swapped or mistyped):
# "logging should necer use f-strings" is "never". Real words one letter away are not typos of them.
_TRIGGERS = ("never", "always", "should", "prefer", "careful", "comfortable", "wrong", "instead", "remember")
_VERBS = (  # verbs of instructions, six letters or more (shorter ones collide with real words too often)
    "commit", "delete", "remove", "rename", "create", "update", "upgrade", "disable", "enable", "install", "verify",
    "change", "modify", "deploy", "ignore", "import", "report", "publish", "restart", "overwrite", "generate",
)  # fmt: skip
_NOT_TYPOS = frozenset(
    ["newer", "lever", "fever", "sever", "seven", "wrung", "shout", "proffer", "refer", "remote", "crease", "verity",
     "formal", "chance", "rebate", "intent", "repost", "impart", "deport", "denote", "ignite"]
)  # fmt: skip
_TOKEN = re.compile(r"[a-z]+")

_LIST_MARKER = re.compile(r"^\s*(?:[-*•+]|\d{1,3}[.)]|[a-z][.)]|\(\d{1,3}\))\s+")
_BOLD = re.compile(r"\*\*|__|`|(?<!\w)[*_](?=\S)|(?<=\S)[*_](?!\w)")
_LOG_LINE = re.compile(
    r"^\s*(?:\d{4}-\d\d-\d\d[ T]\d|\d\d:\d\d:\d\d|\[\w+\]|(?:INFO|DEBUG|WARN|WARNING|ERROR|TRACE|FATAL)\b"
    r"|Traceback\b|File \"|at [\w.$]+\(|\w+(?:Error|Exception):|[\w.-]+@[\w.-]+:|[$#>] |>>> |\+\s|diff --git|@@ )"
)
_CODE_LINE = re.compile(
    r"^\s*(?:def |class |import |from \S+ import |function |const |let |var |#include|return |if \(|for \()"
    r"|[;{}]\s*$|=>|::|\(\);|</?\w+[ >]"
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")


def canonical(text: str) -> str:
    """`text` lowercased, with quotes straightened and the rule words' one-letter typos corrected."""
    low = text.lower().replace("’", "'").replace("‘", "'")
    return _TOKEN.sub(lambda m: _canonical_word(m.group(0)), low)


def _canonical_word(word: str) -> str:
    if len(word) < 5 or word in _TRIGGERS or word in _NOT_TYPOS:
        return word
    for trigger in (*_TRIGGERS, *_VERBS):
        if len(trigger) == len(word) and _one_slip(word, trigger):
            return trigger
    return word


def _one_slip(a: str, b: str) -> bool:
    """Same length, and one letter different or two neighbours swapped (not the first letter)."""
    diff = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
    if len(diff) == 1:
        return diff[0] > 0
    return len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]


def pasted(line: str) -> bool:
    """A line the user pasted rather than wrote: log output, code, a table, a path, a stack frame."""
    text = line.strip()
    if not text:
        return True
    if _LOG_LINE.match(text) or _CODE_LINE.search(text):
        return True
    if "|" in text and text.count("|") >= 2:
        return True
    letters = sum(c.isalpha() or c.isspace() for c in text)
    if len(text) >= 20 and letters / len(text) < 0.7:
        return True
    return len(text) > 60 and " " not in text


def user_sentences(text: str, echo: str = "") -> Iterator[str]:
    """The sentences of a user's turn that they wrote themselves, list markers and wrapping parentheses removed.

    Only the typed segments count (`typed`: no template, code, trace, log, tool output or the assistant's
    words `echo` said back); of those, quoted lines and lines that look pasted are left out too; one
    numbered item is one sentence at least; a continuation summary after a compaction yields nothing.
    """
    if text.lstrip().lower().startswith(CONTINUATION):
        return
    for raw in prose(typed(text, echo)).splitlines():
        line = _BOLD.sub("", _LIST_MARKER.sub("", raw)).strip()
        if pasted(line):
            continue
        for piece in _SENTENCE_END.split(line):
            piece = piece.strip(" \t-–—")
            if piece.startswith("(") and piece.endswith(")"):
                piece = piece[1:-1].strip()
            if len(_TOKEN.findall(piece.lower())) >= 2:
                yield piece


# ---- titles that state the rule -------------------------------------------------------------

_LEAD_IN = re.compile(
    r"^(?:(?:and|but|so|also|oh|ok|okay|alright|right|hey|hi|well|yes|yeah|yep|no|nope|please|just|again|btw|fyi"
    r"|actually|anyway|plus|then|uh+|um+|hmm+|wait|look|listen|note|ps"
    r"|by the way|one more thing|as (?:noted|said|mentioned) (?:elsewhere|before|earlier|above)"
    r"|as i (?:said|mentioned)(?: before)?|like i said|for (?:the )?future reference|in (?:the )?future"
    r"|from now on|going forward|from here on(?: out)?|for all future \w+|remember(?: that)?|keep in mind(?: that)?"
    r"|note that|in general|generally|i think|i mean|(?:that|this|it) is the wrong fix|(?:that|this|it)'s the wrong fix"
    r"|(?:that|this) is wrong|(?:that|this)'s wrong|wrong|not quite|double-?check)\b[\s,.:;!—–-]*)+",
    re.IGNORECASE,
)
_FIRST_PERSON = (  # (pattern, replacement): the user's "I" and "my" as the note's reader needs them
    (re.compile(r"^i'm\b", re.I), "The user is"),
    (re.compile(r"^im\b", re.I), "The user is"),
    (re.compile(r"^i am\b", re.I), "The user is"),
    (re.compile(r"^i (?:don't|do not) want you to\b", re.I), "Don't"),
    (re.compile(r"^i (?:don't|do not) want to\b", re.I), "The user doesn't want to"),
    (re.compile(r"^i (don't|do not) want\b", re.I), "No"),
    (re.compile(r"^i only want\b", re.I), "Only"),
    (re.compile(r"^i (?:would|'d) (?:really |much )?(?:prefer|rather)\b", re.I), "Prefer"),
    (re.compile(r"^i prefer\b", re.I), "Prefer"),
    (re.compile(r"^i (don't|do not|never) (\w+)", re.I), r"The user doesn't \2"),
    (re.compile(r"^i (\w+)\b", re.I), lambda m: f"The user {_third_person(m.group(1))}"),
    (re.compile(r"^make sure (?:that )?(?:you )?(?:to )?", re.I), ""),
    (re.compile(r"^(?:please )?be careful (?:to )?not to\b|^(?:please )?be careful to not\b", re.I), "Never"),
    (re.compile(r"^you (?:should|must|need to|have to) (always|never)\b", re.I), r"\1"),
)
_POSSESSIVE = ((re.compile(r"\bmy\b", re.I), "the user's"), (re.compile(r"\bme\b", re.I), "the user"))


def _third_person(verb: str) -> str:
    low = verb.lower()
    if low in ("would", "will", "can", "could", "should", "might", "must", "may", "shall", "was", "had", "did"):
        return low
    if low in ("have",):
        return "has"
    if low in ("do", "go"):
        return low + "es"
    if low.endswith(("s", "sh", "ch", "x", "z")):
        return low if low.endswith("s") and not low.endswith("ss") else low + "es"
    if low.endswith("y") and len(low) > 2 and low[-2] not in "aeiou":
        return low[:-1] + "ies"
    return low + "s"


def rule_title(clause: str) -> str:
    """A title that states the rule: no lead-in ("Also, from now on, …"), "I" as "the user", rule words' typos fixed."""
    text = " ".join(ATTACHMENT.sub("", clause).split()).strip(" \"'`")
    text = _LEAD_IN.sub("", text).strip(" ,.;:!-–—") or text
    fixed = _TOKEN.sub(lambda m: _fix_case(m.group(0)), text)
    for pattern, repl in _FIRST_PERSON:
        new = pattern.sub(repl, fixed, count=1)  # type: ignore[arg-type]
        if new != fixed:
            fixed = new.strip()
            break
    for pattern, repl in _POSSESSIVE:
        fixed = pattern.sub(repl, fixed)
    fixed = fixed.rstrip(" .!:;,")
    aside = re.search(r"\s*\([^()]*\)$", fixed)  # a closing aside "(use your power to …)": the quote keeps it
    if aside and len(fixed[: aside.start()].split()) >= 3:
        fixed = fixed[: aside.start()].rstrip(" .!:;,")
    if fixed.endswith(")") and fixed.count(")") > fixed.count("("):
        fixed = fixed[:-1].rstrip(" .!:;,")
    fixed = clip(fixed, TITLE_CHARS)
    return fixed[:1].upper() + fixed[1:]


def _fix_case(word: str) -> str:
    fixed = _canonical_word(word.lower())
    return word if fixed == word.lower() else fixed
