"""Intent journal: a mutation is written down in full before it touches the vault, then applied.

A crash before the journal file exists leaves the old state; once it exists, the next open replays
it (every step is idempotent), so the vault ends in the whole new state. A replay that would
overwrite a file someone changed since is not done: the journal is set aside as a conflict for
`health` to report, and no note is touched.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from memvault import fault
from memvault.errors import MemvaultError

from . import disk

ABSENT = ""  # the "hash" of a file that does not exist


@dataclass(frozen=True)
class FileOp:
    path: str  # vault-relative, POSIX
    content: str | None  # new text; None deletes the file
    before: str  # sha256 of the file before the mutation, or ABSENT


@dataclass(frozen=True)
class Intent:
    id: str
    op: str  # save, evolve, update, …
    message: str  # git commit message
    ops: tuple[FileOp, ...]

    @property
    def paths(self) -> list[str]:
        return [o.path for o in self.ops]


def new_id() -> str:
    """Sortable by time, unique across processes."""
    return f"{time.time_ns():020d}-{os.getpid()}-{os.urandom(3).hex()}"


DIGEST_MAX_BYTES = 64 * 1024 * 1024  # larger than any note memvault writes; a bound, not a policy


def digest(path: Path) -> str:
    """The file's SHA-256, or ABSENT; a FIFO, device or huge file is a clear error, never a blocked read."""
    try:
        return hashlib.sha256(disk.read_bytes(path, DIGEST_MAX_BYTES)).hexdigest()
    except MemvaultError as exc:
        if exc.code == "missing":
            return ABSENT
        raise


def text_digest(text: str | None) -> str:
    return ABSENT if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


def write(journal_dir: Path, intent: Intent) -> Path:
    path = journal_dir / f"{intent.id}.json"
    payload = {"id": intent.id, "op": intent.op, "message": intent.message, "ops": [asdict(o) for o in intent.ops]}
    disk.atomic_write(path, json.dumps(payload, ensure_ascii=False).encode("utf-8"))
    fault.checkpoint("journal written")
    return path


def read(path: Path) -> Intent:
    data = json.loads(path.read_text(encoding="utf-8"))
    ops = tuple(FileOp(o["path"], o["content"], o["before"]) for o in data["ops"])
    return Intent(data["id"], data["op"], data["message"], ops)


def apply(root: Path, intent: Intent) -> None:
    """Bring every file to its new state; files already there are left alone."""
    for op in intent.ops:
        target = root / op.path
        if op.content is None:
            disk.remove(target)
        elif digest(target) != text_digest(op.content):
            disk.atomic_write(target, op.content.encode("utf-8"))
        fault.checkpoint(f"{op.path} {'deleted' if op.content is None else 'written'}")


def pending(journal_dir: Path) -> list[Path]:
    if not journal_dir.is_dir():
        return []
    return sorted(p for p in journal_dir.glob("*.json") if not p.name.endswith(".conflict.json"))


def conflicts(journal_dir: Path) -> list[Path]:
    return sorted(journal_dir.glob("*.conflict.json")) if journal_dir.is_dir() else []


def replayable(root: Path, intent: Intent) -> bool:
    """True when every file is still in its before- or after-state (nobody else touched it)."""
    return all(digest(root / o.path) in (o.before, text_digest(o.content)) for o in intent.ops)


def set_aside(path: Path) -> Path:
    target = path.with_name(path.name[: -len(".json")] + ".conflict.json")
    os.replace(path, target)
    return target
