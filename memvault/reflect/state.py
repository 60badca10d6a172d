"""Reflection's own state, kept out of the vault: per-transcript cursors and routed keys, the candidate ledger."""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memvault import paths
from memvault.store import disk
from memvault.vault.core import Vault

from .mine.text import similar_keys

LEDGER_SESSIONS = 20  # sessions remembered per candidate key
KEYS_KEPT = 2_000  # routed keys remembered per transcript
QUARANTINE_AFTER = 3  # failed passes in a row before a transcript is left alone (until retried by hand)


@dataclass
class TranscriptState:
    """One transcript's cursor (where the next pass starts reading, and its context start) and routed keys."""

    file: Path
    offset: int = 0
    line: int = 0
    context_offset: int = 0
    context_line: int = 0
    keys: set[str] = field(default_factory=set)

    @classmethod
    def load(cls, vault: Vault, transcript: Path) -> TranscriptState:
        real = os.path.realpath(transcript)
        name = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:16]
        state = cls(state_dir(vault) / "transcripts" / f"{name}.json")
        data = read_json(state.file)
        if isinstance(data, dict):
            for key in ("offset", "line", "context_offset", "context_line"):
                if isinstance(data.get(key), int):
                    setattr(state, key, data[key])
            state.keys = {k for k in data.get("keys", []) if isinstance(k, str)}
        return state

    def reset(self) -> None:
        self.offset = self.line = self.context_offset = self.context_line = 0

    def advance(self, path: Path, offset: int, line: int, context_line: int) -> None:
        """Move the cursor to (offset, line) and the context start to `context_line` lines in."""
        context_line = max(min(context_line, line), self.context_line)
        if context_line > self.context_line:
            self.context_offset = _offset_of_line(path, self.context_offset, self.context_line, context_line)
            self.context_line = context_line
        self.offset, self.line = offset, line

    def save(self) -> None:
        keys = sorted(self.keys)[-KEYS_KEPT:]
        write_json(self.file, {"offset": self.offset, "line": self.line, "context_offset": self.context_offset,
                                "context_line": self.context_line, "keys": keys})  # fmt: skip


@dataclass
class Ledger:
    """Candidate key → the sessions that produced it and the note reflection wrote for it."""

    file: Path
    data: dict[str, dict[str, Any]]

    @classmethod
    def load(cls, vault: Vault) -> Ledger:
        file = state_dir(vault) / "ledger.json"
        return cls(file, _rows(file))

    def seen(self, key: str, session: str, *, dry: bool) -> int:
        """Record that `session` produced `key`; return in how many distinct sessions it, or the same pattern
        in other words (`similar_keys`), has been seen."""
        row = self.data.get(key) or {"sessions": []}
        sessions = [s for s in row.get("sessions", []) if isinstance(s, str)]
        if session not in sessions:
            sessions = [*sessions, session]
        if not dry:
            self.data[key] = {**row, "sessions": sessions[-LEDGER_SESSIONS:], "last": time.time()}
        alike = set(sessions)
        for other in self.related(key):
            alike.update(s for s in self.data[other].get("sessions", []) if isinstance(s, str))
        return len(alike)

    def related(self, key: str) -> list[str]:
        """The other keys in the ledger that name the same pattern as `key` in other words."""
        return [k for k in self.data if k != key and isinstance(self.data[k], dict) and similar_keys(k, key)]

    def wrote(self, key: str, path: str) -> None:
        self.data.setdefault(key, {"sessions": []})["path"] = path

    def save(self) -> None:
        write_json(self.file, self.data)


@dataclass
class Failures:
    """Transcripts whose reflection failed: how often in a row, the last error, and whether quarantined.

    A transcript that fails QUARANTINE_AFTER passes in a row is quarantined: background reflection
    (Stop, SessionEnd, the idle and crash sweeps) leaves it alone, `health` reports it, and an
    explicit `memvault reflect --session PATH` tries again. A pass that succeeds clears its record.
    """

    file: Path
    data: dict[str, dict[str, Any]]

    @classmethod
    def load(cls, vault: Vault) -> Failures:
        file = state_dir(vault) / "failures.json"
        return cls(file, _rows(file))

    def record(self, transcript: Path, session: str | None, error: str) -> dict[str, Any]:
        key = os.path.realpath(transcript)
        row = self.data.get(key) or {}
        failures = int(row.get("failures") or 0) + 1
        self.data[key] = row = {
            "transcript": str(transcript), "session": session or row.get("session"), "failures": failures,
            "error": error[:500], "first": row.get("first") or time.time(), "last": time.time(),
            "quarantined": failures >= QUARANTINE_AFTER,
        }  # fmt: skip
        write_json(self.file, self.data)
        return row

    def clear(self, transcript: Path) -> None:
        if self.data.pop(os.path.realpath(transcript), None) is not None:
            write_json(self.file, self.data)

    def quarantined(self, transcript: Path) -> bool:
        return bool((self.data.get(os.path.realpath(transcript)) or {}).get("quarantined"))

    def rows(self) -> list[dict[str, Any]]:
        return sorted(self.data.values(), key=lambda r: str(r.get("transcript")))


def state_dir(vault: Vault) -> Path:
    """Where reflection keeps its state for `vault` (under the state dir, never in the vault)."""
    return vault.state_dir / "reflect"


def sweep_temp_files(vault: Vault) -> int:
    """Remove the temp files a reflection killed between writing and renaming a state file left behind.

    Call it holding `reflect.lock`: every write in the state folder happens under that lock.
    """
    folder = state_dir(vault)
    return disk.sweep_temp_files(folder) + disk.sweep_temp_files(folder / "transcripts")


def _rows(path: Path) -> dict[str, dict[str, Any]]:
    """A JSON object of objects (key → row) from `path`; missing, unreadable or malformed rows give nothing."""
    data = read_json(path)
    return {k: v for k, v in data.items() if isinstance(v, dict)} if isinstance(data, dict) else {}


def read_json(path: Path) -> Any:
    """The JSON in `path`, or None when it is missing or unreadable."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def write_json(path: Path, data: Any) -> None:
    """Write `data` to `path` atomically, in a private folder."""
    paths.ensure_private_dir(path.parent)
    disk.atomic_write(path, json.dumps(data, ensure_ascii=False, sort_keys=True).encode("utf-8"), private=True)


def _offset_of_line(path: Path, offset: int, line: int, target: int) -> int:
    """The byte offset where line `target + 1` starts, scanning from `offset` (where line `line + 1` starts)."""
    with disk.open_regular(path) as fh:
        fh.seek(offset)
        while line < target:
            length = 0
            while True:  # a chunk at a time: a line may be gigabytes long
                raw = fh.readline(1024 * 1024)
                length += len(raw)
                if not raw or raw.endswith(b"\n"):
                    break
            if not raw.endswith(b"\n"):
                break
            offset += length
            line += 1
    return offset
