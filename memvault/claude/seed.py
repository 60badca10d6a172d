"""`memvault seed`: the rules in the user's instruction files (CLAUDE.md, AGENTS.md) as the vault's always-load core.

Reads `~/.claude/CLAUDE.md` (or `$CLAUDE_CONFIG_DIR/CLAUDE.md`), the project's `CLAUDE.md`,
`.claude/CLAUDE.md` and `AGENTS.md`, any `--from` file, and the markdown files they import with
`@path` (five levels, as Claude Code does); never a file outside the folder it belongs to (`sources`),
and every file not read is reported with why. A distiller turns each file into candidate entries, one rule
each with its heading path as context; the offline one splits by structure (`seed_split`). Another
distiller (the Claude miner, once reflection offers one) plugs in through `DISTILLERS` with the same
signature, nothing else changes.

Candidates go to `_review/` (approved into `_always-load/`), or straight to `_always-load/` with
`accept` (a rule `store.risk` flags goes to `_review/` with its warning even then); all of one run are
one journalled change with their change-log lines. An entry carries
`seed_key` (its words), `seed_source` and `seed_context`: a rule already seeded is not seeded again,
one removed from the vault stays out (a per-machine ledger remembers it), and a rule edited in its
file becomes a supersede proposal of the entry it produced. Seeded entries are `protected: true`
unless `protect=False`.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memvault import paths
from memvault.errors import MemvaultError
from memvault.reflect.session import capture_slug, protected_note
from memvault.reflect.state import read_json, write_json
from memvault.store import changelog, disk, journal, model, notes, privacy, risk, secrets
from memvault.store.changelog import Record
from memvault.store.model import ALWAYS_LOAD, REVIEW
from memvault.vault.core import Vault

from . import confined, seed_split
from .settings import claude_dir

SOURCE = "seed"
LEDGER = "seed-ledger.json"  # in the vault's per-machine state folder: key → the path it was first written to
PROJECT_FILES = ("CLAUDE.md", ".claude/CLAUDE.md", "AGENTS.md")
IMPORT_DEPTH = 5
MAX_FILE_BYTES = 512 * 1024
EDIT_SIMILARITY = 0.5  # difflib ratio from which a changed rule is taken for an edit of the one seeded before
CONTEXT_SEP = " › "


@dataclass(frozen=True)
class Source:
    path: Path
    label: str  # how entries name it: `~/.claude/CLAUDE.md`, never the user's home folder
    text: str


@dataclass(frozen=True)
class Candidate:
    source: str
    context: tuple[str, ...]
    text: str
    title: str
    kind: str
    key: str
    line: int


Distiller = Callable[[Source], list[Candidate]]


def by_structure(source: Source) -> list[Candidate]:
    """The offline distiller: one candidate per list item, paragraph, table or quote."""
    out = []
    for p in seed_split.split(source.text):
        title, kind = seed_split.title(p.text, p.context), seed_split.kind(p.context, p.text)
        out.append(Candidate(source.label, p.context, p.text, title, kind, seed_split.key(p.text), p.line))
    return out


DISTILLERS: dict[str, Distiller] = {"structure": by_structure}


@dataclass
class Report:
    sources: list[str] = field(default_factory=list)
    candidates: int = 0
    created: list[dict[str, Any]] = field(default_factory=list)  # {path, title, kind, context, source, route, warning}
    proposals: list[dict[str, Any]] = field(default_factory=list)  # {path, title, replaces, protected}
    unchanged: list[str] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)  # {title, reason}
    gone: list[dict[str, str]] = field(default_factory=list)  # {path, source, context}: no longer in the file
    errors: list[dict[str, str]] = field(default_factory=list)  # {path, error}
    warnings: list[str] = field(default_factory=list)
    commit: str | None = None
    dry_run: bool = False
    accepted: bool = False

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# ---- the files -----------------------------------------------------------------------------------


def sources(
    project: Path | None, extra: Sequence[Path] = (), *, only: bool = False, claude: Path | None = None
) -> tuple[list[Source], list[dict[str, str]]]:
    """The instruction files to read (and the files they import), each once; and the ones not read, with why.

    Nothing is read from outside the folder a file belongs to (symlinks of the file and of the folders on
    the way resolved): the project's files and their imports stay in the project folder, the user's
    CLAUDE.md and its imports in ~/.claude, a `--from` file's imports in the project folder when it lies
    there, else in its own folder. Only regular files are read (a FIFO or a device never blocks), each at
    most MAX_FILE_BYTES.
    """
    base = (project or Path.cwd()).expanduser()
    wanted: list[tuple[Path, Path, str, bool]] = []  # (file, the folder it stays in, that folder's name, required)
    if not only:
        home = (claude or claude_dir()).expanduser()
        wanted.append((home / "CLAUDE.md", home, label(home), False))
        wanted += [(base / name, base, "the project folder", False) for name in PROJECT_FILES]
    for given in (p.expanduser() for p in extra):
        if confined.inside(given, base):
            wanted.append((given, base, "the project folder", True))
        else:
            wanted.append((given, Path(os.path.realpath(given)).parent, f"the folder of {label(given)}", True))
    found: list[Source] = []
    errors: list[dict[str, str]] = []
    seen: set[str] = set()
    refused: set[tuple[str, str]] = set()

    def skip(path: Path, root: Path, why: str) -> None:  # each path once, as the file that names it wrote it
        if (label(path), str(root)) not in refused:
            refused.add((label(path), str(root)))
            errors.append({"path": label(path), "error": why})

    def visit(path: Path, root: Path, where: str, depth: int, required: bool) -> None:
        if not os.path.lexists(path):
            if required or depth:
                skip(path, root, "no such file" if required else "imported, but no such file")
            return
        if os.path.realpath(path) in seen:
            return
        # A file named in `wanted` is in its folder by its name: only a symlink (of it, or of a folder on the
        # way) can lead it out. The user's own CLAUDE.md may be a link to a dotfiles checkout: --from reads that.
        leaving = f"{'an import' if depth else 'a symlink'} that leads out of {where}: not read"
        if not depth and not required and root != base:
            leaving += f" (to read it, name it with --from {label(Path(os.path.realpath(path)))})"
        try:
            text = _decode(confined.read(path, root, MAX_FILE_BYTES, leaving=leaving, code="unreadable"))
        except MemvaultError as exc:
            skip(path, root, exc.args[0])
            return
        seen.add(os.path.realpath(path))
        found.append(Source(path, label(path), text))
        if depth < IMPORT_DEPTH:
            for ref in seed_split.imports(text):
                target = Path(ref).expanduser() if ref.startswith("~") else path.parent / ref
                if not target.name.lower().startswith("readme"):  # an overview, not rules
                    visit(target, root, where, depth + 1, False)

    for path, root, where, required in wanted:
        visit(path, root, where, 0, required)
    return found, errors


def _decode(data: bytes) -> str:
    if b"\x00" in data[:8192]:
        raise MemvaultError("looks binary, not markdown: not read", code="unreadable")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise MemvaultError(f"not UTF-8 text (byte {exc.start}): not read", code="unreadable") from None


label = paths.shown  # a file as entries name it: `~/…`, so no user name is written


# ---- seeding ---------------------------------------------------------------------------------------


def seed(
    vault: Vault,
    *,
    project: Path | None = None,
    extra: Sequence[Path] = (),
    only: bool = False,
    accept: bool = False,
    protect: bool = True,
    group: str | None = None,
    dry_run: bool = False,
    claude: Path | None = None,
    distill: Distiller = by_structure,
) -> Report:
    """Seed the vault from the instruction files; see the module docstring."""
    report = Report(dry_run=dry_run, accepted=accept)
    files, report.errors = sources(project, extra, only=only, claude=claude)
    report.sources = [f.label for f in files]
    group_s = model.slug(group or vault.config.vault.default_group, "group")
    known = _seeded(vault)
    ledger_file = vault.state_dir / LEDGER
    ledger = read_json(ledger_file)
    ledger = ledger if isinstance(ledger, dict) else {}
    candidates = [c for f in files for c in distill(f)]
    report.candidates = len(candidates)
    keys = {c.key for c in candidates}
    # What each file produced before and no longer says: the entries an edited rule may replace
    # (unless a proposal to replace them already waits in review).
    proposed = {str(meta.get("proposes_supersede")) for _, meta, _ in known.values()}
    vanished = {
        rel: (meta, words) for rel, meta, words in known.values()
        if meta.get("seed_source") in report.sources and meta.get("seed_key") not in keys
        and str(meta.get("status") or "active") == "active" and "/_archive/" not in rel and rel not in proposed
    }  # fmt: skip
    planned: list[tuple[str, str, Record, str]] = []  # (path, text, log line, seed key)
    taken: set[str] = set()
    done_keys: set[str] = set()
    for c in candidates:
        if c.key in known:
            report.unchanged.append(known[c.key][0])
            continue
        if c.key in done_keys:
            report.skipped.append({"title": c.title, "reason": "the same rule is in another file: seeded once"})
            continue
        if c.key in ledger:
            report.skipped.append({"title": c.title, "reason": f"seeded before as {ledger[c.key]} and removed "
                                   "from the vault since: not seeded again"})  # fmt: skip
            continue
        text = privacy.strip_private(c.text).strip()
        if secrets.scan(text):
            report.skipped.append({"title": c.title, "reason": "looks like it holds a secret: not seeded"})
            continue
        done_keys.add(c.key)
        old = _edited(c, vanished)
        body = _body(c, text)
        danger = risk.assess(body)  # a standing instruction no person has read: never straight into the core
        folder = ALWAYS_LOAD if accept and old is None and danger is None else REVIEW
        rel = disk.free_note(vault.root, f"{vault.folder}/{group_s}/{folder}", capture_slug(c.title), taken)
        taken.add(rel)
        meta = _meta(c, group_s, folder, protect)
        if danger:
            meta["warning"] = danger  # shown by `memvault review`
            report.warnings.append(f"{rel}: {danger}: held for review" + (" although --accept was given" * accept))
        where = CONTEXT_SEP.join((c.source, *c.context))
        if old is not None:
            vanished.pop(old)
            meta["proposes_supersede"] = old
            protected = vault.protected(old)
            if protected:
                meta["supersede_note"] = protected_note(old)
            report.proposals.append({"path": rel, "title": c.title, "replaces": old, "protected": protected})
            log = Record(changelog.PROPOSED, rel, f"would replace {changelog.wikilink(old)}: edited in {where}")
        else:
            route = "saved" if folder == ALWAYS_LOAD else "review"
            report.created.append({"path": rel, "title": c.title, "kind": c.kind, "context": list(c.context),
                                   "source": c.source, "route": route, "warning": danger})  # fmt: skip
            action = changelog.SAVED if folder == ALWAYS_LOAD else changelog.REVIEW
            log = Record(action, rel, f"seeded from {where}", confidence="high")
        planned.append((rel, notes.dump(notes.new_note(model.ordered(meta), body)), log, c.key))
    report.gone = [{"path": rel, "source": str(m.get("seed_source")), "context": str(m.get("seed_context") or "")}
                   for rel, (m, _) in vanished.items()]  # fmt: skip
    if planned and not dry_run:
        _write(vault, planned, report)
        ledger.update({key: rel for rel, _, _, key in planned})
        write_json(ledger_file, ledger)
    _warn_always_load(vault, report)
    return report


def _write(vault: Vault, planned: list[tuple[str, str, Record, str]], report: Report) -> None:
    warnings: list[str] = []

    def plan() -> list[journal.FileOp]:
        ops = []
        for rel, text, _, _ in planned:
            op, warning = vault.changes.new_file(rel, text)
            ops.append(op)
            if warning:
                warnings.append(f"{rel}: {warning}")
        return ops

    result = vault.transact(
        "seed", planned[0][0], plan, reason=f"{len(planned)} rules from instruction files", log=[p[2] for p in planned]
    )
    report.commit = result.commit
    report.warnings += warnings + ([result.warning] if result.warning else [])


def _edited(c: Candidate, vanished: dict[str, tuple[dict[str, Any], str]]) -> str | None:
    """The entry this candidate's rule replaces: seeded from the same file and heading, no longer there, alike.

    Captures still waiting in `_review/` are not replaced: they are reported as gone from the file.
    """
    context = CONTEXT_SEP.join(c.context)
    words = seed_split.plain(c.text).lower()
    best, score = None, EDIT_SIMILARITY
    for rel, (meta, was) in vanished.items():
        if meta.get("seed_source") != c.source or str(meta.get("seed_context") or "") != context:
            continue
        if f"/{REVIEW}/" in rel or "/_inbox/" in rel:
            continue
        ratio = difflib.SequenceMatcher(None, words, was).ratio()
        if ratio >= score:
            best, score = rel, ratio
    return best


def _meta(c: Candidate, group: str, folder: str, protect: bool) -> dict[str, Any]:
    stamp = notes.now()
    meta: dict[str, Any] = {
        "kind": c.kind, "status": "active", "created": stamp, "updated": stamp, "tags": ["seed"], "group": group,
        "confidence": "high", "source": SOURCE, "protected": protect, "route": "saved" if folder == ALWAYS_LOAD
        else "review", "seed_key": c.key, "seed_source": c.source, "seed_context": CONTEXT_SEP.join(c.context),
        "seed_line": c.line,
    }  # fmt: skip
    if folder == ALWAYS_LOAD:
        meta["always_load"] = True
    else:
        meta["approve_to"] = ALWAYS_LOAD
    return meta


def _body(c: Candidate, text: str) -> str:
    context = f"\n\nContext: {CONTEXT_SEP.join(c.context)}" if c.context else ""
    return f"# {c.title}\n\n{text}{context}\n"


def _seeded(vault: Vault) -> dict[str, tuple[str, dict[str, Any], str]]:
    """seed_key → (path, frontmatter, the rule's words) of every seeded note under MemoryVault/, archived included."""
    found: dict[str, tuple[str, dict[str, Any], str]] = {}
    for rel, note in vault.keyed("seed_key"):
        key = note.meta["seed_key"]
        if isinstance(key, str) and (key not in found or "/_archive/" in found[key][0]):
            found[key] = (rel, dict(note.meta), _words(note.body))
    return found


def _words(body: str) -> str:
    """The rule of a seeded entry's body, as `seed_split.plain` words: without its title and context lines."""
    lines = [ln for ln in body.strip().splitlines() if not ln.startswith("# ") and not ln.startswith("Context: ")]
    return seed_split.plain("\n".join(lines)).lower()


def _warn_always_load(vault: Vault, report: Report) -> None:
    limit = vault.config.recall.always_load_max
    count = sum(1 for _ in vault.memory_dir.glob(f"*/{ALWAYS_LOAD}/*.md")) + (
        sum(1 for c in report.created if c["route"] == "saved") if report.dry_run else 0
    )
    if count > limit:
        report.warnings.append(
            f"{count} entries in _always-load/ folders: only {limit} are loaded at session start "
            "(recall.always_load_max); keep the core short, or raise the limit"
        )
