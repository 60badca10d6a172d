"""`memvault team pull`: team and org entries into a read-only mirror of ordinary notes the local index recalls.

Each live entry the member may read becomes `MemoryVault/team/<team>/<slug>.md` (org entries:
`MemoryVault/team/_org/<slug>.md`), written through the vault's journalled, atomic changes (one change, one
git commit per batch of the server's changes). Its frontmatter carries the entry's travelling keys plus where
it came from: `team`, `team_scope`, `team_uid`, `team_version`, `team_author`, `team_updated` and
`team_hash`, the hash of what the entry says, by which an edit made here is recognised (`push` sends it).

- incremental: `server.changes_since(cursor)`; the cursor is kept in the state folder only after the batch's
  files are written, so a pull killed at any moment fetches the same changes again and writes what is missing;
- a tombstone removes the mirror file, an entry that supersedes another removes the other's;
- a mirror file edited here is never overwritten nor removed by a pull (no lost edit): it waits for `push`;
- vectors: an entry whose text is one chunk comes with the vector of exactly the text the local index embeds
  for it (its hash travels as `embed_text_sha256`); when the model matches the index's, it is stored as the
  chunk's vector, so nothing is embedded again;
- `team.mirror`: `all`, `recent N` (only the N most recently updated entries stay mirrored) or `none`.
The mirror is the team's copy: a `protected: true` that travelled keeps automatic processes away from it, and
the pull itself (which must follow the server) writes mirror files under that waiver, nowhere else.
"""

from __future__ import annotations

import array
import hashlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memvault import fault, paths
from memvault.errors import MemvaultError
from memvault.index import chunking, embed
from memvault.index import db as index_db
from memvault.store import disk, journal, model, notes, privacy, safety
from memvault.vault import indexing
from memvault.vault.core import Vault

from . import envelope
from .outbox import TeamState

MIRROR = "team"  # the group folder of the mirror under MemoryVault/
ORG = "_org"  # the folder of org entries (a name no team can have: team names are slugs without a leading _)


@dataclass
class PullReport:
    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    kept_local: list[str] = field(default_factory=list)  # edited here: not overwritten, waiting for push
    refused: list[str] = field(default_factory=list)  # refused by the write envelope (size, secret)
    vectors: int = 0  # vectors imported
    cursor: int = 0
    changes: int = 0
    busy: bool = False  # another pull of this vault was running: this one did nothing


def folder(vault: Vault) -> str:
    return f"{vault.folder}/{MIRROR}"


def place(vault: Vault, scope: str, team: str | None, slug: str) -> tuple[str, str]:
    """(mirror folder, file stem) of an entry."""
    # Names made from the server's text the way a title becomes a file name (a reserved name gets "-note"): never
    # a refusal, never a path. `_org` cannot be a team's folder: team names start with a letter or digit.
    where = ORG if scope == "org" or not team else model.slug(team, "folder", from_text=True)
    return f"{folder(vault)}/{where}", model.slug(slug, "slug", from_text=True)


def local_hash(note: notes.Note) -> str:
    """The hash of what a mirror note says now (its body and travelling keys), as `envelope.content_hash`."""
    meta = {k: envelope.plain(note.meta[k], str) for k in envelope.TRAVELS if note.meta.get(k) is not None}
    return envelope.content_hash(note.body, meta)


def edited(note: notes.Note) -> bool:
    """Whether a mirror note was changed here since it was pulled (or written by the last push)."""
    return note.ok and note.meta.get("team_hash") != local_hash(note)


def render(row: Any) -> str:
    """The mirror note of an entry row: travelling keys, provenance keys, the body as the team wrote it."""
    fm = {k: v for k, v in dict(row.frontmatter or {}).items() if k in envelope.TRAVELS and v is not None}
    body = row.body if row.body.endswith("\n") else row.body + "\n"
    origin: dict[str, Any] = {
        "team": row.team or ORG,
        "team_scope": row.scope,
        "team_uid": str(row.uid),
        "team_version": int(row.version),
        "team_author": row.author,
        "team_updated": _iso(row.updated_at),
    }
    if row.supersedes:
        origin["team_supersedes"] = str(row.supersedes)
    # The hash of what the file will say: JSON values read back from the YAML as written (checked below, and by
    # the tests: a file just pulled never counts as edited).
    origin["team_hash"] = envelope.content_hash(body, {k: envelope.plain(v, str) for k, v in fm.items()})
    text = notes.dump(notes.new_note(model.ordered({**fm, **origin}), body))
    if local_hash(notes.parse(text)) != origin["team_hash"]:  # a value YAML reads back otherwise: hash what it reads
        origin["team_hash"] = local_hash(notes.parse(text))
        text = notes.dump(notes.new_note(model.ordered({**fm, **origin}), body))
    return text


def embed_text(text: str, stem: str) -> str | None:
    """What the local index embeds for a note of one chunk (None for longer notes): the text a vector fits."""
    note = notes.parse(text)
    body = privacy.strip_private(note.body)
    parts = chunking.chunks(body)
    if len(parts) != 1:
        return None
    tags = [str(t).lstrip("#") for t in model.as_list(note.meta.get("tags")) if t is not None] if note.ok else []
    return chunking.embed_text(notes.title_of(note, stem), tags, parts[0])


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def scan(vault: Vault) -> dict[str, tuple[str, notes.Note, str]]:
    """uid → (path, note, digest) of every mirror file (the files are the truth, not a list kept aside)."""
    found: dict[str, tuple[str, notes.Note, str]] = {}
    base = folder(vault)
    if not (vault.root / base).is_dir():
        return found
    for rel in disk.list_markdown(vault.root, vault.ignore, under=base).notes:
        try:
            text = disk.read_text(vault.root / rel)
        except MemvaultError:
            continue
        note = notes.parse(text)
        uid = note.meta.get("team_uid") if note.ok else None
        if isinstance(uid, str):
            found[uid] = (rel, note, journal.text_digest(text))
    return found


def pull(
    vault: Vault,
    conn: Any,
    state: TeamState,
    *,
    mirror: str = "all",
    limit: int = 500,
    deadline: float | None = None,
    wait_s: float = 0.0,
    changes_since: Callable[..., tuple[list[Any], int]] | None = None,
) -> PullReport:
    """Bring the mirror up to date from the cursor kept in `state`; records the pull (or its error) there.

    One pull of a vault at a time (a lock in the state folder, waited for `wait_s` seconds): two sessions starting
    together must not both create an entry's file. A pull that did not get the lock does nothing (`busy`).
    """
    paths.ensure_private_dir(state.dir)
    with disk.try_lock(state.dir / "pull.lock", wait_s) as mine:
        if not mine:
            return PullReport(cursor=int(state.pull_state().get("cursor") or 0), busy=True)
        return _pull(vault, conn, state, mirror, limit, deadline, changes_since)


def _pull(
    vault: Vault,
    conn: Any,
    state: TeamState,
    mirror: str,
    limit: int,
    deadline: float | None,
    changes_since: Callable[..., tuple[list[Any], int]] | None,
) -> PullReport:
    teams: list[str] | None = None
    if changes_since is None:
        from . import server

        changes_since = server.changes_since
        teams = server.my_teams(conn)
    report = PullReport(cursor=int(state.pull_state().get("cursor") or 0))
    if mirror == "none":
        state.record_pull(cursor=None, error=None, pulled=0, mirror=mirror)
        return report
    known = state.pull_state().get("teams")
    if teams is not None and report.cursor and not (isinstance(known, list) and set(teams) <= set(known)):
        # A team joined since the last pull holds entries older than the cursor: read everything again
        # (entries already mirrored at their version are left as they are).
        report.cursor = 0
    mirrored = scan(vault)  # read once per pull, then kept up to date with what each batch writes
    try:
        while deadline is None or time.monotonic() < deadline:
            rows, cursor = changes_since(conn, report.cursor, limit)
            if rows:
                _apply(vault, rows, report, mirrored)
                report.changes += len(rows)
                fault.checkpoint("team-pull:batch-written")  # the files are written, the cursor not yet moved
            if cursor == report.cursor and not rows:
                break
            report.cursor = cursor
            state.record_pull(cursor=cursor, error=None, pulled=report.changes, mirror=mirror)
            if len(rows) < limit:
                break
        if mirror.startswith("recent"):
            _keep_recent(vault, int(mirror.split()[1]), report)
    except Exception as exc:
        state.record_pull(cursor=None, error=f"{type(exc).__name__}: {exc}"[:300], mirror=mirror)
        raise
    state.record_pull(cursor=report.cursor, error=None, pulled=report.changes, mirror=mirror, teams=teams)
    return report


def _apply(vault: Vault, rows: list[Any], report: PullReport, mirrored: dict[str, tuple[str, notes.Note, str]]) -> None:
    """One journalled change for a batch of the server's changes; then the vectors that came with them.

    `mirrored` is the mirror as read at the start of the pull (uid → path, note, digest), updated here. A file
    edited meanwhile is not lost: every operation carries the digest it was planned against, and the change
    refuses (`conflict`) when the file on disk differs right before it is replaced.
    """
    latest: dict[str, Any] = {}
    for row in rows:  # a batch may hold several versions of one entry: the newest counts
        uid = str(row.uid)
        if uid not in latest or int(row.version) >= int(latest[uid].version):
            latest[uid] = row
    vectors: list[tuple[str, Any]] = []

    uid_of: dict[str, str] = {}

    def plan() -> list[journal.FileOp]:
        ops: dict[str, journal.FileOp] = {}
        taken: set[str] = set()
        gone: set[str] = set()
        for uid, row in latest.items():
            if row.deleted:
                gone.add(uid)
            elif row.supersedes:
                gone.add(str(row.supersedes))
        for uid in gone:
            if uid not in mirrored or (uid in latest and not latest[uid].deleted):
                continue
            rel, note, digest = mirrored[uid]
            if edited(note):
                report.kept_local.append(rel)
                continue
            ops[rel] = journal.FileOp(rel, None, digest)
            report.removed.append(rel)
        for uid, row in latest.items():
            if row.deleted:
                continue
            text = render(row)
            if uid in mirrored:
                rel, note, digest = mirrored[uid]
                if edited(note) and local_hash(note) != local_hash(notes.parse(text)):  # not what was pushed
                    report.kept_local.append(rel)
                    continue
                if journal.text_digest(text) == digest:
                    continue
            else:
                where, stem = place(vault, row.scope, row.team, row.slug)
                rel, digest = disk.free_note(vault.root, where, stem, taken), journal.ABSENT
            try:
                _, rel = safety.resolve_target(vault.root, rel, vault.folder)  # inside the vault, symlinks resolved
                text, _ = vault.changes.checked(text, rel)
            except MemvaultError as exc:
                report.refused.append(f"{rel}: {exc}")
                continue
            taken.add(rel)
            uid_of[rel] = uid
            ops[rel] = journal.FileOp(rel, text, digest)
            report.written.append(rel)
            if row.embedding is not None and row.model_id:
                vectors.append((rel, row))
        return list(ops.values())

    planned: list[journal.FileOp] = []

    def recorded() -> list[journal.FileOp]:
        planned[:] = plan()
        return planned

    with vault.protection_waived():  # the mirror follows the server, protected entries included
        try:
            vault.transact("team-pull", folder(vault), recorded, reason=f"{len(rows)} team changes")
        except MemvaultError as exc:
            if "nothing to change" not in str(exc):
                raise
    for op in planned:  # what the change wrote is now the mirror
        if op.content is None:
            for uid in [u for u, (rel, _, _) in mirrored.items() if rel == op.path]:
                del mirrored[uid]
        else:
            mirrored[uid_of[op.path]] = (op.path, notes.parse(op.content), journal.text_digest(op.content))
    report.vectors += import_vectors(vault, vectors)


def import_vectors(vault: Vault, pulled: Iterable[tuple[str, Any]]) -> int:
    """Store the vectors that came with pulled entries when they fit: same model, one chunk, the same text."""
    wanted = embed.model_name(vault.config.embedding.model)
    items = [(rel, row) for rel, row in pulled if row.model_id == wanted]
    if not items:
        return 0
    try:
        index, _ = indexing.open_index(vault.root, vault.config)
    except (MemvaultError, OSError, index_db.dbapi().Error):
        return 0
    done = 0
    try:
        if not index.vector:
            return 0
        current = index.vector_model()
        dim = len(items[0][1].embedding)
        if current is None:  # no vectors yet: this model's space, as the first embedding would make it
            index.use_model(wanted, dim)
        elif current != (wanted, dim):
            return 0
        with index_db.transaction(index.conn):
            for rel, row in items:
                expected = (row.frontmatter or {}).get(envelope.EMBED_HASH)
                found = index.conn.execute(
                    "SELECT n.id, c.id, c.ehash FROM notes n JOIN chunks c ON c.note_id = n.id WHERE n.path = ?",
                    (rel,),
                ).fetchall()
                text = _file_embed_text(vault, rel)
                if len(found) != 1 or text is None or text_hash(text) != expected:
                    continue
                note_id, chunk_id, _ = found[0]
                blob = array.array("f", [float(x) for x in row.embedding]).tobytes()
                index.store_vectors(int(note_id), [(int(chunk_id), blob)], wanted)
                done += 1
    finally:
        index.close()
    return done


def _file_embed_text(vault: Vault, rel: str) -> str | None:
    try:
        return embed_text(disk.read_text(vault.root / rel), Path(rel).stem)
    except MemvaultError:
        return None


def _keep_recent(vault: Vault, keep: int, report: PullReport) -> None:
    """`team.mirror: recent N`: remove the mirror files of all but the N most recently updated entries."""

    def plan() -> list[journal.FileOp]:
        mirrored = sorted(scan(vault).values(), key=lambda f: str(f[1].meta.get("team_updated") or ""), reverse=True)
        ops = []
        for rel, note, digest in mirrored[keep:]:
            if not edited(note):
                ops.append(journal.FileOp(rel, None, digest))
                report.removed.append(rel)
        return ops

    with vault.protection_waived():
        try:
            vault.transact("team-pull", folder(vault), plan, reason=f"team.mirror: recent {keep}")
        except MemvaultError as exc:
            if "nothing to change" not in str(exc):
                raise


def _iso(value: Any) -> str | None:
    return value.isoformat() if hasattr(value, "isoformat") else (None if value is None else str(value))
