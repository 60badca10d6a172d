"""Bad transcript lines never stop reflection: skipped by reason, a failing session quarantined, the sweep goes on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest
from click.testing import CliRunner

from memvault import health, open_vault, runtime
from memvault.cli import cli
from memvault.reflect import jsonl, readers, runner, transcript
from memvault.reflect import state as reflect_state

from . import transcripts
from .conftest import REPO

LONE_SURROGATE = b'{"type":"user","message":{"role":"user","content":"From now on, always test first \\ud83d"}}'
DEEP = b'{"type":"user","message":' + b"[" * 5000 + b"]" * 5000 + b"}"


@pytest.fixture(autouse=True)
def no_service(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "WAIT_SERVICE_S", 0.0)


@pytest.fixture
def configured(vault_dir: Path, memvault_home: Path) -> Path:
    """The example vault in the config (for the background jobs), keyword-only, no embedding service."""
    memvault_home.mkdir(parents=True, exist_ok=True)
    (memvault_home / "config.yaml").write_text(
        f"vault:\n  root: {vault_dir}\nembedding:\n  warm_service: false\n", encoding="utf-8"
    )
    return vault_dir


# ---- the reader -------------------------------------------------------------------------------------


def test_a_lone_surrogate_is_repaired_and_the_line_kept(tmp_path: Path) -> None:
    path = transcripts.write(tmp_path / "s.jsonl", "s", raw=[LONE_SURROGATE])
    read = transcript.read(path)
    assert read.repaired == 1 and read.parsed + sum(read.skipped.values()) == read.lines == 5
    said = next(t.text for t in read.turns if "test first" in t.text)
    assert said.encode("utf-8") and "\ufffd" in said


def test_a_line_nested_thousands_deep_is_skipped_by_reason(tmp_path: Path) -> None:
    path = transcripts.write(tmp_path / "s.jsonl", "s", raw=[DEEP])
    read = transcript.read(path)
    assert read.skipped == {"too_deep": 1} and read.parsed == 4


def test_a_first_line_nested_thousands_deep_is_read_by_the_claude_code_reader(tmp_path: Path) -> None:
    """The reader is chosen by the first line; a hostile one must not stop the choice (RecursionError)."""
    path = tmp_path / "s.jsonl"
    deep = b'{"type":"user","message":' + b"[" * 5000 + b"]" * 5000 + b"}\n"
    path.write_bytes(deep + transcripts.write(tmp_path / "good.jsonl", "s").read_bytes())
    assert readers.reader_for(path) is transcript.read
    read = readers.read(path)
    assert read.skipped.get("too_deep") == 1 and read.parsed == 4


def test_a_byte_order_mark_does_not_drop_the_first_line(tmp_path: Path) -> None:
    path = transcripts.write(tmp_path / "s.jsonl", "s")
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    read = transcript.read(path)
    assert read.parsed == 4 and not read.skipped
    assert read.turns[0].text.startswith("From now on") and read.cursor.offset == path.stat().st_size
    assert transcript.read(path, read.cursor).lines == 0  # and the next read starts after it


def test_a_huge_line_without_newline_is_skipped_in_bounded_memory_and_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jsonl, "MAX_LINE_BYTES", 1024 * 1024)
    path = transcripts.write(tmp_path / "s.jsonl", "s")
    with path.open("ab") as fh:  # 40 MB of one line, still being written (no newline yet)
        fh.write(b'{"type":"user","message":{"role":"user","content":"' + b"x" * (40 * 1024 * 1024))
    tracemalloc.start()
    first = transcript.read(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 8 * 1024 * 1024, peak  # the line is never held whole
    assert first.parsed == 4 and first.skipped == {"too_long": 1} and first.cursor.offset == path.stat().st_size
    with path.open("ab") as fh:  # the line ends; a good one follows
        fh.write(b'"}}\n' + json.dumps(transcripts.line("user", "Always use uv.", "s", 9)).encode() + b"\n")
    second = transcript.read(path, first.cursor)
    assert second.lines == 1 and [t.text for t in second.turns] == ["Always use uv."]


def test_reads_are_bounded_and_resume_where_they_stopped(tmp_path: Path) -> None:
    said = [("user", f"Message number {n} about the billing service.") for n in range(200)]
    path = transcripts.write(tmp_path / "s.jsonl", "s", said)
    cursor, texts, reads = transcript.Cursor(), [], 0
    while True:
        read = transcript.read(path, cursor, max_bytes=4096)
        texts += [t.text for t in read.turns]
        cursor, reads = read.cursor, reads + 1
        if not read.more:
            break
    assert reads > 5 and texts == [text for _, text in said]


# ---- reflection ------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [LONE_SURROGATE, DEEP], ids=["lone-surrogate", "nested-5000-deep"])
def test_one_bad_line_never_stops_reflection(vault_dir: Path, tmp_path: Path, bad: bytes) -> None:
    vault = open_vault(vault_dir)
    path = transcripts.write(tmp_path / "s.jsonl", "bad-line", raw=[bad])
    report = runner.reflect_transcript(vault, path, final=True)
    assert any("ruff check" in vault.read(p).note.body for p in report.written)
    assert runner.pending_bytes(vault, path) == 0  # the cursor moved past the bad line
    assert report.skipped_lines.get("too_deep", 0) == (1 if bad is DEEP else 0)


def test_corpus_goes_past_a_file_with_a_bad_line(vault_dir: Path, tmp_path: Path) -> None:
    vault = open_vault(vault_dir)
    folder = tmp_path / "projects"
    folder.mkdir()
    bad = transcripts.write(folder / "a-bad.jsonl", "a-bad", raw=[DEEP, LONE_SURROGATE])
    good = transcripts.write(folder / "b-good.jsonl", "b-good", [("user", "Always pin dependency versions.")])
    os.utime(bad, (1, 1))  # oldest first: the bad one comes first
    report = runner.reflect_corpus(vault, folder)
    assert report.errors == {} and report.reflected == 2
    assert runner.pending_bytes(vault, bad) == 0 and runner.pending_bytes(vault, good) == 0


def orphan(session: str, path: Path) -> None:
    """A session that died without SessionEnd two hours ago."""
    runtime.write_start_marker(session, {"transcript_path": str(path)})
    old = time.time() - 7200
    for p in (path, runtime.marker(session, "start")):
        os.utime(p, (old, old))


def run_job(*args: str, **env: str) -> dict:
    subprocess.run(
        [sys.executable, "-m", "memvault.hooks.jobs", *args],
        env={**os.environ, "PYTHONPATH": str(REPO), **env}, check=True, timeout=300,
    )  # fmt: skip
    return [r for r in runtime.read_log() if r["hook"] == f"job:{args[0]}"][-1]


def test_a_crashed_session_with_a_bad_line_does_not_stop_the_sweep(configured: Path, tmp_path: Path) -> None:
    orphan("aaa-bad", transcripts.write(tmp_path / "aaa-bad.jsonl", "aaa-bad", raw=[DEEP]))
    orphan("zzz-good", transcripts.write(tmp_path / "zzz-good.jsonl", "zzz-good"))
    record = run_job("idle")
    assert record["result"] == "success", record
    assert sorted(record["reflected_sessions"]) == ["aaa-bad", "zzz-good"]
    assert "pruned" in record
    assert runtime.marker("zzz-good", "reflected").exists() and runtime.marker("aaa-bad", "reflected").exists()


def test_a_session_that_keeps_failing_is_quarantined_reported_and_retried_by_hand(
    configured: Path, tmp_path: Path
) -> None:
    said = [("user", "From now on, always write the changelog entry before the code.")]
    bad = transcripts.write(tmp_path / "aaa-broken.jsonl", "aaa-broken", said)
    orphan("aaa-broken", bad)
    for attempt in range(1, reflect_state.QUARANTINE_AFTER + 2):
        orphan(f"zzz-fine-{attempt}", transcripts.write(tmp_path / f"zzz-{attempt}.jsonl", f"zzz-{attempt}"))
        record = run_job("idle", MEMVAULT_FAULT_RAISE="reflecting aaa-broken")  # a failure nobody foresaw
        assert record["result"] == "success", record  # the sweep itself went on …
        assert f"zzz-fine-{attempt}" in record["reflected_sessions"]  # … and recovered the other session
        if attempt < reflect_state.QUARANTINE_AFTER:
            assert "fault injected" in record["failed_sessions"]["aaa-broken"]
    # quarantined: the last sweep did not even try it, and the marker says so
    assert "failed_sessions" not in record
    assert runtime.marker("aaa-broken", "quarantined").exists() and not runtime.marker("aaa-broken", "start").exists()
    vault = open_vault(configured)
    report = health.check(vault, service=False)
    assert any("quarantined" in p and "aaa-broken.jsonl" in p for p in report.problems), report.problems
    retried = CliRunner().invoke(cli, ["--vault", str(configured), "reflect", "--session", str(bad), "--json"])
    assert retried.exit_code == 0, retried.output
    assert json.loads(retried.output)["written"]
    assert not [p for p in health.check(vault, service=False).problems if "quarantined" in p]


def test_session_ids_starting_with_a_dash_reach_the_background_job(configured: Path, tmp_path: Path) -> None:
    from .test_hooks import jobs, payload, run_hook, wait_for

    path = transcripts.write(tmp_path / "-dash.jsonl", "-dash")
    run_hook("session_end", payload("SessionEnd", session="-dash", transcript_path=str(path)))
    wait_for(lambda: any(r["session"] == "-dash" for r in jobs("reflect")), timeout=60)
    record = next(r for r in jobs("reflect") if r["session"] == "-dash")
    assert record["result"] == "success" and record["written"], record


def test_reflect_with_a_name_too_long_for_the_file_system_is_a_clear_error(configured: Path) -> None:
    result = CliRunner().invoke(cli, ["reflect", "--session", "x" * 300 + ".jsonl"])
    assert result.exit_code == 1
    assert "Error: cannot open the transcript" in result.output and "Traceback" not in result.output
