"""The safety envelope a note passes before it may leave the machine for the team's database.

A publish is always something a person asked for (`memvault team publish`, or approving "publish to
team" in review); no automatic process calls this. What it refuses and what it changes:

- a private note (`private:` read as everywhere else, failing closed) is refused, whole;
- `<private>…</private>` spans are removed from the body and from every frontmatter value;
- local absolute paths and user names become `~`, `<project>`, `<user>` (reflection's placeholders);
- secrets are refused, or replaced by `[REDACTED:<kind>]` when `vault.secrets: redact` (the store's scanner,
  run over everything that would be sent: title, frontmatter and body);
- only the frontmatter keys in `TRAVELS` go: what the entry is (kind, status, tags, title), whether it is
  protected, and where it came from (source, confidence, captured, rule, evidence, supersede_reason);
  local links (supersedes, superseded_by), the group, always_load and reflection's bookkeeping stay home.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memvault.errors import MemvaultError, SafetyError
from memvault.reflect.mine import placeholders
from memvault.store import model, notes, privacy, secrets
from memvault.vault.core import Vault

# Frontmatter keys that travel with an entry; everything else stays on this machine.
TRAVELS = (
    "title", "kind", "status", "tags", "created", "updated", "protected",
    "source", "confidence", "captured", "rule", "evidence", "supersede_reason",
)  # fmt: skip
# Keys a mirrored note carries that say where it came from; a note with them is the team's, not yours.
MIRROR_KEYS = ("team", "team_uid", "team_version", "team_author", "team_scope")
# The frontmatter key (in the entry's JSONB only) holding the hash of the text its vector was made from.
EMBED_HASH = "embed_text_sha256"


class TeamError(MemvaultError):
    """A team operation refused or failed; `code` says which (team-private, team-mirror, team-offline, …)."""

    code = "team"


@dataclass(frozen=True)
class Outgoing:
    """An entry that passed the envelope: exactly what will be sent (JSON-ready, kept in the outbox)."""

    uid: str
    scope: str
    team: str | None
    kind: str
    title: str
    slug: str
    body: str
    frontmatter: dict[str, Any]
    content_hash: str
    source_path: str  # the vault-relative note it came from (stays local: the outbox and the published list)
    base_version: int | None = None
    supersedes: str | None = None
    embedding: list[float] | None = None
    model_id: str | None = None
    redacted: list[str] = field(default_factory=list)  # kinds of secrets replaced, for the message

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Outgoing:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


def content_hash(body: str, frontmatter: dict[str, Any]) -> str:
    """SHA-256 of what an entry says (body and travelling frontmatter), the same on every machine."""
    canon = json.dumps(frontmatter, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(f"{canon}\n{body}".encode()).hexdigest()


def prepare(
    vault: Vault,
    rel: str,
    *,
    scope: str,
    team: str | None,
    uid: str | None = None,
    base_version: int | None = None,
    allow_mirror: bool = False,
) -> Outgoing:
    """Read the note at `rel` and pass it through the envelope; raises TeamError / SafetyError with the reason."""
    if scope not in ("team", "org"):
        raise TeamError(f"scope {scope!r} is not team or org", code="usage")
    if (scope == "team") != bool(team):
        raise TeamError("a team entry needs --team NAME; an org entry takes no team", code="usage")
    nf = vault.read(rel)
    note = nf.note
    if not note.ok:
        raise TeamError(f"{nf.path}: its frontmatter cannot be read ({note.error}); fix it first", code="invalid_note")
    if privacy.note_is_private(note.meta, note.frontmatter):
        raise TeamError(f"{nf.path} is private: private notes never leave this machine", code="team-private")
    if not allow_mirror and any(k in note.meta for k in ("team_uid",)):
        raise TeamError(
            f"{nf.path} is a team note mirrored here: change it and run `memvault team push`", code="team-mirror"
        )
    names = placeholders.names_in([note.body, note.frontmatter or ""])
    project = str(Path.cwd())

    def clean(text: str) -> str:
        return placeholders.replace_local(privacy.strip_private(text), project=project, names=names)

    body = clean(note.body)
    if not body.strip():
        raise TeamError(f"{nf.path}: nothing left to publish once private spans are removed", code="usage")
    meta = {k: plain(note.meta[k], clean) for k in TRAVELS if k in note.meta and note.meta[k] is not None}
    title = clean(notes.title_of(note, Path(nf.path).stem))
    kind = str(
        meta.get("kind") or "domain"
    )  # a vault's own kinds travel too (`decision`); a note without one is domain
    if len(kind) > 40 or model.name_problem(kind, "kind"):
        kind = "domain"
    meta["kind"] = kind
    body, meta, title, redacted = _secrets(vault, nf.path, body, meta, title)
    slug = Path(nf.path).stem
    return Outgoing(
        uid=uid or str(uuid.uuid4()),
        scope=scope,
        team=team if scope == "team" else None,
        kind=kind,
        title=title,
        slug=slug,
        body=body,
        frontmatter=meta,
        content_hash=content_hash(body, meta),
        source_path=nf.path,
        base_version=base_version,
        redacted=redacted,
    )


def plain(value: Any, clean: Any) -> Any:
    """A frontmatter value as JSON (dates as ISO text), every string through `clean`."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return [plain(v, clean) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v, clean) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return clean(str(value))


def _secrets(
    vault: Vault, where: str, body: str, meta: dict[str, Any], title: str
) -> tuple[str, dict[str, Any], str, list[str]]:
    """Refuse (or redact, with `vault.secrets: redact`) any secret in what would be sent."""
    everything = "\n".join([title, json.dumps(meta, ensure_ascii=False), body])
    findings = secrets.scan(everything)
    if not findings:
        return body, meta, title, []
    if vault.config.vault.secrets != "redact":
        raise SafetyError(
            f"{where}: looks like it holds a secret ({secrets.describe(findings, everything)}); nothing was sent. "
            "Remove it, wrap it in <private>…</private>, or set vault.secrets: redact",
            code="secret",
            path=where,
        )
    kinds = sorted({f.kind for f in findings})
    redact = lambda text: secrets.redact(text)[0]  # noqa: E731
    meta = json.loads(redact(json.dumps(meta, ensure_ascii=False)))
    body, title = redact(body), redact(title)
    if secrets.scan("\n".join([title, json.dumps(meta, ensure_ascii=False), body])):
        raise SafetyError(f"{where}: a secret could not be redacted; nothing was sent", code="secret", path=where)
    return body, meta, title, kinds
