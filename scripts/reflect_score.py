"""Scoring of reflection candidates against the hand labels: one-to-one matching, per category and per route.

Used by scripts/bench_reflect.py. A candidate matches a label when it is from the same transcript, in
the label's category (or its `alt_category`), and its statement line (its first evidence line: what
the user said, or the error a fix starts from) lies within ±SLACK lines of one of the label's lines.
Later evidence lines (an explanation, a repetition, the confirmation) do not make a match: a long
fix episode must not claim the label of the next one. Two refinements keep that honest on real
sessions:

- **Several statements on one line.** When more than one label is within reach (a numbered list of
  rules in one message), the candidate goes to the label whose quoted words it shares most, and
  must share at least MIN_OVERLAP of them; a candidate about none of them is a false positive.
- **Negatives.** A candidate whose evidence lines are only lines labelled as negatives (task steps,
  questions, one-off directions) matches nothing, even when a label is within ±SLACK lines.

Matching is one-to-one: a second candidate for an already matched label is a false positive (a
duplicate). Disputed labels are optional: a candidate that matches one counts neither way, and they
are left out of recall. Routes are the ones a fresh vault gives: high → saved, medium → review,
low → inbox, ideas → the incubator.

`score_corpus` scores the hand-labelled corpus (scripts/data/reflect_corpus) the same way, with any
category matching (the corpus labels kinds of statement, not the miner's categories): MUST and NICE
recall, note precision, HIGH precision, negatives saved.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

SLACK = 3  # evidence within this many lines of a labelled line still matches
MIN_OVERLAP = 0.3  # share of a label's quoted words a candidate must carry when several labels are in reach
CATEGORIES = ("preference", "fix", "workflow", "idea")
ROUTES = ("saved", "review", "inbox", "idea")

_WORD = re.compile(r"[a-z0-9]+")
_STOP_WORDS = (
    "the a an and or but of to in on at for with is are was were be been it its this that these those i you we "
    "they he she my your our me us do does did not no so as if then than there here what which who how why when "
    "can could would should will just also all any some one two let lets let's please ok okay yes "
    "user agent said words instruction preference correction fix quoted line"
)
_STOP = frozenset(_STOP_WORDS.split())


def route_of(category: str, confidence: str) -> str:
    if category == "idea":
        return "idea"
    return {"high": "saved", "medium": "review"}.get(confidence, "inbox")


def words(text: str) -> set[str]:
    """Content words, crudely stemmed (plural s dropped, then the first five letters): enough to compare statements."""
    out = set()
    for w in _WORD.findall(text.lower()):
        if w in _STOP or len(w) < 2:
            continue
        if len(w) > 3 and w.endswith("s"):
            w = w[:-1]
        out.add(w[:5])
    return out


def overlap(candidate_text: str, label: dict[str, Any]) -> float:
    """How much the candidate and the label are the same statement, 0..1.

    The larger of: the share of the label's quoted words found in the candidate, and the share of the
    candidate's words found in the label's quote and summary (a label's quote is from one of its
    lines; a repetition on another line is recognised through the summary).
    """
    quote, mine = words(label.get("quote") or ""), words(candidate_text)
    about = quote | words(label.get("summary") or "")
    if not about or not mine:
        return 1.0 if not about else 0.0
    by_quote = len(quote & mine) / len(quote) if quote else 0.0
    return max(by_quote, len(mine & about) / len(mine))


def evidence_lines(evidence: Iterable[Any]) -> list[int]:
    out = []
    for ref in evidence:
        text = str(ref)
        if text.startswith("L") and text[1:].isdigit():
            out.append(int(text[1:]))
        elif text.isdigit():
            out.append(int(text))
    return out


def _near(a: Sequence[int], b: Sequence[int]) -> bool:
    return any(abs(x - y) <= SLACK for x in a for y in b)


def _categories(label: dict[str, Any]) -> set[str]:
    return {label["category"], *([label["alt_category"]] if label.get("alt_category") else [])}


def match(
    mined: dict[str, list[Any]],
    labels: list[dict[str, Any]],
    negatives: list[dict[str, Any]],
    *,
    by_category: bool = True,
) -> tuple[list[dict[str, Any]], set[int], dict[str, set[int]]]:
    """Match candidates to labels one-to-one: per candidate a row with outcome tp | fp | optional, the matched
    labels' indices, and the negative lines per transcript. `by_category=False` lets a candidate of any
    category match a label (the corpus's kinds are not the miner's categories)."""
    negative_lines: dict[str, set[int]] = {}
    for n in negatives:
        negative_lines.setdefault(n["transcript"], set()).add(int(n["line"]))
    matched: set[int] = set()
    rows: list[dict[str, Any]] = []  # one per candidate: outcome tp | fp | optional
    for rel, cands in mined.items():
        for cand in cands:
            lines = evidence_lines(cand.evidence)
            text = f"{cand.title}\n{cand.body}"
            row = {"transcript": rel, "candidate": cand, "route": route_of(cand.category, cand.confidence)}
            near = [
                i
                for i, label in enumerate(labels)
                if label["transcript"] == rel
                and (not by_category or cand.category in _categories(label))
                and _near(lines[:1], label["lines"])
            ]
            only_negative = bool(lines) and set(lines) <= negative_lines.get(rel, set())
            if only_negative and not any(set(lines) & set(labels[i]["lines"]) for i in near):
                near = []
            ranked = sorted(near, key=lambda i: (-overlap(text, labels[i]), i))
            if len(ranked) > 1:
                ranked = [i for i in ranked if overlap(text, labels[i]) >= MIN_OVERLAP]
            free = [i for i in ranked if i not in matched]
            if free:
                matched.add(free[0])
                label = labels[free[0]]
                row.update(label=label, outcome="optional" if label.get("disputed") else "tp")
            elif ranked and labels[ranked[0]].get("disputed"):
                row.update(label=labels[ranked[0]], outcome="optional")
            else:
                why = "duplicate of a matched label" if ranked else ("a negative line" if only_negative else "no label")
                row.update(outcome="fp", why=why)
            rows.append(row)
    return rows, matched, negative_lines


def score(mined: dict[str, list[Any]], labels: list[dict[str, Any]], negatives: list[dict[str, Any]]) -> dict[str, Any]:
    """Match `mined` (transcript → candidates) to `labels`; precision and recall per category and per route."""
    rows, matched, negative_lines = match(mined, labels, negatives)
    counted = [i for i, label in enumerate(labels) if not label.get("disputed")]
    return {
        "per_category": _table(
            rows,
            labels,
            counted,
            matched,
            CATEGORIES,
            lambda r: r["candidate"].category,
            lambda label: label["category"],
        ),
        "per_route": _table(
            rows,
            labels,
            counted,
            matched,
            ROUTES,
            lambda r: r["route"],
            lambda label: route_of(label["category"], label["confidence"]),
        ),
        "negatives_captured": sorted(
            {
                (r["transcript"], line)
                for r in rows
                for line in evidence_lines(r["candidate"].evidence)[:1]
                if line in negative_lines.get(r["transcript"], set())
            }
        ),
        "negatives": sum(len(v) for v in negative_lines.values()),
        "false_positives": [_describe(r) for r in rows if r["outcome"] == "fp"],
        "optional": [_describe(r) for r in rows if r["outcome"] == "optional"],
        "misses": [
            {
                "transcript": labels[i]["transcript"],
                "category": labels[i]["category"],
                "lines": labels[i]["lines"],
                "confidence": labels[i]["confidence"],
                "summary": labels[i]["summary"],
            }
            for i in counted
            if i not in matched
        ],
    }


def corpus_labels(sessions: Iterable[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The corpus's statements and negatives (scripts/data/reflect_corpus) as labels for `match`, by session id."""
    labels, negatives = [], []
    for s in sessions:
        for i, st in enumerate(s["statements"]):
            labels.append(
                {
                    "transcript": s["id"],
                    "id": f"{s['id']}#{i}",
                    "category": st["kind"],
                    "lines": st.get("lines") or [st["line"]],
                    "quote": st["quote"],
                    "summary": st["rule"],
                    "confidence": st["label"],  # MUST | NICE
                    "disputed": st.get("disputed"),
                }
            )
        negatives += [{"transcript": s["id"], "line": n["line"], "quote": n["quote"]} for n in s["negatives"]]
    return labels, negatives


def score_corpus(mined: dict[str, list[Any]], sessions: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Score candidates (session id → candidates, evidence in the corpus's line numbers) against the corpus labels.

    Matching is `match` with any category (a statement's kind is not a miner category): same session,
    statement line within ±SLACK of one of the label's lines, quoted words when several labels are in
    reach, never through negative lines alone, one-to-one, disputed labels optional. MUST and NICE
    recall count the non-disputed statements captured; note precision is right candidates (matching a
    MUST or NICE statement) over all candidates but the optional ones; HIGH precision is the same over
    the candidates the miner marks high (the router saves them at once); a negative is saved when a
    wrong candidate's statement line is its line.
    """
    labels, negatives = corpus_labels(sessions)
    rows, matched, _ = match(mined, labels, negatives, by_category=False)
    counted = [r for r in rows if r["outcome"] != "optional"]
    high = [r for r in counted if r["candidate"].confidence == "high"]
    wrong_at = {(r["transcript"], line) for r in rows if r["outcome"] == "fp"
                for line in evidence_lines(r["candidate"].evidence)[:1]}  # fmt: skip
    saved = [n for n in negatives if (n["transcript"], int(n["line"])) in wrong_at]

    def recall(tier: str) -> dict[str, Any]:
        wanted = [i for i, label in enumerate(labels) if label["confidence"] == tier and not label.get("disputed")]
        found = sum(1 for i in wanted if i in matched)
        return {"labels": len(wanted), "captured": found, "recall": round(found / len(wanted), 3) if wanted else None}

    def precision(group: list[dict[str, Any]]) -> dict[str, Any]:
        tp = sum(1 for r in group if r["outcome"] == "tp")
        return {"candidates": len(group), "right": tp, "precision": round(tp / len(group), 3) if group else None}

    return {
        "MUST": recall("MUST"),
        "NICE": recall("NICE"),
        "notes": precision(counted),
        "high": precision(high),
        "negatives": {
            "labels": len(negatives),
            "saved": len(saved),
            "rate": round(len(saved) / len(negatives), 3) if negatives else None,
        },
        "optional": sum(1 for r in rows if r["outcome"] == "optional"),
        "false_positives": [_describe(r) for r in rows if r["outcome"] == "fp"],
        "misses": [
            {k: label[k] for k in ("transcript", "confidence", "lines", "quote")}
            for i, label in enumerate(labels)
            if not label.get("disputed") and i not in matched
        ],
    }


def _table(
    rows: list[dict[str, Any]],
    labels: list[dict[str, Any]],
    counted: list[int],
    matched: set[int],
    groups: Sequence[str],
    of_row: Any,
    of_label: Any,
) -> dict[str, dict[str, Any]]:
    """Per group: labels expected there, candidates there (optional ones left out), true positives, P and R.

    Recall of a group is the share of its labels captured at all (in any route); precision is the share
    of the group's candidates that match a label.
    """
    out = {}
    for group in (*groups, "all"):

        def has(value: str, group: str = group) -> bool:
            return group == "all" or value == group

        mine = [r for r in rows if has(of_row(r)) and r["outcome"] != "optional"]
        tp = sum(1 for r in mine if r["outcome"] == "tp")
        wanted = [i for i in counted if has(of_label(labels[i]))]
        found = sum(1 for i in wanted if i in matched)
        out[group] = {
            "labels": len(wanted),
            "candidates": len(mine),
            "true_positives": tp,
            "captured": found,
            "precision": round(tp / len(mine), 3) if mine else None,
            "recall": round(found / len(wanted), 3) if wanted else None,
        }
    return out


def _describe(row: dict[str, Any]) -> dict[str, Any]:
    c = row["candidate"]
    out = {
        "transcript": row["transcript"],
        "category": c.category,
        "confidence": c.confidence,
        "evidence": list(c.evidence),
        "title": c.title,
        "rule": c.rule,
    }
    if "why" in row:
        out["why"] = row["why"]
    if "label" in row:
        out["label"] = row["label"].get("id") or row["label"]["summary"][:60]
    return out
