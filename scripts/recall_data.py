"""Recall training data (issue 29): load and validate every scripts/data/recall_train/*.jsonl, and split it.

    python scripts/recall_data.py stats

Every `*.jsonl` file in scripts/data/recall_train/ is read (a new file is picked up on the next run).
Each line is one hand-labelled example {id, source, group, prompt, passage, passage_ref, label 0/1,
kind, note?}. The split is by `group` (a note, a repository), so one group never straddles two splits:

    int(sha256("memvault-recall-v1:" + group).hexdigest(), 16) % 10  →  0–5 train, 6–7 dev, 8–9 test

Train on train, choose on dev, report test once at the end. Other scripts import this module:

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import recall_data
    for ex in recall_data.examples("train"): ...
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data" / "recall_train"
SPLITS = ("train", "dev", "test")
KINDS_POSITIVE = frozenset({"indirect", "paraphrase", "question", "lexical"})
KINDS_NEGATIVE = frozenset({"near_miss", "unrelated", "hard_negative"})
REQUIRED = ("id", "source", "group", "prompt", "passage", "passage_ref", "label", "kind")
SALT = "memvault-recall-v1:"


class DataError(ValueError):
    """A training file has a line that does not follow the schema."""


@dataclass(frozen=True)
class Example:
    id: str
    source: str
    group: str
    prompt: str
    passage: str
    passage_ref: str
    label: int
    kind: str
    note: str
    file: str  # the file's name, e.g. "kepano-vault.jsonl"

    @property
    def split(self) -> str:
        return split_of(self.group)


def split_of(group: str) -> str:
    """The split of a group: "train", "dev" or "test" (the one rule every recall-learning script uses)."""
    bucket = int(hashlib.sha256((SALT + group).encode()).hexdigest(), 16) % 10
    return "train" if bucket <= 5 else "dev" if bucket <= 7 else "test"


def _parse(line: str, where: str, file: str) -> Example:
    try:
        raw = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DataError(f"{where}: not JSON ({exc})") from exc
    if not isinstance(raw, dict):
        raise DataError(f"{where}: not a JSON object")
    missing = [key for key in REQUIRED if key not in raw]
    if missing:
        raise DataError(f"{where}: missing {', '.join(missing)}")
    for key in REQUIRED:
        if key == "label":
            continue
        if not isinstance(raw[key], str) or (key != "passage_ref" and not raw[key].strip()):
            raise DataError(f"{where}: {key} must be a non-empty string")
    label = raw["label"]
    if label not in (0, 1) or isinstance(label, bool):
        raise DataError(f"{where}: label must be 0 or 1, not {label!r}")
    kind = raw["kind"]
    if kind not in KINDS_POSITIVE | KINDS_NEGATIVE:
        raise DataError(f"{where}: unknown kind {kind!r}")
    if (label == 1) != (kind in KINDS_POSITIVE):
        raise DataError(f"{where}: kind {kind!r} does not go with label {label}")
    note = raw.get("note", "")
    if not isinstance(note, str):
        raise DataError(f"{where}: note must be a string")
    return Example(
        id=raw["id"],
        source=raw["source"],
        group=raw["group"],
        prompt=raw["prompt"],
        passage=raw["passage"],
        passage_ref=raw["passage_ref"],
        label=label,
        kind=kind,
        note=note,
        file=file,
    )


def load(data_dir: Path = DATA_DIR) -> list[Example]:
    """Every example of every `*.jsonl` in `data_dir`, validated (ids unique across files), in file order."""
    out: list[Example] = []
    seen: dict[str, str] = {}
    for path in sorted(data_dir.glob("*.jsonl")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            where = f"{path.name}:{number}"
            example = _parse(line, where, path.name)
            if example.id in seen:
                raise DataError(f"{where}: id {example.id!r} already used at {seen[example.id]}")
            seen[example.id] = where
            out.append(example)
    return out


def examples(split: str | None = None, data_dir: Path = DATA_DIR) -> list[Example]:
    """The examples of one split ("train", "dev", "test"), or all of them when `split` is None."""
    if split is not None and split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, not {split!r}")
    every = load(data_dir)
    return every if split is None else [ex for ex in every if ex.split == split]


def stats(every: list[Example]) -> str:
    """A plain table: examples per file and split, with positives and negatives, and groups per split."""
    lines = [f"{'file':<28} {'split':<6} {'n':>5} {'pos':>5} {'neg':>5} {'groups':>6}"]
    files = sorted({ex.file for ex in every})
    for file in [*files, "ALL"]:
        for split in SPLITS:
            rows = [ex for ex in every if ex.split == split and (file == "ALL" or ex.file == file)]
            pos = sum(ex.label for ex in rows)
            groups = len({ex.group for ex in rows})
            lines.append(f"{file:<28} {split:<6} {len(rows):>5} {pos:>5} {len(rows) - pos:>5} {groups:>6}")
    kinds = Counter((ex.split, ex.kind) for ex in every)
    lines.append("")
    lines.append(f"{'kind':<14} " + " ".join(f"{s:>6}" for s in SPLITS))
    for kind in sorted({ex.kind for ex in every}):
        lines.append(f"{kind:<14} " + " ".join(f"{kinds[(s, kind)]:>6}" for s in SPLITS))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["stats"])
    parser.add_argument("--data", type=Path, default=DATA_DIR, help="folder of *.jsonl files")
    args = parser.parse_args(argv)
    try:
        every = load(args.data)
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(stats(every))
    return 0


if __name__ == "__main__":
    sys.exit(main())
