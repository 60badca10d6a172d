"""Preferences: the user's lasting instructions and corrections, sentence by sentence of their own turns (pass 1).

Only what the user typed in the main conversation counts: never tool output, the assistant's words,
pasted logs or code, or the summaries Claude Code inserts after a compaction (`userwords`). Each
sentence, and each clause of it, is judged by the rules below, strongest first; rule words are
recognised through one-letter typos ("logging should necer use f-strings").

- high: "always / never …", "X should never …", "from now on …", "I prefer …", "I don't want you to …",
  "make sure you never …", "be careful not to …", "I only want …", "I'm not comfortable with X",
  "remember …", "stop doing …", "use X instead of Y", "don't ever …", a finding "already marked as a
  false positive".
- medium: facts about the user's setup ("I use X", "I sign in with X"), "as long as you don't …",
  "as noted elsewhere …", "X is the wrong fix", "X is a false positive", a correction right after the
  agent acted ("no, use the helper"; said once it is mostly about the task at hand, so a person looks first).
- low: a bare "don't …", "please use …", "… for all but X", a correction that states rather than directs
  ("no, that is a different project").
A rule found only in turns whose typed text is a long markdown document (`typed.structured`: a spec, or another
assistant's answer pasted whole) is at most medium. Questions, hedges ("maybe", "I think"), and task-scoped
wording ("for now", "this time", "this session") are not rules. A sentence that only points at a rule ("this was
marked as a false positive already") joins the sentence next to it; statements of the same rule in one session
(sharing two distinctive words, or a name like `relation.app`) become one candidate with every line as evidence,
one confidence level higher when said in more than one turn.

Just over 400 lines: the rules are a table read top to bottom, each next to the words it matches.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from memvault.reflect.transcript import CONTEXT_ROLES, Turn

from .text import KEY_STOP, QUOTE_CHARS, WORD, Candidate, clip, make_key, quote, sentences, stem, turn_ref
from .typed import echoes, structured
from .userwords import canonical, rule_title, user_sentences

_TASK_SCOPED = re.compile(
    r"\b(?:for now|right now|yet|this time|until|today|tonight|for this (?:task|pr|commit|session|one|file|change)"
    r"|in this (?:task|pr|commit|session|file|change)|this session|at the moment|temporarily|for the moment)\b"
)
_HEDGE = re.compile(
    r"\b(?:not sure|don't know|do not know|no idea|wonder|whether|maybe|perhaps|i guess|i think|probably|might be"
    r"|not always|almost never|if you (?:want|like|can)|could you|can you|would you)\b"
)
_QUESTION_START = re.compile(
    r"^(?:do|does|did|can|could|would|should|shall|is|are|was|were|will|why|how|what|when|where|which|who)"
    r"\s+(?:we|you|i|it|they|this|that|there)\b"
)
_VERB = (
    r"(?:use|run|prefer|want|write|put|keep|name|format|commit|push|deploy|work|test|start|do|add|pin|squash|rebase"
    r"|merge|build|install|check|review|document|type|lint|sign|tag|branch|ask|include|avoid|leave|touch|mock|call"
    r"|import|return|log|handle|edit|create|delete|remove|rename|split|open|close|wrap|prefix|indent|sort|store|skip"
    r"|make|change|modify|introduce|rely|hardcode|hard-code|assume|trust|break|bypass|amend|force|bump|update"
    r"|upgrade|downgrade|generate|print|catch|swallow|ignore|reformat|refactor|restart|disable|enable|comment|mix"
    r"|stop|go|be|let|send|reply|answer|respond|explain|say|lose|damage|overwrite|verify|move|report|publish)"
)
_LEAD = r"(?:(?:and|but|so|also|again|please|just|oh|ok|okay)[,\s]+)*"
_NOT_A_VERB = (
    r"(?:mind|been|was|were|had|knew|heard|seen|saw|thought|worked|works|happens|happened|fails|failed|forget|forgot"
    r"|remember|understood|gets?|got|is|are|am|the|a|an|again|ever|before)\b"
)
_NEG = r"(?:don't|do not|dont|never)"
_NAMED = r"(?!(?:it|this|that|these|those|them|here|there)\b)\w"  # an object that is not only a pointer
# Read by the statement judge (mine/judge.py) as features and vetoes.
VERB, QUESTION_START, TASK_SCOPED, HEDGE = _VERB, _QUESTION_START, _TASK_SCOPED, _HEDGE

# (rule, confidence, kind, pattern): the first that fires on a clause wins. kind "rule" states the rule
# itself; "meta" only says that something is wrong or was said before (its topic is usually next to it).
_RULES: tuple[tuple[str, str, str, re.Pattern[str]], ...] = (
    ("from-now-on", "high", "rule", re.compile(r"\b(?:from now on|going forward|from here on(?: out)?|henceforth)\b")),
    ("always-never", "high", "rule", re.compile(rf"^{_LEAD}(?:always|never)\s+(?!{_NOT_A_VERB})\w+")),
    (
        "should-never",
        "high",
        "rule",
        re.compile(r"\b(?:should|must|shall|need to|needs to|has to|have to|are to|is to)\s+(?:always|never)\s+\w+"),
    ),
    ("dont-want", "high", "rule", re.compile(rf"\bi (?:do not|don't|dont|never) want (?:you )?(?:to )?{_NAMED}")),
    ("only-want", "high", "rule", re.compile(r"\bi only (?:ever )?(?:want|use|need)\b|^only (?:ever )?use\b")),
    (
        "prefer",
        "high",
        "rule",
        re.compile(
            r"\b(?:i(?: would|'d)? (?:really |much |strongly )?prefer|my preference is|i(?:'d| would) rather)\b"
        ),
    ),
    (
        "make-sure",
        "high",
        "rule",
        re.compile(rf"\bmake sure (?:that )?(?:you )?(?:to )?(?:{_NEG}|always|not to|not)\b"),
    ),
    ("careful-not", "high", "rule", re.compile(r"\bbe careful (?:to not|not to|never to|to never)\b")),
    ("always-never", "high", "rule", re.compile(rf"\b(?:i|we|you) (?:always|never) {_VERB}\b")),
    (
        "dislike",
        "high",
        "rule",
        re.compile(
            rf"\b(?:i|i'm|im|i am) (?:really )?(?:hate|dislike|can't stand|cannot stand|(?:do not|don't) like"
            rf"|not (?:entirely |really |very |at all |fully )?comfortable with)\s+{_NAMED}"
        ),
    ),
    (
        "remember",
        "high",
        "rule",
        re.compile(
            r"^(?:please\s+|and\s+)?(?:remember|keep in mind|don't forget|do not forget)\b"
            r"(?!\s+(?:when|how|if|why|what|where))"
        ),
    ),
    ("stop-doing", "high", "rule", re.compile(rf"^{_LEAD}(?:stop|quit) \w+ing\b")),
    (
        "use-instead",
        "high",
        "rule",
        re.compile(r"^(?:please\s+)?(?:(?:always\s+)?use|we use|switch to)\s+.+?\s*,?\s*(?:instead of|rather than)\s"),
    ),
    (
        "dont-ever",
        "high",
        "rule",
        re.compile(
            rf"^{_LEAD}{_NEG}\s+ever\s+\w|^{_LEAD}{_NEG}\s+{_VERB}\b.*\b(?:ever|again|anymore|any more"
            rf"|in general|every ?time|whenever|any\s+\w+|without (?:my|asking))\b"
            rf"|^{_LEAD}again,? {_NEG} {_VERB}\b"
        ),
    ),
    (
        "false-positive",
        "high",
        "meta",
        re.compile(
            r"\b(?:already|previously|before)\b.*\b(?:false positive|fp)\b"
            r"|\b(?:false positive|fp)\b.*\balready\b"
        ),
    ),
    ("as-long-as", "medium", "rule", re.compile(rf"\bas long as (?:you )?{_NEG}\s+\w+")),
    (
        "my-setup",
        "medium",
        "rule",
        re.compile(
            rf"^{_LEAD}(?:i|we) (?:use|run|sign in with|log in with|work (?:on|with|in)|develop on|deploy (?:to|on)"
            rf"|rely on)\s+{_NAMED}"
        ),
    ),
    ("always-fact", "medium", "rule", re.compile(r"\b\w+ (?:always|never) (?!been\b|had\b)\w+s\b")),
    (
        "said-before",
        "medium",
        "meta",
        re.compile(
            r"\b(?:as (?:noted|said|mentioned|discussed|agreed) (?:elsewhere|before|earlier|above)"
            r"|as i (?:said|told you|mentioned)|like i said|i (?:already )?told you)\b"
        ),
    ),
    (
        "false-positive",
        "medium",
        "meta",
        re.compile(
            r"\b(?:is|are|was|were) (?:also )?(?:a |the )?(?!that |this |same )(?:\S+ )?(?:false positive|fp)s?\b"
            r"|\b(?:false positive|fp)s? (?:about|for|regarding|on) \w"
        ),
    ),
    (
        "wrong",
        "medium",
        "meta",
        re.compile(
            r"\b(?:is|was|that's|has) (?:the |a )?wrong (?:fix|approach|way|finding|one)\b"
            r"|^\S+(?: \S+){0,4} is wrong\b"
        ),
    ),
    ("wrong-to", "medium", "rule", re.compile(r"\b(?:it's|it is) (?:wrong|bad|dangerous) to\b")),
    ("careful-with", "medium", "rule", re.compile(rf"\bbe careful (?:with|about) {_NAMED}")),
    ("dont", "low", "rule", re.compile(rf"^{_LEAD}{_NEG}\s+{_VERB}\b")),
    ("please-use", "low", "rule", re.compile(r"^please (?:always )?use\b")),
    ("all-but", "low", "rule", re.compile(rf"^{_LEAD}{_VERB}\b.*\b(?:for all but|all except|everything except)\b")),
)
_CORRECTION = re.compile(
    r"^(?:no(?:[,.!\s]+no)*|nope|not like that|not quite|that's not (?:it|right|what i (?:asked|meant|wanted))"
    r"|that is not (?:it|right)|you're wrong|actually)\b[\s,.!:;—–-]*"
)
_APPROVAL = re.compile(
    r"^(?:thanks|thank you|worries|problem|need|that's fine|it's fine|fine|good|great|ok|okay|perfect|looks good"
    r"|lgtm|sounds good|keep (?:it )?as (?:it )?is|leave it|that's ok|i'm still|still|it's still|i still)\b"
)
_DIRECTIVE = re.compile(rf"(?:^|[,:;.]\s*)(?:please\s+)?(?:always\s+|never\s+|{_NEG}\s+)?{_VERB}\b")
_STATEMENT = re.compile(
    r"\b(?:that|this|it) (?:is|was|'s) (?:a |an |the )?(?:totally |completely |entirely )?"
    r"(?:different|wrong|not|another)\b|^(?:that|this|it)'s (?:a |the )?(?:different|wrong)\b"
)
_CLAUSE = re.compile(r"\s*(?:[,;](?=\s)|:(?=\s)|(?<=\s)\(|\)(?=\s|$)|\bbut\b|\band then\b)\s*")
_RANK = {"high": 3, "medium": 2, "low": 1}
_UP = {"low": "medium", "medium": "high", "high": "high"}
_DOWN = {"high": "medium", "medium": "low", "low": "low"}
_DIRECTIVES = frozenset(["always-never", "dont-ever", "dont", "make-sure", "careful-not", "stop-doing"])
_GENERIC = frozenset(
    ["the", "and", "but", "for", "not", "you", "your", "this", "that", "with", "are", "was", "were", "have", "has",
     "hace", "its", "it's", "don't", "dont", "never", "always", "should", "must", "want", "make", "sure", "please",
     "careful", "use", "using", "wrong", "fix", "fixed", "bug", "bugs", "false", "positive", "positives", "fp", "fps",
     "finding", "findings", "identified", "marked", "listed", "noted", "already", "also", "again", "elsewhere",
     "one", "all", "any", "some", "there", "here", "what", "which", "who", "would", "could", "will", "about", "from",
     "into", "need", "needs", "let's", "lets", "them", "they", "then", "than", "just", "only", "really", "same",
     "user", "user's", "okay", "thing", "things", "way", "like", "know", "see", "look", "done", "doing", "does"]
)  # fmt: skip
_NAME = re.compile(r"[a-z0-9]+(?:[._/][a-z0-9]+)+|[a-z0-9]+(?:-[a-z0-9]+){2,}")  # relation.app, redis-k8s-operator


@dataclass(frozen=True)
class _Hit:
    rule: str
    confidence: str
    kind: str  # "rule" | "meta"
    clause: str  # the words of the sentence that state it (the title's source)


@dataclass
class _Statement:
    """One or more sentences of the user that state one rule, with their lines."""

    hits: list[tuple[Turn, str, _Hit]]  # (turn, sentence, hit)
    words: set[str] = field(default_factory=set)
    names: set[str] = field(default_factory=set)
    reply_to: Turn | None = None
    about: str = ""  # the sentence a meta statement is about (its title when no rule is stated)


def preferences(turns: Sequence[Turn]) -> list[Candidate]:
    """The user's lasting instructions and corrections in the main conversation, one candidate per rule."""
    found: list[_Statement] = []
    previous: Turn | None = None
    said = echoes(turns)  # what the assistant said before each user turn: quoted back, it is not the user's
    for i, turn in enumerate(turns):
        if turn.sidechain or turn.role in CONTEXT_ROLES:
            continue
        if turn.role == "user":
            after_agent = previous is not None and previous.role != "user"
            found += _turn_statements(turn, previous if after_agent else None, said.get(i, ""))
        previous = turn
    return [_candidate(s) for s in _merge(found)]


def _turn_statements(turn: Turn, agent: Turn | None, echo: str = "") -> list[_Statement]:
    """The statements of one user turn: each firing sentence; a meta sentence with little content of its own
    ("this was identified as a false positive already") joins the sentence it is about, next to it."""
    parts = list(user_sentences(turn.text, echo))
    hits: list[_Hit | None] = []
    for i, sentence in enumerate(parts):
        hit = judge(sentence)
        if i == 0 and agent is not None:
            corrected = _correction(parts)
            if corrected is not None and (hit is None or _strength(corrected) >= _strength(hit)):
                hit = corrected
        hits.append(hit)
    light = [h is not None and h.kind == "meta" and sum(map(len, _content(parts[i]))) <= 2 for i, h in enumerate(hits)]
    anchors: dict[int, list[int]] = {}
    for i, hit in enumerate(hits):
        if hit is None:
            continue
        anchor = _neighbour(parts, light, i) if light[i] else i
        if anchor is not None:
            anchors.setdefault(anchor, []).append(i)
    out: list[_Statement] = []
    for anchor, members in sorted(anchors.items()):
        fired = [(turn, parts[i], hits[i]) for i in members]
        sentence_ids = sorted({anchor, *members})
        words: set[str] = set()
        names: set[str] = set()
        for i in sentence_ids:
            hit = hits[i]
            more = _content(hit.clause if hit is not None and hit.kind == "rule" else parts[i])
            words |= more[0]
            names |= more[1]
        quoted = " ".join(parts[i] for i in sentence_ids)
        hits_in = [(t, quoted, h) for t, _, h in fired if h is not None]
        reply = agent if any(h.rule == "correction" for _, _, h in hits_in) else None
        out.append(_Statement(hits_in, words, names, reply, parts[anchor]))
    return out


def judge(sentence: str) -> _Hit | None:
    """The rule a sentence of the user states (on its own, not as a reply), or None.

    The strongest rule that fires on the sentence or one of its clauses wins; the words that state it
    run from the start of the clause where a rule fired to the end of the sentence (a rule's own
    clause is preferred to a "that was wrong" one for that).
    """
    low = canonical(sentence).strip()
    if not low or len(low) > 400 or low.endswith("?") or _QUESTION_START.match(low) or _TASK_SCOPED.search(low):
        return None
    best: _Hit | None = None
    stated: str | None = None  # the words of the first rule-kind clause
    for clause_start, clause in _clauses(low):
        for rule, confidence, kind, pattern in _RULES:
            if rule != "from-now-on" and _HEDGE.search(low):
                break
            m = pattern.search(clause)
            if m is None:
                continue
            if rule == "from-now-on" and len(WORD.findall(low)) < 4:
                break
            text = sentence[_clause_of(low, clause_start + m.start()) :] if kind == "rule" else sentence
            if rule == "said-before" and len(clause) - m.end() > 15:  # "as noted elsewhere, X": X is the rule
                text, kind = sentence[clause_start + m.end() :], "rule"
            hit = _Hit(rule, confidence, kind, text.strip())
            if kind == "rule" and stated is None:
                stated = hit.clause
            if best is None or _strength(hit) > _strength(best):
                best = hit
            break
    if best is not None and best.kind == "meta" and stated is not None:
        best = _Hit(best.rule, best.confidence, "rule", stated)
    return best


def _clause_of(low: str, at: int) -> int:
    """Where the clause holding position `at` starts."""
    start = 0
    for m in _CLAUSE.finditer(low):
        if m.end() > at:
            break
        start = m.end()
    return start


def _strength(hit: _Hit) -> tuple[int, int]:
    return (_RANK[hit.confidence], hit.kind == "rule")


def _clauses(low: str) -> list[tuple[int, str]]:
    """(start, clause) for the whole sentence and each of its clauses (split at , ; : ( ) and "but")."""
    out, start = [(0, low)], 0
    for m in _CLAUSE.finditer(low):
        if m.start() > start:
            out.append((start, low[start : m.start()]))
        start = m.end()
    if 0 < start < len(low):
        out.append((start, low[start:]))
    return out


def _correction(parts: list[str]) -> _Hit | None:
    """A reply that corrects what the agent just did: "no, use X", "no no no, that is a different project …"."""
    low = canonical(parts[0]).strip()
    m = _CORRECTION.match(low)
    if m is None:
        return None
    rest = " ".join([low[m.end() :], *(canonical(p) for p in parts[1:3])]).strip()
    if len(WORD.findall(rest)) < 3 or _APPROVAL.match(rest) or rest.endswith("?") or _HEDGE.search(rest):
        return None
    if _TASK_SCOPED.search(rest):  # "no, keep it for now": about this task only, like any task-scoped sentence
        return None
    if _DIRECTIVE.search(rest):  # mostly about the task at hand ("no, keep the basic tests"): a person looks first
        return _Hit("correction", "medium", "rule", " ".join(parts[:3]))
    if _STATEMENT.search(rest):
        return _Hit("correction", "low", "rule", " ".join(parts[:3]))
    return None


def _neighbour(parts: list[str], light: list[bool], i: int) -> int | None:
    """The sentence a meta sentence is about: the nearest one with content, before it first, at most two away."""
    for j in (i - 1, i + 1, i - 2, i + 2):
        if 0 <= j < len(parts) and not light[j] and sum(map(len, _content(parts[j]))) >= 1:
            return j
    return None


def _content(text: str) -> tuple[set[str], set[str]]:
    """(distinctive word stems, names like relation.app) of a text."""
    low = canonical(text)
    names = set(_NAME.findall(low))
    stems = {stem(w) for w in re.findall(r"[a-z][a-z']+", low) if w not in _GENERIC and w not in KEY_STOP}
    return stems - {""}, names


def _merge(found: list[_Statement]) -> list[_Statement]:
    """Statements of the same rule in one session become one: two distinctive words in common, or a name."""
    groups: list[_Statement] = []
    for statement in found:
        for group in groups:
            if statement.names & group.names or len(statement.words & group.words) >= 2:
                group.hits += statement.hits
                group.words |= statement.words
                group.names |= statement.names
                group.reply_to = group.reply_to or statement.reply_to
                group.about = group.about or statement.about
                break
        else:
            groups.append(statement)
    return groups


def _candidate(statement: _Statement) -> Candidate:
    hits = statement.hits
    _, _, best = max(hits, key=lambda h: (_strength(h[2]), -h[0].line))
    confidence = max((h[2].confidence for h in hits), key=_RANK.__getitem__)
    turns = {t.line: t for t, _, _ in hits}  # each turn the statement was said in, by line
    said_in = sorted(turns)
    if len(said_in) > 1:
        confidence = _UP[confidence]  # said again in another turn: stronger evidence
    elif best.rule in _DIRECTIVES and len(_content(best.clause)[0]) <= 1:
        confidence = _DOWN[confidence]  # "don't commit" alone leans on its context: a person should look first
    if confidence == "high" and all(structured(t.text) for t in turns.values()):
        confidence = "medium"  # only ever inside long markdown documents (another assistant's answer pasted whole)
    lines: dict[int, list[str]] = {}
    for turn, sentence, _ in hits:
        lines.setdefault(turn.line, [])
        if sentence not in lines[turn.line]:
            lines[turn.line].append(sentence)
    body = "\n\n".join(
        f"{quote(clip(' '.join(said), QUOTE_CHARS))}\n— the user, L{line}" for line, said in sorted(lines.items())
    )
    if statement.reply_to is not None:
        context = next(iter(sentences(statement.reply_to.text)), "")
        if context:
            body += f'\n\nSaid in reply to the agent: "{clip(context, 200)}"'
    if len(said_in) > 1:
        body += f"\n\nSaid {len(said_in)} times in this session."
    title = rule_title(best.clause if best.kind == "rule" else statement.about or best.clause)
    rule = best.rule if len(said_in) == 1 else f"{best.rule}+repeated"
    refs = tuple(turn_ref(turns[line]) for line in said_in)
    return Candidate("preference", title, body, refs, confidence, rule, make_key("preference", title))
