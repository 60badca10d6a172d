"""The miners' shared ground: the Candidate record and the text helpers every rule uses (sentences, keys, titles)."""

from __future__ import annotations

import difflib
import re
import unicodedata
from dataclasses import dataclass

from memvault.index.chunking import STOP_WORDS
from memvault.reflect.transcript import Turn
from memvault.store import secrets
from memvault.store.privacy import strip_private

from .typed import typed

CATEGORIES = ("preference", "fix", "workflow", "idea")
CONFIDENCES = ("high", "medium", "low")
IDEA_KINDS = ("follow-up", "project", "research")

TITLE_CHARS = 80
QUOTE_CHARS = 600  # longest user statement quoted in a body
KEY_WORDS = 8
KEY_NUMBERS = 4  # numbers said after the first KEY_WORDS content words that are still added to a key


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


_FENCE_BLOCK = re.compile(r"^[ \t]*(```|~~~).*?(?:^[ \t]*\1[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)
_INLINE_TAG = re.compile(r"</?[a-z]+(?:[-_][a-z]+)+(?:\s[^<>]*)?>")  # <command-name>, <tool_use_error>: wrapper noise
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_ABBREVIATION = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|cf|approx|incl|no|fig|resp)|\.\.)\.$", re.IGNORECASE)
_SPACES = re.compile(r"[ \t]+")
WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_QUOTES = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "\u00a0": " "})


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_KEEP_WORDS = _words(  # negations and quantities change a preference's meaning: never dropped from a key
    "no not nor never don doesn didn isn aren wasn weren won wouldn shouldn couldn only all any off against"
)
KEY_STOP = (STOP_WORDS - _KEEP_WORDS) | _words(
    "please always from now going forward future remember make sure note keep mind prefer rather would "
    "actually wrong right ok okay hey also really just"
)


def _normalise(text: str) -> str:
    return unicodedata.normalize("NFKC", text).translate(_QUOTES)


def prose(text: str) -> str:
    """Text without fenced code, quoted lines and wrapper tags: what a person wrote as sentences."""
    text = _FENCE_BLOCK.sub("\n", _normalise(text))
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith((">", "$ ", "    "))]
    return _INLINE_TAG.sub("", "\n".join(lines))


def sentences(text: str) -> list[str]:
    """Sentences (and separate lines) of the prose in `text`, whitespace collapsed.

    Only its typed segments (`typed.typed`): an expanded command template, a pasted log, trace, tool
    output or data blob has no sentences of the person's.
    """
    out: list[str] = []
    glue = False
    for piece in _SENTENCE.split(prose(typed(text))):
        piece = _SPACES.sub(" ", piece).strip(" -*•\t")
        if not piece:
            continue
        if glue and out:  # "e.g. foo" is one sentence
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
        glue = _ABBREVIATION.search(piece) is not None
    return out


ATTACHMENT = re.compile(r"\[Image #\d+\]\s*")  # where Claude Code put an image the user attached: not words
_DO_NOT = re.compile(r"\bdo not\b")
_REDACTION = re.compile(r"\[REDACTED:[a-z_]+\]", re.IGNORECASE)


def without_secrets(text: str) -> str:
    """`text` with <private> spans and the secrets the scanner finds removed (no redaction markers left)."""
    return _REDACTION.sub(" ", secrets.redact(strip_private(text))[0])


def make_key(category: str, text: str, *, numbers: bool = True) -> str:
    """A stable identity for a pattern: category, then the first content words of `text`, slugged.

    Case, punctuation, stop words and filler ("please", "always", "from now on") are dropped, so the
    same instruction phrased the same way in another session gets the same key; negations are kept.
    Numbers are kept ("line length 100" and "line length 120" differ), also up to KEY_NUMBERS of them
    said after the first KEY_WORDS content words; `numbers=False` drops them (error signatures).
    The key is built from redacted text, before anything is lowercased (which would hide case-sensitive
    token formats from the scanner): it never holds a secret, nor changes when the secret does.
    """
    text = without_secrets(text)
    words = [w.replace("'", "") for w in WORD.findall(_DO_NOT.sub("dont", _normalise(text).lower()))]
    words = ["dont" if w in ("don", "dont") else w for w in words]
    content = [w for w in words if (numbers if w.isdigit() else w not in KEY_STOP and len(w) > 1)]
    slug = "-".join(content[:KEY_WORDS])[:80].strip("-")
    if numbers:
        kept = set(slug.split("-"))
        late = [w for w in dict.fromkeys(content) if w.isdigit() and w not in kept][:KEY_NUMBERS]
        slug = "-".join([slug, *late] if slug else late)
    return f"{category}:{slug or 'untitled'}"


def make_title(text: str, prefix: str = "") -> str:
    """A one-line title of at most TITLE_CHARS (with `prefix`): tags and wrapping quotes removed, cut at a word."""
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


def clip(text: str, limit: int) -> str:
    """`text` stripped and, when longer than `limit`, cut at a word with an ellipsis."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    cut = cut.rsplit(" ", 1)[0] if " " in cut[limit // 2 :] else cut
    return cut.rstrip() + "…"


def quote(text: str) -> str:
    """`text` as a markdown block quote."""
    return "\n".join(f"> {line}" if line.strip() else ">" for line in text.strip().splitlines())


def turn_ref(turn: Turn) -> str:
    """A candidate's evidence reference to `turn`: L<line>."""
    return f"L{turn.line}"


_NEGATIONS = frozenset(["not", "no", "dont", "never", "nor", "doesnt", "didnt", "isnt", "arent", "wont", "shouldnt"])


def similar_keys(a: str, b: str) -> bool:
    """Whether two candidate keys name the same pattern in other words ("dont-lose-users-data-database" and
    "never-lose-users-progress-database"): same category, same negation, words mostly alike and in order.
    """
    kind_a, _, slug_a = a.partition(":")
    kind_b, _, slug_b = b.partition(":")
    if kind_a != kind_b or a == b:
        return a == b
    words_a, words_b = _key_words(slug_a), _key_words(slug_b)
    if min(len(words_a), len(words_b)) < 3 or ("not" in words_a) != ("not" in words_b):
        return False
    if set(words_a) == set(words_b):  # the same words in another order: "pnpm instead of npm" is not "npm … pnpm"
        return False
    return difflib.SequenceMatcher(None, words_a, words_b).ratio() >= 0.6


def _key_words(slug: str) -> list[str]:
    out = []
    for word in slug.split("-"):
        if word in _NEGATIONS:
            out.append("not")
        elif word not in KEY_STOP and stem(word):
            out.append(stem(word))
    return out


def stem(word: str) -> str:
    """A crude stem for comparing statements: no "'s" or plural s, the first five letters ("" for one letter)."""
    word = word.removesuffix("'s")
    if len(word) > 2 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word[:5] if len(word) > 1 else ""
