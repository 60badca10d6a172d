"""`memvault import FOLDER`: an existing folder of markdown notes brought into MemoryVault/ as one change.

Each `.md` file keeps its name, its text and its frontmatter; only missing keys are added (`kind`,
`group`, `status`, `created`, `source: import`, `imported`). A note lands in
`MemoryVault/<group>/<kind>/<its path below the folder>`; a mapping sends sub-folders to kinds of their
own (`domains=domain`). Links keep opening the notes they opened: the folder is read as the vault it
came from (the nearest folder holding `.obsidian/`, else the folder itself), and only links whose
meaning the move would change are rewritten (`links`). Notes that would be refused (a secret, too
large, not UTF-8, bad frontmatter, a symlink, a name already taken, a name `save` would refuse or
one differing only in case from another) are listed in the plan and nothing is written unless they
are skipped on purpose. A note that would be loaded at every session start (`always_load`, or in an
`_always-load/` folder) and that the risk screen flags is written to `_review/` instead, for a person
to approve. The notes and the change-log line are one journalled change: one commit in a git vault
(`memvault undo`), and a manifest in the state folder (`import_manifests`) that `undo_import` uses to
take back the notes still as imported, in any vault.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memvault import paths
from memvault.errors import InvalidNote, MemvaultError, SafetyError
from memvault.store import changelog, disk, journal, model, notes, risk
from memvault.store.changelog import Record
from memvault.store.model import ALWAYS_LOAD, REVIEW

from . import import_manifests, links
from .core import Vault
from .import_manifests import MANIFESTS as MANIFESTS
from .import_manifests import Outcome as Outcome
from .import_manifests import manifests as manifests
from .import_manifests import undo_import as undo_import
from .import_manifests import undo_preview as undo_preview

SOURCE = "import"
DEFAULT_KIND = "note"
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
    held: str | None = None  # the risk screen's warning: a standing instruction written to _review/ instead
    unfound: tuple[str, ...] = ()  # its links that open no file where it was (as written)


@dataclass
class Plan:
    folder: str  # the folder, as shown (`~/…`)
    group: str
    notes: list[Planned] = field(default_factory=list)
    refused: list[dict[str, str]] = field(default_factory=list)  # {path, reason, code}: cannot be written
    skipped: list[dict[str, str]] = field(default_factory=list)  # {path, reason}: not notes, or already imported
    warnings: list[str] = field(default_factory=list)
    stamp: str = ""  # the `imported` time written into the notes (ISO)

    def as_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        for note in data["notes"]:
            note.pop("text")
        return data


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
    if disk.is_inside(os.path.realpath(vault.root), str(real)):
        raise MemvaultError(
            f"{folder} holds the vault itself: importing it would copy the vault into itself; import the folder "
            "of notes you mean, beside the vault",
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
    in_vault = _walk(vault.root, None)
    folded = {rel.casefold(): rel for rel in in_vault}  # Windows and macOS hold one of two names differing in case
    moved: dict[str, str] = {}
    for old in found:
        inner = old[len(prefix) + 1 :] if prefix else old
        if not old.lower().endswith(".md") or disk.is_conflict_copy(old):
            why = "a sync conflict copy" if old.lower().endswith(".md") else "not a markdown note"
            result.skipped.append({"path": inner, "reason": why})
            continue
        sub, note_kind = _mapped(inner, kinds)
        new = f"{vault.folder}/{group_s}/{note_kind}/{sub}"
        *folders, name = sub.split("/")
        # A folder named like memvault's own (`_inbox`, `_review`, `_archive`) would make its notes pending
        # captures or archived ones; `_always-load/` is kept and screened (`_standing`).
        named = [(part, "folder") for part in folders if part != ALWAYS_LOAD] + [(name, "slug")]
        problem = next(filter(None, (model.name_problem(part, what) for part, what in named)), None)
        twin = folded.get(new.casefold())
        if problem:
            reason = f"{problem}: memvault writes no such name ({model.NAME_RULE}); rename it and import again"
            result.refused.append({"path": inner, "reason": reason, "code": model.InvalidName.code})
        elif twin is not None and twin != new:
            other = f"{twin}, in the vault" if twin in in_vault else f"{_source_of(twin, moved, prefix)}, imported too"
            reason = f"its name differs only in case from {other}: Windows and macOS hold only one; rename one"
            result.refused.append({"path": inner, "reason": reason, "code": "conflict"})
        else:
            moved[old] = new
            folded.setdefault(new.casefold(), new)
    stamp = notes.now()
    held = _screen(vault, world_root, moved, group_s)
    after = links.Files.of([*in_vault, *moved.values()])
    _name_clashes(vault, list(moved.values()), result)
    result.stamp = stamp.isoformat(sep=" ")
    for old, new in moved.items():
        inner = old[len(prefix) + 1 :] if prefix else old
        try:
            args = (before, moved, after, group_s, stamp, held.get(old))
            planned = _one(vault, world_root / old, old, new, inner, *args)
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
    after: links.Files, group: str, stamp: dt.datetime, held: tuple[str, str] | None,
) -> Planned | None:  # fmt: skip
    """One note as it will be written; None when the same note is already there. `held`: (kind, warning) of a
    standing instruction the risk screen flagged, written to `_review/` for a person to approve."""
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
    sub_kind = held[0] if held else new.split("/")[2]
    st = file.stat()
    created = dt.datetime.fromtimestamp(getattr(st, "st_birthtime", st.st_mtime)).replace(microsecond=0)
    defaults = {"kind": sub_kind, "group": group, "status": "active", "created": created, "source": SOURCE,
                "imported": stamp}  # fmt: skip
    added = {k: v for k, v in defaults.items() if k not in note.meta}
    if held:  # in review until a person approves it: not loaded at session start meanwhile
        queued = {**added, "approve_to": ALWAYS_LOAD, "warning": held[1]}
        final = notes.dump(notes.with_meta(note, queued, remove=["always_load"]))
    else:
        final = notes.dump(notes.with_meta(note, added)) if added else notes.dump(note)
    op, _ = vault.changes.new_file(new, final)  # path confined and free, size and secrets as for any write
    lost = tuple(t for t in links.targets(text, old, before) if t not in moved)
    unfound = tuple(links.unresolved(text, old, before))
    final = op.content or final
    return Planned(inner, new, sub_kind, tuple(added), count, final, lost, held[1] if held else None, unfound)


def _screen(vault: Vault, world_root: Path, moved: dict[str, str], group: str) -> dict[str, tuple[str, str]]:
    """Notes that would be loaded at every session start and that the risk screen flags: each is sent to
    `<group>/_review/` (its entry in `moved` changes, so links to it follow); returns old path → (kind, warning)."""
    held: dict[str, tuple[str, str]] = {}
    taken = set(moved.values())
    for old, new in list(moved.items()):
        try:
            text = disk.read_text(world_root / old, vault.config.vault.max_note_kb * 1024)
        except (MemvaultError, OSError):
            continue  # refused when it is planned
        note = notes.parse(text)
        standing = ALWAYS_LOAD in new.split("/")[:-1] or (note.ok and note.meta.get("always_load") not in (None, False))
        danger = risk.assess(text) if standing else None
        if danger is None:
            continue
        stem = model.slug(new.rsplit("/", 1)[-1].removesuffix(".md"), "slug", from_text=True)
        moved[old] = disk.free_note(vault.root, f"{vault.folder}/{group}/{REVIEW}", stem, taken)
        taken.add(moved[old])
        held[old] = (new.split("/")[2], danger)
    return held


def _source_of(new: str, moved: dict[str, str], prefix: str) -> str:
    """The path below the imported folder of the note planned to land at `new`."""
    old = next(k for k, v in moved.items() if v == new)
    return old[len(prefix) + 1 :] if prefix else old


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
    """Warn about links (wikilinks, embeds, markdown links) to files that are not carried over: attachments and
    notes outside the folder, and links that opened no file where the notes were."""
    lost = sorted({t for n in result.notes for t in n.lost})
    if lost:
        result.warnings.append(
            f"links to {len(lost)} file(s) that are not imported stay as written and may not open: {_some(lost)}"
        )
    unfound = sorted({t for n in result.notes for t in n.unfound})
    if unfound:
        result.warnings.append(
            f"links to {len(unfound)} file(s) not found where the notes are (not imported) stay as written and "
            f"may open nothing, or another note of that name in the vault: {_some(unfound)}"
        )


def _some(names: list[str]) -> str:
    return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


# ---- applying and undoing ------------------------------------------------------------------------


def apply(vault: Vault, planned: Plan, *, skip_refused: bool = False) -> Outcome:
    """Write the plan's notes, their change-log line and the import's manifest as one journalled change."""
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
    import_id = import_manifests.new_id()
    first = planned.notes[0].path
    names = ", ".join(changelog.wikilink(n.path) for n in planned.notes[:3])
    more = f" and {len(planned.notes) - 3} more" if len(planned.notes) > 3 else ""
    count, held = len(planned.notes), sum(1 for n in planned.notes if n.held)
    detail = f"{count} note(s) from {planned.folder} into {planned.group}/ ({names}{more}), import {import_id}"
    detail += f"; {held} held for review (standing instructions the risk screen flagged)" if held else ""
    manifest = {
        "id": import_id, "folder": planned.folder, "group": planned.group, "imported": planned.stamp,
        "files": {n.path: journal.text_digest(n.text) for n in planned.notes},
    }  # fmt: skip
    pending: list[Path] = []

    def ops() -> list[journal.FileOp]:  # under the vault lock: the manifest is on disk before the journal
        out = [vault.changes.new_file(n.path, n.text)[0] for n in planned.notes]
        pending.append(import_manifests.record(vault, manifest))
        return out

    try:
        result = vault.transact("import", first, ops, reason=f"{count} notes from {planned.folder}",
                                log=[Record(changelog.IMPORTED, first, detail)])  # fmt: skip
    except SafetyError:
        if pending:  # refused, or put back as it was: nothing of it stays
            import_manifests.drop(pending[0])
        raise  # any other failure leaves the pending manifest: the next settle sees whether the journal was replayed
    import_manifests.confirm(pending[0])
    written = tuple(n.path for n in planned.notes)
    return Outcome(import_id, written, commit=result.commit, warning=result.warning, folder=planned.folder)


def _join(rel_dir: str, name: str) -> str:
    return name if rel_dir in ("", ".") else f"{rel_dir}/{name}"
