"""Titles and bodies a person would write for a typed statement: a rule in the imperative, a fact as a statement."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from memvault.index.chunking import STOP_WORDS

from .text import ATTACHMENT, QUOTE_CHARS, TITLE_CHARS, clip, quote


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


RULE_KINDS = frozenset(["preference", "correction", "workflow", "idea", "fix"])  # titled in the imperative
STATEMENT_KINDS = frozenset(["fact"])  # titled as a plain statement about "the user"
KINDS = RULE_KINDS | STATEMENT_KINDS
UNCLEAR = "Unclear:"  # the title's opening when the sentence only points at a rule said elsewhere ("do this always")

# The only words a title may hold that the user did not type: grammar ("Do not", "the user's", "is") and the
# trigger words, which a typo may have spelt otherwise ("allways"). Everything else comes from the sentence.
TRIGGERS = ("always", "never", "prefer", "please", "should", "remember", "instead", "don't")
INSERTED = frozenset(
    ["do", "does", "not", "no", "use", "the", "user", "user's", "is", "are", "has", "to", "unclear", *TRIGGERS]
)

_VERBS = _words(
    """add adopt allow amend answer apply ask assume avoid back branch break build bump bypass call catch change
    check clean close comment commit compile configure confirm copy create debug default delete deploy describe
    disable document double downgrade draw drop edit enable ensure explain export extract factor fetch fill fix
    follow force format generate give go group handle hardcode ignore implement import include indent inline
    install introduce keep label leave let limit lint list load lock log look make mark merge migrate mirror mock
    move name open optimise optimize pass pin place prefer prefix print propose publish pull push put read rebase
    record refactor reformat rely remove rename reply report request require reset respond restart restore return
    reuse review rewrite run save say search send set show sign skip sort split squash stage start state stick
    stop store structure swallow switch tag take tell test touch trust try turn type update upgrade use validate
    verify wait work wrap write"""
)
_NOUN_STARTS = _words("a an the my our your this that these those")
_NOT_NOUNS = _words("no not never always i we you it they he she maybe perhaps probably there if when")
_MODALS = _words("can could would will should must might may shall was did had")

_EMOJI = re.compile(r"[\u200d\ufe0f\u20e3]|(?:^|\s)(?::-?[)(DPp]|;-?\)|xD|<3|\^_\^)(?=\s|$)")
_MARKUP = re.compile(r"\*\*|__|(?<![\w*])([*_])(?=\w)(.+?)(?<=\w)\1(?![\w*])")
_SPACES = re.compile(r"\s+")
_TOKEN = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")
_QUOTES = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "\u00a0": " "})

_LEAD = re.compile(
    r"^(?:(?:and|but|so|also|oh|ok|okay|alright|right|hey|hi|well|yes|yeah|yep|(?:nope|no)(?=\s*[,.!:;—–-])|please|pls|plz|just|again|btw"
    r"|fyi|actually|anyway|plus|then|uh+|um+|hmm+|wait|look|listen|ps|important|reminder|one more thing|by the way"
    r"|as (?:noted|said|mentioned|discussed) (?:elsewhere|before|earlier|above)|as i (?:said|mentioned)(?: before)?"
    r"|like i said|for (?:the )?future reference|in (?:the )?future|from now on|going forward|moving forward"
    r"|from here on(?: out)?|henceforth|for all future \w+|for every (?:project|repo|session)|in general|generally"
    r"|(?:and )?note(?: that)?|keep in mind(?: that)?|remember(?: that)?|don't forget(?: that)?|i think|i mean"
    r"|not quite|that's wrong|that is wrong|wrong|(?:first|second|third|finally|lastly)(?=,)"
    r"|i (?:feel|think|believe|guess|suppose)(?: (?:as though|as if|like|that))?)\b[\s,.:;!—–-]*)+",
    re.IGNORECASE,
)
_TRAILING = re.compile(
    r"(?:[\s,;—–-]+(?:pls|plz|please|thanks|thank you|thx|ty|ok|okay|right|btw|fyi|from now on|going forward"
    r"|moving forward|in (?:the )?future|for (?:all )?future \w+|for every (?:project|repo|session)|if you can"
    r"|thx in advance))+$",
    re.IGNORECASE,
)
_HEAD = re.compile(r"\s+[—–-]+\s+|:\s+|;\s+|\.\.\.\s*")  # a separator after which the rule may follow a lead-in
_META = _words(
    """note this that these it for every all any project projects repo repos session sessions future please also
    and so ok okay one more thing important reminder remember rule general btw fyi ps here's heres is a the from
    now on always save memory keep mind as said before i oh hey"""
)
_POINTERS = _words("this that it these those them here there so same thing one like")
_EMPTY = _words(
    """do does don't dont always never please remember note keep mind again every time just also really ok okay
    make sure you we i the a an to be it's that's is was"""
)
_REASON = re.compile(r"(?:,\s*|\s+)(?:because|since|as otherwise|otherwise|so that|which means|that way)\s", re.I)


def title_for(sentence: str, kind: str, context: str = "") -> str:
    """The note title for one typed statement of `kind`, at most TITLE_CHARS, cut at a word.

    A rule (preference, correction, workflow, idea, fix) in the imperative ("Do not use X", "Prefer
    tabs", "Never use Java"); a fact as a statement about the user ("The user is on fish"). Lead-ins,
    fillers, emoji and trailing punctuation go; "I" and "my" become "the user" and "the user's"; no
    word is added but those in INSERTED. A sentence that only points at a rule ("do this always") is
    restated from `context` (the sentence it points at) when given, else titled `Unclear: "<words>"`.
    """
    text = _restate(sentence, kind, context)
    if not text:
        return clip(f'{UNCLEAR} "{_clean(sentence) or sentence.strip()}"', TITLE_CHARS)
    return _cap(text)


def body_for(
    sentence: str,
    kind: str,
    line: int,
    said: str = "",
    *,
    context: str = "",
    more: Sequence[tuple[int, str]] = (),
) -> str:
    """The body a person would write: the rule restated in one sentence, then the user's words and their line.

    `said` is the verbatim text to quote (the sentence when empty), `line` its transcript line; `more` holds
    (line, words) of the same statement said again. Each quote is followed by "— the user, L<line>", the
    provenance line the review, likeness and tests read.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown statement kind {kind!r}: one of {', '.join(sorted(KINDS))}")
    rule = _restate(sentence, kind, context)
    blocks = [f"{rule.rstrip(' .')}." if rule else ""]
    quoted = [(line, said or sentence), *more]
    seen: set[int] = set()
    for at, words in quoted:
        if words.strip():
            blocks.append(f"{quote(clip(words, QUOTE_CHARS))}\n— the user, L{at}")
            seen.add(at)
    if len(seen) > 1:
        blocks.append(f"Said {len(seen)} times in this session.")
    return "\n\n".join(b for b in blocks if b)


def is_pointer_only(sentence: str) -> bool:
    """Whether `sentence` names no topic of its own, only points at one ("do this always", "remember that")."""
    words = [w.lower() for w in _TOKEN.findall(fix_typos(_clean(sentence)))]
    return not [w for w in words if w not in _POINTERS and w not in _EMPTY]


def _restate(sentence: str, kind: str, context: str) -> str:
    """The statement as one sentence without a length cap, or "" when it says nothing of its own.

    Several sentences typed together are each restated and joined with "; ", leaving out those that
    only point ("do this") or ask ("why is it slow?") when another one states something.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown statement kind {kind!r}: one of {', '.join(sorted(KINDS))}")
    parts = [p for p in _SENTENCE.split(fix_typos(_clean(sentence))) if p.strip()]
    said = [(p, _rule_part(p)) for p in parts]
    said = [(p, text) for p, text in said if text and not is_pointer_only(text)]
    firm = [text for p, text in said if not (p.rstrip().endswith("?") and _ASKS.match(text))]
    stated = [_one(text, kind) for text in (firm or [text for _, text in said])]
    if stated:
        return "; ".join(t if i == 0 else _lower_first(t) for i, t in enumerate(stated))
    if not context.strip() or is_pointer_only(context):
        return ""
    low = _clean(sentence).lower()
    base = _restate(context, kind, "")
    adverb = "Never" if re.search(r"\b(?:never|don't|do not|dont)\b", low) else "Always" if "always" in low else ""
    if adverb and base and not base.lower().startswith(("always", "never", "do not", "no ")):
        return f"{adverb} {_lower_first(base)}"
    return base


_INSERTED_FIRST = _words("the a an do never always prefer no use this that it there")
_SENTENCE = re.compile(r"(?<!\.\.)(?<!e\.g\.)(?<!i\.e\.)(?<!etc\.)(?<!vs\.)(?<=[.!?])\s+")
_ASKS = re.compile(r"^(?:what|why|how|when|where|which|who|is|are|do|does|did|can|could|should|would|will)\b", re.I)


def _one(text: str, kind: str) -> str:
    text = _imperative(text) if kind in RULE_KINDS else _statement(text)
    text = _third_person_rest(text).strip(" ,;:-–—").rstrip(" .!?;:,…")
    return text[:1].upper() + text[1:]


def _lower_first(text: str) -> str:
    """`text` with its first letter lowercased unless its first word is a name ("Python", "API", "I")."""
    first = _first(text).split("'")[0]
    return text[:1].lower() + text[1:] if first in _VERBS | _INSERTED_FIRST | STOP_WORDS else text


def _clean(sentence: str) -> str:
    text = unicodedata.normalize("NFKC", ATTACHMENT.sub("", sentence)).translate(_QUOTES)
    text = "".join(c for c in text if unicodedata.category(c) not in ("So", "Cs", "Co"))
    text = _SPACES.sub(" ", _EMOJI.sub(" ", _MARKUP.sub(lambda m: m.group(2) or "", text))).strip()
    while len(text) > 1 and text[0] == text[-1] and text[0] in "\"'`":
        text = text[1:-1].strip()
    return text.strip(" -*•>").rstrip(" .!?;:,…")


def fix_typos(text: str) -> str:
    """The trigger words spelt right when the user mistyped them by one letter ("allways", "nevr", "dont")."""
    return _TOKEN.sub(lambda m: _trigger(m.group(0)), text)


_NOT_TYPOS = _words(
    "ever sever lever fever newer nevers prefers preferd refer proffer pleased pleas plead lease shoulds shout "
    "should've alway's instead's ways"
)


def _trigger(word: str) -> str:
    low = word.lower()
    if low in ("dont", "don't", "do'nt", "donot"):
        return "don't" if word[:1].islower() else "Don't"
    if low in TRIGGERS or low in _NOT_TYPOS or len(low) < 4:
        return word
    for trigger in TRIGGERS[:-1]:
        if low[0] == trigger[0] and _one_edit(low, trigger):
            return trigger if word[:1].islower() else trigger.capitalize()
    return word


def _one_edit(a: str, b: str) -> bool:
    """One letter changed, added or dropped, or two neighbours swapped."""
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
        swap = len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]
        return len(diff) == 1 or swap
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return any(long_[:i] + long_[i + 1 :] == short for i in range(len(long_)))


def _rule_part(text: str) -> str:
    """The words that state the rule: lead-ins ("oh and, from now on", "note this for every project –") dropped."""
    for _ in range(4):
        before = text
        text = _LEAD.sub("", text).strip(" ,;:!-–—").rstrip(".")
        m = _HEAD.search(text)
        if m and m.end() < len(text):
            head = [w.lower() for w in _TOKEN.findall(text[: m.start()])]
            if head and all(w in _META for w in head):
                text = text[m.end() :].strip()
        text = _TRAILING.sub("", text).rstrip(" .!?;:,…")
        if text == before:
            break
    return text


_RULE_FORMS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.IGNORECASE), r)
    for p, r in (
        (r"^(?:can|could|would|will) (?:you|we) (?:please |just |also )*", ""),
        (r"^(?:i|we) (?:do not|don't) (?:ever )?(?:want|need|like) (?:you )?to (?:ever )?", "do not "),
        (r"^(?:i|we) never want (?:you )?to ", "never "),
        (r"^(?:i|we) (?:do not|don't) (?:want|need|like) (?=\w)", "no "),
        (r"^(?:i|we)(?:'d| would)? (?:really |just |only )?(?:want|need|like|love|wanna) (?:you )?to ", ""),
        (r"^(?:i|we)(?: would|'d)? (?:really |much |strongly |always )?prefer (?:it )?(?:if |when |that )?you ", ""),
        (r"^(?:i|we)(?: would|'d)? (?:really |much |strongly |always )?prefer (?:that )?(?!to )", "prefer "),
        (r"^(?:i|we)(?: would|'d)? (?:really |much |strongly |always )?prefer to ", "prefer to "),
        (r"^(?:i|we)(?:'d| would) rather (?:you )?", "prefer to "),
        (r"^(?:you|we|u) (?:should|must|need to|have to|gotta|ought to|shall|will|can) (always|never) ", r"\1 "),
        (r"^(?:you|we|u) (?:should ?n[o']?t|must ?n[o']?t|should not|must not|shall not|cannot|can't|can not"
         r"|do not|don't|may not|are not to|aren't to) (?:ever )?", "do not "),
        (r"^(?:you|we|u) (?:should|must|need to|have to|gotta|ought to|shall|are to|always need to) ", ""),
        (r"^(?:you|we|i|u) (always|never) ", r"\1 "),
        (r"^(?:please )?(?:make sure|ensure|be sure|remember|don't forget|do not forget) (?:that )?(?:you )?(?:to )?"
         r"(?=(?:always|never|don't|do not|not) |(?:" + "|".join(sorted(_VERBS)) + r")\b)", ""),
        (r"^(?:please )?(?:make sure|be sure|remember|don't forget|do not forget) to ", ""),
        (r"^let'?s (?:always )?", ""),
        (r"^(?:do not|don't|dont) ever |^never ever ", "never "),
        (r"^(?:do not|don't|dont) ", "do not "),
        (r"^(?:i|we) (?=(?:" + "|".join(sorted(_VERBS)) + r") )", ""),
    )
)  # fmt: skip
_NO_EVER = re.compile(r"^no (?:more )?(.+?)[\s,]+(?:ever(?: again)?|again|anymore|any more|never)$", re.IGNORECASE)
_EVER = re.compile(r"^(do not|never) (.+?)[\s,]+(?:ever(?: again)?|again|anymore|any more)$", re.IGNORECASE)


def _imperative(text: str) -> str:
    """A rule in the imperative, reordered or put in another grammatical form, never given new words."""
    m = _NO_EVER.match(text)
    if m:
        rest = m.group(1).strip(" ,")
        return f"no {rest}" if _first(rest).endswith("ing") else f"never use {rest}"  # "no" heads a noun phrase
    for pattern, repl in _RULE_FORMS:
        new = pattern.sub(repl, text, count=1)
        if new != text:
            text = new if new[: len(repl)].strip() else _LEAD.sub("", new)  # "let's just pin": "just" is filler too
            break
    m = _EVER.match(text)
    if m:
        text = f"never {m.group(2)}"
    words = [w.lower() for w in _TOKEN.findall(text)]
    if words and _verbless(words) and not any(ord(c) > 0x2E7F for c in text):  # a CJK sentence has its verbs
        text = f"use {text}"
    return text


def _first(text: str) -> str:
    m = _TOKEN.search(text)
    return m.group(0).lower() if m else ""


def _verbless(words: list[str]) -> bool:
    """A short rule with no verb at all ("tabs", "pnpm over npm"): it means "use" what it names."""
    if len(words) > 6 or words[0] in _NOUN_STARTS | _NOT_NOUNS:
        return False
    if len(words) > 1 and words[1] in _NOUN_STARTS | {"all", "every", "it", "them", "to", "up", "out"}:
        return False  # "sever the webhook": a word before "the" is a verb the list does not know
    return not any(w in _VERBS or w in _OTHER_VERBS or "'" in w or w.endswith(("ing", "ed")) for w in words)


_OTHER_VERBS = _words(
    "can could would will should must might may shall was did had have has get gets be is are am been were i'm "
    "it's that's there's we're you're need needs want wants like likes see find know think feel come goes go"
)
_FACT_FORMS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.IGNORECASE), r)
    for p, r in (
        (r"^(?:i'm|im|i am|we're|we are)\b", "the user is"),
        (r"^(?:i've|ive|i have|we've|we have)\b", "the user has"),
        (r"^(?:i|we) (?:do not|don't|dont)\b", "the user does not"),
        (r"^(?:i|we) (?:can't|cannot)\b", "the user cannot"),
        (r"^(?:my|our)\b", "the user's"),
        (r"^this (project|repo|repository|codebase|app|machine|server|team|setup|environment)\b", r"the \1"),
    )
)  # fmt: skip
_SUBJECT = re.compile(r"^(?:i|we)\s+((?:always|never|usually|mostly|only|also|mainly|often|just|still)\s+)?(\w+)", re.I)


def _statement(text: str) -> str:
    """A fact as a plain statement about the user: "I'm on fish" → "The user is on fish"."""
    for pattern, repl in _FACT_FORMS:
        new = pattern.sub(repl, text, count=1)
        if new != text:
            return new
    m = _SUBJECT.match(text)
    if m:
        verb = m.group(2)
        return f"the user {m.group(1) or ''}{_third(verb)}{text[m.end() :]}"
    return text


_ALONE, _END = r"(?<![\w./@'-])", r"(?![\w./@'-])"  # a word on its own, not part of "oh-my-zsh" or "me.txt"
_MID = re.compile(
    rf"{_ALONE}(?:(?P<is>I'm|i'm|I am|i am|[Ww]e're|[Ww]e are)|(?P<has>I've|i've|I have|i have|[Ww]e've|[Ww]e have)"
    rf"|(?P<not>(?:I|i|[Ww]e) (?:don't|do not))|(?:I|i|[Ww]e) (?P<verb>[A-Za-z]+)|(?P<my>[Mm]y|[Oo]ur|MY|OUR)"
    rf"|(?P<me>me|ME|us)){_END}"
)


def _third_person_rest(text: str) -> str:
    """ "I" and "my" anywhere in the title as the note's reader needs them: "when I ask" → "when the user asks"."""

    def one(m: re.Match[str]) -> str:
        if m.group("verb"):
            return f"the user {_third(m.group('verb'))}"
        return {"is": "the user is", "has": "the user has", "not": "the user does not", "my": "the user's"}.get(
            str(m.lastgroup), "the user"
        )

    return _MID.sub(one, text)


_ADVERBS = _words("always never usually mostly only also just still once already often sometimes really ever then now")


def _third(verb: str) -> str:
    low = verb.lower()
    if low in _MODALS or low in _ADVERBS:
        return low
    if low in ("have", "am"):
        return {"have": "has", "am": "is"}[low]
    if low in ("do", "go"):
        return low + "es"
    if low.endswith(("ss", "sh", "ch", "x", "z")):
        return low + "es"
    if low.endswith("s"):
        return low
    if low.endswith("y") and len(low) > 2 and low[-2] not in "aeiou":
        return low[:-1] + "ies"
    return low + "s"


def _cap(text: str) -> str:
    """`text` as a title of at most TITLE_CHARS: a trailing reason dropped first, then cut at a word."""
    if len(text) > TITLE_CHARS:
        m = _REASON.search(text)
        if m and len(text[: m.start()].split()) >= 3:
            text = text[: m.start()].rstrip(" ,;:-")
    text = clip(text, TITLE_CHARS).rstrip(" ,;:-–—")
    return text[:1].upper() + text[1:]
