"""One reflection pass over one transcript: mine what is new, route each candidate, write it; the pass's Report.

Just over 400 lines: the pass's steps (read, mine, find the nearest note, route, write) read top to bottom;
how alike two texts are in words is `likeness`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memvault import fault, paths
from memvault.errors import InvalidNote, MemvaultError, SafetyError
from memvault.ideas import incubator
from memvault.index.schema import place
from memvault.recall import search as recall_mod
from memvault.store import changelog, disk, notes, privacy, risk, secrets
from memvault.store.changelog import Record
from memvault.store.model import INCUBATOR
from memvault.vault.core import Vault

from . import likeness, router
from .state import Ledger, TranscriptState

RECALL_BUDGET_MS = 5_000
CONTEXT_TURNS = 8  # turns before the cursor re-read as context, so a fix spanning two passes is seen whole
SLUG_CHARS = 60  # longest file name made from a candidate title
# An idea's related notes (SPEC §8): recall hits this close by meaning, or this strong on keywords (share of the top).
RELATED_COSINE, RELATED_KEYWORD = 0.30, 0.8
IDEA_TEXT_CHARS = 1_000  # how much of an incubator note is compared with a new idea


@dataclass
class Report:
    transcript: str
    session_id: str | None
    miner: str
    miner_reason: str = ""  # why this miner ran (auto found claude, it was missing, a call failed, the daily cap …)
    claude_calls: int = 0
    cost_usd: float | None = None  # what Claude Code reported the miner's calls cost
    turns: int = 0
    candidates: int = 0
    routes: list[dict[str, Any]] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    skipped_lines: dict[str, int] = field(default_factory=dict)
    dry_run: bool = False
    halted: bool = False  # the STOP file was present: nothing (more) was written
    ms: float = 0.0
    busy: bool = False  # another reflection held the lock for reflect.LOCK_WAIT_S: nothing was done
    deferred: bool = False  # the Claude miner would run and this was not the final pass: left for the final one
    quarantined: bool = False  # the transcript failed again and again: left alone (see state.Failures)
    notes: list[str] = field(default_factory=list)  # dropped candidates (secrets), warnings

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class TranscriptPass:
    """Reflect what is new in one transcript into `report` (the caller holds the reflection lock).

    `wait_service`: seconds the first recall of the pass waits for the warm embedding service.
    """

    def __init__(
        self, vault: Vault, path: Path, report: Report, *, final: bool, wait_service: float, settings: Any = None,
        show_prompt: Any = None,
    ) -> None:  # fmt: skip
        self.vault, self.path, self.report, self.final = vault, path, report, final
        self.settings = settings or vault.config.reflection
        self.show_prompt = show_prompt  # given: print what the Claude miner would send instead of mining
        self.wait_service = wait_service
        self.state = TranscriptState.load(vault, path)
        self.ledger = Ledger.load(vault)
        self.thresholds = router.Thresholds.from_settings(vault.config.reflection)
        self.group = vault.config.vault.default_group
        self.synced = False
        self.skipped: list[Record] = []  # duplicates: one change-log write at the end of the pass

    def run(self) -> None:
        """Read and reflect the transcript from the cursor to its end, one bounded read at a time."""
        size = self.path.stat().st_size
        if self.state.offset > size:  # the file was replaced by a shorter one: start over (routed keys stay)
            self.state.reset()
        while self._run_once() and not (self.report.halted or self.report.dry_run):
            pass
        if not self.report.dry_run:
            self._log_skipped()

    def _run_once(self) -> bool:
        """One bounded read (`jsonl.READ_BYTES`) mined and written; True when more is left to read."""
        from . import miner, readers, transcript

        report, state = self.report, self.state
        fault.checkpoint(f"reflecting {self.path.name}")
        read = readers.read(self.path, transcript.Cursor(state.context_offset, state.context_line), tools=True)
        report.session_id = report.session_id or read.session_id or self.path.stem
        for reason, count in read.skipped.items():
            report.skipped_lines[reason] = report.skipped_lines.get(reason, 0) + count
        turns = [dataclasses.replace(t, text=privacy.strip_private(t.text)) for t in read.turns]
        new_turns = [t for t in turns if t.line > state.line and t.role not in transcript.TOOL_ROLES]
        report.turns += len(new_turns)
        if not new_turns:
            self._advance(read.cursor, turns, read.more)
            return read.more
        if self.show_prompt is not None:
            self.show_prompt(miner.windows(turns, self.vault.config.reflection))
            return False
        candidates, ran = miner.run(turns, self.settings, project=read.cwd, host=miner.host_of(self.path))
        report.miner, report.miner_reason = ran.miner, ran.reason
        report.claude_calls += ran.calls
        if ran.cost_usd is not None:
            report.cost_usd = (report.cost_usd or 0.0) + ran.cost_usd
        report.notes += ran.notes
        times = {f"L{t.line}": t.timestamp for t in turns}
        candidates = [_safe_key(c) for c in candidates]
        fresh = _unique(c for c in candidates if c.key not in state.keys)
        report.candidates += len(fresh)
        try:
            for candidate in fresh:
                if paths.stop_file().exists():
                    report.halted = True
                    break
                self._one(candidate, _said_at(candidate.evidence, times))
        except BaseException:
            if not report.dry_run:  # what was written stays known; the cursor stays for the next pass
                state.save()
                self.ledger.save()
            raise
        if report.dry_run:
            return False
        if report.halted:
            state.save()  # the routed keys, not the cursor: the rest is mined again next time
            self.ledger.save()
            return False
        self._advance(read.cursor, turns, read.more)
        self.ledger.save()
        return read.more

    def _advance(self, cursor: Any, turns: Sequence[Any], more: bool = False) -> None:
        if self.report.dry_run:
            return
        spoken = [t for t in turns if t.role in ("user", "assistant")]  # tool turns do not count as context
        context_line = spoken[-CONTEXT_TURNS].line - 1 if len(spoken) >= CONTEXT_TURNS else self.state.context_line
        if more:  # a read cut at READ_BYTES: the next one must start past where this one's new part began
            context_line = max(context_line, self.state.line)
        self.state.advance(self.path, cursor.offset, cursor.line, context_line)
        self.state.save()

    def _one(self, candidate: Any, said_at: dt.datetime | None) -> None:
        report, session = self.report, self.report.session_id or "unknown"
        title, title_secrets = secrets.redact(_clean(candidate.title))
        body, body_secrets = secrets.redact(_clean(candidate.body))
        redacted = bool(title_secrets or body_secrets)
        entry: dict[str, Any] = {
            "title": title, "category": candidate.category, "confidence": candidate.confidence,
            "rule": candidate.rule, "key": candidate.key, "evidence": list(candidate.evidence),
        }  # fmt: skip
        if not title.strip() or not body.strip():
            entry.update(action="dropped", reason="nothing left after removing <private> spans")
            report.routes.append(entry)
            self.state.keys.add(candidate.key)
            return
        if redacted:
            report.notes.append(f"{title}: secrets were redacted before writing")
        seen = self.ledger.seen(candidate.key, session, dry=report.dry_run)
        nearest, related = self._nearest(candidate, title, body)
        if nearest is not None and nearest.key and nearest.key in self.ledger.related(candidate.key):
            nearest = dataclasses.replace(nearest, key=candidate.key)  # the same pattern, said in other words
        danger = risk.assess(f"{title}\n{body}") if candidate.category != "idea" else None
        if danger is None and nearest is not None and nearest.pending and candidate.category != "idea":
            danger = self._standing(nearest.path)  # a promotion moves that note as it is, text and flags
        choice = router.route(
            candidate,
            sessions_seen=seen,
            nearest=nearest,
            review_mode=self.vault.config.memory.review_mode,
            thresholds=self.thresholds,
            captured_at=said_at,
            risk=danger,
        )
        entry.update(action=choice.action, reason=choice.reason, sessions=seen)
        if danger:
            entry["warning"] = danger
            report.notes.append(f"{title}: {danger}; held for review")
        if choice.target:
            entry["target"] = choice.target
        try:
            path = self._apply(choice, candidate, title, body, session, seen, related, danger)
        except (SafetyError, InvalidNote) as exc:  # this candidate only; a busy vault stops the pass
            entry.update(action="dropped", reason=f"refused by the vault ({exc.code}): {exc.args[0]}"[:300])
            report.notes.append(f"{title}: dropped ({exc.code})")
            path = None
        if path:
            entry["path"] = path
            if not report.dry_run:
                report.written.append(path)
                self.ledger.wrote(candidate.key, path)
        report.routes.append(entry)
        if not report.dry_run:
            self.state.keys.add(candidate.key)

    # ---- nearest existing note ---------------------------------------------------------------

    def _nearest(self, candidate: Any, title: str, body: str) -> tuple[router.Nearest | None, list[str]]:
        if candidate.category == "idea":
            related = self._related(title, body)  # first: it is the recall that may wait for the service
            return self._nearest_idea(candidate, title, body), related
        query = f"{title}\n\n{likeness.statement(body)}"
        try:
            result = self._recall(query, 5, include_inbox=True)
        except (MemvaultError, OSError) as exc:
            self.report.notes.append(f"recall failed, no duplicate check for {title!r}: {exc}")
            return None, []
        if not result.hits:
            return None, []
        hit = result.hits[0]
        keyword_only = result.mode == "keyword" or hit.vec_score == 0.0
        text = self._text(hit.path)
        similarity = likeness.term_share(query, text) if keyword_only else hit.vec_score
        nearest = self._describe(hit.path, hit.title, similarity, "keyword" if keyword_only else "cosine")
        duplicate_at, _ = self.thresholds.band(nearest)
        if similarity >= duplicate_at and likeness.changes_its_mind(query, text):  # close in words, not in meaning
            nearest = dataclasses.replace(nearest, similarity=round(duplicate_at - 0.01, 2))
        return nearest, []

    def _nearest_idea(self, candidate: Any, title: str, body: str) -> router.Nearest | None:
        """The closest incubator note: same key or folder name, else by meaning (incubating notes are not recalled)."""
        root = self.vault.memory_dir / self.group / INCUBATOR
        slug, found = capture_slug(title), []
        for index in sorted(root.glob("*/_index.md")) if root.is_dir() else []:
            rel = index.relative_to(self.vault.root).as_posix()
            try:
                nf = self.vault.read(rel)
            except MemvaultError:
                continue
            if nf.note.meta.get("reflect_key") == candidate.key or index.parent.name == slug:
                return self._describe(rel, title, 1.0, "keyword")
            found.append((rel, f"{nf.title}\n\n{nf.note.body[:IDEA_TEXT_CHARS]}"))
        if not found:
            return None
        sims, measure = _similarities(f"{title}\n\n{body}", [text for _, text in found])
        best = max(range(len(found)), key=sims.__getitem__)
        return self._describe(found[best][0], title, sims[best], measure)

    def _related(self, title: str, body: str) -> list[str]:
        """Wikilinks to the existing notes most related to an idea (SPEC §8)."""
        try:
            result = self._recall(f"{title}\n\n{body}", 5, include_inbox=False)
        except (MemvaultError, OSError):
            return []
        close = [
            h
            for h in result.hits
            if (h.vec_score >= RELATED_COSINE or h.kw_score >= RELATED_KEYWORD) and h.path != "Ideas.md"  # the ledger
        ]
        return [f"[[{Path(h.path).stem}]]" for h in close[:3]]

    def _recall(self, query: str, k: int, *, include_inbox: bool) -> recall_mod.Result:
        """The first recall of a pass syncs the index with the notes and waits for the embedding service;
        later ones query the index as it is (reflection's own writes refresh it), so a big vault is
        walked once per pass, not once per candidate.
        """
        if not self.synced:
            self.synced = True
            wait = self.wait_service if self.vault.config.embedding.warm_service else 0.0  # never start it when off
            return self.vault.recall(
                query, k, include_inbox=include_inbox, wait_service=wait, budget_ms=RECALL_BUDGET_MS
            )
        from memvault.recall import client
        from memvault.vault import indexing

        settings = self.vault.config.recall
        options = recall_mod.Options(
            k=k, include_inbox=include_inbox, fusion=settings.fusion, vector_weight=settings.vector_weight,
            keyword_weight=settings.keyword_weight, budget_ms=RECALL_BUDGET_MS,
        )  # fmt: skip
        return recall_mod.recall_file(
            indexing.index_file(self.vault.root, self.vault.config), query, options, client.query_vector
        )

    def _describe(self, rel: str, title: str, similarity: float, measure: str) -> router.Nearest:
        in_memory, _, area = place(rel, self.vault.folder)
        try:
            meta = self.vault.read(rel).note.meta
        except MemvaultError:
            meta = {}
        updated = meta.get("updated") or meta.get("created")
        return router.Nearest(
            path=rel, title=title, similarity=similarity, measure=measure,
            kind=str(meta["kind"]) if meta.get("kind") else None, status=str(meta.get("status") or "active"),
            area=area, in_memory=in_memory, updated=_iso(updated),
            key=str(meta["reflect_key"]) if meta.get("reflect_key") else None,
            protected=in_memory and self.vault.protected(rel, meta),
        )  # fmt: skip

    def _standing(self, rel: str) -> str | None:
        """Why a pending capture must not leave review unread: it asks to be always loaded, or its text is risky."""
        try:
            note = self.vault.read(rel).note
        except MemvaultError:
            return "the capture cannot be read"
        if not note.ok or note.meta.get("always_load") not in (None, False):
            return "asks to be loaded at every session start (always_load)"
        return risk.assess(note.body)

    def _text(self, rel: str) -> str:
        try:
            nf = self.vault.read(rel)
        except MemvaultError:
            return ""
        return f"{nf.title}\n{nf.note.body}"

    # ---- writing -----------------------------------------------------------------------------

    def _apply(
        self,
        choice: router.Route,
        candidate: Any,
        title: str,
        body: str,
        session: str,
        seen: int,
        related: list[str],
        danger: str | None = None,
    ) -> str | None:
        why = {"rule": candidate.rule, "confidence": candidate.confidence, "session": session}
        if choice.action == router.DUPLICATE:
            if not self.report.dry_run:
                detail = f"{title!r} not saved again: {choice.reason}"
                self.skipped.append(Record(changelog.DUPLICATE, choice.target, detail, **why))
            return None
        meta: dict[str, Any] = {
            "route": choice.action if choice.action != router.SUPERSEDE else "review",
            "captured": dt.date.today(),
            "rule": candidate.rule,
            "evidence": list(candidate.evidence),
            "reflect_key": candidate.key,
            "seen_in_sessions": seen,
        }
        if danger:
            meta["warning"] = danger  # shown by `memvault review`
        if choice.action == router.PROMOTE:
            assert choice.target and choice.folder
            folder = choice.folder
            new_rel = disk.free_note(
                self.vault.root, f"{self.vault.folder}/{self.group}/{folder}", Path(choice.target).stem
            )
            if self.report.dry_run:
                return new_rel
            route = "saved" if folder not in (router.REVIEW, router.INBOX) else folder.lstrip("_")
            meta.update(route=route, confidence=candidate.confidence)
            log = [Record(changelog.PROMOTED, detail=choice.reason, **why)]
            return self.vault.move(choice.target, new_rel, meta=meta, op="reflect", log=log).path
        text = body.strip() + "\n" if body.lstrip().startswith("# ") else f"# {title}\n\n{body.strip()}\n"
        detail = choice.reason
        if choice.action == router.SUPERSEDE:
            assert choice.target
            meta["proposes_supersede"] = choice.target
            meta["route"] = "review" if choice.folder == router.REVIEW else "inbox"
            detail = f"would replace {changelog.wikilink(choice.target)}: {choice.reason}"
            if self.vault.protected(choice.target):
                meta["supersede_note"] = protected_note(choice.target)
        if choice.action == router.IDEA:
            log = [Record(changelog.IDEA, detail=detail, **why)]
            return self._idea(candidate, title, text, meta, session, related, log)
        meta["route"] = {router.SAVE: "saved", router.REVIEW_Q: "review", router.INBOX_Q: "inbox"}.get(
            choice.action, meta["route"]
        )
        assert choice.folder
        rel = disk.free_note(self.vault.root, f"{self.vault.folder}/{self.group}/{choice.folder}", capture_slug(title))
        if self.report.dry_run:
            return rel
        action = {router.SAVE: changelog.SAVED, router.INBOX_Q: changelog.INBOX}.get(choice.action, changelog.REVIEW)
        if choice.action == router.SUPERSEDE:
            action = changelog.PROPOSED
        return self.vault.save(
            candidate.category, Path(rel).stem, text, folder=choice.folder, source=session,
            confidence=candidate.confidence, meta=meta, log=[Record(action, detail=detail, **why)],
        ).path  # fmt: skip

    def _log_skipped(self) -> None:
        """One change-log write for the candidates the pass skipped as duplicates (nothing else changed)."""
        if self.skipped:
            try:
                self.vault.record(self.skipped)
            except MemvaultError as exc:  # the log is a record, not the work: the pass still counts
                self.report.notes.append(f"the change log was not written: {exc}")
            self.skipped = []

    def _idea(
        self, candidate: Any, title: str, text: str, meta: dict[str, Any], session: str, related: list[str],
        log: list[Record],
    ) -> str:  # fmt: skip
        slug = self._free_folder(capture_slug(title))
        meta.update(route="idea", status="incubating", surfaced_in_session=session)
        if candidate.idea_kind:
            meta["idea_kind"] = candidate.idea_kind
        if related:
            meta["related"] = related
        if self.report.dry_run:
            return f"{self.vault.folder}/{self.group}/{INCUBATOR}/{slug}/_index.md"
        # Both places in one journalled write: the incubator note and its section in Ideas.md.
        return incubator.capture(
            self.vault, title, text, slug=slug, group=self.group, session=session,
            confidence=candidate.confidence, meta=meta, tags=["idea"], log=log,
        ).path  # fmt: skip

    def _free_folder(self, slug: str) -> str:
        base, name, n = self.vault.memory_dir / self.group / INCUBATOR, slug, 2
        while (base / name).exists():
            name, n = f"{slug}-{n}", n + 1
        return name


def _iso(value: Any) -> str | None:
    if value is None:
        return None
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def _clean(text: str) -> str:
    return privacy.strip_private(text).strip()


def _unique(candidates: Any) -> list[Any]:
    """One candidate per key (the first; later ones add their evidence)."""
    by_key: dict[str, Any] = {}
    for c in candidates:
        if c.key in by_key:
            first = by_key[c.key]
            evidence = tuple(dict.fromkeys([*first.evidence, *c.evidence]))
            by_key[c.key] = dataclasses.replace(first, evidence=evidence)
        else:
            by_key[c.key] = c
    return list(by_key.values())


def _safe_key(candidate: Any) -> Any:
    """A candidate whose text held a secret gets a stable hash of its key instead of the key.

    Keys are stored in reflection state and in the entry's `reflect_key`, so they must be as clean as the text.
    The built-in miners already build keys from redacted text (`mine_text.make_key`); this is the guard for
    a key that slugging may have hidden from the scanner, whatever miner produced it.
    """
    text = f"{candidate.key}\n{candidate.title}\n{candidate.body}"
    if "[REDACTED:" not in text and not secrets.scan(text):
        return candidate
    digest = hashlib.sha256(candidate.key.encode("utf-8")).hexdigest()[:16]
    return dataclasses.replace(candidate, key=f"{candidate.category}:redacted-{digest}")


def protected_note(target: str) -> str:
    """What a supersede proposal of a protected entry says about itself (frontmatter `supersede_note`)."""
    return (
        f"{target} is protected: this proposal is never applied automatically. Supersede it in "
        "`memvault review` (you are asked to confirm), or edit the entry yourself."
    )


def capture_slug(title: str) -> str:
    """A file name from a title, cut at a word boundary to at most SLUG_CHARS."""
    slug = notes.slugify(title) or "capture"
    if len(slug) > SLUG_CHARS:
        slug = slug[:SLUG_CHARS].rsplit("-", 1)[0] or slug[:SLUG_CHARS]
    return slug


def _said_at(evidence: Sequence[str], times: dict[str, str | None]) -> dt.datetime | None:
    """When the candidate was said: the latest timestamp among its evidence turns."""
    found = []
    for ref in evidence:
        stamp = times.get(ref)
        if stamp:
            try:
                found.append(dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")))
            except ValueError:
                continue
    return max(found, default=None)


def _similarities(query: str, texts: list[str]) -> tuple[list[float], str]:
    """Cosine of `query` to each text through the warm service, else the keyword term share."""
    from array import array

    from memvault.recall import client

    reply = client.embed([query, *texts], timeout=5.0)
    if reply is not None:
        vectors = [array("f", blob) for blob in reply.vectors]  # L2-normalised float32
        return [sum(a * b for a, b in zip(vectors[0], v, strict=True)) for v in vectors[1:]], "cosine"
    return [likeness.term_share(query, text) for text in texts], "keyword"
