"""The skill watchlist: a discovery run, an adapted entry per fitting pattern, and a person's approve or dismiss.

An entry (`MemoryVault/<group>/_skill-watchlist/<slug>.md`) says what the pattern does, why it fits this user
(their notes, linked), what to adopt and what not, its source and licence, in the user's terms: it is built
from the pattern's name, its search terms, its section titles cut short and the notes it matched, never from
its text (no run of `SHINGLE` words in common with the upstream SKILL.md, checked before every write). Every
write is confined to the watchlist folder by the vault's path envelope, and every entry is `incubating`, so
recall never gives it to an agent: an injected "always do X" upstream can only ever reach a person's review.

`approve` moves an entry to `personal-skills/` as a proposal (still incubating: the person writes the skill,
and the skills index then lists it); `dismiss` keeps the entry with `watchlist: dismissed`, so the vault
(and every machine it syncs to) remembers it and discovery never proposes it again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memvault import paths, userfiles
from memvault.errors import MemvaultError
from memvault.index import chunking
from memvault.store import changelog, notes, safety, secrets
from memvault.store.changelog import Record
from memvault.store.model import WriteResult
from memvault.vault.core import Vault

from . import candidates, sources, whitelist
from .candidates import SKILLS, WATCHLIST, Candidate
from .sources import Pattern

SOURCE = "skills-discovery"
KIND = "skill-proposal"
SHINGLE = 12  # an entry shares no run of this many words with the upstream text
MIN_FIT = 0.0  # a discovery run writes entries only for patterns that fit better than this
LIMIT = 5  # entries a discovery run writes at most
TERMS = 8  # search terms of the pattern named in "what it does"
HEADING_WORDS = 6


@dataclass
class Report:
    found: int = 0
    had: list[dict[str, str]] = field(default_factory=list)
    candidates: list[dict[str, Any]] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)
    web: str = ""
    dry_run: bool = False

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# ---- a discovery run -------------------------------------------------------------------------------


def discover(
    vault: Vault,
    places: sources.Places,
    *,
    use_web: bool = True,
    dry_run: bool = False,
    limit: int = LIMIT,
    wait_service: float = 0.0,
) -> Report:
    """Find patterns, leave out what the user has, score the rest, write an entry for each fitting one (at most
    `limit`). The candidates are kept in the state folder, so `adapt` can take any of them by name."""
    found = sources.local(places)
    report = Report(dry_run=dry_run, errors=found.errors)
    patterns = found.patterns
    if use_web:
        web_found, report.web = whitelist.patterns(vault.config, vault.config.discovery.sources)
        patterns += web_found.patterns
    report.found = len(patterns)
    evaluation = candidates.evaluate(vault, patterns, wait_service=wait_service)
    report.had = evaluation.had
    report.candidates = [c.as_dict() for c in evaluation.candidates]
    _remember(vault, evaluation.candidates)
    for candidate in evaluation.candidates:
        if len(report.written) >= limit or candidate.fit <= MIN_FIT:
            break
        if dry_run:
            report.written.append(entry_rel(vault, candidate.slug))
            continue
        try:
            report.written.append(adapt(vault, candidate, automatic=True).path)
        except MemvaultError as exc:
            report.errors.append({"path": candidate.pattern.source, "error": str(exc)})
    return report


def _cache(vault: Vault) -> Path:
    return vault.state_dir / "discovery" / "candidates.json"


def _remember(vault: Vault, found: list[Candidate]) -> None:
    path = _cache(vault)
    paths.ensure_private_dir(path.parent)
    userfiles.replace(path, json.dumps([c.pattern.as_dict() for c in found]))


def find(vault: Vault, name: str, places: sources.Places) -> Candidate:
    """The candidate called `name` (its slug or name) of the last discovery run, else of a fresh local scan."""
    wanted = notes.slugify(name, max_len=60)
    patterns: list[Pattern] = []
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):  # no cache, or an unreadable one
        patterns = [Pattern.from_dict(d) for d in json.loads(_cache(vault).read_text(encoding="utf-8"))]
    for pattern in [*patterns, *sources.local(places).patterns]:
        if pattern.slug == wanted or pattern.key == name:
            evaluation = candidates.evaluate(vault, [pattern])
            if evaluation.had:
                had = evaluation.had[0]
                raise MemvaultError(f"{pattern.name}: {had['why']} ({had['entry']})", code="conflict")
            return evaluation.candidates[0]
    raise MemvaultError(f"no candidate called {name!r}: run `memvault skills discover` first", code="missing")


# ---- the entry -------------------------------------------------------------------------------------


def folder_rel(vault: Vault) -> str:
    return f"{vault.folder}/{vault.config.vault.default_group}/{WATCHLIST}"


def entry_rel(vault: Vault, slug: str) -> str:
    return f"{folder_rel(vault)}/{slug}.md"


def adapt(vault: Vault, candidate: Candidate, *, automatic: bool = False) -> WriteResult:
    """Write the watchlist entry of one candidate (confined to the watchlist folder)."""
    pattern = candidate.pattern
    slug = _free_slug(vault, candidate.slug)
    rel = entry_rel(vault, slug)
    safety.resolve_target(vault.root, rel, folder_rel(vault))  # the watchlist's own envelope: nowhere else
    meta = {
        "name": _clip_words(pattern.name, 8),
        "watchlist": "waiting",
        "watchlist_key": pattern.key,
        "pattern_digest": pattern.digest or None,
        "origin": pattern.origin,
        "upstream": pattern.source,
        "licence": pattern.licence or "unknown",
        "fit": round(candidate.fit, 4),
    }
    meta = {k: secrets.redact(v)[0] if isinstance(v, str) else v for k, v in meta.items() if v is not None}
    body = compose(candidate)
    detail = f"skills discovery: {pattern.name} ({pattern.origin}), for a person to approve or dismiss"
    log = [Record(changelog.REVIEW, detail=detail)] if automatic else []
    result = vault.save(
        KIND,
        slug,
        body,
        group=vault.config.vault.default_group,
        folder=WATCHLIST,
        source=SOURCE,
        tags=["skill", "watchlist"],
        meta={**meta, "status": "incubating"},
        log=log,
    )
    return result


def _free_slug(vault: Vault, slug: str) -> str:
    base, n, candidate = slug, 2, slug
    while (vault.root / entry_rel(vault, candidate)).exists() or (
        vault.memory_dir / SKILLS / f"{candidate}.md"
    ).exists():
        candidate, n = f"{base}-{n}", n + 1
    return candidate


def compose(candidate: Candidate) -> str:
    """The entry's body, in the user's terms: never a run of `SHINGLE` words of the upstream text.

    Section titles are cut to `HEADING_WORDS`; should the entry still share a run with the upstream
    (titles that follow each other there, say), it is written without them, and never with one.
    """
    upstream = candidate.pattern.body
    for titles in (candidate.pattern.titles[:8], ()):
        body = _compose(candidate, titles)
        if not shares_run(body, upstream):
            return secrets.redact(safety.strip_private(body))[0]
    raise MemvaultError(f"{candidate.pattern.name}: the entry would repeat the upstream text", code="copied")


def _compose(candidate: Candidate, titles: tuple[str, ...]) -> str:
    pattern = candidate.pattern
    terms = chunking.query_terms(f"{pattern.name.replace('-', ' ')} {pattern.description}", TERMS)
    does = f"A {_origin_words(pattern.origin)} about {', '.join(terms) or 'an unnamed task'}."
    if titles:
        does += f" Its steps, by their titles: {_steps(titles)}."
    if pattern.tools:
        does += f" It asks for these tools: {', '.join(_clip_words(t, 3) for t in pattern.tools[:8])}."
    shared = {w for c in candidate.cited for w in c.words}
    mine = [h for h in titles if set(chunking.query_terms(h, 40)) & shared]
    others = [h for h in titles if h not in mine]
    if candidate.cited:
        fits = [f"- {c.link}" + (f" (shared: {', '.join(c.words)})" if c.words else "") for c in candidate.cited]
        why = "Your notes that are about the same things:\n\n" + "\n".join(fits)
        if mine:
            adopt = f"Its steps on what your notes cover: {_steps(mine)}. Write them as your own steps."
        else:
            adopt = f"The parts about {', '.join(sorted(shared)[:10])}, written as your own steps."
    else:
        why = "None of your notes is about it: it was adapted because you asked for it."
        adopt = "Only what you decide after reading the source."
    nots = ["- Its text: write your skill in your own words; this entry quotes none of it."]
    if candidate.cited and others:
        nots.append(f"- Its steps on what none of your notes is about, unless you want them: {_steps(others)}.")
    if pattern.tools:
        nots.append("- Its tool permissions as they are: give your skill only the tools it needs.")
    commanding = sum(1 for line in pattern.body.splitlines() if sources.COMMANDING.search(line))
    if commanding:
        nots.append(
            f"- Its {commanding} line{'s' if commanding != 1 else ''} telling an agent what to do always "
            "or never: upstream text, untrusted, none of it is a rule of yours."
        )
    if pattern.path and (Path(pattern.path).parent / "scripts").is_dir():
        nots.append("- Its scripts: not run, not copied.")
    licence = pattern.licence or "unknown: check it before reusing anything"
    parts = [
        f"# {_clip_words(pattern.name, 8)} (skill watchlist)",
        f"**What it does:** {does}",
        f"**Why it fits you** (fit {candidate.fit:.2f}): {why}",
        f"**What to adopt:** {adopt}",
        "**What not to adopt:**\n\n" + "\n".join(nots),
        f"**Source:** {pattern.source}  \n**Licence:** {licence}",
        "Approve with `memvault skills watchlist approve " + candidate.slug + "` (a proposal in personal-skills/, "
        "for you to write), or dismiss with `memvault skills watchlist dismiss " + candidate.slug + "`.",
        "## My notes",
    ]
    return "\n\n".join(parts) + "\n"


def _steps(titles: list[str] | tuple[str, ...]) -> str:
    return "; ".join(_clip_words(h, HEADING_WORDS) for h in titles)


def _origin_words(origin: str) -> str:
    return {
        "claude": "skill of yours (Claude Code)",
        "project": "skill of this project",
        "plugins": "plugin skill",
        "marketplaces": "skill from a plugin marketplace",
        "codex": "Codex CLI skill",
        "gemini": "Gemini CLI skill",
        "agents": "skill in ~/.agents",
        "repository": "skill from a repository you listed",
        "web": "skill on the web",
    }.get(origin, "skill")


def _clip_words(text: str, n: int) -> str:
    words = text.split()
    return " ".join(words[:n]) + (" …" if len(words) > n else "")


def words(text: str) -> list[str]:
    return re.findall(r"[^\W_]+", text.lower())


def shares_run(text: str, upstream: str, n: int = SHINGLE) -> bool:
    """Whether `text` and `upstream` have a run of `n` words in common (case and punctuation ignored)."""
    theirs = words(upstream)
    grams = {tuple(theirs[i : i + n]) for i in range(len(theirs) - n + 1)}
    ours = words(text)
    return any(tuple(ours[i : i + n]) in grams for i in range(len(ours) - n + 1))


# ---- a person's decision ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Item:
    slug: str
    path: str
    name: str
    state: str  # waiting | dismissed | approved
    fit: float
    upstream: str
    licence: str


def items(vault: Vault, *, every: bool = False) -> list[Item]:
    """The watchlist: waiting entries (with `every`, also dismissed and approved ones), best fit first."""
    have = candidates.known(vault)
    found: dict[str, Item] = {}
    for rel, _state in have.watched.values():
        if rel in found:
            continue
        note = vault.read(rel).note
        meta = note.meta
        state = str(meta.get("watchlist") or "waiting")
        if every or state == "waiting":
            fit = meta.get("fit")
            found[rel] = Item(
                rel.rsplit("/", 1)[-1].removesuffix(".md"),
                rel,
                str(meta.get("name") or ""),
                state,
                float(fit) if isinstance(fit, (int, float)) else 0.0,
                str(meta.get("upstream") or ""),
                str(meta.get("licence") or "unknown"),
            )
    return sorted(found.values(), key=lambda i: (i.state != "waiting", -i.fit, i.slug))


def _waiting(vault: Vault, slug: str) -> str:
    """The watchlist entry called `slug`, in any group's `_skill-watchlist/` (an approved one has left it)."""
    found = candidates.known(vault).watched.get(f"slug:{notes.slugify(slug, max_len=80) or slug}")
    if found is None or f"/{WATCHLIST}/" not in found[0]:
        raise MemvaultError(f"{slug}: no such watchlist entry (see `memvault skills watchlist`)", code="missing")
    return found[0]


def approve(vault: Vault, slug: str) -> WriteResult:
    """Move a watchlist entry to `personal-skills/` as a proposal: still incubating, never always-load."""
    rel = _waiting(vault, slug)
    target = f"{vault.folder}/{SKILLS}/{Path(rel).name}"
    meta = {
        "watchlist": "approved",
        "approved": notes.now(),
        "group": SKILLS,
        "always_load": False,
        "status": "incubating",
    }
    body = vault.read(rel).note.body
    decided = (f"Approved on {notes.now():%Y-%m-%d}: a proposal. Write the skill in your own words; "
               "`memvault index-skills` then gives it an entry of its own, and this one can go.")  # fmt: skip
    body = re.sub(r"^Approve with `memvault skills watchlist approve .*$", decided, body, count=1, flags=re.M)
    return vault.move(rel, target, meta=meta, body=body, op="skills-approve")


def dismiss(vault: Vault, slug: str, reason: str = "") -> WriteResult:
    """Keep the entry, marked dismissed and archived: discovery never proposes the pattern again."""
    rel = _waiting(vault, slug)
    meta: dict[str, Any] = {"watchlist": "dismissed", "dismissed": notes.now(), "status": "archived"}
    if reason.strip():
        meta["dismissed_why"] = reason.strip()
    return vault.update(rel, meta=meta, op="skills-dismiss")
