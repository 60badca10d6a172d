"""How one change reaches the vault: lock, replay interrupted changes, journal, atomic writes, commit, refresh.

`Changes` is the write machinery behind every `Vault` mutation; the `Vault` decides *what* to
write, this module makes it durable and crash-safe.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from memvault import config as config_mod
from memvault import fault, paths
from memvault.errors import GitError, SafetyError, VaultNotFound
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
        self.waived = False  # set by Vault.protection_waived() for an explicit, confirmed command

    @contextmanager
    def mutation(self) -> Iterator[None]:
        """Hold the vault lock, with every interrupted change finished first."""
        if not self.root.is_dir():
            raise VaultNotFound(f"vault folder {self.root} is gone")
        with disk.vault_lock(self.lock_file(), self.config.vault.lock_timeout_s):
            self.replay()
            yield

    def recover(self) -> list[str]:
        """Finish (or set aside) mutations a crash interrupted; returns what was replayed."""
        if not journal.pending(self.journal_dir):
            return []
        with disk.vault_lock(self.lock_file(), self.config.vault.lock_timeout_s):
            return self.replay()

    def lock_file(self) -> Path:
        paths.ensure_private_dir(self.journal_dir)
        return self.state_dir / "vault.lock"

    def replay(self) -> list[str]:
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
        disk.sweep_temp_files(self.journal_dir)
        return done

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
        record = journal.write(self.journal_dir, intent)
        journal.apply(self.root, intent)
        sha, git_warning = self.git_commit(intent)
        record.unlink()
        index_warning = indexing.refresh(self.root, self.config, intent.paths)
        warning = "; ".join(w for w in (warning, git_warning, index_warning) if w) or None
        return WriteResult(intent.op, rel, tuple(intent.paths), commit=sha, archived=archived, warning=warning)

    def git_commit(self, intent: journal.Intent) -> tuple[str | None, str | None]:
        repo = self.git_repo()
        if repo is None:
            return None, None
        repo_paths = [os.path.relpath(self.root / p, repo) for p in intent.paths]
        try:
            sha = gitops.commit(repo, repo_paths, intent.message)
        except GitError as exc:
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
            target = gitops.last_undoable(repo)
            if target is None:
                raise GitError("nothing to undo: no memvault commit in this repository's recent history")
            sha = gitops.revert(repo, target)
            touched = tuple(
                os.path.relpath(repo / p, self.root).replace(os.sep, "/") for p in gitops.changed_paths(repo, sha)
            )
            warning = indexing.refresh(self.root, self.config, touched)
            return WriteResult("undo", touched[0] if touched else "", touched, commit=sha, warning=warning)
