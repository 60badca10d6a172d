"""The manifests of `memvault import`, written with the import's journalled change, and taking an import back.

A manifest (`<state>/imports/<id>.json`, 0600) lists the notes one import wrote and their digests.
It is written as `<id>.pending` under the vault lock before the import's journal, and becomes
`<id>.json` once the import is committed; a process killed in between leaves the pending manifest,
and the next import or undo (under the lock, after the journal's replay) makes it the import's if
any of its notes is in the vault, else drops it. An undo writes `<id>.undoing` (the notes it removes)
before its journal and renames the manifest to `<id>.undone` after; a killed undo is settled the same
way. So every import in the vault has its manifest, and `undo` never takes the wrong one: it names
what it removes and refuses when it cannot tell which import is the last.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import time
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memvault import fault, paths
from memvault.errors import MemvaultError, SafetyError
from memvault.store import changelog, disk, journal, notes, safety
from memvault.store.changelog import Record

from .core import Vault

MANIFESTS = "imports"  # folder in the vault's state folder
PENDING, ACTIVE, UNDOING, UNDONE = ".pending", ".json", ".undoing", ".undone"
SHOWN = 5  # notes named in a refusal


@dataclass(frozen=True)
class Outcome:
    """What `apply` or `undo_import` did (or, from `undo_preview`, would do)."""

    id: str
    paths: tuple[str, ...]
    kept: tuple[str, ...] = ()  # undo: notes edited since the import, left in place
    commit: str | None = None
    warning: str | None = None
    folder: str = ""  # the imported folder, as shown


@dataclass
class _Undo:
    id: str
    folder: str
    file: Path
    removing: dict[str, str] = field(default_factory=dict)  # rel → digest as imported
    kept: list[str] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)


def folder(vault: Vault) -> Path:
    return paths.ensure_private_dir(vault.state_dir / MANIFESTS)


def new_id() -> str:
    return notes.now().strftime("%Y%m%d-%H%M%S") + "-" + os.urandom(2).hex()


def record(vault: Vault, manifest: dict[str, Any]) -> Path:
    """The import's manifest as pending; called under the vault lock, before the import's journal is written."""
    settle(vault)
    path = folder(vault) / f"{manifest['id']}{PENDING}"
    manifest = {**manifest, "order": time.time_ns()}
    disk.atomic_write(path, json.dumps(manifest, ensure_ascii=False, indent=1).encode("utf-8"), private=True)
    fault.checkpoint("import manifest pending")
    return path


def confirm(pending: Path) -> None:
    """The import is committed: its pending manifest becomes its manifest (a later settle may have done it)."""
    with contextlib.suppress(FileNotFoundError):
        os.replace(pending, pending.with_suffix(ACTIVE))
    fault.checkpoint("import manifest written")


def drop(pending: Path) -> None:
    """The import was refused before anything of it was written."""
    disk.remove(pending)


def settle(vault: Vault) -> None:
    """Finish what a killed import or undo left (under the vault lock, after the journal's replay)."""
    where = folder(vault)
    disk.sweep_temp_files(where)
    for pending in sorted(where.glob(f"*{PENDING}")):
        data = _read(pending)
        written = data is not None and any(_digest(vault, rel) != journal.ABSENT for rel in data.get("files", {}))
        if written:  # its journal was written, and replayed: the import is in the vault
            os.replace(pending, pending.with_suffix(ACTIVE))
        else:  # killed before its journal: nothing of it was written
            pending.unlink()
    for marker in sorted(where.glob(f"*{UNDOING}")):
        data, manifest = _read(marker), marker.with_suffix(ACTIVE)
        if data is not None and manifest.exists():
            removing = data.get("removing", {})
            if not any(_digest(vault, rel) == digest for rel, digest in removing.items()):
                os.replace(manifest, manifest.with_suffix(UNDONE))  # the undo was replayed: retire its import
        marker.unlink()


def recover(vault: Vault) -> None:
    """Finish an interrupted change and settle the manifests (what the next import or undo does first)."""
    with vault.changes.mutation():
        settle(vault)


def manifests(vault: Vault) -> list[dict[str, Any]]:
    """The imports that can still be undone, oldest first."""
    return [
        {"id": data.get("id"), "folder": data.get("folder"), "notes": len(data.get("files", {}))}
        for _, data in _active(vault)
        if data is not None
    ]


def undo_preview(vault: Vault, import_id: str | None = None) -> Outcome:
    """What `undo_import` would remove and keep (nothing is removed; an interrupted change is finished)."""
    with vault.changes.mutation():
        settle(vault)
        plan = _plan(vault, import_id)
    warning = _retired(plan) if not plan.removing else None
    return Outcome(plan.id, tuple(plan.removing), tuple(plan.kept), warning=warning, folder=plan.folder)


def undo_import(vault: Vault, import_id: str | None = None, *, expect: Collection[str] | None = None) -> Outcome:
    """Remove the notes of an import (the last one by default) that are still as imported; edited ones stay.

    `expect`: the notes a person was shown (`undo_preview`); if the undo would now remove others, it is refused.
    """
    with vault.changes.mutation():
        settle(vault)
        plan = _plan(vault, import_id)
        if not plan.removing:  # named on purpose, and none of its notes is left: retire its manifest
            os.replace(plan.file, plan.file.with_suffix(UNDONE))
            return Outcome(plan.id, (), tuple(plan.kept), warning=_retired(plan), folder=plan.folder)
    chosen: list[_Undo] = []

    def ops() -> list[journal.FileOp]:
        settle(vault)
        now = _plan(vault, plan.id)
        if expect is not None and set(now.removing) != set(expect):
            raise MemvaultError(
                f"import {plan.id} changed since its notes were listed: run the undo again", code="conflict"
            )
        marker = now.file.with_suffix(UNDOING)
        disk.atomic_write(marker, json.dumps({"removing": now.removing}).encode("utf-8"), private=True)
        fault.checkpoint("import undo marked")
        chosen.append(now)
        return [journal.FileOp(rel, None, digest) for rel, digest in now.removing.items()]

    def log() -> list[Record]:
        kept = chosen[0].kept
        detail = f"import {plan.id} of {plan.folder} taken back" + (
            f"; {len(kept)} edited note(s) kept" if kept else ""
        )
        return [Record(changelog.UNDONE, detail=detail)]

    reason = f"import {plan.id} of {plan.folder} taken back"
    try:
        result = vault.transact("import-undo", next(iter(plan.removing)), ops, reason=reason, log=log)
    except SafetyError:
        if chosen:  # refused, or put back as it was: nothing was removed
            disk.remove(chosen[0].file.with_suffix(UNDOING))
        raise  # any other failure leaves the marker: the next settle sees whether the undo's journal was replayed
    done = chosen[0]
    with contextlib.suppress(FileNotFoundError):  # a settle since the lock was released may have done it
        os.replace(done.file, done.file.with_suffix(UNDONE))
    disk.remove(done.file.with_suffix(UNDOING))
    fault.checkpoint("import undo done")
    removed = tuple(p for p in result.paths if p in done.removing)
    return Outcome(done.id, removed, tuple(done.kept), result.commit, result.warning, done.folder)


# ---- internals -------------------------------------------------------------------------------------


def _plan(vault: Vault, import_id: str | None) -> _Undo:
    """The import to take back and what of it is still as imported; refused when the last one is unclear."""
    active = _active(vault)
    if import_id is None:
        damaged = [p.stem for p, data in active if data is None]
        if damaged:
            raise MemvaultError(
                f"cannot tell which import is the last: the manifest of import {damaged[0]} cannot be read. Name the "
                "import to undo: `memvault import --undo ID`",
                code="conflict",
            )
        if not active:
            raise MemvaultError("no import to undo", code="missing")
        file, data = active[-1]
    else:
        found = [(p, d) for p, d in active if p.stem == import_id]
        if not found:
            raise MemvaultError(f"no import {import_id} to undo", code="missing")
        file, data = found[0]
    if data is None:
        raise MemvaultError(f"the manifest of import {file.stem} cannot be read: nothing was removed", code="conflict")
    plan = _Undo(str(data["id"]), str(data.get("folder", "")), file)
    for rel, digest in data.get("files", {}).items():
        now = _digest(vault, rel)
        if now == digest:
            plan.removing[rel] = digest
        elif now == journal.ABSENT:
            plan.gone.append(rel)
        else:
            plan.kept.append(rel)
    if import_id is None:
        unknown = _unlisted(vault, _stamp(data))
        if unknown:
            raise MemvaultError(
                f"cannot tell which import is the last: {len(unknown)} imported note(s) newer than import {plan.id} "
                f"are in no import's manifest ({_names(unknown)}). Nothing was removed; name the import to undo: "
                "`memvault import --undo ID`, or remove those notes yourself",
                code="conflict",
            )
        if not plan.removing and not plan.kept:
            raise MemvaultError(
                f"import {plan.id} of {plan.folder}: none of its {len(plan.gone)} note(s) is in the vault any more "
                f"(taken back with `memvault undo`, or moved). Nothing was removed; `memvault import --undo {plan.id}`"
                " retires its record, then --undo takes back the import before it",
                code="conflict",
            )
    if not plan.removing and plan.kept:
        raise MemvaultError(
            f"import {plan.id}: every note of it still in the vault was edited since ({_names(plan.kept)}); "
            "nothing was removed",
            code="conflict",
        )
    return plan


def _active(vault: Vault) -> list[tuple[Path, dict[str, Any] | None]]:
    """The manifests that can be undone, oldest first (by when they were written, then by name)."""
    found = [(p, _read(p)) for p in folder(vault).glob(f"*{ACTIVE}")]
    return sorted(found, key=lambda item: (int((item[1] or {}).get("order", 0)), item[0].name))


def _unlisted(vault: Vault, since: dt.datetime | None) -> list[str]:
    """Notes marked `source: import`, in no manifest, imported after `since` (or when, unknown)."""
    known: set[str] = set()
    for suffix in (ACTIVE, UNDONE, PENDING):
        for path in folder(vault).glob(f"*{suffix}"):
            known.update((_read(path) or {}).get("files", {}))
    out = []
    for rel in _notes(vault):
        if rel in known:
            continue
        try:
            meta = notes.parse(disk.read_text(vault.root / rel, vault.config.vault.max_note_kb * 1024)).meta
        except MemvaultError:
            continue
        if meta.get("source") != "import":
            continue
        stamp = _as_time(meta.get("imported"))
        if stamp is None or since is None or stamp > since:
            out.append(rel)
    return out


def _notes(vault: Vault) -> Iterator[str]:
    for here, dirs, names in os.walk(vault.memory_dir):
        dirs[:] = [d for d in dirs if not d.startswith(".") and not os.path.islink(os.path.join(here, d))]
        rel_dir = Path(here).relative_to(vault.root).as_posix()
        yield from (f"{rel_dir}/{n}" for n in sorted(names) if n.endswith(".md") and not n.startswith("."))


def _stamp(data: dict[str, Any]) -> dt.datetime | None:
    """When the import's notes were stamped `imported`; manifests before this field: from its id."""
    found = _as_time(data.get("imported"))
    if found is None:
        with contextlib.suppress(ValueError):
            found = dt.datetime.strptime(str(data.get("id", ""))[:15], "%Y%m%d-%H%M%S")
    return found


def _as_time(value: Any) -> dt.datetime | None:
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=None)
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            return dt.datetime.fromisoformat(value).replace(tzinfo=None)
    return None


def _digest(vault: Vault, rel: str) -> str:
    """The note's digest now; ABSENT for a path memvault would not write (a damaged manifest)."""
    try:
        target, _ = safety.resolve_target(vault.root, rel, vault.folder)
        return journal.digest(target)
    except MemvaultError:
        return journal.ABSENT


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("files", {}), dict):
        return None
    return data


def _retired(plan: _Undo) -> str:
    return f"none of its {len(plan.gone)} note(s) is in the vault any more: its record is retired, nothing removed"


def _names(rels: list[str]) -> str:
    return ", ".join(rels[:SHOWN]) + (f" and {len(rels) - SHOWN} more" if len(rels) > SHOWN else "")
