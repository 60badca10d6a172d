"""What `memvault review` and `memvault inbox` do to a pending capture: approve, supersede, reject.

A capture waits in `<group>/_review/` (medium confidence, interactive) or `<group>/_inbox/` (low
confidence, batch). Approving moves it to `<group>/<kind>/` in one journalled mutation; a capture
with `proposes_supersede: <path>` can instead replace that entry (`evolve`: the old one is archived)
and is then removed from the queue; rejecting deletes it (the git history keeps it in a git vault).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from memvault.errors import MemvaultError, SafetyError
from memvault.store import changelog, disk, model, notes
from memvault.store.changelog import Record
from memvault.store.model import ALWAYS_LOAD, INBOX, INCUBATOR, REVIEW, Entry, WriteResult
from memvault.vault.core import Vault

# Capture keys that only make sense while the entry waits in a queue.
QUEUE_KEYS = ("proposes_supersede", "supersede_note", "approve_to")


@dataclass(frozen=True)
class Counts:
    inbox: int
    review: int
    incubator: int
    warnings: tuple[str, ...]


def pending(vault: Vault, area: str) -> list[Entry]:
    """The entries waiting in `_review/` or `_inbox/` of every group, oldest path order."""
    return [e for e in vault.list() if f"/{area}/" in e.path and not e.error]


def counts(vault: Vault) -> Counts:
    """How much waits for a person, with the warnings of reflection.inbox_warn / incubator_warn."""
    return counts_of(vault.list(), vault.config.reflection)


def counts_of(entries: list[Entry], settings: Any) -> Counts:
    """`counts` over entries already listed (`settings` = the config's reflection section)."""
    inbox = sum(1 for e in entries if f"/{INBOX}/" in e.path)
    review = sum(1 for e in entries if f"/{REVIEW}/" in e.path)
    incubator = sum(1 for e in entries if f"/{INCUBATOR}/" in e.path and e.status == "incubating")
    warnings = []
    if inbox > settings.inbox_warn:
        warnings.append(
            f"the inbox holds {inbox} entries (more than {settings.inbox_warn}): run `memvault inbox` to sort them"
        )
    if incubator > settings.incubator_warn:
        warnings.append(f"the idea incubator holds {incubator} unpromoted ideas (more than {settings.incubator_warn})")
    return Counts(inbox, review, incubator, tuple(warnings))


def resolve(vault: Vault, given: str, area: str) -> str:
    """A vault-relative path of a queued entry from what a person typed: the path, or its file name or slug."""
    norm = given.replace("\\", "/").strip()
    queued = [e.path for e in pending(vault, area)]
    if norm in queued:
        return norm
    name = norm.rsplit("/", 1)[-1].removesuffix(".md")
    matches = [p for p in queued if PurePosixPath(p).stem == name]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise SafetyError(f"{given}: no such entry in {area}/", code="missing", path=given)
    raise MemvaultError(f"{given} is ambiguous: {', '.join(matches)}; give the full path", code="usage")


def destination(vault: Vault, rel: str, kind: str | None = None, meta: Mapping[str, Any] | None = None) -> str:
    """Where an approved capture goes: `<folder>/<group>/<kind>/<slug>.md` (a free slug), or `_always-load/`
    for a capture that asks for it (`approve_to: _always-load`, as `memvault seed` writes them)."""
    nf = vault.read(rel)
    kind = model.slug(kind or str(nf.note.meta.get("kind") or "note"), "kind")
    group = vault.group_of(rel) or vault.config.vault.default_group
    wanted = (nf.note.meta if meta is None else meta).get("approve_to")  # `meta`: as edited in review
    folder = ALWAYS_LOAD if wanted == ALWAYS_LOAD else kind
    return disk.free_note(vault.root, f"{vault.folder}/{group}/{folder}", PurePosixPath(rel).stem)


def approve(vault: Vault, rel: str, *, edited: str | None = None, how: str = "approved") -> WriteResult:
    """Move a queued capture to its kind folder (with the edited text, when given) as an active entry."""
    meta: dict[str, Any] = {"status": "active", "review": how, "reviewed": dt.date.today()}
    body = None
    drop = list(QUEUE_KEYS)
    given: Mapping[str, Any] | None = None
    if edited is not None:
        given, body = model.split_given(edited)
        before = vault.read(rel).note.meta
        drop += [k for k in before if k not in given and k not in meta]
        meta = {k: v for k, v in {**given, **meta}.items() if k not in QUEUE_KEYS}
    kind = str(meta.get("kind") or "") or None
    op = "accept" if how == "accepted" else "approve"
    log = [Record(changelog.APPROVED, detail=f"{how} from {PurePosixPath(rel).parent.name}/ by you")]
    where = destination(vault, rel, kind, given)
    return vault.move(rel, where, meta=meta, remove=drop, body=body, op=op, log=log)


def supersede(vault: Vault, rel: str, target: str | None = None) -> WriteResult:
    """Replace the entry the capture proposes (or `target`) with the capture; the capture leaves the queue.

    Two commits (evolve, then remove): interrupted between them, the capture simply stays queued.
    """
    nf = vault.read(rel)
    old = target or nf.note.meta.get("proposes_supersede")
    if not isinstance(old, str) or not old:
        raise MemvaultError(f"{rel} proposes no entry to supersede: give the path of the one it replaces", code="usage")
    skip = (*QUEUE_KEYS, "status", "created", "updated", "group")
    keep = {k: v for k, v in nf.note.meta.items() if k not in skip and v not in (None, [], "")}  # empty: keep the old
    keep.update(review="superseded", reviewed=dt.date.today())
    content = notes.dump(notes.new_note(keep, nf.note.body))
    reason = f"reviewed capture {PurePosixPath(rel).stem} replaces it"
    source = str(nf.note.meta.get("source") or "manual")
    confidence = nf.note.meta.get("confidence")
    log = [Record(changelog.SUPERSEDED, detail=f"by you in review: the capture {PurePosixPath(rel).stem} replaces it")]
    result = vault.evolve(
        old, content, reason=reason, source=source, confidence=str(confidence) if confidence else None, log=log
    )
    vault.remove(rel, reason=f"applied as a supersede of {old}", op="review")
    return result


def reject(vault: Vault, rel: str, *, how: str = "rejected") -> WriteResult:
    deleted = "the note was deleted (in a git vault `memvault undo` brings it back)"
    log = [Record(changelog.REJECTED, detail=f"{how} by you: {deleted}")]
    return vault.remove(rel, reason=f"{how} in review", op="reject", log=log)
