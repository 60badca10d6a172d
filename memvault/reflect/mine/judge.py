"""The statement judge: every sentence the user typed gets a calibrated probability per kind, from shipped weights.

A sentence (a `Unit`: one sentence of the typed segments of a user turn, in any script, as `sentences`
gives them, long ones cut at clause marks) is read as hashed lexical features: its words and word pairs
(rule words' typos corrected), letter trigrams, words of other scripts, its first words, the old trigger
rules that fire on it (`prefs.judge`: a feature now, not a decision), cue words (a question, a hedge,
task-scoped wording, first person), its length and place in the turn, whether it follows the agent,
whether it is said again in another turn, and the first words of the agent's answer (an acknowledgement,
an apology). A multinomial logistic regression trained by `scripts/train_judge.py` (weights in
`judge_weights.json`, int16 in base64, read with the standard library) gives each of KINDS a
probability, made calibrated by a temperature fitted on the dev split.

`candidates` turns the judged sentences into the offline miner's statements: one candidate per
sentence whose kind is not "none" with probability at least the shipped `low` threshold; confidence
high at or above `high` (the threshold where dev precision reached 0.95), medium at or above `medium`,
else low. Hand rules stay only as vetoes: a question is never a statement, task-scoped wording ("for
now", "this time") is never high, and a destructive or exfiltrating instruction is never high.
Secrets and `<private>` spans are removed later, for every miner (`miner._finish`).

Over 400 lines: the sentences, the features, the two models that read them (lexical, and sentence vectors with
their fallbacks) and the candidates built from them must stay exactly what scripts/train_judge.py trained on;
kept in one module, a change to one is seen beside the others.
"""

from __future__ import annotations

import array
import base64
import json
import math
import operator
import re
import sys
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from itertools import pairwise
from typing import Any

from memvault.reflect.transcript import CONTEXT_ROLES, Turn

from . import prefs, titles
from .text import Candidate, make_key, prose, stem, turn_ref
from .typed import echoes, typed
from .userwords import _BOLD, _LIST_MARKER, CONTINUATION, canonical, pasted

KINDS = ("preference", "correction", "fact", "workflow", "idea", "none")
CATEGORY = {"preference": "preference", "correction": "preference", "fact": "preference",
            "workflow": "workflow", "idea": "idea"}  # fmt: skip
WEIGHTS_FILE = "judge_weights.json"
LONG_WORDS = 45  # a sentence longer than this is cut at its clause marks into units
REACTION_CHARS = 160  # the agent's answer read for its first words
VECTOR_WEIGHTS_FILE = "judge_weights_vectors.json"
VECTORS = True  # read sentence vectors when they can be had (the service, else the model loaded here)
SERVICE_S, SERVICE_S_PER_TEXT = 2.0, 0.05  # how long the warm service may take to embed a session's units
LAST_SOURCE = ["none"]  # where the last judged session's vectors came from (the benchmark prints it)
CONTEXT_CHARS = 300  # the end of the agent's message a turn answers, read as the unit's context vector

_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_CUT = re.compile(r"\s*(?:;|\s[-–—]\s|,\s+but\s|,\s+and\s+(?=always|never|don't|do not|use|no)\b)\s*")
_QUESTION = re.compile(r"\?\s*(?:\)|\W)*$")
_ACK = re.compile(
    r"\b(?:you're right|you are right|good (?:point|catch)|understood|got it|noted|sorry|apologi[sz]e|my mistake"
    r"|i'll remember|i will remember|thanks for|absolutely|of course|perfect|great|let me)\b"
)
_FIRST_PERSON = re.compile(r"^(?:i|i'm|im|we|we're|my|our)\b")
_SETUP = re.compile(r"\b(?:i'm on|i am on|i use|we use|i run|we run|my (?:setup|machine|laptop|editor|shell|os))\b")
_IMPERATIVE = re.compile(rf"^(?:please\s+)?{prefs.VERB}\b")
_DESTRUCTIVE = re.compile(
    r"\b(?:rm\s+-\w*r\w*f|rm\s+-\w*f\w*r|force[- ]push|push\s+(?:-f|--force)|reset\s+--hard|drop\s+(?:table|database)"
    r"|delete\s+(?:all|every|the whole)|wipe|disable\s+(?:\w+\s+){0,2}(?:safety|security|hooks?|checks?|tests?|auth)"
    r"|--no-verify|chmod\s+777|curl\b.*\|\s*(?:sh|bash)|(?:send|upload|post|paste|share)\s+(?:\w+\s+){0,3}"
    r"(?:secrets?|keys?|tokens?|passwords?|credentials|\.env))\b"
)


@dataclass(frozen=True)
class Unit:
    """One sentence (or clause of a long one) the user typed, with what the judge reads around it."""

    turn: Turn
    text: str
    index: int  # its place among its turn's units
    of: int  # how many units its turn has
    after_agent: bool  # the turn answers the agent
    first_turn: bool  # the session's first user turn (usually the task)
    reaction: str  # the first words of the agent's next answer, lowercased
    repeated: bool  # a unit of another user turn says much the same
    context: str = ""  # the end of the agent's message this turn answers (CONTEXT_CHARS), as written


@dataclass(frozen=True)
class Model:
    """The trained judge: hashed feature space, weights per (bucket, kind), biases, calibration and routing."""

    dim: int
    weights: Sequence[float]  # dim * len(KINDS), bucket-major
    bias: Sequence[float]
    temperature: float
    thresholds: dict[str, float]  # "low", "medium", "high": P(the best kind that is not none)
    about: dict[str, Any]

    def probabilities(self, unit: Unit) -> dict[str, float]:
        """The calibrated probability of each of KINDS for `unit`."""
        k = len(KINDS)
        logits = list(self.bias)
        w = self.weights
        for bucket in set(buckets(features(unit), self.dim)):  # each bucket once, as trained
            at = bucket * k
            for j in range(k):
                logits[j] += w[at + j]
        return _softmax(logits, self.temperature)

    def logits(self, unit: Unit) -> list[float]:
        """The uncalibrated log-probabilities of KINDS for `unit` (what the vector model blends with)."""
        k = len(KINDS)
        out = list(self.bias)
        for bucket in set(buckets(features(unit), self.dim)):  # each bucket once, as trained
            at = bucket * k
            for j in range(k):
                out[j] += self.weights[at + j]
        return _log_softmax(out)


@dataclass(frozen=True)
class VectorModel:
    """The judge with sentence vectors: LR over [unit vector ⊕ context vector ⊕ cues], blended with `Model`.

    log P = blend · log P_vectors + (1 − blend) · log P_lexical, then the temperature; its own thresholds.
    """

    model: str  # the embedding model the weights were trained on (embed.model_name)
    dim: int  # its vectors' size
    cues: tuple[str, ...]  # the features (of `features`) read as 0/1 inputs after the two vectors
    columns: Sequence[Sequence[float]]  # per kind, 2 * dim + len(cues) weights
    bias: Sequence[float]
    blend: float
    temperature: float
    thresholds: dict[str, float]
    about: dict[str, Any]

    def probabilities(
        self, unit: Unit, vector: Sequence[float], context: Sequence[float], lexical: Model
    ) -> dict[str, float]:
        """The calibrated probability of each of KINDS for `unit` with its and its context's vectors."""
        on = set(features(unit))
        x = [*vector, *context, *(1.0 if c in on else 0.0 for c in self.cues)]
        mine = _log_softmax([b + sum(map(operator.mul, x, w)) for b, w in zip(self.bias, self.columns, strict=True)])
        words = lexical.logits(unit)
        blended = [self.blend * v + (1 - self.blend) * w for v, w in zip(mine, words, strict=True)]
        return _softmax(blended, self.temperature)


def _log_softmax(z: Sequence[float]) -> list[float]:
    top = max(z)
    total = math.log(sum(math.exp(v - top) for v in z)) + top
    return [v - total for v in z]


def _softmax(z: Sequence[float], temperature: float) -> dict[str, float]:
    top = max(z)
    exp = [math.exp((v - top) / temperature) for v in z]
    total = sum(exp)
    return {kind: e / total for kind, e in zip(KINDS, exp, strict=True)}


def units(turns: Sequence[Turn]) -> list[Unit]:
    """Every unit the user typed in the main conversation, in order, with its context."""
    said = echoes(turns)
    raw: list[tuple[int, Turn, list[str], bool, str]] = []
    previous: Turn | None = None
    agent = ""  # the agent's last words before this turn
    for i, turn in enumerate(turns):
        if turn.sidechain or turn.role in CONTEXT_ROLES:
            continue
        if turn.role == "user":
            parts = [piece for sentence in sentences(turn.text, said.get(i, "")) for piece in _pieces(sentence)]
            if parts:
                raw.append((i, turn, parts, previous is not None and previous.role != "user", agent))
            agent = ""
        elif turn.role == "assistant" and turn.text.strip():
            agent = turn.text.strip()[-CONTEXT_CHARS:]
        previous = turn
    seen: dict[str, set[int]] = {}  # a content-stem signature → the turns that said it
    stems = {(i, j): _stems(p) for i, _, parts, _, _ in raw for j, p in enumerate(parts)}
    for (i, _), found in stems.items():
        for s in found:
            seen.setdefault(s, set()).add(i)
    out: list[Unit] = []
    for n, (i, turn, parts, after, context) in enumerate(raw):
        reaction = next((t.text for t in turns[i + 1 : i + 4] if t.role == "assistant" and t.text.strip()), "")
        for j, part in enumerate(parts):
            mine = stems[(i, j)]
            shared = sum(1 for s in mine if len(seen.get(s, ())) > 1)
            repeated = len(mine) >= 3 and shared / len(mine) >= 0.6
            out.append(Unit(turn, part, j, len(parts), after, n == 0, reaction[:REACTION_CHARS].lower(), repeated,
                            context))  # fmt: skip
    return out


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)|(?<=[。！？；])\s*(?=\S)")
_INLINE_ITEM = re.compile(  # "要求:1.… 2.…": a list item's number inside a line
    r"(?:^|(?<=[\s:：。；;,，.]))(\d{1,2})[.、)）](?=\s+[^\W\d]|[^\W\d\x00-\x7f])"
)
_WORD = re.compile(r"[^\W\d_]+")  # a word of any script: Latin, Cyrillic, Greek…
_HAN = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")  # Chinese, Japanese and Korean characters


def sentences(text: str, echo: str = "") -> list[str]:
    """The sentences of a user's turn that they typed themselves, in any script, list markers removed.

    What `userwords.user_sentences` reads (the typed segments, no quote or pasted-looking line, one
    list item a sentence at least, nothing of a continuation summary), but a sentence counts when it
    has two words of any script (a Russian or Chinese rule is a rule), Chinese, Japanese and Korean
    sentences end at their own stops, and a numbered list run into one line ("要求:1.… 2.…") is one
    sentence per item.
    """
    if text.lstrip().lower().startswith(CONTINUATION):
        return []
    out = []
    for raw in prose(typed(text, echo)).splitlines():
        for item in _items(raw):
            line = _BOLD.sub("", _LIST_MARKER.sub("", item)).strip()
            if _pasted(line):
                continue
            for piece in _SENTENCE_END.split(line):
                piece = piece.strip(" \t-–—")
                if piece.startswith("(") and piece.endswith(")"):
                    piece = piece[1:-1].strip()
                if len(_WORD.findall(piece)) >= 2 or len(_HAN.findall(piece)) >= 4:
                    out.append(piece)
    return out


def _pasted(line: str) -> bool:
    """`userwords.pasted`, but a Chinese, Japanese or Korean sentence (no spaces) is not a long unspaced token.

    Such a line is judged on its first 60 characters, where that rule cannot fire (logs, code, tables and
    lines of few letters are still pasted).
    """
    if not pasted(line):
        return False
    text = line.strip()
    if len(text) <= 60 or " " in text or len(_HAN.findall(text)) < 4:
        return True
    return pasted(text[:60])


def _items(line: str) -> list[str]:
    """A line holding a numbered list run together ("…要求 1.自动替换… 2.不要…") cut before each item's number.

    Only when the numbers go 1, 2, … in order (a version "2.x" or a lone "3." is not a list).
    """
    found = list(_INLINE_ITEM.finditer(line))
    numbers = [int(m.group(1)) for m in found]
    if len(found) < 2 or numbers != list(range(numbers[0], numbers[0] + len(numbers))) or numbers[0] > 1:
        return [line]
    starts = [0, *(m.start() for m in found)]
    ends = [0, *(m.end() for m in found)]
    pieces = [line[ends[i] : starts[i + 1]] for i in range(len(found))] + [line[ends[-1] :]]
    return [p for p in pieces if p.strip()]


def _pieces(sentence: str) -> list[str]:
    if len(sentence.split()) <= LONG_WORDS:
        return [sentence]
    return [p for p in _CUT.split(sentence) if len(_TOKEN.findall(p.lower())) >= 2] or [sentence]


def _stems(text: str) -> set[str]:
    return {stem(w) for w in _TOKEN.findall(text.lower()) if len(w) > 3 and w not in _COMMON} - {""}


_COMMON = frozenset(
    ["this", "that", "with", "have", "from", "they", "them", "then", "than", "what", "when", "your", "would", "could",
     "should", "there", "here", "just", "like", "also", "only", "some", "about", "into", "make", "sure", "want", "need",
     "know", "it's", "don't", "dont", "please"]
)  # fmt: skip


def features(unit: Unit) -> list[str]:
    """The judge's features of a unit, as strings (hashed by `buckets`)."""
    low = canonical(unit.text).strip()
    words = _TOKEN.findall(low)
    out = ["bias"]
    out += [f"w:{w}" for w in words]
    out += [f"b:{a}_{b}" for a, b in pairwise(words)]
    for w in words[:60]:
        padded = f"<{w}>"
        out += [f"c:{padded[i : i + 3]}" for i in range(len(padded) - 2)]
    out += [f"f:{w}" for w in words[:1]] + [f"f2:{'_'.join(words[:2])}"] if words else ["f:empty"]
    other = [w for w in _WORD.findall(low) if not w.isascii()]  # Cyrillic, Greek…: a word; Chinese…: letter pairs
    for w in other[:60]:
        out += [f"h:{w[i : i + 2]}" for i in range(len(w) - 1)] if _HAN.search(w) else [f"w:{w[:6]}"]
    hit = prefs.judge(titles.fix_typos(unit.text))  # the old rules, rule words spelt right ("allways")
    out += [f"rule:{hit.rule}", f"conf:{hit.confidence}"] if hit is not None else ["rule:none"]
    cues = (
        ("q", bool(_QUESTION.search(low)) or bool(prefs.QUESTION_START.match(low))),
        ("task", bool(prefs.TASK_SCOPED.search(low))),
        ("hedge", bool(prefs.HEDGE.search(low))),
        ("first-person", bool(_FIRST_PERSON.match(low))),
        ("setup", bool(_SETUP.search(low))),
        ("imperative", bool(_IMPERATIVE.match(low))),
        ("after-agent", unit.after_agent),
        ("first-turn", unit.first_turn),
        ("repeated", unit.repeated),
        ("ack", bool(_ACK.search(unit.reaction))),
        ("digits", any(c.isdigit() for c in low)),
        ("colon-end", low.endswith(":")),
        ("other-script", bool(other)),
    )
    out += [f"cue:{name}" for name, on in cues if on]
    n = len(words) + sum(1 if not _HAN.search(w) else max(1, len(w) // 2) for w in other)
    out.append(f"len:{'1-3' if n <= 3 else '4-7' if n <= 7 else '8-15' if n <= 15 else '16-30' if n <= 30 else '31+'}")
    place = "only" if unit.of == 1 else "first" if unit.index == 0 else "last" if unit.index == unit.of - 1 else "mid"
    out += [f"pos:{place}", f"units:{min(unit.of, 6)}"]
    return out


def buckets(feats: Sequence[str], dim: int) -> list[int]:
    """Each feature's bucket in a `dim`-wide hashed space (crc32: the same on every machine and run)."""
    return [zlib.crc32(f.encode("utf-8")) % dim for f in feats]


def decode(weights: str, scale: float) -> array.array[float]:
    """int16 weights in base64 (little-endian) times `scale`, as floats."""
    ints = array.array("h")
    ints.frombytes(base64.b64decode(weights))
    if sys.byteorder != "little":
        ints.byteswap()
    return array.array("d", (v * scale for v in ints))


def from_json(data: dict[str, Any]) -> Model:
    """The model a weights file (`scripts/train_judge.py` writes it) describes."""
    if tuple(data["kinds"]) != KINDS:
        raise ValueError(f"the weights are for kinds {data['kinds']}, not {list(KINDS)}")
    weights = decode(data["weights"], float(data["scale"]))
    if len(weights) != int(data["dim"]) * len(KINDS):
        raise ValueError("the weights file's size does not match its dim")
    return Model(int(data["dim"]), weights, [float(b) for b in data["bias"]], float(data["temperature"]),
                 {k: float(v) for k, v in data["thresholds"].items()}, dict(data.get("about") or {}))  # fmt: skip


def vector_model_from_json(data: dict[str, Any]) -> VectorModel:
    """The vector model a weights file (`scripts/train_judge.py` writes it) describes."""
    if tuple(data["kinds"]) != KINDS:
        raise ValueError(f"the weights are for kinds {data['kinds']}, not {list(KINDS)}")
    dim, cues = int(data["dim"]), tuple(data["cues"])
    flat = decode(data["weights"], float(data["scale"]))
    width = 2 * dim + len(cues)
    if len(flat) != width * len(KINDS):
        raise ValueError("the vector weights file's size does not match its dim and cues")
    columns = [flat[j * width : (j + 1) * width] for j in range(len(KINDS))]  # kind-major
    return VectorModel(str(data["model"]), dim, cues, columns, [float(b) for b in data["bias"]], float(data["blend"]),
                       float(data["temperature"]), {k: float(v) for k, v in data["thresholds"].items()},
                       dict(data.get("about") or {}))  # fmt: skip


@lru_cache(maxsize=1)
def load() -> Model:
    """The shipped lexical model (read once per process)."""
    text = resources.files(__package__).joinpath(WEIGHTS_FILE).read_text(encoding="utf-8")
    return from_json(json.loads(text))


@lru_cache(maxsize=1)
def load_vectors() -> VectorModel | None:
    """The shipped vector model (read once per process), None when it is not shipped."""
    path = resources.files(__package__).joinpath(VECTOR_WEIGHTS_FILE)
    if not path.is_file():
        return None
    return vector_model_from_json(json.loads(path.read_text(encoding="utf-8")))


@lru_cache(maxsize=1)
def _embedder() -> Any:
    """The embedding model loaded in this process (5–8 s; the reflection job's fallback when no service runs)."""
    from memvault.index import embed

    return embed.load()


def vectors(texts: Sequence[str], model: str, dim: int) -> tuple[list[list[float]] | None, str]:
    """Vectors of `texts` by the embedding model `model`, and where they came from.

    The warm service when it runs that model ("service"), else the model loaded here ("in-process"),
    else None ("lexical": sentence-transformers is not installed, the model cannot load, or a running
    service did not answer in time — the machine is busy, and loading a second model would be slower).
    """
    if not texts:
        return [], "none needed"
    from memvault.index import embed
    from memvault.recall import client

    got = client.embed(list(texts), timeout=SERVICE_S + SERVICE_S_PER_TEXT * len(texts))
    blobs: list[bytes] | None = None
    source = "lexical"
    if got is not None and got.model == model and got.dim == dim:
        blobs, source = got.vectors, "service"
    elif (got is None and client.read_info() is not None) or not embed.available():
        pass  # a service runs but did not answer in time, or there is no model to load here
    else:
        try:
            loaded = _embedder()
        except embed.EmbeddingUnavailable:
            loaded = None
        if loaded is not None and loaded.name == model and loaded.dim == dim:
            blobs, source = loaded.encode(list(texts)), "in-process"
    if blobs is None:
        return None, "lexical"
    out = []
    for blob in blobs:
        values = array.array("f")
        values.frombytes(blob)
        if sys.byteorder != "little":
            values.byteswap()
        out.append(values.tolist())
    return out, source


def vector_text(unit: Unit) -> str:
    """What the unit's vector is taken of: its words with the rule words' typos corrected ("allways" → "always").

    `canonical` mends one changed letter, the titles' correction (`titles.fix_typos`) one added or dropped too.
    """
    return titles.fix_typos(canonical(unit.text))


def judged(
    turns: Sequence[Turn], model: Model | None = None, *, use_vectors: bool | None = None
) -> list[tuple[Unit, dict[str, float]]]:
    """Every unit of `turns` with its probability per kind (with sentence vectors when they can be had)."""
    found = units(turns)
    return list(zip(found, _probabilities(found, model, use_vectors)[0], strict=True))


def _probabilities(
    found: list[Unit], model: Model | None, use_vectors: bool | None
) -> tuple[list[dict[str, float]], dict[str, float]]:
    """Each unit's probabilities and the thresholds that route them: the vector model's when vectors came."""
    lexical = model or load()
    vec = load_vectors() if (VECTORS if use_vectors is None else use_vectors) else None
    if vec is not None and found:
        texts = list(dict.fromkeys([vector_text(u) for u in found] + [u.context for u in found if u.context]))
        got, source = vectors(texts, vec.model, vec.dim)
        LAST_SOURCE[0] = source
        if got is not None:
            by = dict(zip(texts, got, strict=True))
            zero = [0.0] * vec.dim
            probs = [vec.probabilities(u, by[vector_text(u)], by[u.context] if u.context else zero, lexical)
                     for u in found]  # fmt: skip
            return probs, vec.thresholds
    elif found:
        LAST_SOURCE[0] = "lexical"
    return [lexical.probabilities(u) for u in found], lexical.thresholds


def vetoed(text: str) -> str | None:
    """Why a unit can never be saved without a person's look ("question" means: not a statement at all)."""
    low = canonical(text).strip()
    if _QUESTION.search(low):
        return "question"
    if _DESTRUCTIVE.search(low):
        return "destructive"
    if prefs.TASK_SCOPED.search(low):
        return "task-scoped"
    return None


def _before(every: list[Unit], unit: Unit) -> str:
    """The unit typed just before `unit` in its turn (what a pointer such as "do this always" points at)."""
    at = every.index(unit)
    return every[at - 1].text if at and every[at - 1].turn is unit.turn else ""


def candidates(
    turns: Sequence[Turn], model: Model | None = None, *, use_vectors: bool | None = None
) -> list[Candidate]:
    """One candidate per unit the judge finds a statement in (see the module docstring), said-again ones merged."""
    every = units(turns)
    scored, t = _probabilities(every, model, use_vectors)
    found: list[tuple[Unit, str, float, bool]] = []
    for unit, probs in zip(every, scored, strict=True):
        kind, p = max(((k, v) for k, v in probs.items() if k != "none"), key=lambda kv: kv[1])
        if p < t["low"]:
            continue
        why = vetoed(unit.text)
        if why == "question":
            continue
        found.append((unit, kind, p, why is not None))  # a veto: at most medium, a person looks first
    out: list[Candidate] = []
    for group in _merge(found):
        unit, kind, p, vetoed_unit = max(group, key=lambda g: g[2])
        confidence = "high" if p >= t["high"] and not vetoed_unit else "medium" if p >= t["medium"] else "low"
        said: dict[int, list[str]] = {}
        for u, *_ in sorted(group, key=lambda g: (g[0].turn.line, g[0].index)):
            said.setdefault(u.turn.line, []).append(u.text)
        context = _before(every, unit)
        more = [(line, " ".join(s)) for line, s in sorted(said.items()) if line != unit.turn.line]
        body = titles.body_for(unit.text, kind, unit.turn.line, " ".join(said[unit.turn.line]), context=context,
                               more=more)  # fmt: skip
        category = CATEGORY[kind]
        title = titles.title_for(unit.text, kind, context)
        refs = tuple(turn_ref(g[0].turn) for g in sorted(group, key=lambda g: g[0].turn.line))
        out.append(Candidate(category, title, body, tuple(dict.fromkeys(refs)), confidence, f"judge:{kind}",
                             make_key(category, title), "follow-up" if category == "idea" else None))  # fmt: skip
    return out


def _merge(found: list[tuple[Unit, str, float, bool]]) -> list[list[tuple[Unit, str, float, bool]]]:
    """Units of different turns that say the same (most content stems shared) become one statement."""
    groups: list[tuple[set[str], list[tuple[Unit, str, float, bool]]]] = []
    for item in found:
        mine = _stems(item[0].text)
        for words, members in groups:
            if len(mine) >= 3 and len(mine & words) / min(len(mine), len(words) or 1) >= 0.7 and all(
                m[0].turn.line != item[0].turn.line for m in members
            ):
                members.append(item)
                words |= mine
                break
        else:
            groups.append((set(mine), [item]))
    return [members for _, members in groups]
