"""Host adapters: a Codex CLI or Gemini CLI hook event in, the host-neutral core (`events`) run, the host's shape out.

Each host names its events, fills its stdin and reads the answer a little differently
(`hosts.spec`). The adapter maps the event name, tidies the few stdin fields that differ, runs
`events.respond` as Claude Code's hooks do (same dedup, markers, budgets, log line), and rewrites the
answer: `hookEventName` becomes the host's event name, and keys the host would reject are dropped.
Standard library only: it is on the prompt path.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any, TextIO

from memvault.hosts import spec

from . import events

# Gemini CLI (headless) prepends SessionStart's context to the prompt as <hook_context>…</hook_context>.
_HOOK_CONTEXT = re.compile(r"<hook_context>.*?(?:</hook_context>|\Z)\s*", re.DOTALL)
_ALLOWED = {"hookSpecificOutput", "systemMessage"}  # Codex rejects any other top-level key


def main(
    host: str, event: str, stdin: TextIO | None = None, stdout: TextIO | None = None, *, not_served: str | None = None
) -> int:
    """Run one host event; always returns 0. Unknown hosts or events are logged and skipped by the core.

    `not_served`: why the warm service did not run this event for the hook (`hooks.fast`), for the log line.
    """
    shaped, record = respond(host, event, events.read_payload(stdin or sys.stdin))
    if shaped is not None:
        try:
            (stdout or sys.stdout).write(json.dumps(shaped) + "\n")
            (stdout or sys.stdout).flush()
        except (OSError, ValueError):
            pass  # a closed pipe must not turn into a hook error; the run is still logged
    if not_served:
        record["not_served"] = not_served
    events.log(record)
    return 0


def respond(host: str, event: str, payload: dict[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """The host's answer (None: print nothing) and the core's log record, without the duration."""
    known = spec.HOSTS.get(host)
    core = core_event(host, event)
    if known is None or core is None:
        return None, events.respond(f"{host}:{event}", {}, host=host)[1]
    output, record = events.respond(core, normalise(host, core, payload), host=host)
    return shape(known, event, core, json.dumps(output) if output is not None else ""), record


def core_event(host: str, event: str) -> str | None:
    """The core event a host's event runs, or None."""
    known = spec.HOSTS.get(host)
    mapped = known.event(event) if known else None
    return mapped.core if mapped else None


def normalise(host: str, core: str, payload: dict[str, Any]) -> dict[str, Any]:
    """The payload as the core expects it (Claude Code's field names, which both hosts mostly share)."""
    data = dict(payload)
    if host == spec.GEMINI:
        prompt = data.get("prompt")
        if isinstance(prompt, str) and "<hook_context>" in prompt:
            data["prompt"] = _HOOK_CONTEXT.sub("", prompt).strip()
        if core == "SessionStart" and data.get("source") == "resume":
            real = gemini_transcript(data)
            if real:
                data["transcript_path"] = real
    return data


def gemini_transcript(payload: dict[str, Any]) -> str | None:
    """On resume Gemini CLI hands SessionStart a new, nearly empty chat file; the session's real one is
    the oldest chat file beside it whose header carries the same session id.

    Releases 0.4–0.38 write `session-<time>-<id8>.json` (one JSON object); later ones `.jsonl`, and
    resuming an old `.json` session copies it to `<name>.jsonl` and writes there, so that copy wins.
    """
    from memvault.store import disk  # here: only a resumed Gemini session needs it

    given, session = payload.get("transcript_path"), payload.get("session_id")
    if not isinstance(given, str) or not isinstance(session, str) or len(session) < 8:
        return None
    folder = Path(given).parent
    try:
        found = [*folder.glob(f"session-*-{session[:8]}.jsonl"), *folder.glob(f"session-*-{session[:8]}.json")]
        candidates = sorted(found, key=lambda p: (p.stat().st_mtime, p.name))
    except OSError:
        return None
    for path in candidates:
        if os.path.abspath(path) == os.path.abspath(given):
            continue
        if path.suffix == ".json" and path.with_name(path.name + "l").exists():
            continue  # migrated to .jsonl by a newer release, which writes there now
        try:  # a regular file only: a FIFO named like a chat file would block the hook until the host kills it
            with disk.open_regular(path) as handle:
                head = handle.read(64 * 1024)
        except OSError:
            continue
        if _chat_session(head) == session:
            return str(path)
    return None


# A chat file's header: its first line (.jsonl), or the opening of the pretty-printed object (.json).
_SESSION_HEAD = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"sessionId"\s*:\s*"([^"\\]*)"')


def _chat_session(head: bytes) -> str | None:
    """The session id a chat file's first bytes name (the file is the host's, read as untrusted)."""
    try:
        header = json.loads(head.partition(b"\n")[0].decode("utf-8") or "{}")
    except (ValueError, RecursionError):
        header = None
    if isinstance(header, dict):
        return header.get("sessionId") if isinstance(header.get("sessionId"), str) else None
    match = _SESSION_HEAD.match(head)
    return match.group(1).decode("utf-8", "replace") if match else None


def shape(host: spec.Host, event: str, core: str, text: str) -> dict[str, Any] | None:
    """The core's answer in the host's shape, or None when there is nothing to say."""
    try:
        data = json.loads(text) if text.strip() else None
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    out = {k: v for k, v in data.items() if k in _ALLOWED}
    inner = out.get("hookSpecificOutput")
    if isinstance(inner, dict):
        out["hookSpecificOutput"] = {**inner, "hookEventName": event}
    if host.quiet_prompt and core == "UserPromptSubmit":
        out.pop("systemMessage", None)
    return out or None
