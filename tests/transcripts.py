"""Small Claude Code transcripts for tests, in the host's JSONL format (see examples/transcripts/)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def line(role: str, text: str, session: str, n: int) -> dict[str, Any]:
    """One user or assistant line as Claude Code writes it."""
    message: dict[str, Any] = {"role": role, "content": text}
    if role == "assistant":
        message = {"id": f"msg-{session}-{n}", "type": "message", "role": role, "model": "claude-sonnet-4-5",
                   "content": [{"type": "text", "text": text}]}  # fmt: skip
    return {
        "parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/home/you/code/shop",
        "sessionId": session, "version": "2.0.31", "type": role, "message": message,
        "uuid": f"{session}-{n:04d}", "timestamp": f"2026-11-21T15:{n // 60:02d}:{n % 60:02d}.000Z",
    }  # fmt: skip


SAID = [
    ("user", "From now on, always run ruff check before you commit anything in this repo."),
    ("assistant", "Understood: I will run `ruff check` before every commit."),
    ("user", "Never push directly to main; open a pull request instead."),
    ("assistant", "Got it, pull requests only."),
]


def write(path: Path, session: str, said: list[tuple[str, str]] = SAID, *, raw: list[bytes] = ()) -> Path:
    """A transcript of `said`, with each of `raw` (lines as bytes, unchecked) inserted before the last turn."""
    lines = [json.dumps(line(role, text, session, n)).encode() for n, (role, text) in enumerate(said)]
    lines[-1:-1] = list(raw)
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path
