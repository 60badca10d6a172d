"""Which reader a transcript needs, told by its first line: Claude Code, Codex CLI rollout or Gemini CLI chat.

A Gemini CLI chat of one pretty-printed JSON object (releases 0.4–0.38) has no whole first line: it is
told by its opening keys instead (`gemini_chat.whole_object`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from memvault.store import disk

from . import codex_rollout, gemini_chat, jsonl, transcript
from .jsonl import Cursor
from .transcript import Transcript

Reader = Callable[[Path, Cursor], Transcript]


def reader_for(path: Path) -> Reader:
    """The reader for `path` (Claude Code's when the first line says nothing else, or cannot be read)."""
    try:
        with disk.open_regular(path) as handle:
            first = jsonl.loads(handle.readline(16 * 1024 * 1024) or b"{}")  # never raises for what it reads
    except OSError:
        return transcript.read
    if isinstance(first, dict):
        if gemini_chat.looks_like(first):
            return gemini_chat.read
        if codex_rollout.looks_like(first):
            return codex_rollout.read
        return transcript.read
    try:
        return gemini_chat.read if gemini_chat.whole_object(path) else transcript.read
    except OSError:
        return transcript.read


def read(path: Path, cursor: Cursor | None = None, *, tools: bool = False) -> Transcript:
    """The transcript at `path` from `cursor` on, by its host's reader (`tools`: see `transcript.read`)."""
    reader = reader_for(path)
    if reader is transcript.read:
        return transcript.read(Path(path), cursor or Cursor(), tools=tools)
    return reader(Path(path), cursor or Cursor())
