"""Read a Gemini CLI chat file (`~/.gemini/tmp/<project>/chats/session-*.jsonl`) into clean turns.

The file is a header line (`sessionId`, `projectHash`, `startTime`), then message records (`id`,
`type` user | gemini | info | error, `content`) and `$set` records that update fields or replace the
whole message list. A message can be written again (Gemini adds its tool calls to an answer it
already saved), so each message counts once, at the line where it first appears: the whole file is
read each time (chat files are small), and turns before the cursor's line are not returned again.
`<session_context>` (the CLI's own environment message), `<hook_context>` (what hooks injected) and
memvault's fences are dropped. Lines after the cursor are each a turn or counted in `skipped`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .jsonl import Cursor, frame, line_object
from .transcript import TOOL_ERROR_CHARS, Transcript, Turn, clean, error_excerpt

# Chat files are small (a long session is a few MB) and must be read whole; past this, the rest waits.
MAX_CHAT_BYTES = 256 * 1024 * 1024
_HOOK_CONTEXT = re.compile(r"<hook_context>.*?(?:</hook_context>|\Z)", re.DOTALL)


def read(path: Path, cursor: Cursor | None = None) -> Transcript:
    path, cursor = Path(path), cursor or Cursor()
    framed = frame(path, Cursor(), max_bytes=MAX_CHAT_BYTES)
    raw_lines = framed.lines
    seen: set[str] = set()
    session_id: str | None = None
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
            try:
                new, reason = _record(obj, lineno, seen)
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


def _record(obj: dict[str, Any], lineno: int, seen: set[str]) -> tuple[list[Turn], str | None]:
    """The turns one line adds: the header adds none, a `$set` may resend the whole list, else one message."""
    if isinstance(obj.get("sessionId"), str) and "projectHash" in obj:
        return [], "header"
    if not isinstance(obj.get("$set"), dict):
        return _message(obj, lineno, seen)
    messages = obj["$set"].get("messages")
    new: list[Turn] = []
    why = []
    for message in messages if isinstance(messages, list) else []:
        added, one = _message(message, lineno, seen)
        new += added
        why.append(one)
    return new, None if new else next((w for w in why if w and w != "repeat"), "resent" if why else "update")


def _message(message: Any, lineno: int, seen: set[str]) -> tuple[list[Turn], str | None]:
    """The turns a message record adds (each part once per file), or [] and why it added none."""
    if not isinstance(message, dict) or not isinstance(message.get("id"), str):
        return [], "no_id"
    kind, mid, stamp = message.get("type"), message["id"], _str(message, "timestamp")
    turns: list[Turn] = []
    reason = "repeat"
    if kind in ("user", "gemini"):
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
    stripped = _HOOK_CONTEXT.sub("", joined)
    text = clean(stripped)
    if text:
        return text, ""
    if stripped != joined:
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
