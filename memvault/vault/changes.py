"""How one change reaches the vault: lock, replay interrupted changes, journal, atomic writes, commit, refresh.

`Changes` is the write machinery behind every `Vault` mutation; the `Vault` decides *what* to
write, this module makes it durable and crash-safe.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

from memvault import config as config_mod
from memvault import errors, fault, paths
from memvault.errors import GitError, MemvaultError, NotWritable, SafetyError, VaultNotFound
from memvault.store import disk, gitops, journal, safety
from memvault.store.model import WriteResult

from . import changelog, indexing, protection


class Changes:
    """The lock, the intent journal and the commit of one vault."""

    def __init__(self, root: Path, config: config_mod.Config, folder: str) -> None:
        self.root = root
        self.config = config
        self.folder = folder
        self.state_dir = paths.vault_state_dir(root)
        self.journal_dir = self.state_dir / "journal"
        self.uncommitted_dir = self.state_dir / "uncommitted"  # changes written while git could not commit
        self.waived = False  # set by Vault.protection_waived() for an explicit, confirmed command
        self.unfinished: str | None = None  # why `recover` could not finish an interrupted change, for the user

    @contextmanager
    def mutation(self) -> Iterator[None]:
        """Hold the vault lock, with every interrupted change finished first.

        A folder that cannot be written (read-only, full, no permission) is one `NotWritable` line here,
        before anything of the new change is written.
        """
        if not self.root.is_dir():
            raise VaultNotFound(f"vault folder {self.root} is gone")
        with self._locked():
            try:
                self.replay()
            except OSError as exc:
                raise self.not_writable(exc, waiting=True) from None
            yield

    def recover(self) -> list[str]:
        """Finish (or set aside) mutations a crash interrupted; returns what was replayed.

        For every command, readers included, so it never raises for a folder that cannot be written:
        the change stays in the journal (finished by the next command that can write) and
        `unfinished` says why, for the caller to show.
        """
        if not self._interrupted():
            return []
        try:
            with self._locked():
                return self.replay()
        except (OSError, NotWritable, GitError) as exc:
            if isinstance(exc, GitError):
                why = exc.args[0]
            else:
                why = (exc if isinstance(exc, NotWritable) else self.not_writable(exc)).reason
            self.unfinished = f"an interrupted change could not be finished ({why}); the next write will finish it"
            return []

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """The vault lock; a state folder where the lock cannot be made is a `NotWritable` error."""
        with ExitStack() as stack:
            try:
                stack.enter_context(disk.vault_lock(self.lock_file(), self.config.vault.lock_timeout_s))
            except OSError as exc:
                raise self.not_writable(exc) from None
            yield

    def not_writable(self, exc: OSError, *, kept: bool = False, waiting: bool = False) -> NotWritable:
        """The one-line error for a write the filesystem refused, naming the vault or the state folder."""
        name = os.fspath(exc.filename) if isinstance(exc.filename, (str, os.PathLike)) else ""
        state = bool(name) and disk.is_inside(os.path.realpath(name), os.path.realpath(self.state_dir))
        where, folder = ("memvault's state folder", self.state_dir) if state else ("the vault", self.root)
        error = errors.not_writable(exc, where, folder, kept=kept)
        if waiting:  # the replay of an earlier, interrupted change failed: it stays in the journal
            error.args = (f"{error.args[0]}; an interrupted earlier change waits to be finished",)
        return error

    def lock_file(self) -> Path:
        paths.ensure_private_dir(self.journal_dir)
        return self.state_dir / "vault.lock"

    def replay(self) -> list[str]:
        self._let_orphans_finish()
        done = []
        for path in journal.pending(self.journal_dir):
            try:
                intent = journal.read(path)
            except (OSError, ValueError, KeyError, TypeError):
                journal.set_aside(path)
                continue
            if not journal.replayable(self.root, intent):
                journal.set_aside(path)
                continue
            journal.apply(self.root, intent)
            for folder in {(self.root / p).parent for p in intent.paths}:
                disk.sweep_temp_files(folder)
            self.git_commit(intent)
            path.unlink()
            indexing.refresh(self.root, self.config, intent.paths)
            done.append(intent.id)
        for path in journal.pending_undos(self.journal_dir):
            done += self._finish_undo(path)
        disk.sweep_temp_files(self.journal_dir)
        return done + self._catch_up()

    def _interrupted(self) -> bool:
        """Whether a crash left a change to finish: a journal record, an undo record, or a change not committed."""
        return bool(journal.pending(self.journal_dir) or journal.pending_undos(self.journal_dir) or self.uncommitted())

    def _let_orphans_finish(self) -> None:
        """Before a crash's leftovers are finished: the gits a killed memvault process started must have ended."""
        if not self._interrupted():
            return
        repo = gitops.repo_root(self.root)
        left = gitops.wait_for_orphans(repo) if repo is not None else []
        if left:
            pids = ", ".join(map(str, left))
            raise GitError(
                f"git is still at work in {repo} for a memvault command that was killed (processes {pids}); "
                "the change it interrupted is finished by the next command once they end"
            )

    # ---- changes written while git could not commit (a lock file in the way) ------------------------

    def uncommitted(self) -> list[Path]:
        """The records of changes written but not committed, oldest first."""
        return sorted(self.uncommitted_dir.glob("*.json")) if self.uncommitted_dir.is_dir() else []

    def _catch_up(self) -> list[str]:
        """Commit the changes a lock file kept out of the history, each with its own message, in order."""
        records = self.uncommitted()
        repo = self.git_repo() if records else None
        done = []
        for record in records:
            try:
                data = json.loads(record.read_text(encoding="utf-8"))
                message, rels = str(data["message"]), [str(p) for p in data["paths"]]
            except (OSError, ValueError, KeyError, TypeError):
                record.unlink(missing_ok=True)
                continue
            if repo is not None:
                try:
                    self._commit_paths(repo, rels, message)
                except GitError:
                    break  # still in the way: the next command tries again
            record.unlink()
            done.append(f"commit {record.stem}")
        return done

    def _commit_paths(self, repo: Path, rels: Sequence[str], message: str) -> str | None:
        """`gitops.commit`; when git fails, lock files no running git holds are removed and it is tried once more."""
        repo_paths = [os.path.relpath(self.root / p, repo) for p in rels]
        try:
            return gitops.commit(repo, repo_paths, message)
        except GitError as exc:
            removed, left = gitops.clear_stale_locks(repo)
            if left:
                raise GitError(f"{exc.args[0]}; " + "; ".join(lock.advice(repo) for lock in left)) from None
            if not removed:
                raise
        return gitops.commit(repo, repo_paths, message)

    def _finish_undo(self, record: Path) -> list[str]:
        """An undo a crash interrupted: if its revert was never committed, take it back and do it again."""
        repo = gitops.repo_root(self.root)
        try:
            data = json.loads(record.read_text(encoding="utf-8"))
            target, head = str(data["target"]), str(data["head"])
        except (OSError, ValueError, KeyError, TypeError):
            journal.set_aside(record)
            return []
        if repo is None:
            journal.set_aside(record)
            return []
        now = gitops.head(repo)
        if now != head:  # committed (or the history moved on by hand): nothing left to finish but its log line
            reverted = gitops.commit_of(repo, target) if gitops.reverts(repo, now) == target else None
            if reverted is not None:
                gitops.quit_revert(repo)
                self._log_undone(repo, reverted, now)
            record.unlink()
            return []
        if not gitops.rollback_revert(repo, target, keep=self._log_pages(repo, target)):  # edited since: the user's
            journal.set_aside(record)
            return []
        commit = gitops.commit_of(repo, target)
        if commit is not None:
            try:
                sha = gitops.revert(repo, commit, keep=self._log_pages(repo, commit.sha))
            except GitError:
                journal.set_aside(record)
                return []
            indexing.refresh(self.root, self.config, self._touched(repo, sha))
            self._log_undone(repo, commit, sha)
        record.unlink()
        return [f"undo {target[:8]}"]

    def commit(
        self,
        intent: journal.Intent,
        rel: str,
        archived: str | None = None,
        warning: str | None = None,
        log: Sequence[changelog.Record] = (),
    ) -> WriteResult:
        """Journal, apply and commit `intent` (under `mutation()`), then refresh the index.

        A change touching a protected entry is refused unless waived; `log` lines are appended to the
        change log in the same intent, so the change and its line land together or not at all.
        """
        if not self.waived:
            protection.check(self.root, self.folder, self.config.vault.protected_folders, intent)
        if self.config.memory.transparency != "silent":
            page = changelog.log_op(self.root, self.folder, log, rel)
            intent = dataclasses.replace(intent, ops=(*intent.ops, page)) if page else intent
        try:
            record = journal.write(self.journal_dir, intent)
        except OSError as exc:
            raise self.not_writable(exc) from None
        try:
            journal.apply(self.root, intent, check=True)  # each file compared with its digest right before its rename
        except journal.HalfWritten as exc:  # neither done nor undone: the record stays, a replay finishes it
            raise self.not_writable(exc.error, kept=True) from None
        except (MemvaultError, OSError) as exc:
            record.unlink()  # nothing of it stays: the files it had written are back as they were
            if isinstance(exc, OSError):
                raise self.not_writable(exc) from None
            raise
        sha, git_warning = self.git_commit(intent)
        record.unlink()
        index_warning = indexing.refresh(self.root, self.config, intent.paths)
        warning = "; ".join(w for w in (warning, git_warning, index_warning) if w) or None
        return WriteResult(intent.op, rel, tuple(intent.paths), commit=sha, archived=archived, warning=warning)

    def git_commit(self, intent: journal.Intent) -> tuple[str | None, str | None]:
        """Commit the intent's paths; when git cannot, the change is recorded to be committed by a later command."""
        repo = self.git_repo()
        if repo is None:
            return None, None
        try:
            sha = self._commit_paths(repo, intent.paths, intent.message)
        except GitError as exc:
            paths.ensure_private_dir(self.uncommitted_dir)
            data = json.dumps({"message": intent.message, "paths": intent.paths}).encode("utf-8")
            disk.atomic_write(self.uncommitted_dir / f"{intent.id}.json", data, private=True)
            return None, f"written, but not committed: {exc.args[0]}"
        fault.checkpoint("committed")
        return sha, None

    def git_repo(self) -> Path | None:
        return gitops.repo_root(self.root) if self.config.git.commit == "auto" else None

    def intent(self, op: str, target: str, ops: list[journal.FileOp], reason: str = "") -> journal.Intent:
        """The intent record of one change, its commit message carrying the trailers `undo` looks for."""
        subject = self.config.git.message.format(
            op=op, target=target.removeprefix(self.folder + "/").removesuffix(".md"), reason=reason
        )
        lines = [subject, "", f"{gitops.TRAILER_OP}: {op}"]
        lines += [f"Memvault-Path: {o.path}" for o in ops]
        if reason:
            lines.append(f"Memvault-Reason: {' '.join(reason.split())}")
        return journal.Intent(journal.new_id(), op, "\n".join(lines) + "\n", tuple(ops))

    def checked(self, text: str, rel: str) -> tuple[str, str | None]:
        """The text to write after the safety envelope, and a warning when secrets were redacted from it."""
        out = safety.check_content(
            text, max_bytes=self.config.vault.max_note_kb * 1024, secrets_mode=self.config.vault.secrets, where=rel
        )
        return out, ("secrets were redacted before writing (vault.secrets: redact)" if out != text else None)

    def new_file(self, rel: str, text: str) -> tuple[journal.FileOp, str | None]:
        """The operation creating a new note, checked like every write (confined, free, size, secrets), for
        changes that add many notes at once (seed, import); and the warning when secrets were redacted."""
        target, rel = safety.resolve_target(self.root, rel, self.folder)
        if os.path.lexists(target):
            raise SafetyError(f"{rel} already exists", code="conflict", path=rel)
        out, warning = self.checked(text, rel)
        return journal.FileOp(rel, out, journal.ABSENT), warning

    def undo(self) -> WriteResult:
        """Revert the last memvault commit with `git revert` (never a reset), as one more change."""
        repo = self.git_repo()
        if repo is None:
            raise GitError(
                "undo needs the vault to be a git repository with git.commit: auto "
                "(superseded entries are kept in _archive/ either way)"
            )
        with self.mutation():
            left = gitops.clear_stale_locks(repo)[1]
            if left or self.uncommitted():  # a running git's lock, or changes the history has not caught up with
                why = "; ".join(lock.advice(repo) for lock in left) or "changes written since are not committed yet"
                raise GitError(f"undo cannot run now: {why}")
            target = gitops.last_undoable(repo)
            if target is None:
                raise GitError("nothing to undo: no memvault commit in this repository's recent history")
            record = journal.write_undo(self.journal_dir, target.sha, gitops.head(repo))
            try:
                sha = gitops.revert(repo, target, keep=self._log_pages(repo, target.sha))
            except GitError:
                record.unlink()  # refused or aborted cleanly: nothing to finish
                raise
            touched = self._touched(repo, sha)
            self._log_undone(repo, target, sha)
            record.unlink()
            warning = indexing.refresh(self.root, self.config, touched)
            return WriteResult("undo", touched[0] if touched else "", touched, commit=sha, warning=warning)

    def _log_pages(self, repo: Path, sha: str) -> list[str]:
        """The change-log pages commit `sha` changed (repository-relative): undo keeps them as they are."""
        return [p for p in gitops.changed_paths(repo, sha) if changelog.is_page(self._vault_rel(repo, p), self.folder)]

    def _log_undone(self, repo: Path, target: gitops.MemvaultCommit, sha: str) -> None:
        """Append the line saying which change was undone and when, as a change of the log alone."""
        if self.config.memory.transparency == "silent":
            return
        notes = [p for p in self._touched(repo, sha) if not changelog.is_page(p, self.folder)]
        when = dt.datetime.fromtimestamp(target.when)
        line = changelog.undone(notes[0] if notes else "", target.subject, target.sha, when, len(notes))
        where = f"{self.folder}/{changelog.changelog.FOLDER}/changelog"
        self.commit(self.intent(gitops.LOG_OP, where, []), where, log=[line])

    def _touched(self, repo: Path, sha: str) -> tuple[str, ...]:
        """The vault-relative paths commit `sha` changed."""
        return tuple(self._vault_rel(repo, p) for p in gitops.changed_paths(repo, sha))

    def _vault_rel(self, repo: Path, path: str) -> str:
        return os.path.relpath(repo / path, self.root).replace(os.sep, "/")
