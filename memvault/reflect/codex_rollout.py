"""Read a Codex CLI session rollout (`~/.codex/sessions/…/rollout-*.jsonl`) into clean turns, incrementally.

Every line is `{"timestamp", "type", "payload"}`. The conversation is in `response_item` lines:
`message` items by role (user, assistant, developer), function calls and their output. What the
user typed carries the content kind `user.text` (newer rollouts, one kind per content item); in older
ones the text items Codex writes in the user's name are told by their opening marker (codex-rs
`contextual_user_message`: AGENTS.md and `<user_instructions>`, `<environment_context>`, `<skill>`,
`<user_shell_command>`, `<turn_aborted>`, `<subagent_notification>`, `<hook_prompt>`, `<user_action>`,
and the rest of `_INJECTED`). Those items, every developer message (hook context, memvault's
included) and every user message of a subagent's rollout (`session_meta.source` = {"subagent": …}:
the parent agent wrote it) are skipped, except the project's instruction files (AGENTS.md,
`<user_instructions>`): they become an "instructions" turn, context that tells the miners which lines
of a later user turn repeat them.
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

# Opening markers of the text items Codex CLI writes as user-role messages (compared case-insensitively).
_INJECTED = (
    "# agents.md", "<instructions>", "<user_instructions>", "<environment_context>", "<skills_instructions>",
    "<skill>", "<user_shell_command>", "<turn_aborted>", "<subagent_notification>", "<subagents>", "<plugins>",
    "<additional_context>", "<codex_internal_context", "<goal_context>", "<hook_prompt", "<user_action>",
    "<next_prompt_suggestion>", "<recommended_plugins>",
    "warning: the maximum number of unified exec processes you can keep open is",  # warnings older releases
    "warning: apply_patch was requested via ",  # wrote in the user's name
    "warning: your account was flagged for potentially high-risk cyber activity",
)  # fmt: skip
# Of those, the project's instruction files (AGENTS.md, the user's instructions), kept as an "instructions" turn.
_INSTRUCTIONS = ("# agents.md", "<instructions>", "<user_instructions>")
_EXIT = re.compile(r"^Process exited with code (-?\d+)$", re.M)


def read(path: Path, cursor: Cursor | None = None) -> Transcript:
    path, cursor = Path(path), cursor or Cursor()
    framed = frame(path, cursor)
    raw_lines = framed.lines
    session_id: str | None = None
    cwd: str | None = None
    subagent = _subagent(path) if cursor.offset else False  # read from the start, its first line is seen below
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
                subagent = subagent or (lineno == 1 and _from_subagent(payload))
            try:
                turn, reason = _line(obj, payload, lineno, subagent)
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


def _line(obj: dict[str, Any], payload: dict[str, Any], lineno: int, subagent: bool) -> tuple[Turn | None, str | None]:
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
        if role == "user" and subagent:
            return None, "subagent"
        texts, injected = _typed(payload) if role == "user" else (_texts(payload), False)
        if injected and not texts:
            rules = clean("\n\n".join(t for t in _texts(payload) if t.lstrip().lower().startswith(_INSTRUCTIONS)))
            if rules:  # kept as context: a user turn repeating it is not their words
                return Turn("instructions", rules, lineno, _str(payload, "id"), stamp, False), None
            return None, "harness"
        text = "\n\n".join(texts)
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


def _texts(payload: dict[str, Any]) -> list[str]:
    return [b["text"] for b in payload.get("content") or [] if isinstance(b, dict) and isinstance(b.get("text"), str)]


def _typed(payload: dict[str, Any]) -> tuple[list[str], bool]:
    """A user-role message's text items the user typed, and whether any other was dropped as Codex's own."""
    raw = payload.get("content")
    content: list[Any] = raw if isinstance(raw, list) else []
    meta = payload.get("internal_chat_message_metadata_passthrough")
    kinds = meta.get("content_item_kinds") if isinstance(meta, dict) else None
    kinds = kinds if isinstance(kinds, list) and kinds else None
    typed: list[str] = []
    injected = False
    for i, block in enumerate(content):
        if not isinstance(block, dict) or not isinstance(block.get("text"), str):
            continue
        text = block["text"]
        if kinds is not None and len(kinds) == len(content):  # one kind per item: it says
            mine = kinds[i] == "user.text"
        else:
            mine = (kinds is None or "user.text" in kinds) and not text.lstrip().lower().startswith(_INJECTED)
        if mine:
            typed.append(text)
        else:
            injected = True
    return typed, injected


def _from_subagent(meta: dict[str, Any]) -> bool:
    """Whether a `session_meta` payload is a subagent's (`source`: {"subagent": …}; a review, a spawned agent)."""
    source = meta.get("source")
    return isinstance(source, dict) and any(str(key).lower() == "subagent" for key in source)


def _subagent(path: Path) -> bool:
    """Whether the rollout's first line (its own `session_meta`) says a subagent's; read when resuming mid-file."""
    first = frame(path, Cursor(), max_bytes=1).lines[:1]
    obj = line_object(first[0])[0] if first else None
    payload = obj.get("payload") if obj is not None and obj.get("type") == "session_meta" else None
    return isinstance(payload, dict) and _from_subagent(payload)


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
