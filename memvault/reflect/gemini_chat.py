"""Read a Gemini CLI chat file (`~/.gemini/tmp/<project>/chats/session-*.jsonl` or `.json`) into clean turns.

Since 0.39 the file is a header line (`sessionId`, `projectHash`, `startTime`, `kind`), then message
records (`id`, `type` user | gemini | info | error, `content`) and `$set` records that update fields or
replace the whole message list. A message can be written again (Gemini adds its tool calls to an answer it
already saved), so each message counts once, at the line where it first appears: the whole file is
read each time (chat files are small), and turns before the cursor's line are not returned again.
Releases 0.4 to 0.38 wrote the chat as one JSON object (`session-*.json`, the same header fields and a
`messages` list), pretty-printed and rewritten whole at every change: there a turn's line is its
message's place in the list (1-based) and the cursor counts messages; a file caught mid-rewrite is
not valid JSON and waits (`pending`) for the next read.
Not the user's words, so dropped: `<session_context>` (the CLI's own environment message),
`<hook_context>` (what hooks injected), what the CLI appends after "--- Content from referenced
files ---" (the files an @path named) and its `<system_note>`, every user message of a subagent's chat
(`kind: subagent`: the main agent wrote it), and memvault's fences. Each message or line after the
cursor is a turn or counted in `skipped`.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from memvault.store import disk

from .jsonl import BAD, DEEP, Cursor, frame, line_object, loads
from .transcript import TOOL_ERROR_CHARS, Transcript, Turn, clean, error_excerpt

# Chat files are small (a long session is a few MB) and must be read whole; past this, the rest waits.
MAX_CHAT_BYTES = 256 * 1024 * 1024
_HOOK_CONTEXT = re.compile(r"<hook_context>.*?(?:</hook_context>|\Z)", re.DOTALL)
_SYSTEM_NOTE = re.compile(r"<system_note>.*?(?:</system_note>|\Z)", re.DOTALL)  # the CLI's nudge for @agent
_REFERENCED = re.compile(r"(?:^|\n)--- Content from referenced files ---")  # what follows: files, not words
# The one-object format opens with these two keys, in this order (`JSON.stringify(conversation, null, 2)`).
_WHOLE_HEAD = re.compile(rb'\A\s*\{\s*"sessionId"\s*:\s*"[^"\\]*"\s*,\s*"projectHash"\s*:')
_HEAD_BYTES = 64 * 1024
_BOM = b"\xef\xbb\xbf"


def read(path: Path, cursor: Cursor | None = None) -> Transcript:
    path, cursor = Path(path), cursor or Cursor()
    if whole_object(path):
        return _read_whole(path, cursor)
    framed = frame(path, Cursor(), max_bytes=MAX_CHAT_BYTES)
    raw_lines = framed.lines
    seen: set[str] = set()
    session_id: str | None = None
    subagent = False
    turns: list[Turn] = []
    skipped: dict[str, int] = {}
    parsed = 0
    for i, raw in enumerate(raw_lines):
        lineno = i + 1
        counted = lineno > cursor.line
        obj, reason = line_object(raw)
        new: list[Turn] = []
        if obj is not None:
            if isinstance(obj.get("sessionId"), str) and "projectHash" in obj:
                session_id = session_id or obj["sessionId"]
                subagent = subagent or obj.get("kind") == "subagent"
            try:
                new, reason = _record(obj, lineno, seen, subagent)
            except Exception as exc:  # a line the rules did not foresee: counted, never raised
                reason = f"error:{type(exc).__name__}"
        if not counted:
            continue
        turns += new
        if reason:
            skipped[reason] = skipped.get(reason, 0) + 1
        else:
            parsed += 1
    if raw_lines and cursor.line > len(raw_lines):  # a shorter file than last time: nothing is new
        turns = []
    return Transcript(path, session_id or path.stem, None, turns, framed.cursor,
                      max(0, len(raw_lines) - cursor.line), skipped, parsed, framed.pending)  # fmt: skip


def _read_whole(path: Path, cursor: Cursor) -> Transcript:
    """A chat file of one JSON object: the messages after the cursor's count, each a turn or skipped."""
    with disk.open_regular(path) as handle:  # never a FIFO or a device named like a chat file
        size = os.fstat(handle.fileno()).st_size
        raw = handle.read(MAX_CHAT_BYTES + 1)
    if len(raw) > MAX_CHAT_BYTES:  # too big to parse whole: counted, and not read again until it changes
        return Transcript(path, path.stem, None, [], Cursor(size, cursor.line), 1, {"too_long": 1})
    obj = loads(raw.removeprefix(_BOM))
    if obj is BAD:  # the CLI truncates, then writes: caught in between, it is read again next time
        return Transcript(path, path.stem, None, [], cursor, 0, {}, pending=len(raw))
    if not isinstance(obj, dict) or not isinstance(obj.get("messages"), list):
        why = "too_deep" if obj is DEEP else "not_chat"
        return Transcript(path, path.stem, None, [], Cursor(size, cursor.line), 1, {why: 1})
    messages: list[Any] = obj["messages"]
    session_id = obj.get("sessionId") if isinstance(obj.get("sessionId"), str) else None
    subagent = obj.get("kind") == "subagent"
    turns: list[Turn] = []
    skipped: dict[str, int] = {}
    seen: set[str] = set()
    for index, message in enumerate(messages[cursor.line :], start=cursor.line + 1):
        try:
            new, reason = _message(message, index, seen, subagent)
        except Exception as exc:  # a message the rules did not foresee: counted, never raised
            new, reason = [], f"error:{type(exc).__name__}"
        turns += new
        if reason:
            skipped[reason] = skipped.get(reason, 0) + 1
    lines = max(0, len(messages) - cursor.line)
    return Transcript(path, session_id or path.stem, None, turns, Cursor(size, len(messages)), lines, skipped,
                      lines - sum(skipped.values()))  # fmt: skip


def _record(obj: dict[str, Any], lineno: int, seen: set[str], subagent: bool) -> tuple[list[Turn], str | None]:
    """The turns one line adds: the header adds none, a `$set` may resend the whole list, else one message."""
    if isinstance(obj.get("sessionId"), str) and "projectHash" in obj:
        return [], "header"
    if not isinstance(obj.get("$set"), dict):
        return _message(obj, lineno, seen, subagent)
    messages = obj["$set"].get("messages")
    new: list[Turn] = []
    why = []
    for message in messages if isinstance(messages, list) else []:
        added, one = _message(message, lineno, seen, subagent)
        new += added
        why.append(one)
    return new, None if new else next((w for w in why if w and w != "repeat"), "resent" if why else "update")


def _message(message: Any, lineno: int, seen: set[str], subagent: bool = False) -> tuple[list[Turn], str | None]:
    """The turns a message record adds (each part once per file), or [] and why it added none."""
    if not isinstance(message, dict) or not isinstance(message.get("id"), str):
        return [], "no_id"
    kind, mid, stamp = message.get("type"), message["id"], _str(message, "timestamp")
    turns: list[Turn] = []
    reason = "repeat"
    if kind == "user" and subagent:  # a subagent's task, written by the main agent
        reason = "subagent"
    elif kind in ("user", "gemini"):
        role = "user" if kind == "user" else "assistant"
        text, why = _text(message.get("content"), role)
        if text and mid not in seen:
            seen.add(mid)
            turns.append(Turn(role, text, lineno, mid, stamp, False))
        elif mid not in seen:
            reason = why
        for call in message.get("toolCalls") or [] if kind == "gemini" else []:
            turn = _tool_error(call, lineno, stamp, seen)
            if turn is not None:
                turns.append(turn)
    else:
        reason = f"type:{kind}" if isinstance(kind, str) else "no_type"
    return turns, None if turns else reason


def _text(content: Any, role: str) -> tuple[str, str]:
    """The message's prose with injected context removed, and why it is empty when it is."""
    if isinstance(content, str):
        parts = [content]
    elif isinstance(content, list):
        if any(isinstance(p, dict) and "functionResponse" in p for p in content):
            return "", "tool_result"
        parts = [p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
    else:
        return "", "empty"
    joined = "\n\n".join(parts)
    if role == "user" and joined.lstrip().startswith("<session_context>"):
        return "", "session_context"
    typed = _REFERENCED.split(joined, 1)[0] if role == "user" else joined
    stripped = _HOOK_CONTEXT.sub("", typed)
    if role == "user":
        stripped = _SYSTEM_NOTE.sub("", stripped)
    text = clean(stripped)
    if text:
        return text, ""
    if typed != joined and not clean(typed):
        return "", "referenced_files"
    if stripped != typed:
        return "", "hook"
    return "", "memoryvault" if "<memoryvault-" in joined else "empty"


def _tool_error(call: Any, lineno: int, stamp: str | None, seen: set[str]) -> Turn | None:
    if not isinstance(call, dict) or call.get("status") in (None, "success") or not isinstance(call.get("id"), str):
        return None
    key = "tool:" + call["id"]
    if key in seen:
        return None
    seen.add(key)
    detail = json.dumps(call.get("result") or call.get("resultDisplay") or "", ensure_ascii=False)
    text = f"{call.get('name', 'tool')} {call.get('status')}: " + error_excerpt(detail, TOOL_ERROR_CHARS)
    return Turn("tool_error", text, lineno, call["id"], stamp, False)


def _str(obj: dict[str, Any], key: str) -> str | None:
    value = obj.get(key)
    return value if isinstance(value, str) else None


def looks_like(first: dict[str, Any]) -> bool:
    """A chat file opens with a header holding `sessionId` and `projectHash`."""
    return isinstance(first.get("sessionId"), str) and "projectHash" in first


def whole_object(path: Path) -> bool:
    """Whether `path` is a chat file of one JSON object (Gemini CLI 0.4–0.38), told by its first bytes.

    It opens with `"sessionId"` then `"projectHash"`, and its first line is not a whole record (the
    object is pretty-printed) or is one that holds the `messages` list (the object on one line).
    """
    with disk.open_regular(path) as handle:
        head = handle.read(_HEAD_BYTES).removeprefix(_BOM)
    if not _WHOLE_HEAD.match(head):
        return False
    first, newline, _ = head.partition(b"\n")
    if not newline:  # one line longer than the head: a whole conversation (a header line is short)
        return True
    obj = loads(first)
    return not isinstance(obj, dict) or isinstance(obj.get("messages"), list)
