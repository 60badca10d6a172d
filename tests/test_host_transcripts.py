"""Codex CLI rollouts and Gemini CLI chats (recorded from the real clients) read, reflected, and found by --corpus."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from memvault.cli import cli
from memvault.reflect import codex_rollout, gemini_chat, readers, runner, transcript
from memvault.vault.core import Vault

from .conftest import REPO

FIXTURES = REPO / "tests" / "fixtures" / "hosts"
CODEX = FIXTURES / "codex" / "rollout-2026-11-23T16-01-11-01a20923-d05c-7000-840f-bbc0244fbef1.jsonl"
CODEX_RESUMED = FIXTURES / "codex" / "resumed" / CODEX.name
GEMINI = FIXTURES / "gemini" / "chats" / "session-2026-11-23T16-05-51f3a02d.jsonl"
GEMINI_RESUMED = FIXTURES / "gemini" / "resumed" / GEMINI.name
STATED = "From now on always use httpx instead of requests. Check my notes and the repo for requests usage."
INJECTED = ("MEMVAULT-", "<environment_context>", "<session_context>", "hook_context", "<skills_instructions>")


@pytest.fixture(autouse=True)
def no_service(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "WAIT_SERVICE_S", 0.0)


@pytest.mark.parametrize("path", sorted(FIXTURES.rglob("*.jsonl")), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_line_is_a_turn_or_skipped_by_reason_and_nothing_injected_survives(path: Path) -> None:
    read = readers.read(path)
    assert read.lines == len(path.read_bytes().splitlines())
    assert read.parsed + sum(read.skipped.values()) == read.lines, read.skipped
    assert read.pending == 0 and read.cursor.offset == path.stat().st_size
    assert read.session_id and len(read.session_id) == 36
    for turn in read.turns:
        assert not any(marker in turn.text for marker in INJECTED), turn


def test_the_right_reader_is_picked_by_the_first_line(tmp_path: Path) -> None:
    assert readers.reader_for(CODEX) is codex_rollout.read
    assert readers.reader_for(GEMINI) is gemini_chat.read
    claude = REPO / "examples" / "transcripts" / "billing-webhook-retries.jsonl"
    assert readers.reader_for(claude) is transcript.read
    (tmp_path / "empty.jsonl").write_text("")
    assert readers.reader_for(tmp_path / "empty.jsonl") is transcript.read


@pytest.mark.parametrize(("reader", "path"), [(codex_rollout, CODEX), (gemini_chat, GEMINI)])
def test_the_conversation_is_read_in_order(reader, path: Path) -> None:
    read = reader.read(path)
    assert [(t.role, t.text) for t in read.turns] == [
        ("user", STATED),
        ("assistant", "Let me check your notes."),
        ("assistant", "Noted: from now on I will use httpx instead of requests."),
    ]
    assert read.skipped.get("tool_result") == 2  # the MCP call's and the shell call's output


@pytest.mark.parametrize(("first", "later"), [(CODEX, CODEX_RESUMED), (GEMINI, GEMINI_RESUMED)])
def test_a_resumed_session_is_read_from_the_cursor_on(first: Path, later: Path, tmp_path: Path) -> None:
    assert later.read_bytes().startswith(first.read_bytes())  # both clients append to the session's file
    live = tmp_path / first.name
    shutil.copy(first, live)
    before = readers.read(live)
    shutil.copy(later, live)
    after = readers.read(live, before.cursor)
    assert [(t.role, t.text) for t in after.turns] == [
        ("user", "And remember to use pytest."),
        ("assistant", "OK, pytest it is."),
    ]
    new_lines = len(later.read_bytes().splitlines()) - before.lines
    assert after.parsed + sum(after.skipped.values()) == after.lines == new_lines


def test_a_failed_shell_call_is_a_tool_error_turn(tmp_path: Path) -> None:
    lines = CODEX.read_text().splitlines()
    failed = json.loads(next(line for line in lines if "function_call_output" in line and "exited with code 0" in line))
    failed["payload"]["output"] = "Process exited with code 2\nOutput:\nModuleNotFoundError: No module named 'httpx'\n"
    (tmp_path / CODEX.name).write_text("\n".join([*lines, json.dumps(failed)]) + "\n")
    turns = codex_rollout.read(tmp_path / CODEX.name).turns
    assert turns[-1].role == "tool_error" and "No module named 'httpx'" in turns[-1].text


@pytest.mark.parametrize("path", [CODEX, GEMINI], ids=["codex", "gemini"])
def test_a_stated_preference_is_reflected_into_the_vault(path: Path, vault: Vault, tmp_path: Path) -> None:
    live = tmp_path / path.name
    shutil.copy(path, live)
    report = runner.reflect_transcript(vault, live, final=True)
    assert report.session_id and report.session_id.startswith(("01a20923", "51f3a02d"))
    written = [vault.read(p).note for p in report.written]
    httpx = [n for n in written if "httpx" in n.body]
    assert httpx and httpx[0].meta["kind"] == "preference", report.routes
    assert httpx[0].meta["source"] == report.session_id
    again = runner.reflect_transcript(vault, live, final=True)
    assert again.written == []


def test_reflect_corpus_finds_every_agents_history(vault: Vault, tmp_path: Path, monkeypatch) -> None:
    codex_home, gemini_home, claude = tmp_path / "codex", tmp_path / "gem", tmp_path / "claude-config"
    (codex_home / "sessions" / "2026" / "11" / "23").mkdir(parents=True)
    shutil.copy(CODEX, codex_home / "sessions" / "2026" / "11" / "23" / CODEX.name)
    chats = gemini_home / ".gemini" / "tmp" / "project" / "chats"
    chats.mkdir(parents=True)
    shutil.copy(GEMINI, chats / GEMINI.name)
    project = claude / "projects" / "-home-dev-project"
    project.mkdir(parents=True)
    shutil.copy(REPO / "examples" / "transcripts" / "billing-webhook-retries.jsonl", project)
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    monkeypatch.setenv("GEMINI_CLI_HOME", str(gemini_home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    result = CliRunner().invoke(cli, ["--vault", str(vault.root), "reflect", "--corpus", "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    folders = {Path(r["folder"]): r for r in json.loads(result.output)["folders"]}
    assert set(folders) == {claude / "projects", codex_home / "sessions", chats}
    assert all(r["files"] == 1 and r["candidates"] > 0 for r in folders.values()), folders
