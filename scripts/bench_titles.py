"""How close reflection's note titles come to the ones a person wrote, on the hand-labelled corpus.

Every statement of the corpus (scripts/data/reflect_corpus/*.json) carries the user's `quote` and the
`rule` a person on the team wrote for it as a memory note. This script titles each quote with
`memvault.reflect.mine.titles.title_for(quote, kind)` and, as the baseline, with today's
`userwords.rule_title(quote)`, and compares each with the person's rule:

- **F1**: content-word F1 against the rule (words lowercased, stop words and filler dropped,
  `text.stem`), the mean over statements; also on the English quotes only (the corpus has Spanish
  and French sessions, which neither titler translates);
- **imperative**: for rules (every kind but `fact`), the share of titles that start with an
  imperative (a verb from the list below, "always", "never", "do not", "don't"); the people's rules
  are scored the same way as a reference;
- **lead-in**: the share of titles that still start with a lead-in ("so", "also", "please", "oh",
  "from now on", "I want you to", "note", …) or hold "pls"/"please";
- **over cap**: the share longer than TITLE_CHARS;
- **new words**: the share holding a content word the user did not say (grammar words aside).

Splits are the corpus's own (`reflect_corpus.split_of`, by source repository). Train and dev are
reported; the test split only with `--report-test`, once, at the end; nothing is tuned on it.

    python scripts/bench_titles.py [--report-test] [--show N]
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

import reflect_corpus  # noqa: E402

from memvault.index.chunking import STOP_WORDS  # noqa: E402
from memvault.reflect.mine.text import KEY_STOP, TITLE_CHARS, stem  # noqa: E402
from memvault.reflect.mine.titles import INSERTED, KINDS, title_for  # noqa: E402
from memvault.reflect.mine.userwords import rule_title  # noqa: E402


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_IGNORE = STOP_WORDS | KEY_STOP | {"user", "user's", "don't", "dont", "doesn't", "never", "always", "not", "no"}
_IMPERATIVE = _words(
    "add allow amend answer apply ask avoid build bump call check clean close comment commit confirm copy "
    "create define delete deploy describe disable document don't do edit enable ensure explain export "
    "factor fix follow format generate give handle ignore implement include install keep label leave let "
    "limit lint list load log look make mark merge move name never always open pin prefer propose publish "
    "pull push put read rebase refactor remove rename reply report require reset respond restart return "
    "reuse review rewrite run save say search send set show sign skip sort split squash start state stop "
    "store switch tag take tell test treat try turn update upgrade use verify wait work wrap write"
)
_LEAD_IN = re.compile(
    r"^(?:so|also|and|but|oh|ok|okay|hey|please|pls|just|btw|fyi|actually|well|yes|yeah|note|remember"
    r"|from now on|going forward|i want you to|i'd like you to|make sure|in the future)\b|\b(?:pls|plz|please)\b",
    re.IGNORECASE,
)
_ENGLISH = _words("the a to and is in of for it you i we my this that with not be on use")
_RULE_KINDS = frozenset(KINDS) - {"fact"}


def content(text: str) -> set[str]:
    """The stemmed content words of `text`."""
    return {stem(w) for w in _WORD.findall(text.lower()) if w not in _IGNORE and stem(w)}


def f1(title: str, rule: str) -> float:
    got, want = content(title), content(rule)
    if not got or not want:
        return float(got == want)
    hit = len(got & want)
    if not hit:
        return 0.0
    p, r = hit / len(got), hit / len(want)
    return 2 * p * r / (p + r)


def imperative(title: str) -> bool:
    words = _WORD.findall(title.lower())
    return bool(words) and (words[0] in _IMPERATIVE or words[:2] == ["do", "not"])


def new_words(title: str, quote: str) -> list[str]:
    """Content words of `title` the user did not say (inflections of theirs and grammar words aside)."""
    said = set(_WORD.findall(quote.lower()))
    out = []
    for w in _WORD.findall(title.lower()):
        forms = {w, w.removesuffix("s"), w.removesuffix("es"), re.sub(r"ies$", "y", w), w.removesuffix("'s")}
        if w not in INSERTED and w not in STOP_WORDS and not forms & said:
            out.append(w)
    return out


def english(quote: str) -> bool:
    words = _WORD.findall(quote.lower())
    return bool(words) and sum(w in _ENGLISH for w in words) / len(words) >= 0.15


def statements(split: str) -> list[dict[str, Any]]:
    return [st for s in reflect_corpus.sessions() if s["split"] == split for st in s["statements"]]


def measure(items: list[dict[str, Any]], titler: Callable[[str, str], str]) -> dict[str, float]:
    titles = [(titler(st["quote"], st["kind"]), st) for st in items]
    rules = [(t, st) for t, st in titles if st["kind"] in _RULE_KINDS]
    en = [(t, st) for t, st in titles if english(st["quote"])]

    def share(pairs: list[tuple[str, dict[str, Any]]], test: Callable[[str, dict[str, Any]], bool]) -> float:
        return sum(test(t, st) for t, st in pairs) / len(pairs) if pairs else 0.0

    return {
        "n": len(titles),
        "F1": sum(f1(t, st["rule"]) for t, st in titles) / max(1, len(titles)),
        "F1 en": sum(f1(t, st["rule"]) for t, st in en) / max(1, len(en)),
        "imperative": share(rules, lambda t, st: imperative(t)),
        "lead-in": share(titles, lambda t, st: _LEAD_IN.search(t) is not None),
        "over cap": share(titles, lambda t, st: len(t) > TITLE_CHARS),
        "new words": share(titles, lambda t, st: bool(new_words(t, st["quote"]))),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--report-test", action="store_true", help="also the test split (once, at the end)")
    parser.add_argument("--show", type=int, default=0, help="print N titles of each split beside the person's rule")
    args = parser.parse_args(argv)
    splits = reflect_corpus.SPLITS if args.report_test else ("train", "dev")
    titlers: dict[str, Callable[[str, str], str]] = {
        "titles.title_for": title_for,
        "userwords.rule_title (today)": lambda quote, kind: rule_title(quote),
        "the person's rule": lambda quote, kind: quote,  # replaced below: the reference row
    }
    cols = ("n", "F1", "F1 en", "imperative", "lead-in", "over cap", "new words")
    print(f"{'split':<6} {'titler':<30} " + " ".join(f"{c:>10}" for c in cols))
    for split in splits:
        items = statements(split)
        for name, titler in titlers.items():
            if name == "the person's rule":
                by_quote = {(st["quote"], st["kind"]): st["rule"] for st in items}
                row = measure(items, lambda q, k, rules=by_quote: rules[(q, k)])  # type: ignore[misc]
            else:
                row = measure(items, titler)
            cells = " ".join(f"{row[c]:>10d}" if c == "n" else f"{row[c]:>10.3f}" for c in cols)
            print(f"{split:<6} {name:<30} {cells}")
        for st in items[: args.show]:
            print(f"   {st['kind']:<10} {st['quote'][:90]!r}\n      new: {title_for(st['quote'], st['kind'])}")
            print(f"      old: {rule_title(st['quote'])}\n      person: {st['rule']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
