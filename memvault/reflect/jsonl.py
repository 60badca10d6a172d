"""Bounded, resumable reading of an append-only JSONL file: the framing every transcript reader shares.

Claude Code transcripts, Codex CLI rollouts and Gemini CLI chats are all files a host appends lines
to. `frame()` returns the complete lines from a cursor on, in bounded memory: a read takes at most
about `READ_BYTES` (the rest waits for the next read, `Frame.more`), a line longer than
`MAX_LINE_BYTES` is skipped without being held (it comes back as None, for the reader to count as
`too_long`), a byte order mark at the file's start is not part of the first line, and a last line
without a newline is consumed only when it is a whole JSON object (one cut off mid-write waits).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memvault.store import disk

READ_BYTES = 64 * 1024 * 1024  # one read consumes about this much at most; the rest is left for the next
MAX_LINE_BYTES = 16 * 1024 * 1024  # a longer line is skipped ("too_long") without being read into memory
_CHUNK = 1024 * 1024
_BOM = b"\xef\xbb\xbf"
BAD, DEEP = object(), object()  # what `loads` returns for invalid JSON and for JSON nested too deep to parse


@dataclass(frozen=True)
class Cursor:
    offset: int = 0  # byte offset just past the last complete line consumed
    line: int = 0  # lines consumed so far


@dataclass(frozen=True)
class Frame:
    lines: list[bytes | None]  # the complete lines read, without their newline; None for an overlong line
    cursor: Cursor  # where the next read starts
    pending: int = 0  # bytes of an incomplete last line left for the next read
    more: bool = False  # the read stopped at its byte limit: read again from `cursor` for the rest


def frame(path: Path, cursor: Cursor = Cursor(), max_bytes: int | None = None) -> Frame:
    """The complete lines of `path` from `cursor` on (at most about `max_bytes`, default `READ_BYTES`)."""
    limit = READ_BYTES if max_bytes is None else max_bytes
    lines: list[bytes | None] = []
    offset, pending, more = cursor.offset, 0, False
    with disk.open_regular(path) as fh:  # never a FIFO or a device named like a transcript
        if offset == 0 and fh.read(3) == _BOM:
            offset = 3
        fh.seek(offset)
        if not _at_line_start(fh, offset):
            offset += _skip_rest_of_line(fh)  # the rest of a line consumed unterminated (or overlong) last time
        start = offset
        while offset - start < limit:
            raw = fh.readline(MAX_LINE_BYTES + 1)
            if not raw:
                break
            if not raw.endswith(b"\n") and len(raw) > MAX_LINE_BYTES:  # overlong: counted, never held
                offset += len(raw) + _skip_rest_of_line(fh)
                lines.append(None)
                continue
            if not raw.endswith(b"\n"):  # the last line, maybe still being written
                if raw.strip() and not isinstance(loads(raw), dict):
                    pending = len(raw)
                    break
                if not raw.strip():  # trailing spaces: nothing to wait for
                    offset += len(raw)
                    break
            offset += len(raw)
            lines.append(raw.rstrip(b"\r\n"))
        else:
            more = bool(fh.read(1))
    return Frame(lines, Cursor(offset, cursor.line + len(lines)), pending, more)


def loads(raw: bytes) -> Any:
    """The line's JSON value, `BAD` when it is not JSON, `DEEP` when it is nested too deep to parse."""
    try:
        return json.loads(raw.decode("utf-8", errors="replace"))
    except ValueError:
        return BAD
    except RecursionError:  # nested thousands of levels deep
        return DEEP


def line_object(raw: bytes | None) -> tuple[dict[str, Any] | None, str | None]:
    """One line as an object, or None and why it is skipped (`too_long`, `blank`, `bad_json`, `not_object`)."""
    if raw is None:
        return None, "too_long"
    if not raw.strip():
        return None, "blank"
    obj = loads(raw)
    if obj is BAD:
        return None, "bad_json"
    if obj is DEEP:
        return None, "too_deep"
    return (obj, None) if isinstance(obj, dict) else (None, "not_object")


def _at_line_start(fh: Any, offset: int) -> bool:
    """Whether `offset` starts a line: the file's start (after a BOM) or just after a newline."""
    if offset == 0:
        return True
    fh.seek(0)
    if offset == 3 and fh.read(3) == _BOM:
        fh.seek(offset)
        return True
    fh.seek(offset - 1)
    return fh.read(1) == b"\n"


def _skip_rest_of_line(fh: Any) -> int:
    """Read past the next newline (or to the end), a chunk at a time; return the bytes skipped."""
    skipped = 0
    while True:
        chunk = fh.readline(_CHUNK)
        skipped += len(chunk)
        if not chunk or chunk.endswith(b"\n"):
            return skipped
