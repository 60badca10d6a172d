"""What goes to the team's database: `publish` a note, send the outbox, `push` edits made to mirrored notes.

Nothing here runs on its own: a publish or a push is a command a person gave (or approving "publish to team"
in review). The session start only sends what a person already queued (`flush`).

- publish: the envelope (`envelope.prepare`), then the entry is queued in the outbox, then sent; a server that
  cannot be reached leaves it queued ("queued, goes out with the next publish, push or pull");
- push: each mirror file edited here becomes a proposed new version with optimistic concurrency on the version
  it was pulled at. When someone else's version came first (`VersionConflict`), both are kept: the member's text
  as a review item (`MemoryVault/<group>/_review/team-conflict-<slug>.md`), the mirror file back to the
  server's version, and the command says what to do.
"""

from __future__ import annotations

import array
import contextlib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from memvault import fault
from memvault.errors import MemvaultError
from memvault.store import disk, journal, model, notes, safety
from memvault.store.model import REVIEW
from memvault.vault import indexing
from memvault.vault.core import Vault

from . import envelope, mirror, server
from .outbox import TeamState

# The server's refusals that waiting will not change (server.py's codes): such an entry leaves the outbox.
REFUSED = frozenset(["team-denied", "team-invalid", "team-slug-taken", "team-missing", "secret", "private"])


@dataclass
class Sent:
    """What happened to the entries a command sent."""

    sent: list[tuple[str, int]] = field(default_factory=list)  # (source path, version)
    queued: list[str] = field(default_factory=list)  # still in the outbox (server not reachable)
    conflicts: list[tuple[str, str]] = field(default_factory=list)  # (mirror path, review copy)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (source path, why): the server will never take it
    error: str | None = None


def to_entry(out: envelope.Outgoing) -> server.EntryIn:
    """What the server takes of an outgoing entry: every field of `server.EntryIn`, by name."""
    return server.EntryIn(**{field.name: getattr(out, field.name) for field in fields(server.EntryIn)})


def with_vector(vault: Vault, out: envelope.Outgoing) -> envelope.Outgoing:
    """Add the vector of the text the mirror's index will embed, when the warm service runs and it is one chunk."""
    stem = Path(out.slug).name
    text = mirror.embed_text(mirror.render(as_row(out)), stem)
    if text is None:
        return out
    embedder = indexing.service_embedder(vault.config)
    if embedder is None:
        return out
    try:
        blob = embedder.encode([text])[0]
    except MemvaultError:
        return out
    vector = array.array("f")
    vector.frombytes(blob)
    meta = {**out.frontmatter, envelope.EMBED_HASH: mirror.text_hash(text)}
    return replace(out, embedding=[float(x) for x in vector], model_id=embedder.name, frontmatter=meta)


def prepare_publish(vault: Vault, state: TeamState, rel: str, *, scope: str, team: str | None) -> envelope.Outgoing:
    """The entry a publish of `rel` sends: a new entry, or the next version of one this machine published."""
    norm = vault.read(rel).path
    known = state.published().get(norm)
    same = known is not None and known.get("scope") == scope and known.get("team") == team
    uid = str(known["uid"]) if same and known else None
    base = int(known["version"]) if same and known else None
    out = envelope.prepare(vault, rel, scope=scope, team=team, uid=uid, base_version=base)
    return with_vector(vault, out)


def publish(vault: Vault, state: TeamState, out: envelope.Outgoing, connect: Any, *, queue: bool = True) -> Sent:
    """Queue `out` (journalled first), then send the whole outbox; an unreachable server leaves it queued.

    With `queue` false (`team.publish_queue: false`) a publish the server did not take is taken back out of
    the outbox and fails instead (`team-offline`).
    """
    state.queue(out)
    fault.checkpoint("team-publish:queued")
    result = flush(vault, state, connect)
    refused = [why for rel, why in result.refused if rel == out.source_path]
    if refused:
        raise envelope.TeamError(f"{out.source_path} was not published: {refused[0]}", code="team-refused")
    if not queue and out.source_path in result.queued:
        state.sent(out.uid)
        raise envelope.TeamError(
            f"{out.source_path} was not published: {result.error or 'the server is not reachable'}",
            code="team-offline",
        )
    return result


def flush(vault: Vault, state: TeamState, connect: Any) -> Sent:
    """Send every queued entry, oldest first; `connect()` gives a connection or raises (server absent)."""
    result = Sent()
    queued = state.queued()
    if not queued:
        return result
    try:
        conn = connect()
    except Exception as exc:  # the server is down or unreachable: everything stays queued
        result.queued = [q.source_path for q in queued]
        result.error = _reason(exc)
        return result
    try:
        for out in queued:
            try:
                row = server.publish(conn, to_entry(out))
                fault.checkpoint("team-publish:sent")  # committed on the server, still in the outbox
            except server.VersionConflict as exc:
                state.sent(out.uid)  # the edit is kept as a review item; the queue must not retry it forever
                result.conflicts.append(_keep_both(vault, out.source_path, out, exc.current))
                continue
            except MemvaultError as exc:
                if exc.code in REFUSED:  # not a matter of time: out of the outbox, said to the person
                    state.sent(out.uid)
                    result.refused.append((out.source_path, str(exc)))
                else:
                    result.queued.append(out.source_path)
                    result.error = str(exc)
                continue
            state.record_published(out.source_path, str(row.uid), int(row.version), out.team, out.scope)
            if out.source_path in state.conflicts():  # merged and pushed: the conflict is resolved
                state.record_conflict(out.source_path, None)
            state.sent(out.uid)
            result.sent.append((out.source_path, int(row.version)))
    except Exception as exc:  # the connection broke mid-way: what was not confirmed stays queued
        left = {q.uid for q in state.queued()}
        result.queued += [q.source_path for q in queued if q.uid in left and q.source_path not in result.queued]
        result.error = _reason(exc)
    finally:
        _close(conn)
    return result


def edited_mirror(vault: Vault) -> list[tuple[str, notes.Note]]:
    """Mirror files changed here since they were pulled: what `push` proposes."""
    return [(rel, note) for rel, note, _ in mirror.scan(vault).values() if mirror.edited(note)]


def push(vault: Vault, state: TeamState, connect: Any, *, mirror_mode: str = "all") -> Sent:
    """Propose every edited mirror file as the entry's next version (optimistic concurrency on its version)."""
    for rel, note in edited_mirror(vault):
        scope = str(note.meta.get("team_scope") or "team")
        team = note.meta.get("team") if scope == "team" else None
        out = envelope.prepare(
            vault,
            rel,
            scope=scope,
            team=str(team) if team else None,
            uid=str(note.meta["team_uid"]),
            base_version=int(note.meta.get("team_version") or 0),
            allow_mirror=True,
        )
        state.queue(with_vector(vault, out))
    result = flush(vault, state, connect)
    if result.sent:  # the files sent are rewritten at their new version, so they no longer count as edited
        try:
            conn = connect()
        except Exception:
            return result  # the next pull brings them
        try:
            mirror.pull(vault, conn, state, mirror=mirror_mode, wait_s=60.0)
        except Exception as exc:
            result.error = _reason(exc)
        finally:
            _close(conn)
    return result


def _keep_both(vault: Vault, rel: str, out: envelope.Outgoing, current: Any) -> tuple[str, str]:
    """A push met a newer version: the member's text becomes a review item, the mirror file the server's version."""
    review_dir = f"{vault.folder}/{vault.config.vault.default_group}/{REVIEW}"

    def plan() -> list[journal.FileOp]:
        mine = vault.read(rel)
        copy = disk.free_note(vault.root, review_dir, f"team-conflict-{Path(rel).stem}")
        _, copy = safety.resolve_target(vault.root, copy, vault.folder)  # confined like every write
        meta = {k: v for k, v in mine.note.meta.items() if not k.startswith("team_") and k != "team"}
        meta.update(
            route="review",
            team_conflict=out.uid,
            team_conflict_team=out.team or mirror.ORG,
            team_conflict_base=out.base_version,
            team_conflict_server=int(current.version),
            team_conflict_mirror=rel,
            warning=(
                f"your edit of a team entry met version {int(current.version)} by {current.author}; "
                f"compare with {rel}, merge there and run `memvault team push`, or reject this copy"
            ),
        )
        copy_text = notes.dump(notes.new_note(model.ordered(meta), mine.note.body))
        theirs = mirror.render(current) if not current.deleted else None
        return [
            journal.FileOp(copy, vault.changes.checked(copy_text, copy)[0], journal.ABSENT),
            journal.FileOp(rel, theirs, mine.digest),
        ]

    with vault.protection_waived():
        result = vault.transact("team-conflict", rel, plan, reason="a team entry changed on the server first")
    copy = next(p for p in result.paths if p != rel)
    TeamState(vault.root).record_conflict(
        rel, {"uid": out.uid, "base": out.base_version, "server": int(current.version), "copy": copy}
    )
    return rel, copy


def as_row(out: envelope.Outgoing) -> Any:
    """An Outgoing seen as the row the server will hand back (for rendering its mirror note ahead of time)."""
    return _Row(out)


class _Row:
    def __init__(self, out: envelope.Outgoing) -> None:
        self.uid, self.scope, self.team, self.body = out.uid, out.scope, out.team, out.body
        self.frontmatter, self.version, self.author = out.frontmatter, out.base_version or 1, ""
        self.updated_at, self.supersedes, self.deleted = None, out.supersedes, False


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def _close(conn: Any) -> None:
    with contextlib.suppress(Exception):  # a broken connection has nothing left to close
        conn.close()


def delete(vault: Vault, state: TeamState, rel: str, connect: Any, *, mirror_mode: str = "all") -> int:
    """Tombstone the team entry mirrored at `rel` (at the version the file was pulled at), then pull so the
    mirror loses it; returns the tombstone's version. A newer version on the server: VersionConflict, nothing
    deleted (pull, read it, and delete again if you still mean it)."""
    note = vault.read(rel).note
    uid, version = note.meta.get("team_uid"), note.meta.get("team_version")
    if not isinstance(uid, str) or not isinstance(version, int):
        raise envelope.TeamError(f"{rel} is not a mirrored team note (no team_uid / team_version)", code="usage")
    if mirror.edited(note):
        raise envelope.TeamError(f"{rel} has an edit not pushed yet: push it or put it back first", code="conflict")
    conn = connect()
    try:
        row = server.delete(conn, uid, version)
        mirror.pull(vault, conn, state, mirror=mirror_mode, wait_s=60.0)
    finally:
        _close(conn)
    return int(row.version)
