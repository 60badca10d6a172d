"""Intent journal: a mutation is written down in full before it touches the vault, then applied.

A crash before the journal file exists leaves the old state; once it exists, the next open replays
it (every step is idempotent), so the vault ends in the whole new state. A replay that would
overwrite a file someone changed since is not done: the journal is set aside as a conflict for
`health` to report, and no note is touched.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from memvault import fault
from memvault.errors import MemvaultError, SafetyError

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
    """Write the intent record; when that fails (a full or read-only state folder) no record is left behind."""
    path = journal_dir / f"{intent.id}.json"
    payload = {"id": intent.id, "op": intent.op, "message": intent.message, "ops": [asdict(o) for o in intent.ops]}
    try:
        disk.atomic_write(path, json.dumps(payload, ensure_ascii=False).encode("utf-8"), private=True)
    except OSError:
        with contextlib.suppress(OSError):  # renamed, then the folder's fsync failed: not a change to replay
            os.unlink(path)
        raise
    fault.checkpoint("journal written")
    return path


def read(path: Path) -> Intent:
    data = json.loads(path.read_text(encoding="utf-8"))
    ops = tuple(FileOp(o["path"], o["content"], o["before"]) for o in data["ops"])
    return Intent(data["id"], data["op"], data["message"], ops)


class HalfWritten(Exception):
    """A change that failed part way could not be put back either: its record must stay for a replay."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


def apply(root: Path, intent: Intent, *, check: bool = False) -> None:
    """Bring every file to its new state; files already there are left alone.

    With `check` (a change being made, not a replay), each file is compared with its recorded
    before-digest right before it is renamed over or deleted. A file changed since it was read (an
    edit saved in Obsidian meanwhile, a sync) is never overwritten: the files this call already wrote
    are put back as they were and `SafetyError` (code `conflict`) is raised. A write the filesystem
    refuses (read-only, full, no permission: an OSError) or a file that cannot be read is handled the
    same way, the error raised as it came; if putting back fails too, `HalfWritten` is raised and the
    caller keeps the record. A replay (no `check`) stops at the error: its record stays, to be replayed.
    """
    done: list[tuple[Path, bytes | None]] = []  # (file, its bytes before) for putting back
    try:
        for op in intent.ops:
            target = root / op.path
            if op.content is None:
                old = _expect(target, op.before, op.path) if check else None
                disk.remove(target)
                done.append((target, old))
            elif digest(target) != text_digest(op.content):
                if check:
                    done.append((target, _write_unless_changed(target, op.content.encode("utf-8"), op.before, op.path)))
                else:
                    disk.atomic_write(target, op.content.encode("utf-8"))
                    done.append((target, None))
            fault.checkpoint(f"{op.path} {'deleted' if op.content is None else 'written'}")
    except (MemvaultError, OSError) as exc:
        if not check:
            raise
        try:
            for target, old in reversed(done):
                if old is None:
                    disk.remove(target)
                else:
                    disk.atomic_write(target, old)
        except OSError as undo_error:
            raise HalfWritten(exc if isinstance(exc, OSError) else undo_error) from exc
        raise


def _expect(target: Path, before: str, rel: str) -> bytes | None:
    """The file's bytes (None when absent) if it is still as recorded in the journal; else a conflict."""
    try:
        data: bytes | None = target.read_bytes()
    except FileNotFoundError:
        data = None
    _same_or_conflict(data, before, rel)
    return data


def _same_or_conflict(data: bytes | None, before: str, rel: str) -> None:
    if (ABSENT if data is None else hashlib.sha256(data).hexdigest()) != before:
        raise _conflict(rel)


def _conflict(rel: str, kept: str = "") -> SafetyError:
    return SafetyError(
        f"{rel} changed on disk while memvault was writing it (edited in Obsidian or synced?); nothing was"
        f" overwritten{kept}: re-read it and try again",
        code="conflict",
        path=rel,
    )


SETTLE_SECONDS = 0.02  # an editor's save (truncate, write) that began lands within this; re-read until it holds
SETTLE_LIMIT = 2.0


def _write_unless_changed(target: Path, data: bytes, before: str, rel: str) -> bytes | None:
    """Rename `data` over `target` only if the file is still as read; returns its bytes before (None: absent).

    An editor saves in place (truncate, write) and takes no lock, so a save can land between the last
    check and the rename, or in the old file after the rename (it was opened just before). On POSIX the
    old file stays open across the rename and is read again after it: if it changed, that save is put
    back (at the path if memvault's text is still there, else in a conflict copy beside it, which `health`
    reports) and the write is a conflict. Windows cannot rename over an open file: there the check is
    the read right before the rename.
    """
    held: list[tuple[int, bytes]] = []
    seen: list[bytes | None] = []

    def guard() -> None:
        if os.name == "nt":
            seen.append(_expect(target, before, rel))
            return
        try:
            fd = os.open(target, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO never blocks
        except FileNotFoundError:
            _same_or_conflict(None, before, rel)
            seen.append(None)
            return
        old = _read_fd(fd)
        held.append((fd, old))
        _same_or_conflict(old, before, rel)
        seen.append(old)

    try:
        disk.atomic_write(target, data, before_replace=guard)
        if held:
            fault.checkpoint(f"{rel} renamed")
            _put_back_a_late_save(target, *held[0], data, rel)
    finally:
        for fd, _ in held:
            os.close(fd)
    return seen[0]


def _read_fd(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 1024 * 1024):
        chunks.append(chunk)
    return b"".join(chunks)


def _put_back_a_late_save(target: Path, fd: int, old: bytes, written: bytes, rel: str) -> None:
    """The replaced file, read again: unchanged is the common case; else its newest text is kept, not lost."""
    now = _read_fd(fd)
    if now == old:
        return
    deadline = time.monotonic() + SETTLE_LIMIT
    while time.monotonic() < deadline:  # a save under way: wait until two reads agree
        time.sleep(SETTLE_SECONDS)
        again, now = now, _read_fd(fd)
        if again == now:
            break
    try:
        current = target.read_bytes()
    except FileNotFoundError:
        current = None
    if current == written:
        disk.atomic_write(target, now)
        raise _conflict(rel)
    copy = target.with_name(f"{target.stem} (memvault conflict {time.strftime('%Y-%m-%d %H%M%S')}){target.suffix}")
    disk.atomic_write(copy, now)
    raise _conflict(rel, f"; the edit saved meanwhile is kept in {copy.name}")


def pending(journal_dir: Path) -> list[Path]:
    """Intent records of changes a crash interrupted (undo records are `pending_undos`)."""
    if not journal_dir.is_dir():
        return []
    return sorted(p for p in journal_dir.glob("*.json") if not p.name.endswith((".conflict.json", UNDO_SUFFIX)))


UNDO_SUFFIX = ".undo.json"


def write_undo(journal_dir: Path, target: str, head: str) -> Path:
    """Record an undo before it starts: `target` is the commit being reverted, `head` the commit before it."""
    path = journal_dir / f"{new_id()}{UNDO_SUFFIX}"
    disk.atomic_write(path, json.dumps({"op": "undo", "target": target, "head": head}).encode("utf-8"), private=True)
    fault.checkpoint("undo journal written")
    return path


def pending_undos(journal_dir: Path) -> list[Path]:
    return sorted(journal_dir.glob(f"*{UNDO_SUFFIX}")) if journal_dir.is_dir() else []


def conflicts(journal_dir: Path) -> list[Path]:
    return sorted(journal_dir.glob("*.conflict.json")) if journal_dir.is_dir() else []


def replayable(root: Path, intent: Intent) -> bool:
    """True when every file is still in its before- or after-state (nobody else touched it)."""
    return all(digest(root / o.path) in (o.before, text_digest(o.content)) for o in intent.ops)


def set_aside(path: Path) -> Path:
    target = path.with_name(path.name.removesuffix(UNDO_SUFFIX).removesuffix(".json") + ".conflict.json")
    os.replace(path, target)
    return target
