"""The reflection corpus tooling: check, split, export from real git mirrors, and the benchmark's corpus mode."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import git

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))

import bench_reflect  # noqa: E402
import reflect_corpus  # noqa: E402
from reflect_score import score_corpus  # noqa: E402

from memvault.reflect.mine.text import Candidate  # noqa: E402


def test_committed_corpus_is_valid() -> None:
    """Every corpus file in the repository passes `check` (needs no exported data)."""
    assert reflect_corpus.check() == []
    assert len(reflect_corpus.sessions()) >= 30


def _statement(line: int, quote: str, label: str = "MUST", **extra: object) -> dict[str, object]:
    return {"line": line, "quote": quote, "kind": "preference", "label": label, "rule": quote, "why": "lasts", **extra}


def _session(sid: str, repo: str, data: bytes, path: str, host: str = "claude-code", **extra: object) -> dict:
    return {
        "id": sid, "host": host, "repo": repo, "commit": "0" * 40, "path": path, "licence": "none stated",
        "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(), "client_version": "test",
        "nature": "test session", "turns": [1, 3], "statements": [], "negatives": [], **extra,
    }  # fmt: skip


def _write(folder: Path, name: str, host: str, sessions: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps({"about": "test", "host": host, "sessions": sessions}), encoding="utf-8")


def test_check_names_every_kind_of_problem(tmp_path: Path) -> None:
    good = _session("o-r-aaaa", "o/r", b"x", "a.jsonl", statements=[_statement(1, "Always pin versions")],
                    negatives=[{"line": 3, "quote": "ok", "why": "approval"}])  # fmt: skip
    _write(tmp_path, "claude-code.json", "claude-code", [good])
    assert reflect_corpus.check(tmp_path) == []
    bad = [
        _session("o-r-aaaa", "o/r", b"x", "b.jsonl"),  # same id as in the other file, and the same bytes
        _session("o-r-bbbb", "o/r", b"y", "c.jsonl", statements=[_statement(2, "not a turn line")]),
        _session("o-r-cccc", "o/r", b"z", "d.jsonl", statements=[_statement(1, "q" * 201)]),
        _session("o-r-dddd", "o/r", b"w", "e.jsonl", statements=[_statement(1, "q", label="MAYBE", kind="opinion")]),
        _session("o-r-eeee", "o/r", b"v", "f.jsonl", negatives=[
            {"line": 3, "quote": "ok", "why": "because"},
            {"line": 9, "quote": "<injected>", "why": "other(x)"},
            {"line": 8, "quote": "<inj>", "why": "other(x)", "typed": False},
        ]),
        {k: v for k, v in _session("o-r-ffff", "o/r", b"u", "g.jsonl").items() if k != "sha256"},
        _session("o-r-gggg", "o/r", b"t", "h.json", host="gemini"),
    ]
    _write(tmp_path, "claude-code-2.json", "claude-code", bad)
    problems = "\n".join(reflect_corpus.check(tmp_path))
    for expected in (
        "claude-code.json session 0 o-r-aaaa: id also used in claude-code-2.json",  # files are read sorted
        "o-r-aaaa: the same session (sha256) is already claude-code-2.json o-r-aaaa",
        "o-r-bbbb statement 0 (line 2): line 2 is not among the session's turns",
        "o-r-cccc statement 0 (line 1): quote is 201 characters (at most 200)",
        "o-r-dddd statement 0 (line 1): kind 'opinion' is not one of",
        "o-r-dddd statement 0 (line 1): label 'MAYBE' is not MUST or NICE",
        "o-r-eeee negative 0 (line 3): why 'because' is not one of",
        "o-r-eeee negative 1 (line 9): line 9 is not among the session's turns",
        "o-r-ffff: missing 'sha256'",
        "o-r-gggg: host 'gemini' in a file for 'claude-code'",
    ):
        assert expected in problems
    assert "negative 2" not in problems  # "typed": false: a user-role line the user did not type, outside turns
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    assert reflect_corpus.check(tmp_path)[0].startswith("broken.json: not readable JSON")


def test_split_is_by_repository_fixed_and_about_60_20_20(tmp_path: Path) -> None:
    for repo in ("ivanma9/ship", "dphaener/dotfiles", "a/b"):
        bucket = int(hashlib.sha256(f"memvault-corpus-v1:{repo}".encode()).hexdigest(), 16) % 10
        assert reflect_corpus.split_of(repo) == ("train" if bucket < 6 else "dev" if bucket < 8 else "test")
    counts = {p: 0 for p in reflect_corpus.SPLITS}
    for i in range(3000):
        counts[reflect_corpus.split_of(f"owner{i}/repo{i}")] += 1
    assert 0.55 < counts["train"] / 3000 < 0.65 and 0.16 < counts["dev"] / 3000 < 0.24
    by_repo: dict[str, set[str]] = {}
    for s in reflect_corpus.sessions():
        by_repo.setdefault(s["repo"], set()).add(s["split"])
    assert all(len(parts) == 1 for parts in by_repo.values())


def _mirror(tmp_path: Path, files: dict[str, bytes]) -> tuple[Path, str]:
    """A real repository holding `files`, and its commit."""
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q")
    for rel, data in files.items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_bytes(data)
    git(work, "add", ".")
    git(work, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "sessions")
    return work, git(work, "rev-parse", "HEAD").strip()


def test_export_reads_mirrors_in_every_layout_and_reports_each_problem(tmp_path: Path) -> None:
    data = b'{"type":"user","message":{"role":"user","content":"hi"}}\n'
    work, commit = _mirror(tmp_path, {".claude/projects/x/s1.jsonl": data, "other.jsonl": b"changed\n"})
    mirrors = tmp_path / "mirrors"
    subprocess.run(["git", "clone", "-q", "--mirror", str(work), str(mirrors / "alice+one" / "repo")], check=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(mirrors / "bob" / "two")], check=True)
    subprocess.run(["git", "clone", "-q", str(work), str(mirrors / "carol+three")], check=True)
    corpus = tmp_path / "corpus"
    sessions = [
        _session("alice-one-1", "alice/one", data, ".claude/projects/x/s1.jsonl", commit=commit),
        _session("bob-two-1", "bob/two", data, ".claude/projects/x/s1.jsonl", commit=commit),
        _session("carol-three-1", "carol/three", data, ".claude/projects/x/s1.jsonl", commit=commit),
        _session("carol-three-2", "carol/three", data, "other.jsonl", commit=commit),  # other bytes
        _session("carol-three-3", "carol/three", data, "gone.jsonl", commit=commit),  # not at that commit
        _session("dan-four-1", "dan/four", data, "s.jsonl", commit=commit),  # no mirror
    ]
    _write(corpus, "claude-code.json", "claude-code", sessions)
    out = tmp_path / "out"
    done, problems = reflect_corpus.export(corpus, mirrors, out)
    assert done == 3
    assert [p.split(":")[0:2] for p in problems] == [
        ["mismatch", " carol-three-2"], ["missing", " carol-three-3"], ["missing", " dan-four-1"],
    ]  # fmt: skip
    assert (out / "claude-code" / "alice-one-1.jsonl").read_bytes() == data
    assert not (out / "claude-code" / "carol-three-2.jsonl").exists()
    assert reflect_corpus.export(corpus, mirrors, out)[0] == 3  # again: the files already there are kept


def _cand(line: int, confidence: str = "medium", title: str = "Always pin exact versions") -> Candidate:
    return Candidate("preference", title, title, (f"L{line}",), confidence, "test", title.lower())


def test_score_corpus_matching_rules() -> None:
    session = _session("s", "o/r", b"x", "a.jsonl", turns=[1, 10, 20, 30])
    session["statements"] = [
        _statement(10, "always pin exact versions"),
        _statement(20, "tabs please", label="NICE"),
        _statement(30, "use fish", label="NICE", disputed="maybe one-off"),
    ]
    session["negatives"] = [{"line": 1, "quote": "ok go", "why": "approval"}]
    mined = {"s": [_cand(12, "high"), _cand(13, "high"), _cand(1), _cand(30, title="Use the fish shell")]}
    result = score_corpus(mined, [session])
    assert result["MUST"] == {"labels": 1, "captured": 1, "recall": 1.0}  # L12 is within ±3 of L10
    assert result["NICE"] == {"labels": 1, "captured": 0, "recall": 0.0}  # the disputed one is not counted
    assert result["notes"] == {"candidates": 3, "right": 1, "precision": 0.333}  # L13 is a duplicate; L30 optional
    assert result["high"] == {"candidates": 2, "right": 1, "precision": 0.5}
    assert result["negatives"] == {"labels": 1, "saved": 1, "rate": 1.0}


def _claude_lines(texts: list[tuple[str, str]]) -> bytes:
    return b"".join(
        json.dumps({"type": role, "sessionId": "s1", "uuid": f"u{i}",
                    "message": {"role": role, "content": text if role == "user" else [{"type": "text", "text": text}]}
                    }).encode() + b"\n"
        for i, (role, text) in enumerate(texts)
    )  # fmt: skip


def _codex_lines(user_texts: list[str]) -> bytes:
    lines = [{"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta", "payload": {"id": "c1", "cwd": "/w"}}]
    for text in user_texts:
        typed = [{"type": "input_text", "text": text}]
        lines.append({"timestamp": "2026-01-01T00:00:01Z", "type": "response_item",
                      "payload": {"type": "message", "role": "user", "content": typed}})
        lines.append({"timestamp": "2026-01-01T00:00:02Z", "type": "response_item",
                      "payload": {"type": "message", "role": "assistant",
                                  "content": [{"type": "output_text", "text": "Done."}]}})  # fmt: skip
    return b"".join(json.dumps(x).encode() + b"\n" for x in lines)


def test_bench_corpus_mode_reads_every_host_with_memvault_readers(tmp_path: Path) -> None:
    claude = _claude_lines([("user", "Always write SQL keywords in upper case."), ("assistant", "Sure."),
                            ("user", "ok commit it"), ("assistant", "Committed.")])  # fmt: skip
    codex = _codex_lines(["Never add emojis to commit messages.", "yes do it"])
    gemini = json.dumps({"sessionId": "g1", "projectHash": "h", "messages": [
        {"id": "m0", "type": "user", "content": "Always name branches after the ticket number."},
        {"id": "m1", "type": "gemini", "content": "OK."}]}, indent=2).encode()  # fmt: skip
    corpus, out = tmp_path / "corpus", tmp_path / "out"
    sessions = {
        "claude-code": _session("cc", "o/cc", claude, "s.jsonl", turns=[1, 3],
                                statements=[_statement(1, "Always write SQL keywords in upper case.")],
                                negatives=[{"line": 3, "quote": "ok commit it", "why": "approval"}]),
        "codex": _session("cx", "o/cx", codex, "r.jsonl", host="codex", turns=[2, 4],
                          statements=[_statement(2, "Never add emojis to commit messages.")]),
        "gemini": _session("gm", "o/gm", gemini, "c.json", host="gemini", turns=[0],
                           statements=[_statement(0, "Always name branches after the ticket number.")]),
    }  # fmt: skip
    for host, s in sessions.items():
        _write(corpus, f"{host}.json", host, [s])
        target = reflect_corpus.exported_path(out, s)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes({"claude-code": claude, "codex": codex, "gemini": gemini}[host])
    result = bench_reflect.bench_corpus(out, corpus, report_test=True)
    rows = {host: t for split in result["splits"].values() for host, t in split.items() if host != "all"}
    assert rows["claude-code"]["MUST"]["captured"] == 1 and rows["claude-code"]["turns_seen"] == "2/2"
    assert rows["claude-code"]["negatives"]["saved"] == 0
    assert rows["codex"]["MUST"]["captured"] == 1 and rows["codex"]["turns_seen"] == "2/2"
    gem = rows["gemini"]  # the old single-JSON chat format: read once the product reader knows it, never a crash
    assert gem["unreadable"] == 1 or (gem["MUST"]["captured"] == 1 and gem["turns_seen"] == "1/1")
    assert not bench_reflect.bench_corpus(out, corpus, report_test=False)["splits"].get("test")


def test_bench_without_corpus_prints_one_skipped_line(tmp_path: Path) -> None:
    env = {**os.environ, "MEMVAULT_BENCH_DATA": str(tmp_path)}
    run = subprocess.run([sys.executable, str(REPO / "scripts" / "bench_reflect.py")], env=env,
                         capture_output=True, text=True, check=True, timeout=120)  # fmt: skip
    assert run.stdout.strip().startswith("skipped:") and len(run.stdout.strip().splitlines()) == 1


@pytest.mark.skipif(not (Path(os.environ.get("MEMVAULT_BENCH_DATA", "/nonexistent")) / "reflect-corpus").is_dir(),
                    reason="no exported corpus ($MEMVAULT_BENCH_DATA/reflect-corpus)")  # fmt: skip
def test_exported_corpus_matches_the_labels() -> None:
    out = Path(os.environ["MEMVAULT_BENCH_DATA"]) / "reflect-corpus"
    for s in reflect_corpus.sessions():
        path = reflect_corpus.exported_path(out, s)
        if path.is_file():
            assert hashlib.sha256(path.read_bytes()).hexdigest() == s["sha256"], s["id"]
