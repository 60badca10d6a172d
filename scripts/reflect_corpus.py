"""The hand-labelled reflection corpus (scripts/data/reflect_corpus/*.json): check it, count it, split it, export it.

    python scripts/reflect_corpus.py check  [--corpus DIR]
    python scripts/reflect_corpus.py stats  [--corpus DIR]
    python scripts/reflect_corpus.py split  [--corpus DIR]
    python scripts/reflect_corpus.py export --mirrors DIR --out DIR [--corpus DIR]

The corpus names real sessions by repository, commit, path, size and sha256; no transcript is in
the repository (scripts/data/reflect_corpus/README.md). `export` reads each session out of a git
mirror of its repository (`git cat-file blob COMMIT:PATH`, the same bytes as `git show`) into
OUT/<host>/<session id>.<ext>, checks its size and sha256, and names every missing or mismatched
session on one line. `check` validates every *.json file of the corpus folder. `split` is the
train / dev / test split by source repository (`split_of`); the seven sessions of the shared Claude Code transcripts
keep their own labels and split (scripts/data/reflect_labels.json) and are reported apart.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "scripts" / "data" / "reflect_corpus"
LEGACY_LABELS = REPO / "scripts" / "data" / "reflect_labels.json"
LEGACY_SEVEN = ("tonyandrewmeyer-charming-with-claude", "M-Thisness-M-Claude")  # the seven interactive sessions

HOSTS = ("claude-code", "codex", "gemini")
KINDS = ("preference", "correction", "fact", "workflow", "idea")
LABELS = ("MUST", "NICE")
NEGATIVE_WHY = ("one-off-task-step", "approval", "question", "pasted-text", "task-scoped-fix")
QUOTE_CHARS = 200
SPLIT_SALT = "memvault-corpus-v1:"
SPLITS = ("train", "dev", "test")

_SESSION_KEYS = {
    "id": str, "host": str, "repo": str, "commit": str, "path": str, "licence": str, "bytes": int,
    "sha256": str, "client_version": str, "nature": str, "turns": list, "statements": list, "negatives": list,
}  # fmt: skip
_SESSION_OPTIONAL = {"notes": (str, list)}
_STATEMENT_KEYS = {"line": int, "quote": str, "kind": str, "label": str, "rule": str, "why": str}
_STATEMENT_OPTIONAL = {"disputed": str, "lines": list, "quote_note": str}
_NEGATIVE_KEYS = {"line": int, "quote": str, "why": str}
_HEX40, _HEX64 = re.compile(r"[0-9a-f]{40}"), re.compile(r"[0-9a-f]{64}")
_REPO_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9._-]+")


def split_of(repo: str) -> str:
    """The split of every session of `repo`: the sha256 of SPLIT_SALT + repo, as a number, modulo 10;
    0-5 train, 6-7 dev, 8-9 test. Fixed before any result was seen; never tuned."""
    bucket = int(hashlib.sha256((SPLIT_SALT + repo).encode("utf-8")).hexdigest(), 16) % 10
    return "train" if bucket < 6 else "dev" if bucket < 8 else "test"


def load(corpus: Path = CORPUS) -> list[tuple[Path, dict[str, Any]]]:
    """Every corpus file (sorted *.json) and its parsed content; raises ValueError for one that is not JSON."""
    out = []
    for path in sorted(Path(corpus).glob("*.json")):
        try:
            out.append((path, json.loads(path.read_text(encoding="utf-8"))))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{path.name}: not readable JSON: {exc}") from exc
    return out


def sessions(corpus: Path = CORPUS) -> list[dict[str, Any]]:
    """Every session of every corpus file, with `file` (the corpus file's name) and `split` added."""
    out = []
    for path, data in load(corpus):
        for session in data.get("sessions") or []:
            if isinstance(session, dict):
                out.append({**session, "file": path.name, "split": split_of(str(session.get("repo", "")))})
    return out


def exported_path(out: Path, session: dict[str, Any]) -> Path:
    """Where `export` puts a session: OUT/<host>/<session id><the path's extension>."""
    return Path(out) / session["host"] / (session["id"] + Path(session["path"]).suffix)


def _typed(where: str, obj: dict[str, Any], required: dict[str, Any], optional: dict[str, Any]) -> list[str]:
    problems = []
    for key, kind in required.items():
        if key not in obj:
            problems.append(f"{where}: missing '{key}'")
        elif not isinstance(obj[key], kind) or isinstance(obj[key], bool):
            problems.append(f"{where}: '{key}' is not {kind.__name__}")
    for key, value in obj.items():
        if key in optional:
            if not isinstance(value, optional[key]):
                problems.append(f"{where}: '{key}' has the wrong type")
        elif key not in required:
            problems.append(f"{where}: unknown field '{key}'")
    return problems


def _quote(where: str, item: dict[str, Any]) -> list[str]:
    quote = item.get("quote")
    if not isinstance(quote, str) or not quote.strip():
        return [f"{where}: empty quote"]
    return [f"{where}: quote is {len(quote)} characters (at most {QUOTE_CHARS})"] if len(quote) > QUOTE_CHARS else []


def _check_session(where: str, s: dict[str, Any], host: Any) -> list[str]:
    problems = _typed(where, s, _SESSION_KEYS, _SESSION_OPTIONAL)
    if problems:
        return problems
    if s["host"] not in HOSTS:
        problems.append(f"{where}: host '{s['host']}' is not one of {', '.join(HOSTS)}")
    elif host not in (None, "mixed") and s["host"] != host:  # a "mixed" file: each session names its host
        problems.append(f"{where}: host '{s['host']}' in a file for '{host}'")
    if not _REPO_NAME.fullmatch(s["repo"]):
        problems.append(f"{where}: repo '{s['repo']}' is not owner/name")
    if not _HEX40.fullmatch(s["commit"]):
        problems.append(f"{where}: commit is not 40 lowercase hex digits")
    if not _HEX64.fullmatch(s["sha256"]):
        problems.append(f"{where}: sha256 is not 64 lowercase hex digits")
    if s["bytes"] <= 0:
        problems.append(f"{where}: bytes must be positive")
    if not s["path"] or s["path"].startswith("/") or ".." in Path(s["path"]).parts:
        problems.append(f"{where}: path must be relative to the repository")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", s["id"]):
        problems.append(f"{where}: id '{s['id']}' is not a plain file name")
    turns = s["turns"]
    if not all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in turns):
        problems.append(f"{where}: turns must be non-negative integers")
        return problems
    if len(set(turns)) != len(turns):
        problems.append(f"{where}: a turn is listed twice")
    reviewed = set(turns)
    for i, st in enumerate(s["statements"]):
        at = f"{where} statement {i} (line {st.get('line') if isinstance(st, dict) else '?'})"
        if not isinstance(st, dict):
            problems.append(f"{at}: not an object")
            continue
        found = _typed(at, st, _STATEMENT_KEYS, _STATEMENT_OPTIONAL)
        problems += found + _quote(at, st)
        if found:
            continue
        if st["kind"] not in KINDS:
            problems.append(f"{at}: kind '{st['kind']}' is not one of {', '.join(KINDS)}")
        if st["label"] not in LABELS:
            problems.append(f"{at}: label '{st['label']}' is not MUST or NICE")
        for line in [st["line"], *st.get("lines", [])]:
            if line not in reviewed:
                problems.append(f"{at}: line {line} is not among the session's turns")
        if "lines" in st and st["line"] not in st["lines"]:
            problems.append(f"{at}: 'lines' does not hold 'line'")
    for i, neg in enumerate(s["negatives"]):
        at = f"{where} negative {i} (line {neg.get('line') if isinstance(neg, dict) else '?'})"
        if not isinstance(neg, dict):
            problems.append(f"{at}: not an object")
            continue
        found = _typed(at, neg, _NEGATIVE_KEYS, {"typed": bool})
        problems += found + _quote(at, neg)
        if found:
            continue
        if neg["why"] not in NEGATIVE_WHY and not re.fullmatch(r"other\(.+\)", neg["why"], re.DOTALL):
            problems.append(f"{at}: why '{neg['why'][:40]}' is not one of {', '.join(NEGATIVE_WHY)} or other(…)")
        if neg["line"] not in reviewed and neg.get("typed") is not False:  # typed false: injected in the user's name
            problems.append(f"{at}: line {neg['line']} is not among the session's turns")
    return problems


def check(corpus: Path = CORPUS) -> list[str]:
    """Every problem in the corpus files, one line each (none: the corpus is valid)."""
    try:
        files = load(corpus)
    except ValueError as exc:
        return [str(exc)]
    if not files:
        return [f"no corpus files (*.json) in {corpus}"]
    problems: list[str] = []
    ids: dict[str, str] = {}
    shas: dict[str, str] = {}
    for path, data in files:
        if not isinstance(data, dict):
            problems.append(f"{path.name}: not a JSON object")
            continue
        for key in ("about", "host", "sessions"):
            if key not in data:
                problems.append(f"{path.name}: missing '{key}'")
        if not isinstance(data.get("sessions"), list):
            continue
        for i, s in enumerate(data["sessions"]):
            where = f"{path.name} session {i}" + (f" {s.get('id')}" if isinstance(s, dict) else "")
            if not isinstance(s, dict):
                problems.append(f"{where}: not an object")
                continue
            problems += _check_session(where, s, data.get("host"))
            if isinstance(s.get("id"), str):
                if s["id"] in ids:
                    problems.append(f"{where}: id also used in {ids[s['id']]}")
                ids.setdefault(s["id"], path.name)
            if isinstance(s.get("sha256"), str):
                if s["sha256"] in shas:
                    problems.append(f"{where}: the same session (sha256) is already {shas[s['sha256']]}")
                shas.setdefault(s["sha256"], f"{path.name} {s.get('id')}")
    return problems


def git_dir(mirrors: Path, repo: str) -> Path | None:
    """A git directory for `repo` under `mirrors`: <owner>+<name> or <owner>/<name>, bare, plain clone or
    a mirror folder holding the git directory one level down (as the search tool's fetch leaves them)."""
    owner, name = repo.split("/", 1)
    for base in (mirrors / f"{owner}+{name}", mirrors / owner / name, mirrors / f"{owner}+{name}.git"):
        if not base.is_dir():
            continue
        for candidate in (base, base / ".git", *sorted(p for p in base.iterdir() if p.is_dir())):
            if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
                return candidate
            if (candidate / ".git" / "HEAD").is_file():
                return candidate / ".git"
    return None


def export(corpus: Path, mirrors: Path, out: Path) -> tuple[int, list[str]]:
    """Write every session found in `mirrors` to `out` after checking its size and sha256.

    Returns how many sessions are in `out` now and one line per session that is not: no mirror,
    not in the mirror at that commit, or other bytes than the labels name (such a file is not written:
    its line numbers would not be the labelled ones).
    """
    done, problems = 0, []
    for s in sessions(corpus):
        target = exported_path(out, s)
        if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == s["sha256"]:
            done += 1
            continue
        where = git_dir(mirrors, s["repo"])
        if where is None:
            problems.append(f"missing: {s['id']}: no mirror of {s['repo']} under {mirrors}")
            continue
        run = subprocess.run(
            ["git", "--git-dir", str(where), "cat-file", "blob", f"{s['commit']}:{s['path']}"],
            capture_output=True,
            check=False,
        )
        if run.returncode != 0:
            why = run.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["git failed"]
            problems.append(f"missing: {s['id']}: {s['repo']} {s['commit'][:12]}:{s['path']}: {why[0]}")
            continue
        data = run.stdout
        digest = hashlib.sha256(data).hexdigest()
        if len(data) != s["bytes"] or digest != s["sha256"]:
            problems.append(
                f"mismatch: {s['id']}: {len(data)} bytes, sha256 {digest[:12]}… "
                f"(labels say {s['bytes']} bytes, {s['sha256'][:12]}…)"
            )
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        part = target.with_name(target.name + ".part")
        part.write_bytes(data)
        part.replace(target)
        done += 1
    return done, problems


def legacy(labels: Path = LEGACY_LABELS) -> dict[str, list[str]]:
    """The seven shared interactive Claude Code sessions by their own split (reflect_labels.json: dev, heldout)."""
    data = json.loads(Path(labels).read_text(encoding="utf-8"))
    split = data.get("split", {})
    seven = [rel for part in ("dev", "heldout") for rel in split.get(part, []) if rel.split("/")[0] in LEGACY_SEVEN]
    return {part: [rel for rel in seven if rel in split.get(part, [])] for part in ("dev", "heldout")}


def _counts(group: list[dict[str, Any]]) -> dict[str, int]:
    statements = [st for s in group for st in s["statements"]]
    return {
        "sessions": len(group),
        "repos": len({s["repo"] for s in group}),
        "turns": sum(len(s["turns"]) for s in group),
        "MUST": sum(1 for st in statements if st["label"] == "MUST"),
        "NICE": sum(1 for st in statements if st["label"] == "NICE"),
        "disputed": sum(1 for st in statements if st.get("disputed")),
        "negatives": sum(len(s["negatives"]) for s in group),
        "MB": round(sum(s["bytes"] for s in group) / 1e6, 1),
    }


def stats(corpus: Path = CORPUS) -> dict[str, Any]:
    """Counts per host and per split, kinds, licences."""
    every = sessions(corpus)
    by_host, by_split = defaultdict(list), defaultdict(list)
    for s in every:
        by_host[s["host"]].append(s)
        by_split[s["split"]].append(s)
    def licence(s: dict[str, Any]) -> str:
        return "none stated" if s["licence"].startswith("none stated") else s["licence"].split(" (")[0]

    return {
        "hosts": {h: _counts(by_host[h]) for h in HOSTS if h in by_host},
        "splits": {p: _counts(by_split[p]) for p in SPLITS},
        "all": _counts(every),
        "kinds": dict(Counter(st["kind"] for s in every for st in s["statements"]).most_common()),
        "licences": {h: dict(Counter(licence(s) for s in by_host[h]).most_common()) for h in HOSTS if h in by_host},
        "host_by_split": {p: dict(Counter(s["host"] for s in by_split[p])) for p in SPLITS},
        "repos": {r: split_of(r) for r in sorted({s["repo"] for s in every}, key=str.lower)},
    }


def _table(rows: dict[str, dict[str, int]], first: str) -> None:
    cols = ("sessions", "repos", "turns", "MUST", "NICE", "disputed", "negatives", "MB")
    print(f"{first:<12}" + "".join(f"{c:>10}" for c in cols))
    for name, row in rows.items():
        print(f"{name:<12}" + "".join(f"{row[c]:>10}" for c in cols))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=("check", "stats", "split", "export"))
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="the folder of corpus *.json files")
    parser.add_argument("--mirrors", type=Path, help="export: the folder holding git mirrors of the repositories")
    parser.add_argument("--out", type=Path, help="export: the folder to write the sessions into")
    args = parser.parse_args(argv)
    if args.command == "check":
        problems = check(args.corpus)
        for line in problems:
            print(line)
        print(f"{len(problems)} problem(s)" if problems else f"ok: {len(sessions(args.corpus))} sessions")
        return 1 if problems else 0
    if args.command == "export":
        if args.mirrors is None or args.out is None:
            parser.error("export needs --mirrors DIR and --out DIR")
        done, problems = export(args.corpus, args.mirrors, args.out)
        for line in problems:
            print(line)
        print(f"exported: {done} of {done + len(problems)} sessions in {args.out}")
        return 1 if problems else 0
    result = stats(args.corpus)
    if args.command == "stats":
        _table({**result["hosts"], "all": result["all"]}, "host")
        print("\nkinds: " + ", ".join(f"{k} {v}" for k, v in result["kinds"].items()))
        for host, counts in result["licences"].items():
            print(f"licences, {host}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
        return 0
    print(f"split = sha256('{SPLIT_SALT}' + repo) as an integer, mod 10: 0-5 train, 6-7 dev, 8-9 test\n")
    _table(result["splits"], "split")
    print()
    for part in SPLITS:
        print(f"{part}: " + ", ".join(f"{h} {n}" for h, n in sorted(result["host_by_split"][part].items())))
    print()
    for part in SPLITS:
        print(f"{part}: " + ", ".join(r for r, p in result["repos"].items() if p == part))
    old = legacy()
    print(
        f"\nthe shared Claude Code transcripts (scripts/data/reflect_labels.json, its own split, kept): "
        f"{len(old['dev']) + len(old['heldout'])} interactive sessions, "
        f"{len(old['dev'])} dev, {len(old['heldout'])} held-out"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
