"""Transcript reader: real Claude Code files and hand-written JSONL with every kind of noise, read incrementally."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from memvault.reflect import transcript
from memvault.reflect.transcript import Cursor

from .conftest import TRANSCRIPTS

ALL_FILES = sorted(TRANSCRIPTS.rglob("*.jsonl"))


def user(text: Any, **extra: Any) -> dict:
    return {
        "type": "user",
        "uuid": f"u{id(text)}",
        "sessionId": "s1",
        "cwd": "/w",
        "message": {"role": "user", "content": text},
        **extra,
    }


def assistant(mid: str, *blocks: dict, **extra: Any) -> dict:
    return {
        "type": "assistant",
        "sessionId": "s1",
        "message": {"id": mid, "role": "assistant", "content": list(blocks)},
        **extra,
    }


def text(t: str) -> dict:
    return {"type": "text", "text": t}


def tool_result(content: Any, *, error: bool = False) -> dict:
    return {"type": "tool_result", "tool_use_id": "t1", "content": content, "is_error": error}


def write(path: Path, rows: list[Any], *, tail: str = "") -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in rows]
    path.write_text("".join(line + "\n" for line in lines) + tail, encoding="utf-8")
    return path


def roles(t: transcript.Transcript) -> list[tuple[str, str]]:
    return [(turn.role, turn.text) for turn in t.turns]


# ---------------------------------------------------------------- real transcripts


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.relative_to(TRANSCRIPTS).as_posix())
def test_every_real_line_is_parsed_or_counted_as_skipped(path: Path) -> None:
    t = transcript.read(path)
    physical = path.read_bytes().count(b"\n") + (0 if path.read_bytes().endswith(b"\n") else 1)
    assert t.lines == physical
    assert t.parsed + sum(t.skipped.values()) == t.lines
    assert t.cursor == Cursor(path.stat().st_size, physical)
    assert t.pending == 0
    for turn in t.turns:
        assert turn.text == turn.text.strip() and turn.text
        assert "<system-reminder>" not in turn.text
        assert not turn.text.startswith(("<command-name>", "<local-command-stdout>", "<command-message>"))
        assert turn.role in ("user", "assistant", "tool_error", "summary")
        if turn.role == "tool_error":
            assert len(turn.text) <= transcript.TOOL_ERROR_CHARS


def test_all_real_transcripts_read_well_under_a_second() -> None:
    start = time.perf_counter()
    total = sum(transcript.read(p).lines for p in ALL_FILES)
    assert total > 2500
    assert time.perf_counter() - start < 1.0


def test_real_spotter_session_split_assistant_messages_and_compaction() -> None:
    path = TRANSCRIPTS / "spotter" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"
    t = transcript.read(path)
    assert t.session_id == "ae4a77f8-aedd-4bc1-888f-c94edc91af04"
    assert t.cwd == "/home/USER/projects/spotter-worktrees/spotter-4te"
    by_line = {turn.line: turn for turn in t.turns}
    assert by_line[7].role == "user" and by_line[7].text.startswith("Work on bead spotter-4te")
    assert by_line[1482].role == "summary"  # isCompactSummary: context, not the user's words
    assert by_line[1491].text == "continue implementation"
    assert 1484 not in by_line and 1485 not in by_line  # /compact command and its stdout
    assert t.skipped["type:progress"] > 1000
    assert t.skipped["tool_result"] > 100
    # the dialyzer failures are kept as short tool errors
    assert by_line[1463].role == "tool_error" and "Pre-commit validation failed" in by_line[1463].text
    # one assistant message written as several lines (text, then tool_use) is one turn
    messages = [turn for turn in t.turns if turn.role == "assistant"]
    assert len({m.line for m in messages}) == len(messages)


def test_real_subagent_file_is_sidechain_and_its_reminders_are_meta() -> None:
    base = TRANSCRIPTS / "spotter" / "8463c716-a2ea-4c14-9efa-87158ebd9f20" / "subagents"
    t = transcript.read(base / "agent-a7be2f0.jsonl")
    assert t.turns and all(turn.sidechain for turn in t.turns)
    compact = transcript.read(base / "agent-acompact-f46190.jsonl")
    assert compact.skipped["meta"] == 5
    assert all("PostToolUse" not in turn.text for turn in compact.turns)


def test_real_short_session_rejections_and_interruptions_are_not_turns() -> None:
    t = transcript.read(TRANSCRIPTS / "spotter" / "short.jsonl")
    assert [r for r, _ in roles(t)] == ["user", "assistant"]
    assert t.skipped["tool_rejected"] == 2
    assert t.skipped["interrupted"] == 1


def test_real_edge_cases_file_without_final_newline_and_garbage_lines() -> None:
    path = TRANSCRIPTS / "claude-code-log" / "edge_cases.jsonl"
    t = transcript.read(path)
    assert t.skipped["not_object"] == 3
    assert t.skipped["command"] == 3
    assert t.turns[-1].role == "summary" and t.turns[-1].line == 19  # last line has no newline but is whole
    assert ("tool_error", "Error: Tool execution failed with error: Command not found") in roles(t)


# ---------------------------------------------------------------- hand-written noise


def test_noise_never_reaches_a_turn(tmp_path: Path) -> None:
    rows = [
        {"type": "file-history-snapshot", "snapshot": {}},
        user("Always use pnpm, never npm."),
        user("<command-name>/model</command-name>\n<command-message>model</command-message>"),
        user("<local-command-stdout>Kept model</local-command-stdout>"),
        user("<bash-input>ls</bash-input>"),
        user("<command-message>handgemacht:create-beads</command-message>\n<command-args>x</command-args>"),
        user("Caveat: the skill body", isMeta=True),
        user("[Request interrupted by user]"),
        user("[Request interrupted by user for tool use]"),
        user("<system-reminder>\nPostToolUse hook additional context: CREDO\n</system-reminder>"),
        user("Real words <system-reminder>remember: secret hook text</system-reminder> end."),
        user([text('<memoryvault-recall count="2">\n- old note\n</memoryvault-recall>\nFix the parser')]),
        user('<memoryvault-always-load count="1">always-load body</memoryvault-always-load>'),
        {"type": "attachment", "attachment": {"type": "hook_additional_context", "content": ["injected"]}},
        {"type": "progress", "data": {}},
        {"type": "system", "subtype": "stop_hook_summary"},
        user("<task-notification>\n<task-id>x</task-id>\n</task-notification>"),
    ]
    t = transcript.read(write(tmp_path / "s.jsonl", rows))
    assert roles(t) == [
        ("user", "Always use pnpm, never npm."),
        ("user", "Real words  end."),
        ("user", "Fix the parser"),
    ]
    assert t.skipped == {
        "type:file-history-snapshot": 1,
        "command": 4,
        "meta": 1,
        "interrupted": 2,
        "system_reminder": 1,
        "memoryvault": 1,
        "attachment": 1,
        "type:progress": 1,
        "type:system": 1,
        "notification": 1,
    }
    assert t.parsed + sum(t.skipped.values()) == t.lines == len(rows)


def test_an_unclosed_fence_is_dropped_to_the_end(tmp_path: Path) -> None:
    rows = [user('keep this <memoryvault-recall count="1">\nrecalled text that was cut off')]
    t = transcript.read(write(tmp_path / "s.jsonl", rows))
    assert roles(t) == [("user", "keep this")]


def test_bad_json_non_objects_and_missing_fields(tmp_path: Path) -> None:
    rows = [
        '{"type": "user", "message": {"role": "user", "content": "cut off',
        "42",
        '"a string"',
        "[1, 2]",
        "",
        '{"type": "user", "message": "error"}',
        '{"silly": "this"}',
        '{"type": "user", "message": {"role": "user", "content": null}}',
        '{"message": {"role": "user", "content": "role without type"}}',
        '{"type": "brand-new-kind", "x": 1}',
    ]
    t = transcript.read(write(tmp_path / "s.jsonl", rows))
    assert roles(t) == [("user", "role without type")]
    assert t.skipped == {
        "bad_json": 1,
        "not_object": 3,
        "blank": 1,
        "no_message": 1,
        "no_type": 1,
        "empty": 1,
        "type:brand-new-kind": 1,
    }
    assert t.session_id == "s"  # no sessionId anywhere: the file stem


def test_assistant_blocks_split_over_lines_are_joined_by_message_id(tmp_path: Path) -> None:
    rows = [
        user("why does the build fail"),
        assistant("m1", {"type": "thinking", "thinking": "hmm, private reasoning"}),
        assistant("m1", text("The entry point is relative.")),
        assistant("m1", {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}),
        user([tool_result("assets/ js/")]),
        assistant("m1", text("Run it from assets/.")),
        assistant("m2", text("Done.")),
    ]
    t = transcript.read(write(tmp_path / "s.jsonl", rows))
    assert roles(t) == [
        ("user", "why does the build fail"),
        ("assistant", "The entry point is relative.\n\nRun it from assets/."),
        ("assistant", "Done."),
    ]
    assert [turn.line for turn in t.turns] == [1, 3, 7]
    assert t.skipped == {"thinking": 1, "tool_use": 1, "tool_result": 1}
    assert "private reasoning" not in str(roles(t))


def test_string_and_block_content_and_tool_errors(tmp_path: Path) -> None:
    long_output = (
        "Exit code 2\n" + "compiling module\n" * 100 + "** (RuntimeError) lazy_html is required\n" + "x\n" * 50
    )
    rows = [
        user("plain string prompt"),
        user([text("block one"), text("block two")]),
        user(
            [
                tool_result("fine", error=False),
                tool_result([text("Error: boom <system-reminder>x</system-reminder>")], error=True),
            ]
        ),
        user([tool_result("<tool_use_error>Sibling tool call errored</tool_use_error>", error=True)]),
        user([tool_result("The user doesn't want to proceed with this tool use. STOP", error=True)]),
        user([tool_result(long_output, error=True)]),
        user([tool_result("<tool_use_error>File does not exist.</tool_use_error>", error=True)]),
    ]
    t = transcript.read(write(tmp_path / "s.jsonl", rows))
    got = roles(t)
    assert got[:3] == [
        ("user", "plain string prompt"),
        ("user", "block one\n\nblock two"),
        ("tool_error", "Error: boom"),
    ]
    assert got[3][0] == "tool_error" and len(got[3][1]) <= transcript.TOOL_ERROR_CHARS
    assert "lazy_html is required" in got[3][1]  # the line naming the error survives the cap
    assert got[4] == ("tool_error", "File does not exist.")
    assert t.skipped == {"tool_sibling_error": 1, "tool_rejected": 1}


def test_compaction_summary_summary_lines_and_sidechain(tmp_path: Path) -> None:
    rows = [
        {"type": "system", "subtype": "compact_boundary"},
        user("This session is being continued... Summary: the user prefers tabs", isCompactSummary=True),
        {"type": "summary", "summary": "Tested edge cases", "leafUuid": "x"},
        user("Search hex.pm for versions", isSidechain=True),
        assistant("m9", text("Found 1.5.0"), isSidechain=True),
    ]
    t = transcript.read(write(tmp_path / "s.jsonl", rows))
    assert [(turn.role, turn.sidechain) for turn in t.turns] == [
        ("summary", False),
        ("summary", False),
        ("user", True),
        ("assistant", True),
    ]
    sub = tmp_path / "sess" / "subagents"
    sub.mkdir(parents=True)
    t2 = transcript.read(write(sub / "agent-a1.jsonl", [user("hello")]))
    assert t2.turns[0].sidechain


def test_meta_ids_and_timestamps_are_kept(tmp_path: Path) -> None:
    rows = [user("hi there", uuid="abc", timestamp="2026-01-01T00:00:00Z")]
    turn = transcript.read(write(tmp_path / "s.jsonl", rows)).turns[0]
    assert (turn.uuid, turn.timestamp, turn.line, turn.sidechain) == ("abc", "2026-01-01T00:00:00Z", 1, False)


# ---------------------------------------------------------------- incremental reads


def test_incremental_reads_return_only_new_turns(tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", [user("first"), assistant("m1", text("one"))])
    first = transcript.read(path)
    assert [x for _, x in roles(first)] == ["first", "one"]
    again = transcript.read(path, first.cursor)
    assert again.turns == [] and again.lines == 0 and again.cursor == first.cursor
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(user("second")) + "\n" + json.dumps({"type": "progress"}) + "\n")
    second = transcript.read(path, first.cursor)
    assert roles(second) == [("user", "second")]
    assert second.turns[0].line == 3  # line numbers continue from the cursor
    assert second.lines == 2 and second.skipped == {"type:progress": 1}
    assert second.cursor == Cursor(path.stat().st_size, 4)


def test_a_truncated_last_line_waits_for_the_rest(tmp_path: Path) -> None:
    whole = json.dumps(user("typed while writing"))
    path = write(tmp_path / "s.jsonl", [user("first")], tail=whole[:25])
    first = transcript.read(path)
    assert [x for _, x in roles(first)] == ["first"]
    assert first.lines == 1 and first.pending == 25
    assert first.cursor.offset == path.stat().st_size - 25  # the cut line is not consumed
    with path.open("a", encoding="utf-8") as fh:
        fh.write(whole[25:] + "\n")
    second = transcript.read(path, first.cursor)
    assert roles(second) == [("user", "typed while writing")]
    assert second.turns[0].line == 2 and second.pending == 0


def test_a_whole_object_without_newline_is_read_once_even_when_its_newline_comes_later(tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", [user("first")], tail=json.dumps(user("no newline yet")))
    first = transcript.read(path)
    assert [x for _, x in roles(first)] == ["first", "no newline yet"]
    assert first.cursor == Cursor(path.stat().st_size, 2)
    with path.open("a", encoding="utf-8") as fh:
        fh.write("\n" + json.dumps(user("third")) + "\n")
    second = transcript.read(path, first.cursor)
    assert roles(second) == [("user", "third")]
    assert second.turns[0].line == 3 and second.lines == 1 and not second.skipped


def test_unicode_and_crlf(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes((json.dumps(user("café 中文 🎉"), ensure_ascii=False) + "\r\n").encode("utf-8") + b"\xff\xfe\n")
    t = transcript.read(path)
    assert roles(t) == [("user", "café 中文 🎉")]
    assert t.skipped == {"bad_json": 1}
    assert t.cursor.offset == path.stat().st_size
