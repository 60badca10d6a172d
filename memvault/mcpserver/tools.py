"""What each MCP tool does, as plain functions over a Vault: the CLI's rules, told in text an agent reads.

No MCP import here (`mcpserver.server` registers these with the SDK), so the rules are testable on
their own. The rule for reading: an agent reads exactly what recall may return, through MCP as through
the hooks — every note in the read scope (`MemoryVault/` and the rest of the vault, less `vault.ignore`
and the `_review/`/`_inbox/` queues) that is not private (`store.privacy.note_is_private`), with
`<private>` spans removed and secret-shaped strings redacted. Writes stay inside `MemoryVault/` and go
through `Vault` (safety checks, secret scan, journal, git commit, index). An agent never makes a
standing instruction: what it asks to load at every session start, or what the risk screen flags,
waits in `_review/` for the user. Every argument is bounded, as the hooks bound the prompt.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import Any

from memvault import config as config_mod
from memvault.errors import MemvaultError
from memvault.index.schema import place
from memvault.recall import passages
from memvault.reflect import review
from memvault.store import disk, model, notes, privacy, risk, safety, secrets
from memvault.store.model import ALWAYS_LOAD, INBOX, REVIEW, NoteFile
from memvault.text import bounded_query
from memvault.vault.core import Vault, open_vault

SOURCE = "mcp"  # provenance of entries an agent saves through the server
ALWAYS_CHARS = 20_000  # the always-load resource, like SessionStart's context, is capped
K_MAX = 50  # recall's k
NAME_CHARS = 100  # kind, slug, group
PATH_CHARS = 1_000
REASON_CHARS = 1_000
TAGS_MAX, TAG_CHARS = 30, 100
QUEUES = (REVIEW, INBOX)
ASKED = "an agent asked (over MCP) for this to be loaded at every session start"
# Frontmatter keys an agent may not set through a body's own frontmatter: they change what is trusted.
# (`always_load` and `private` given there count as the tool's arguments.)
TRUST_KEYS = frozenset(
    ("protected", "approve_to", "warning", "proposes_supersede", "supersede_note", "source", "supersedes",
     "superseded_by", "supersede_reason", "review", "reviewed", "status", "created", "updated")
)  # fmt: skip


class Refused(MemvaultError):
    """A request the server declines (private note, outside the read scope, memory switched off, bad argument)."""


def open_memory() -> Vault:
    """The configured vault, opened afresh per call (config edits and crash recovery apply at once)."""
    config = config_mod.load()
    if not config.memory.enabled:
        raise Refused("MemoryVault is switched off on this machine (memory.enabled: false)", code="disabled")
    return open_vault(config=config)


# ---- reading ----------------------------------------------------------------------------------------


def recall(vault: Vault, query: str, k: int | None = None, group: str | None = None) -> tuple[str, list[str]]:
    """The notes that match `query`, best first, as lines for the model; and their paths (for the log)."""
    query = privacy.strip_private(bounded_query(_clean(_text(query, "query"))))  # cut as the hook cuts a prompt
    if not query.strip():
        raise Refused("give a query: what the notes should be about", code="usage")
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= K_MAX):
        raise Refused(f"k is how many notes to return: a whole number from 1 to {K_MAX}", code="usage")
    if group is not None:
        _name(group, "group")
    wait = 10.0 if vault.config.embedding.warm_service else 0.0
    result = vault.recall(query, k, group=group, wait_service=wait, floor=True)  # what the prompt hook would give
    shown = " ".join(query.split())[:80]
    if not result.hits:
        return redact(f"No MemoryVault notes match {shown!r}."), []
    lines = [f"MemoryVault notes for {shown!r} (most relevant first, each with the passage the prompt hook would "
             "show; `show` gives a whole note):"]  # fmt: skip
    for hit in result.hits:  # as the hook gives them (`recall.passages`), not cut to its context's size
        text = privacy.strip_private(hit.passage or hit.snippet)
        lines.append(passages.entry(hit.title, hit.path, hit.heading, text))
    return redact("".join(lines)), [h.path for h in result.hits]


def team_recall(vault: Vault, query: str, k: int | None = None) -> tuple[str, list[str]]:
    """Team and org entries matching `query`, searched on the team's server (`recall` with team=true)."""
    from memvault.team import remote, status

    query = privacy.strip_private(bounded_query(_clean(_text(query, "query"))))
    if not query.strip():
        raise Refused("give a query: what the notes should be about", code="usage")
    if not status.configured(vault.config) or not status.available():
        raise Refused("team memory is not set up on this machine (team.service in the config)", code="team-config")
    try:
        hits, _ = remote.search(vault, query, k or 5)
    except Exception as exc:  # the server down, unreachable or gone mid-query (psycopg's errors too): one refusal
        said = exc.args[0] if isinstance(exc, MemvaultError) else " ".join(str(exc).split())
        raise Refused(f"the team's server did not answer: {said}", code="team-offline") from None
    shown = " ".join(query.split())[:80]
    if not hits:
        return redact(f"No team notes match {shown!r}."), []
    lines = [f"Team notes for {shown!r} (from the team's server, most relevant first):"]
    for hit in hits:
        where = hit.mirrored or f"team {hit.team}, by {hit.author}"
        lines.append(passages.entry(hit.title, where, "", privacy.strip_private(hit.body)[:1200]))
    return redact("".join(lines)), [h.mirrored or f"team:{h.team}/{h.title}" for h in hits]


def show(vault: Vault, path: str) -> str:
    """One note as markdown: its frontmatter and body, `<private>` spans removed, secrets redacted; a note an
    agent may not read (private, ignored, queued, outside the vault) is refused."""
    nf = readable(vault, path)
    meta = {k: v for k, v in nf.note.meta.items() if k != "private"}
    head = "\n".join(f"{privacy.strip_private(str(k))}: {privacy.strip_private(str(v))}" for k, v in meta.items())
    return redact(f"{nf.path}\n---\n{head}\n---\n{privacy.strip_private(nf.note.body).strip()}\n")


def list_entries(
    vault: Vault, kind: str | None = None, group: str | None = None, status: str | None = None
) -> list[dict[str, Any]]:
    """The memory's entries (private and unreadable ones left out), as small records."""
    for value, what in ((kind, "kind"), (group, "group"), (status, "status")):
        if value is not None:
            _name(value, what)
    entries = vault.list(group=group, kind=kind, status=status)
    return [_record(e) for e in entries if not e.private and not e.error and not _ignored(vault, e.path)]


def queue(vault: Vault, area: str) -> list[dict[str, Any]]:
    """What waits in `_review/` or `_inbox/` (for the person to sort; an agent can tell them it waits)."""
    if area not in QUEUES:
        raise Refused(f"unknown queue {area!r}", code="usage")
    return [_record(e) for e in review.pending(vault, area) if not e.private and not _ignored(vault, e.path)]


def always_load(vault: Vault, max_chars: int = ALWAYS_CHARS) -> str:
    """The always-load set (what every session starts with), private notes and spans left out, secrets redacted."""
    parts, used = [], 0
    for entry in vault.list(status="active"):
        if not entry.always_load or entry.private or entry.error:
            continue
        try:
            nf = readable(vault, entry.path)
        except MemvaultError:
            continue  # queued, ignored or changed since listed: not a standing note
        body = privacy.strip_private(nf.note.body).strip()
        if body.startswith(f"# {entry.title}"):
            body = body.split("\n", 1)[1].strip() if "\n" in body else ""
        part = f"## {entry.title} ({entry.path})\n{body}\n"
        if used + len(part) > max_chars:
            parts.append(f"(not shown for space: {entry.path})\n")
            continue
        parts.append(part)
        used += len(part)
    if not parts:
        return "The MemoryVault has no always-load entries."
    return redact("Standing notes from the user's MemoryVault, loaded at every session start:\n\n" + "\n".join(parts))


def readable(vault: Vault, path: str) -> NoteFile:
    """The note at `path` if an agent may read it (what recall may return), else `Refused` saying why."""
    rel = _path(path)
    try:
        target, rel = safety.resolve_target(vault.root, rel, vault.folder, outside=True)
    except MemvaultError as exc:
        raise Refused(f"{path}: {exc}; an agent reads only notes inside the vault", code="outside") from None
    real = os.path.relpath(os.path.realpath(target), os.path.realpath(vault.root)).replace(os.sep, "/")
    for name in {rel, real}:
        if _ignored(vault, name):
            raise Refused(f"{rel} is not in the read scope (vault.ignore, a dot-folder, _meta or a sync conflict copy)",
                          code="outside")  # fmt: skip
        in_memory, _, area = place(name, vault.folder)
        if in_memory and area in QUEUES:
            raise Refused(f"{rel} waits in {area}/ for the user's review: it is theirs to read, not an agent's",
                          code="private")  # fmt: skip
    nf = vault.read(rel)
    if privacy.note_is_private(nf.note.meta, nf.note.frontmatter):
        raise Refused(f"{rel} is private: it is never given to an agent", code="private")
    if nf.note.error and vault.in_memory(rel):  # recall never returns it: superseded or private cannot be told
        raise Refused(f"{rel}: its frontmatter is not valid YAML, so it is not given to an agent", code="private")
    return nf


def refusal(exc: MemvaultError) -> str:
    """A refusal as the agent (and the hook log) is told it: `<private>` spans and secrets out of what it echoes."""
    return redact(privacy.strip_private(str(exc)))


def redact(text: str) -> str:
    """`text` with every secret-shaped string replaced by a marker."""
    return secrets.redact(text)[0]


# ---- writing -----------------------------------------------------------------------------------------


def save(
    vault: Vault,
    kind: str,
    slug: str,
    body: str,
    *,
    tags: Sequence[str] = (),
    group: str | None = None,
    always_load: bool = False,
    private: bool = False,
    replace: bool = False,
) -> str:
    """A new entry; one to be loaded at every session start, or that the risk screen flags, waits in review."""
    kind_s = model.check_kind(_name(kind, "kind"), model.kind_folders(vault.root / vault.folder))  # as the CLI's save
    slug_s = model.slug(_name(slug, "slug"), "slug")
    group_s = model.slug(_name(group, "group") if group is not None else vault.config.vault.default_group, "group")
    tag_list = _tags(tags)
    given, text = _given(vault, body)
    always_load = bool(always_load) or privacy.is_private_value(given.pop("always_load", None))
    private = bool(private) or privacy.is_private_value(given.pop("private", None))
    body = _with_given(given, text)
    rel = f"{vault.folder}/{group_s}/{kind_s}/{slug_s}.md"
    mtime = None
    if replace and (vault.root / rel).exists():
        existing = readable(vault, rel)  # an agent never replaces what it may not read
        mtime = existing.mtime_ns
        if _standing(vault, existing):
            why = [f"an agent (over MCP) proposes to replace the standing note {rel}"]
            return _to_review(vault, kind_s, slug_s, body, group_s, tag_list, private, why, supersede=rel)
    warnings = [ASKED] * always_load + [w for w in (risk.assess(text),) if w]
    if warnings:
        return _to_review(vault, kind_s, slug_s, body, group_s, tag_list, private, warnings, always=always_load)
    result = vault.save(kind_s, slug_s, body, group=group_s, tags=tag_list, private=private, replace=replace,
                        source=SOURCE, expected_mtime_ns=mtime)  # fmt: skip
    return _written("saved", result)


def evolve(vault: Vault, old_path: str, body: str, reason: str, slug: str | None = None) -> str:
    """Supersede a note of the memory the agent may read; a standing note's successor waits in review."""
    rel = _path(old_path)
    reason = _text(reason, "reason")
    if len(reason) > REASON_CHARS:
        raise Refused(f"the reason is over {REASON_CHARS} characters: say it in a sentence", code="usage")
    if slug is not None:
        model.slug(_name(slug, "slug"), "slug")
    old = readable(vault, rel)  # never what it may not read
    if not vault.in_memory(old.path):
        raise Refused(f"{old_path} is outside {vault.folder}/: an agent changes only the memory", code="outside")
    given, text = _given(vault, body)
    asks = privacy.is_private_value(given.pop("always_load", None))
    private = privacy.is_private_value(given.pop("private", None))
    body = _with_given(given, text)
    warnings = [f"an agent (over MCP) proposes to supersede the standing note {old.path}"] * _standing(vault, old)
    warnings += [ASKED] * asks + [w for w in (risk.assess(text),) if w]
    if warnings:
        kind = model.slug(str(old.note.meta.get("kind") or "note"), "kind", from_text=True)
        group = vault.group_of(old.path) or vault.config.vault.default_group
        name = slug or os.path.basename(old.path).removesuffix(".md")
        return _to_review(vault, kind, model.slug(name, "slug", from_text=True), body, group, (), private, warnings,
                          supersede=old.path, always=asks, reason=reason)  # fmt: skip
    if private:
        body = _with_given({**given, "private": True}, text)
    result = vault.evolve(old.path, body, reason=reason, slug=slug, source=SOURCE, expected_mtime_ns=old.mtime_ns)
    return _written("evolved", result)


def _to_review(
    vault: Vault,
    kind: str,
    slug: str,
    body: str,
    group: str,
    tags: Sequence[str],
    private: bool,
    warnings: Sequence[str],
    *,
    always: bool = False,
    supersede: str | None = None,
    reason: str | None = None,
) -> str:
    """Write the capture to `<group>/_review/` (a free name) for the user to approve, and say so to the agent."""
    rel = disk.free_note(vault.root, f"{vault.folder}/{group}/{REVIEW}", slug)
    meta: dict[str, Any] = {"warning": "; ".join(warnings)}
    if always:
        meta["approve_to"] = ALWAYS_LOAD
    if supersede:
        meta["proposes_supersede"] = supersede
    if reason:
        meta["supersede_reason"] = reason
    stem = os.path.basename(rel).removesuffix(".md")
    result = vault.save(kind, stem, body, group=group, tags=tags, private=private, source=SOURCE, meta=meta,
                        folder=REVIEW)  # fmt: skip
    text = _written("held for review", result)
    return (f"{text}. It waits for the user's review (`memvault review`) and is not used until they approve it"
            f" ({meta['warning']}).")  # fmt: skip


def _standing(vault: Vault, nf: NoteFile) -> bool:
    """Whether the note is loaded at every session start (its folder or its `always_load`)."""
    return f"/{ALWAYS_LOAD}/" in nf.path or privacy.is_private_value(nf.note.meta.get("always_load"))


# ---- arguments ----------------------------------------------------------------------------------------


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise Refused(f"{what} must be text", code="usage")
    return value


def _clean(text: str) -> str:
    """Text an index or a file name can hold: no NUL, no lone surrogate."""
    return text.replace("\x00", " ").encode("utf-8", "replace").decode("utf-8")


def _name(value: Any, what: str) -> str:
    value = _text(value, what)
    if len(value) > NAME_CHARS:
        raise Refused(f"the {what} is over {NAME_CHARS} characters: a {what} is a short name", code="usage")
    if _clean(value) != value:
        raise Refused(f"the {what} holds a NUL or an invalid character", code="usage")
    return value


def _path(value: Any) -> str:
    value = _text(value, "path")
    if len(value) > PATH_CHARS or _clean(value) != value or any(ord(c) < 32 for c in value):
        raise Refused(f"{value[:80]!r}…: not a note's path (too long, or a control character)", code="usage")
    return value.replace("\\", "/").strip().lstrip("/")


def _tags(values: Any) -> list[str]:
    if values is None:
        return []
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise Refused("tags are a list of short words", code="usage")
    if len(values) > TAGS_MAX:
        raise Refused(f"at most {TAGS_MAX} tags", code="usage")
    for tag in values:
        if not isinstance(tag, str) or len(tag) > TAG_CHARS or _clean(tag) != tag or any(ord(c) < 32 for c in tag):
            raise Refused(f"a tag is a short word (at most {TAG_CHARS} characters, no control characters)",
                          code="usage")  # fmt: skip
    return model.tags(privacy.strip_private(t) for t in values)


def _given(vault: Vault, body: Any) -> tuple[dict[str, Any], str]:
    """The body's own frontmatter (trust-changing keys refused) and its text, after the size bound."""
    body = _text(body, "body")
    limit = vault.config.vault.max_note_kb * 1024
    if len(body) > limit:
        raise Refused(f"the body is over the vault's {vault.config.vault.max_note_kb} KB limit", code="usage")
    given, text = model.split_given(body)
    trust = sorted(k for k in given if str(k).strip().lower() in TRUST_KEYS)
    if trust:
        raise Refused(f"an agent may not set {', '.join(map(str, trust))} (they change what the user trusts); "
                      "leave them out of the body's frontmatter", code="usage")  # fmt: skip
    return given, text


def _with_given(given: Mapping[str, Any], text: str) -> str:
    return notes.dump(notes.new_note(dict(given), text)) if given else text


def _ignored(vault: Vault, rel: str) -> bool:
    return disk.is_ignored(rel, vault.ignore) or disk.is_conflict_copy(rel)


def _written(verb: str, result: Any) -> str:
    text = f"{verb} {result.path}"
    if result.commit:
        text += f" (commit {result.commit[:10]})"
    if result.archived:
        text += f"; the old text is kept in {result.archived}"
    if getattr(result, "warning", None):
        text += f"; note: {result.warning}"
    return text


def _record(entry: Any) -> dict[str, Any]:
    data = dataclasses.asdict(entry)
    record = {k: data[k] for k in ("path", "title", "kind", "status", "group", "tags", "always_load", "updated")}
    record["tags"] = [redact(privacy.strip_private(str(t))) for t in record["tags"]]
    record["title"] = redact(str(record["title"]))
    return record
