"""Measure the secret scanner on the labelled corpus: catch rate on secrets, false-alarm rate on look-alikes.

    python scripts/eval_secrets.py [--corpus tests/data/secret_corpus.json] [--part dev|heldout|all] [-v]

A secret counts as caught when `secrets.redact` leaves none of its values in the text (found but
partly leaked counts as missed); a harmless text is a false alarm when `secrets.scan` finds anything.
Rates are given with and without the items marked debatable. The scanner is tuned on the `dev` part
only; `heldout` is reported, never tuned on.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from memvault.store import secrets  # noqa: E402

CORPUS = REPO / "tests" / "data" / "secret_corpus.json"


@dataclass
class Score:
    part: str
    secrets: int = 0
    caught: int = 0
    harmless: int = 0
    alarms: int = 0
    secrets_firm: int = 0  # without the debatable items
    caught_firm: int = 0
    harmless_firm: int = 0
    alarms_firm: int = 0
    missed: list[dict[str, Any]] = field(default_factory=list)
    false_alarms: list[dict[str, Any]] = field(default_factory=list)

    @property
    def catch_rate(self) -> float:
        return self.caught / self.secrets if self.secrets else 1.0

    @property
    def false_alarm_rate(self) -> float:
        return self.alarms / self.harmless if self.harmless else 0.0

    def line(self) -> str:
        firm_catch = self.caught_firm / max(1, self.secrets_firm)
        firm_alarm = self.alarms_firm / max(1, self.harmless_firm)
        return (
            f"{self.part:>8}: caught {self.caught}/{self.secrets} secrets ({self.catch_rate:.1%}),"
            f" false alarms {self.alarms}/{self.harmless} ({self.false_alarm_rate:.1%});"
            f" without debatable items {firm_catch:.1%} and {firm_alarm:.1%}"
        )


def evaluate(corpus: dict[str, Any], part: str) -> Score:
    score = Score(part)
    for item in corpus["secrets"]:
        if part != "all" and item["part"] != part:
            continue
        redacted, found = secrets.redact(item["text"])
        caught = bool(found) and not any(v in redacted for v in item["values"])
        firm = not item.get("debatable")
        score.secrets += 1
        score.caught += caught
        score.secrets_firm += firm
        score.caught_firm += caught and firm
        if not caught:
            score.missed.append(item)
    for item in corpus["harmless"]:
        if part != "all" and item["part"] != part:
            continue
        alarm = bool(secrets.scan(item["text"]))
        firm = not item.get("debatable")
        score.harmless += 1
        score.alarms += alarm
        score.harmless_firm += firm
        score.alarms_firm += alarm and firm
        if alarm:
            score.false_alarms.append(item)
    return score


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--part", choices=("dev", "heldout", "all"))
    parser.add_argument("-v", "--verbose", action="store_true", help="list what was missed and what was flagged")
    args = parser.parse_args()
    corpus = json.loads(args.corpus.read_text(encoding="utf-8"))
    for part in [args.part] if args.part else ["dev", "heldout", "all"]:
        score = evaluate(corpus, part)
        print(score.line())
        if args.verbose:
            for item in score.missed:
                print(f"    MISS {item['kind']}: {item['text'][:110]!r}")
            for item in score.false_alarms:
                print(f"    FLAG {'(debatable) ' if item.get('debatable') else ''}{item['text'][:110]!r}")


if __name__ == "__main__":
    main()
