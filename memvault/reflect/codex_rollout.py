"""Read a Codex CLI session rollout (`~/.codex/sessions/…/rollout-*.jsonl`) into clean turns, incrementally.

Every line is `{"timestamp", "type", "payload"}`. The conversation is in `response_item` lines:
`message` items by role (user, assistant, developer), function calls and their output. What the
user typed carries the content kind `user.text`; the harness's own user-role messages (environment
context, instructions) and every developer message (hook context, memvault's included) are skipped.
A shell call that exited non-zero becomes a short tool_error turn. `event_msg` lines repeat the
items for display and are skipped. Every line is a turn or counted in `skipped` by reason.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .jsonl import Cursor, frame, line_object
from .transcript import TOOL_ERROR_CHARS, Transcript, Turn, clean, error_excerpt

_HARNESS_PREFIXES = ("<environment_context>", "<user_instructions>", "<skills_instructions>", "# AGENTS.md")
_EXIT = re.compile(r"^Process exited with code (-?\d+)$", re.M)


def read(path: Path, cursor: Cursor | None = None) -> Transcript:
    path, cursor = Path(path), cursor or Cursor()
    framed = frame(path, cursor)
    raw_lines = framed.lines
    session_id: str | None = None
    cwd: str | None = None
    turns: list[Turn] = []
    skipped: dict[str, int] = {}
    parsed = 0
    for i, raw in enumerate(raw_lines):
        lineno = cursor.line + i + 1
        obj, reason = line_object(raw)
        if obj is not None:
            payload: dict[str, Any] = obj["payload"] if isinstance(obj.get("payload"), dict) else {}
            if obj.get("type") == "session_meta":
                session_id = session_id or _str(payload, "session_id") or _str(payload, "id")
                cwd = cwd or _str(payload, "cwd")
            try:
                turn, reason = _line(obj, payload, lineno)
            except Exception as exc:  # a line the rules did not foresee: counted, never raised
                turn, reason = None, f"error:{type(exc).__name__}"
            if turn is not None:
                turns.append(turn)
        if reason:
            skipped[reason] = skipped.get(reason, 0) + 1
        else:
            parsed += 1
    return Transcript(path, session_id or _id_from_name(path), cwd, turns, framed.cursor, len(raw_lines), skipped,
                      parsed, framed.pending, framed.more)  # fmt: skip


def _line(obj: dict[str, Any], payload: dict[str, Any], lineno: int) -> tuple[Turn | None, str | None]:
    """The line's turn, or None and the reason it gave none."""
    kind = obj.get("type")
    if kind == "event_msg":
        return None, "event"
    if kind != "response_item":
        return None, f"type:{kind}" if isinstance(kind, str) else "no_type"
    item = payload.get("type")
    stamp = _str(obj, "timestamp")
    if item == "message":
        role = payload.get("role")
        if role == "developer":
            return None, "developer"
        text = "\n\n".join(
            b["text"] for b in payload.get("content") or [] if isinstance(b, dict) and isinstance(b.get("text"), str)
        )
        if role == "user" and not _typed(payload, text):
            return None, "harness"
        if role not in ("user", "assistant"):
            return None, f"role:{role}"
        cleaned = clean(text)
        if not cleaned:
            return None, "memoryvault" if "<memoryvault-" in text else "empty"
        return Turn(role, cleaned, lineno, _str(payload, "id"), stamp, False), None
    if item == "function_call_output":
        output = payload.get("output")
        output = output if isinstance(output, str) else json.dumps(output) if output is not None else ""
        code = _EXIT.search(output)
        if code is None or code.group(1) == "0":
            return None, "tool_result"
        body = output.split("\nOutput:\n", 1)[-1].strip() or output
        text = f"exit code {code.group(1)}: " + error_excerpt(body, TOOL_ERROR_CHARS)
        return Turn("tool_error", text, lineno, _str(payload, "call_id"), stamp, False), None
    if item in ("function_call", "custom_tool_call", "local_shell_call", "web_search_call"):
        return None, "tool_call"
    if item == "reasoning":
        return None, "reasoning"
    return None, f"item:{item}"


def _typed(payload: dict[str, Any], text: str) -> bool:
    """Whether a user-role message is what the user typed (not context the harness put in the user's name)."""
    meta = payload.get("internal_chat_message_metadata_passthrough")
    kinds = meta.get("content_item_kinds") if isinstance(meta, dict) else None
    if isinstance(kinds, list) and kinds:
        return "user.text" in kinds
    return not text.lstrip().startswith(_HARNESS_PREFIXES)


def _id_from_name(path: Path) -> str:
    """`rollout-2026-11-23T16-01-11-<uuid>` → the uuid (the last five dash-separated groups)."""
    parts = path.stem.split("-")
    return "-".join(parts[-5:]) if len(parts) > 5 else path.stem


def _str(obj: dict[str, Any], key: str) -> str | None:
    value = obj.get(key)
    return value if isinstance(value, str) else None


def looks_like(first: dict[str, Any]) -> bool:
    """A rollout's lines carry `type` and `payload`; its first is `session_meta`."""
    return isinstance(first.get("payload"), dict) and isinstance(first.get("type"), str) and "timestamp" in first
