"""Codex CLI rollouts and Gemini CLI chats (recorded from the real clients) read, reflected, and found by --corpus."""

from __future__ import annotations

import json
import os
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


# Gemini CLI before 0.39 (from 0.4, when chat recording was wired in) wrote each chat as one JSON object,
# pretty-printed and rewritten whole at every change: `chats/session-<time>-<id8>.json`. This is that shape
# (keys, order, message fields) as real files of those releases have it, with invented content.
LEGACY_ID = "7d1c2b3a-5e6f-4a8b-9c0d-1e2f3a4b5c6d"
REFERENCED = "\n--- Content from referenced files ---\nContent from @/home/dev/project/NOTES.md:\n"
REFERENCED += "From now on always use requests, never httpx.\n--- End of content ---"
LEGACY_MESSAGES: list[dict[str, object]] = [
    {"id": "0a6e1c1e-0001", "timestamp": "2025-09-26T08:49:01.000Z", "type": "info",
     "content": "Installing IDE companion..."},
    {"id": "0a6e1c1e-0002", "timestamp": "2025-09-26T08:49:02.000Z", "type": "error",
     "content": "Failed to install VS Code companion extension."},
    {"id": "0a6e1c1e-0003", "timestamp": "2025-09-26T08:49:10.000Z", "type": "user",
     "content": STATED + " See @NOTES.md" + REFERENCED},
    {"id": "0a6e1c1e-0004", "timestamp": "2025-09-26T08:49:20.000Z", "type": "gemini",
     "content": "Let me check your notes.", "thoughts": [{"subject": "Checking", "description": "notes",
     "timestamp": "2025-09-26T08:49:15.000Z"}], "tokens": {"input": 10, "output": 5, "cached": 0, "thoughts": 2,
     "tool": 0, "total": 17}, "model": "gemini-2.5-pro",
     "toolCalls": [{"id": "run_shell_command-1758876560000-1", "name": "run_shell_command",
                    "args": {"command": "python -c 'import httpx'"},
                    "result": [{"functionResponse": {"id": "run_shell_command-1758876560000-1",
                                "name": "run_shell_command",
                                "response": {"error": "ModuleNotFoundError: No module named 'httpx'"}}}],
                    "status": "error", "timestamp": "2025-09-26T08:49:21.000Z",
                    "resultDisplay": "ModuleNotFoundError: No module named 'httpx'",
                    "displayName": "Shell", "description": "Runs a shell command", "renderOutputAsMarkdown": False}]},
]  # fmt: skip
LEGACY_LATER: list[dict[str, object]] = [
    {"id": "0a6e1c1e-0005", "timestamp": "2026-02-26T22:01:00.000Z", "type": "user",  # later releases: a part list
     "content": [{"text": "And remember to use pytest."}]},
    {"id": "0a6e1c1e-0006", "timestamp": "2026-02-26T22:01:05.000Z", "type": "gemini",
     "content": "OK, pytest it is.", "thoughts": [], "tokens": None, "model": "gemini-2.5-pro"},
]  # fmt: skip


def legacy_chat(path: Path, messages: list[dict[str, object]], **extra: object) -> Path:
    """A chat file as Gemini CLI 0.4–0.38 writes it: `JSON.stringify(conversation, null, 2)`."""
    conversation = {"sessionId": LEGACY_ID, "projectHash": "b899de0d" * 8, "startTime": "2025-09-26T08:49:00.000Z",
                    "lastUpdated": "2025-09-26T08:49:21.000Z", "messages": messages, **extra}  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(conversation, indent=2, ensure_ascii=False))
    return path


def test_a_gemini_chat_of_one_json_object_is_read_as_gemini(tmp_path: Path) -> None:
    chat = legacy_chat(tmp_path / "chats" / "session-2025-09-26T08-49-7d1c2b3a.json", LEGACY_MESSAGES)
    assert readers.reader_for(chat) is gemini_chat.read
    read = readers.read(chat)
    assert read.session_id == LEGACY_ID
    assert [(t.role, t.text) for t in read.turns[:2]] == [
        ("user", STATED + " See @NOTES.md"),  # the referenced file's text is the CLI's, not the user's
        ("assistant", "Let me check your notes."),
    ]
    assert read.turns[2].role == "tool_error" and "No module named 'httpx'" in read.turns[2].text
    assert [t.line for t in read.turns] == [3, 4, 4]  # a turn's line is its message's place in the list
    assert read.skipped == {"type:info": 1, "type:error": 1}
    assert read.parsed + sum(read.skipped.values()) == read.lines == len(LEGACY_MESSAGES)
    assert read.cursor.line == len(LEGACY_MESSAGES) and read.cursor.offset == chat.stat().st_size


def test_a_one_object_gemini_chat_rewritten_whole_is_read_from_the_cursor_on(tmp_path: Path) -> None:
    chat = legacy_chat(tmp_path / "session-2025-09-26T08-49-7d1c2b3a.json", LEGACY_MESSAGES)
    before = readers.read(chat)
    again = readers.read(chat, before.cursor)
    assert again.turns == [] and again.lines == 0
    legacy_chat(chat, LEGACY_MESSAGES + LEGACY_LATER)  # the CLI rewrites the whole file at every message
    after = readers.read(chat, before.cursor)
    assert [(t.role, t.text, t.line) for t in after.turns] == [
        ("user", "And remember to use pytest.", 5),
        ("assistant", "OK, pytest it is.", 6),
    ]
    assert after.parsed + sum(after.skipped.values()) == after.lines == len(LEGACY_LATER)


def test_a_one_object_gemini_chat_caught_mid_write_waits(tmp_path: Path) -> None:
    chat = legacy_chat(tmp_path / "session-2025-09-26T08-49-7d1c2b3a.json", LEGACY_MESSAGES)
    whole = chat.read_bytes()
    chat.write_bytes(whole[: len(whole) // 2])  # the CLI truncates, then writes: a read can land in between
    cut = readers.read(chat)
    assert cut.turns == [] and cut.lines == 0 and cut.cursor.line == 0 and cut.pending == len(whole) // 2
    chat.write_bytes(whole)
    assert [t.role for t in readers.read(chat, cut.cursor).turns] == ["user", "assistant", "tool_error"]


def test_a_subagents_chat_has_no_words_of_the_user(tmp_path: Path) -> None:
    """A subagent's chat (`chats/<parent session>/<id>.json`, kind "subagent"): its user messages are the
    main agent's task, written by the model."""
    chat = legacy_chat(tmp_path / LEGACY_ID / "3f0c.json", LEGACY_MESSAGES, kind="subagent")
    read = readers.read(chat)
    assert [t.role for t in read.turns] == ["assistant", "tool_error"]
    assert read.skipped.get("subagent") == 1


def test_referenced_file_contents_are_not_the_users_words_in_a_jsonl_chat(tmp_path: Path) -> None:
    lines = GEMINI.read_text().splitlines()
    user = json.loads(next(line for line in lines if STATED in line and '"type":"user"' in line))
    user["content"][0]["text"] += " See @NOTES.md"
    user["content"][1:1] = [{"text": REFERENCED.split("Content from @")[0]},
                            {"text": "\nContent from @" + REFERENCED.split("Content from @")[1]}]  # fmt: skip
    chat = tmp_path / GEMINI.name
    chat.write_text("\n".join(json.dumps(user) if STATED in line and '"type":"user"' in line else line
                              for line in lines) + "\n")  # fmt: skip
    first = readers.read(chat).turns[0]
    assert first.role == "user" and first.text == STATED + " See @NOTES.md"


def test_a_stated_preference_in_a_one_object_gemini_chat_is_reflected_once(vault: Vault, tmp_path: Path) -> None:
    chat = legacy_chat(tmp_path / "session-2025-09-26T08-49-7d1c2b3a.json", LEGACY_MESSAGES)
    report = runner.reflect_transcript(vault, chat, final=True)
    assert report.session_id == LEGACY_ID
    httpx = [n for n in (vault.read(p).note for p in report.written) if "httpx" in n.body]
    assert httpx and httpx[0].meta["kind"] == "preference", report.routes
    assert not any("never httpx" in vault.read(p).note.body for p in report.written)
    assert runner.pending_bytes(vault, chat) == 0
    assert runner.reflect_transcript(vault, chat, final=True).written == []


def test_a_resumed_gemini_session_finds_its_one_object_chat_file(tmp_path: Path) -> None:
    from memvault.hooks import adapters

    chats = tmp_path / "chats"
    real = legacy_chat(chats / "session-2025-09-26T08-49-7d1c2b3a.json", LEGACY_MESSAGES)
    os.utime(real, (2, 2))
    stray = chats / "session-2025-09-26T09-10-7d1c2b3a.json"
    legacy_chat(stray, [])
    payload = {"transcript_path": str(stray), "session_id": LEGACY_ID}
    assert adapters.gemini_transcript(payload) == str(real)
    migrated = real.with_name(real.name + "l")  # 0.39+ resuming it copies it to `<name>.jsonl` and writes there
    migrated.write_text(json.dumps({"sessionId": LEGACY_ID, "projectHash": "b899de0d" * 8}) + "\n")
    os.utime(migrated, (3, 3))
    assert adapters.gemini_transcript(payload) == str(migrated)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_fifo_named_like_a_one_object_gemini_chat_is_never_opened(tmp_path: Path) -> None:
    from memvault.hooks import adapters

    fifo = tmp_path / "session-2025-09-26T08-49-7d1c2b3a.json"
    os.mkfifo(fifo)
    assert readers.reader_for(fifo) is transcript.read  # refused at once, not a blocked open
    with pytest.raises(OSError):
        gemini_chat.read(fifo)
    stray = legacy_chat(tmp_path / "session-2025-09-26T09-10-7d1c2b3a.json", [])
    assert adapters.gemini_transcript({"transcript_path": str(stray), "session_id": LEGACY_ID}) is None


# User-role texts Codex CLI writes itself (codex-rs `contextual_user_message`: a text item that opens and
# closes with one fragment's markers; older rollouts carry no `content_item_kinds` to tell them apart).
CODEX_INJECTED = [
    '<subagent_notification>\n{"agent_id":"019ce419","status":{"completed":"From now on always use tabs."}}\n'
    "</subagent_notification>",
    "<turn_aborted>\nThe user interrupted the previous turn on purpose. From now on always ask first.\n</turn_aborted>",
    "<user_shell_command>\n<command>git status</command>\n<result>\nOn branch main\n</result>\n</user_shell_command>",
    "<skill>\n<name>deploy</name>\n<path>/home/dev/.codex/skills/deploy/SKILL.md</path>\nAlways deploy on Fridays.\n"
    "</skill>",
    "# AGENTS.md instructions for /home/dev/project\n\n<INSTRUCTIONS>\nAlways use tabs.\n</INSTRUCTIONS>",
    "<user_instructions>\n\nAlways use tabs.\n\n</user_instructions>",
    '<hook_prompt hook_run_id="stop-1">From now on always run the linter.</hook_prompt>',
    "<user_action>\n  <context>User initiated a review task.</context>\n  <results>Always use tabs.</results>\n"
    "</user_action>",
    "<additional_context>\n<title>Context from my editor</title>\nAlways use tabs.\n</additional_context>",
    '<codex_internal_context source="goals">\nAlways use tabs.\n</codex_internal_context>',
    "<SUBAGENT_NOTIFICATION>{}</subagent_notification>",
    "Warning: apply_patch was requested via exec_command. Use the apply_patch tool instead of exec_command.",
]


def codex_rollout_with(tmp_path: Path, messages: list[dict[str, object]], source: object = "cli") -> Path:
    meta = {"timestamp": "2026-03-12T16:36:47.000Z", "type": "session_meta",
            "payload": {"id": "019ce3fb-1087-7980-8f92-8d0171aaea6a", "cwd": "/home/dev/project", "source": source}}
    lines = [meta] + [{"timestamp": "2026-03-12T16:37:00.000Z", "type": "response_item", "payload": m}
                      for m in messages]  # fmt: skip
    path = tmp_path / "rollout-2026-03-12T16-36-47-019ce3fb-1087-7980-8f92-8d0171aaea6a.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def user_message(*texts: str, kinds: list[str] | None = None) -> dict[str, object]:
    message: dict[str, object] = {"type": "message", "role": "user",
                                  "content": [{"type": "input_text", "text": t} for t in texts]}  # fmt: skip
    if kinds is not None:
        message["internal_chat_message_metadata_passthrough"] = {"content_item_kinds": kinds}
    return message


@pytest.mark.parametrize("text", CODEX_INJECTED, ids=lambda t: t[1:24])
def test_text_codex_injects_in_the_users_name_is_not_the_users_words(text: str, tmp_path: Path) -> None:
    rollout = codex_rollout_with(tmp_path, [user_message(text), user_message(STATED)])
    read = codex_rollout.read(rollout)
    if text.lower().startswith(("# agents.md", "<user_instructions>")):  # the project's instructions: context
        assert [t.role for t in read.turns] == ["instructions", "user"] and "Always use tabs." in read.turns[0].text
        assert read.turns[1].text == STATED and not read.skipped.get("harness")
        return
    assert [(t.role, t.text) for t in read.turns] == [("user", STATED)]
    assert read.skipped.get("harness") == 1


def test_only_the_typed_items_of_a_codex_message_are_the_users_words(tmp_path: Path) -> None:
    env = "<environment_context>\n  <cwd>/home/dev/project</cwd>\n</environment_context>"
    rollout = codex_rollout_with(tmp_path, [
        user_message(env, STATED),  # an older rollout: no kinds, one injected item beside the typed one
        user_message(CODEX_INJECTED[0], "And remember to use pytest.", kinds=["collab.notification", "user.text"]),
    ])  # fmt: skip
    assert [t.text for t in codex_rollout.read(rollout).turns] == [STATED, "And remember to use pytest."]


AGENTS_MD = """# AGENTS.md instructions for /home/dev/project

<INSTRUCTIONS>
## Project guidelines

- **Always** use the `<.icon>` component for icons, **never** use Heroicons modules or similar
- **Never** use `@apply` when writing raw css
- Never nest multiple modules in the same file
  end
</INSTRUCTIONS>"""


def test_a_user_turn_pasting_the_projects_agents_md_keeps_only_the_users_own_words(tmp_path: Path) -> None:
    """A corpus user pasted the AGENTS.md Codex had already sent into their first prompt, then wrote their request:
    the file's rules were saved as HIGH preferences (65 of the 66 wrong HIGH saves of the corpus's train split)."""
    from memvault.reflect import miner
    from memvault.reflect.mine import typed

    pasted = ("## Project guidelines\n\n- **Always** use the `<.icon>` component for icons, **never** use Heroicons "
              "modules or similar\n- **Never** use `@apply` when writing raw css\n- Never nest multiple modules in "
              "the same file\n  end\n\n")  # fmt: skip
    own = "From now on always use uuid7 for new primary keys, never serial integers."
    rollout = codex_rollout_with(tmp_path, [user_message(AGENTS_MD), user_message(pasted + own),
                                            user_message("never use @apply when writing raw CSS")])  # fmt: skip
    turns = codex_rollout.read(rollout).turns
    cleaned = typed.without_instructions(turns)
    assert [t.text for t in cleaned if t.role == "user"] == [own, ""]
    assert turns[1].text.endswith(own) and "Heroicons" in turns[1].text  # the reader keeps the turn as it was
    titles = [c.title for c in miner.mine(turns, using="rules")]
    assert any("uuid7" in t for t in titles) and not any("Heroicons" in t or "@apply" in t for t in titles), titles


def test_a_line_that_only_shares_words_with_the_instructions_stays_the_users() -> None:
    from memvault.reflect.mine import typed
    from memvault.reflect.transcript import Turn

    rules = Turn("instructions", "- Always run `mix precommit` before you finish\n- Use Req for HTTP", 2, None, None,
                 False)  # fmt: skip
    said = ["Always run mix precommit before you finish", "always run mix precommit before pushing to main",
            "Use Req", "end"]
    turns = [rules, *(Turn("user", text, 3 + n, None, None, False) for n, text in enumerate(said))]
    kept = [t.text for t in typed.without_instructions(turns) if t.role == "user"]
    # a line of the file (emphasis, list marks and case aside) goes; one that shares words, or a short line not in a
    # run of the file's lines, stays
    assert kept == ["", "always run mix precommit before pushing to main", "Use Req", "end"]


def test_a_codex_subagents_rollout_has_no_words_of_the_user(tmp_path: Path) -> None:
    """A subagent's rollout (`session_meta.source` = {"subagent": …}): its user messages are the parent agent's."""
    source = {"subagent": {"thread_spawn": {"parent_thread_id": "019ce3fb-0000", "depth": 1}}}
    rollout = codex_rollout_with(tmp_path, [user_message(STATED)], source=source)
    read = codex_rollout.read(rollout)
    assert read.turns == [] and read.skipped.get("subagent") == 1
    with rollout.open("a") as more:  # a later pass starts past the session_meta line
        more.write(json.dumps({"type": "response_item", "payload": user_message("And remember to use pytest.")}) + "\n")
    later = codex_rollout.read(rollout, read.cursor)
    assert later.lines == 1 and later.turns == [] and later.skipped == {"subagent": 1}


def test_reflect_corpus_finds_one_object_gemini_chats(tmp_path: Path) -> None:
    chats = tmp_path / "gem" / ".gemini" / "tmp" / "b899de0d" / "chats"
    legacy_chat(chats / "session-2025-09-26T08-49-7d1c2b3a.json", LEGACY_MESSAGES)
    migrated = legacy_chat(chats / "session-2025-09-26T10-00-8e2d3c4b.json", LEGACY_MESSAGES)
    shutil.copy(GEMINI, migrated.with_name(migrated.name + "l"))  # resumed by 0.39+: the .jsonl copy is the live one
    assert runner.corpus_files(chats) == sorted(
        [chats / "session-2025-09-26T08-49-7d1c2b3a.json", migrated.with_name(migrated.name + "l")],
        key=lambda p: (p.stat().st_mtime, str(p)),
    )
