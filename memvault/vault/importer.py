"""`memvault import FOLDER`: an existing folder of markdown notes brought into MemoryVault/ as one change.

Each `.md` file keeps its name, its text and its frontmatter; only missing keys are added (`kind`,
`group`, `status`, `created`, `source: import`, `imported`). A note lands in
`MemoryVault/<group>/<kind>/<its path below the folder>`; a mapping sends sub-folders to kinds of their
own (`domains=domain`). Links keep opening the notes they opened: the folder is read as the vault it
came from (the nearest folder holding `.obsidian/`, else the folder itself), and only links whose
meaning the move would change are rewritten (`links`). Notes that would be refused (a secret, too
large, not UTF-8, bad frontmatter, a symlink, a name already taken) are listed in the plan and
nothing is written unless they are skipped on purpose. The notes and the change-log line are one
journalled change: one commit in a git vault (`memvault undo`), and a manifest in the state folder
that `undo_import` uses to take back the notes still as imported, in any vault.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memvault import paths
from memvault.errors import InvalidNote, MemvaultError, SafetyError
from memvault.store import changelog, disk, journal, model, notes, safety
from memvault.store.changelog import Record

from . import links
from .core import Vault

SOURCE = "import"
DEFAULT_KIND = "note"
MANIFESTS = "imports"  # folder in the vault's state folder: one JSON manifest per import
SKIP_DIRS = frozenset({".obsidian", ".trash", ".git", ".stversions", "node_modules"})


@dataclass(frozen=True)
class Planned:
    source: str  # path below the imported folder (POSIX)
    path: str  # vault-relative destination
    kind: str
    added: tuple[str, ...]  # frontmatter keys added
    links: int  # links rewritten to keep their meaning
    text: str = field(repr=False)
    lost: tuple[str, ...] = ()  # files its links opened that are not imported (as paths of the old vault)


@dataclass
class Plan:
    folder: str  # the folder, as shown (`~/…`)
    group: str
    notes: list[Planned] = field(default_factory=list)
    refused: list[dict[str, str]] = field(default_factory=list)  # {path, reason, code}: cannot be written
    skipped: list[dict[str, str]] = field(default_factory=list)  # {path, reason}: not notes, or already imported
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        for note in data["notes"]:
            note.pop("text")
        return data


@dataclass(frozen=True)
class Outcome:
    """What `apply` or `undo_import` did."""

    id: str
    paths: tuple[str, ...]
    kept: tuple[str, ...] = ()  # undo: notes edited since the import, left in place
    commit: str | None = None
    warning: str | None = None


# ---- planning ------------------------------------------------------------------------------------


def plan(
    vault: Vault, folder: Path, *, group: str | None = None, kind: str = DEFAULT_KIND, mapping: Mapping[str, str] = {}
) -> Plan:
    """What importing `folder` would do; nothing is written."""
    folder = folder.expanduser()
    if not folder.is_dir():
        raise MemvaultError(f"{folder} is not a folder", code="missing")
    real = Path(os.path.realpath(folder))
    if disk.is_inside(str(real), os.path.realpath(vault.root)):
        raise MemvaultError(
            f"{folder} is inside the vault: move it in Obsidian instead (it updates the links), or move it "
            "out of the vault first",
            code="usage",
        )
    group_s = model.slug(group or vault.config.vault.default_group, "group")
    kinds = _kinds(real, kind, mapping)
    result = Plan(paths.shown(folder), group_s)
    world_root = _vault_of(real)
    prefix = real.relative_to(world_root).as_posix() if real != world_root else ""
    symlinked: list[dict[str, str]] = []
    before = links.Files.of(_walk(world_root, symlinked))
    result.skipped += [
        {**s, "path": s["path"][len(prefix) + 1 :] if prefix else s["path"]}
        for s in symlinked
        if not prefix or s["path"].startswith(prefix + "/")
    ]
    found = [p for p in sorted(before.paths) if not prefix or p.startswith(prefix + "/")]
    moved: dict[str, str] = {}
    for old in found:
        inner = old[len(prefix) + 1 :] if prefix else old
        if not old.lower().endswith(".md") or disk.is_conflict_copy(old):
            why = "a sync conflict copy" if old.lower().endswith(".md") else "not a markdown note"
            result.skipped.append({"path": inner, "reason": why})
            continue
        sub, note_kind = _mapped(inner, kinds)
        moved[old] = f"{vault.folder}/{group_s}/{note_kind}/{sub}"
    after = links.Files.of([*_walk(vault.root, None), *moved.values()])
    _name_clashes(vault, list(moved.values()), result)
    stamp = notes.now()
    for old, new in moved.items():
        inner = old[len(prefix) + 1 :] if prefix else old
        try:
            planned = _one(vault, world_root / old, old, new, inner, before, moved, after, group_s, stamp)
        except MemvaultError as exc:
            result.refused.append({"path": inner, "reason": exc.args[0], "code": exc.code})
            continue
        except OSError as exc:
            result.refused.append({"path": inner, "reason": f"cannot read it ({exc.strerror})", "code": "unreadable"})
            continue
        if planned is None:
            result.skipped.append({"path": inner, "reason": f"already imported as {new}"})
        else:
            result.notes.append(planned)
    _dangling(result)
    return result


def _one(
    vault: Vault, file: Path, old: str, new: str, inner: str, before: links.Files, moved: dict[str, str],
    after: links.Files, group: str, stamp: dt.datetime,
) -> Planned | None:  # fmt: skip
    """One note as it will be written; None when the same note is already there."""
    if file.is_symlink():
        raise SafetyError("a symlink: memvault imports files, not links", code="path_escape")
    text = disk.read_text(file, vault.config.vault.max_note_kb * 1024)
    original = notes.parse(text)
    if not original.ok:
        raise InvalidNote(f"its frontmatter is not valid YAML ({original.error}); fix it first")
    rewritten, count = links.rewrite(text, old, before, moved.get, after, new)
    note = notes.parse(rewritten)
    if not note.ok:  # a link rewritten inside an unquoted YAML value: keep the frontmatter as it was
        body, count = links.rewrite(original.body, old, before, moved.get, after, new)
        note = notes.with_body(original, body)
    target = vault.root / new
    if target.exists():
        try:
            same = notes.parse(disk.read_text(target)).body == note.body
        except MemvaultError:
            same = False
        if same:
            return None
        raise SafetyError(f"{new} already exists in the vault", code="conflict", path=new)
    sub_kind = new.split("/")[2]
    st = file.stat()
    created = dt.datetime.fromtimestamp(getattr(st, "st_birthtime", st.st_mtime)).replace(microsecond=0)
    defaults = {"kind": sub_kind, "group": group, "status": "active", "created": created, "source": SOURCE,
                "imported": stamp}  # fmt: skip
    added = {k: v for k, v in defaults.items() if k not in note.meta}
    final = notes.dump(notes.with_meta(note, added)) if added else notes.dump(note)
    op, _ = vault.changes.new_file(new, final)  # path confined and free, size and secrets as for any write
    lost = tuple(t for t in links.targets(text, old, before) if t not in moved)
    return Planned(inner, new, sub_kind, tuple(added), count, op.content or final, lost)


def _kinds(folder: Path, kind: str, mapping: Mapping[str, str]) -> dict[str, str]:
    """Sub-folder (POSIX, below `folder`) → kind slug; "" is the default kind."""
    out = {"": model.slug(kind, "kind")}
    for sub, sub_kind in mapping.items():
        norm = "/".join(p for p in sub.replace("\\", "/").split("/") if p not in ("", "."))
        if not norm or ".." in norm.split("/") or not (folder / norm).is_dir():
            raise MemvaultError(f"--map {sub}={sub_kind}: no folder {sub!r} in {folder}", code="usage")
        out[norm] = model.slug(sub_kind, "kind")
    return out


def _mapped(inner: str, kinds: dict[str, str]) -> tuple[str, str]:
    """(path below its kind folder, kind) of a note: the longest mapped sub-folder it is in decides."""
    for sub in sorted(kinds, key=len, reverse=True):
        if sub and inner.startswith(sub + "/"):
            return inner[len(sub) + 1 :], kinds[sub]
    return inner, kinds[""]


def _vault_of(folder: Path) -> Path:
    """The Obsidian vault the folder's links were written in: the nearest folder holding `.obsidian/`."""
    for candidate in (folder, *folder.parents):
        if (candidate / ".obsidian").is_dir():
            return candidate
    return folder


def _walk(root: Path, skipped: list[dict[str, str]] | None) -> list[str]:
    """Every file under `root` (POSIX, relative), hidden and tool folders left out; symlinks not followed."""
    out = []
    for here, dirs, names in os.walk(root):
        rel_dir = Path(here).relative_to(root).as_posix()
        for name in list(dirs):
            if name in SKIP_DIRS or name.startswith("."):
                dirs.remove(name)
            elif os.path.islink(os.path.join(here, name)):
                dirs.remove(name)
                if skipped is not None:
                    skipped.append({"path": _join(rel_dir, name), "reason": "a symlinked folder: not followed"})
        out += [_join(rel_dir, n) for n in names if not n.startswith(".")]
    return out


def _name_clashes(vault: Vault, moved: list[str], result: Plan) -> None:
    """Imported notes whose file name another note of the vault already has: `[[name]]` becomes ambiguous there."""
    existing: dict[str, str] = {}
    for rel in _walk(vault.root, None):
        if rel.lower().endswith(".md"):
            existing.setdefault(rel.rsplit("/", 1)[-1].lower(), rel)
    clashes = sorted({existing[n.rsplit("/", 1)[-1].lower()] for n in moved
                      if n.rsplit("/", 1)[-1].lower() in existing})  # fmt: skip
    if clashes:
        shown = ", ".join(clashes[:5]) + (f" and {len(clashes) - 5} more" if len(clashes) > 5 else "")
        result.warnings.append(
            f"{len(clashes)} imported note name(s) already exist elsewhere in the vault ({shown}): links inside "
            "the imported notes are rewritten to stay exact; `[[name]]` links in your other notes keep Obsidian's "
            "choice (the note beside them, else the shortest path)"
        )


def _dangling(result: Plan) -> None:
    """Warn about links that opened a file which is not carried over (attachments, notes outside the folder)."""
    lost = sorted({t for n in result.notes for t in n.lost})
    if lost:
        shown = ", ".join(lost[:5]) + (f" and {len(lost) - 5} more" if len(lost) > 5 else "")
        result.warnings.append(
            f"links to {len(lost)} file(s) that are not imported stay as written and may not open: {shown}"
        )


# ---- applying and undoing ------------------------------------------------------------------------


def apply(vault: Vault, planned: Plan, *, skip_refused: bool = False) -> Outcome:
    """Write the plan's notes and its change-log line as one journalled change, and record a manifest."""
    if planned.refused and not skip_refused:
        listing = "; ".join(f"{r['path']}: {r['reason']}" for r in planned.refused[:5])
        more = f" (and {len(planned.refused) - 5} more)" if len(planned.refused) > 5 else ""
        raise SafetyError(
            f"{len(planned.refused)} note(s) cannot be imported: {listing}{more}. Nothing was written: fix them, or "
            "pass --skip-refused to import the others",
            code=planned.refused[0].get("code", "conflict"),
        )
    if not planned.notes:
        raise MemvaultError(f"nothing to import from {planned.folder}", code="usage")
    import_id = notes.now().strftime("%Y%m%d-%H%M%S") + "-" + os.urandom(2).hex()
    first = planned.notes[0].path
    names = ", ".join(changelog.wikilink(n.path) for n in planned.notes[:3])
    more = f" and {len(planned.notes) - 3} more" if len(planned.notes) > 3 else ""
    count = len(planned.notes)
    detail = f"{count} note(s) from {planned.folder} into {planned.group}/ ({names}{more}), import {import_id}"

    def ops() -> list[journal.FileOp]:
        return [vault.changes.new_file(n.path, n.text)[0] for n in planned.notes]

    result = vault.transact("import", first, ops, reason=f"{len(planned.notes)} notes from {planned.folder}",
                            log=[Record(changelog.IMPORTED, first, detail)])  # fmt: skip
    manifest = {
        "id": import_id, "folder": planned.folder, "group": planned.group, "commit": result.commit,
        "files": {n.path: journal.text_digest(n.text) for n in planned.notes},
    }  # fmt: skip
    path = _manifests(vault) / f"{import_id}.json"
    disk.atomic_write(path, json.dumps(manifest, ensure_ascii=False, indent=1).encode("utf-8"))
    written = tuple(n.path for n in planned.notes)
    return Outcome(import_id, written, commit=result.commit, warning=result.warning)


def undo_import(vault: Vault, import_id: str | None = None) -> Outcome:
    """Remove the notes of an import (the last one by default) that are still as imported; edited ones stay."""
    found = sorted(_manifests(vault).glob("*.json"))
    chosen = [p for p in found if import_id is None or p.stem == import_id]
    if not chosen:
        raise MemvaultError(f"no import {import_id} to undo" if import_id else "no import to undo", code="missing")
    manifest_file = chosen[-1]
    manifest = json.loads(manifest_file.read_text(encoding="utf-8"))
    kept: list[str] = []

    def ops() -> list[journal.FileOp]:
        out = []
        for rel, digest in manifest["files"].items():
            target, rel = safety.resolve_target(vault.root, rel, vault.folder)
            now = journal.digest(target)
            if now == digest:
                out.append(journal.FileOp(rel, None, now))
            elif now != journal.ABSENT:
                kept.append(rel)
        return out

    detail = f"import {manifest['id']} of {manifest['folder']} taken back"

    def log() -> list[Record]:  # after the plan: it knows which notes were edited since
        return [Record(changelog.UNDONE, detail=detail + (f"; {len(kept)} edited note(s) kept" if kept else ""))]

    first = next(iter(manifest["files"]), "")
    result = vault.transact("import-undo", first, ops, reason=detail, log=log)
    manifest_file.rename(manifest_file.with_suffix(".undone"))
    removed = tuple(p for p in result.paths if p in manifest["files"])
    return Outcome(str(manifest["id"]), removed, tuple(kept), result.commit, result.warning)


def manifests(vault: Vault) -> list[dict[str, Any]]:
    """The imports that can still be undone, oldest first."""
    out = []
    for path in sorted(_manifests(vault).glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        out.append({"id": data.get("id"), "folder": data.get("folder"), "notes": len(data.get("files", {}))})
    return out


def _manifests(vault: Vault) -> Path:
    return paths.ensure_private_dir(vault.state_dir / MANIFESTS)


def _join(rel_dir: str, name: str) -> str:
    return name if rel_dir in ("", ".") else f"{rel_dir}/{name}"
