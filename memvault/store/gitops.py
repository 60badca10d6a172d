"""Git history for vaults that are repositories: one commit per mutation, undo by `git revert`.

Commits name only the paths memvault touched, so the user's own staged or unstaged work is
never swept into them. Undo never resets: it adds a revert commit.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from memvault import fault
from memvault.errors import GitError

TRAILER_OP = "Memvault-Op"
TRAILER_REVERTS = "Memvault-Reverts"


@dataclass(frozen=True)
class MemvaultCommit:
    sha: str
    subject: str
    op: str


def repo_root(path: Path) -> Path | None:
    """The top of the git work tree holding `path`, or None (no repo, or no git installed)."""
    if shutil.which("git") is None:
        return None
    try:
        out = _git(path, "rev-parse", "--show-toplevel")
    except GitError:
        return None
    return Path(out.strip()) if out.strip() else None


def commit(root: Path, paths: list[str], message: str) -> str | None:
    """Commit exactly `paths` (vault-relative) with `message`; None when nothing changed."""
    indexed = set(_git(root, "ls-files", "-z", "--", *paths).split("\0"))
    committed = set()
    if _quiet(root, "rev-parse", "--verify", "-q", "HEAD"):  # a deletion staged before a crash is in HEAD only
        committed = set(_git(root, "ls-tree", "-r", "-z", "--name-only", "HEAD", "--", *paths).split("\0"))
    paths = [p for p in paths if p in indexed or p in committed or os.path.lexists(root / p)]  # else: never committed
    known = indexed | committed
    ignored = _ignored(root, [p for p in paths if p not in known])  # e.g. a .gitignore'd `_meta/` change log
    paths = [p for p in paths if p not in ignored]
    to_add = [p for p in paths if p in indexed or os.path.lexists(root / p)]
    if not paths:
        return None
    if to_add:
        _git(root, "add", "-A", "--", *to_add)
    staged = _git(root, "diff", "--cached", "--name-only", "--no-renames", "--relative", "--", *paths).split("\n")
    changed = [p for p in staged if p]
    if not changed:
        return None
    _git(root, "commit", "--quiet", "--no-verify", "-m", message, "--", *changed)
    return _git(root, "rev-parse", "HEAD").strip()


def last_undoable(root: Path, depth: int = 500) -> MemvaultCommit | None:
    """The newest memvault commit (not itself an undo) that no later undo has reverted."""
    log = _git(root, "log", f"-n{depth}", "--format=%H%x00%B%x1e")
    reverted: set[str] = set()
    for record in log.split("\x1e"):
        if not record.strip():
            continue
        sha, _, body = record.strip().partition("\x00")
        trailers = _trailers(body)
        if TRAILER_REVERTS in trailers:
            reverted.add(trailers[TRAILER_REVERTS])
        elif TRAILER_OP in trailers and sha not in reverted:
            return MemvaultCommit(sha, body.strip().splitlines()[0], trailers[TRAILER_OP])
    return None


def revert(root: Path, target: MemvaultCommit) -> str:
    """Revert one commit as a new commit; on conflict, abort and leave the tree as it was.

    A crash between the two steps leaves the revert staged (and REVERT_HEAD); the caller journals
    the undo (`vault.changes`) and the next run calls `rollback_revert` and `revert` again.
    """
    if _git(root, "diff", "--cached", "--name-only").strip():
        raise GitError("undo needs an empty git staging area; commit or unstage your staged changes first")
    try:
        _git(root, "revert", "--no-commit", target.sha)
    except GitError as exc:
        subprocess.run(["git", "revert", "--abort"], cwd=root, capture_output=True, check=False)
        why = f"cannot undo {target.sha[:8]}: the notes changed since ({exc.args[0]})"
        raise GitError(why, code="conflict") from None
    fault.checkpoint("revert staged")
    subject = f"memvault: undo {target.subject.removeprefix('memvault: ')}"
    message = f"{subject}\n\n{TRAILER_OP}: undo\n{TRAILER_REVERTS}: {target.sha}\n"
    _git(root, "commit", "--quiet", "--no-verify", "-m", message)
    fault.checkpoint("revert committed")
    return _git(root, "rev-parse", "HEAD").strip()


def head(root: Path) -> str:
    return _git(root, "rev-parse", "HEAD").strip()


def commit_of(root: Path, sha: str) -> MemvaultCommit | None:
    """The memvault commit `sha` (None when it is not one, or does not exist)."""
    try:
        body = _git(root, "log", "-n1", "--format=%B", sha)
    except GitError:
        return None
    trailers = _trailers(body)
    return MemvaultCommit(sha, body.strip().splitlines()[0], trailers[TRAILER_OP]) if TRAILER_OP in trailers else None


def reverts(root: Path, sha: str) -> str | None:
    """The commit `sha` reverts (its Memvault-Reverts trailer), if any."""
    try:
        return _trailers(_git(root, "log", "-n1", "--format=%B", sha)).get(TRAILER_REVERTS)
    except GitError:
        return None


def rollback_revert(root: Path, target: str) -> bool:
    """Take back a `git revert --no-commit target` that was never committed; False when the files were edited since.

    Every path of `target` must still be as HEAD has it or as the staged revert has it; then each is
    restored from HEAD in the index and the work tree (a file HEAD does not have is removed) and
    REVERT_HEAD is cleared. The user's other files and staged work are not touched.
    """
    paths = changed_paths(root, target)
    for path in paths:
        worktree_is_staged = _quiet(root, "diff", "--quiet", "--", path)
        worktree_is_head = _quiet(root, "diff", "--quiet", "HEAD", "--", path)
        if not (worktree_is_staged or worktree_is_head):
            return False
    in_head = set(_git(root, "ls-tree", "-r", "--name-only", "HEAD", "--", *paths).splitlines()) if paths else set()
    if in_head:
        _git(root, "restore", "--source=HEAD", "--staged", "--worktree", "--", *sorted(in_head))
    for path in paths:
        if path not in in_head:
            _git(root, "rm", "--cached", "--quiet", "--ignore-unmatch", "--", path)
            (root / path).unlink(missing_ok=True)
    subprocess.run(["git", "revert", "--quit"], cwd=root, capture_output=True, check=False)
    return True


def unfinished(root: Path) -> list[tuple[str, str]]:
    """Half-finished git operations in the repository: (what, what to do about it)."""
    try:
        git_dir = Path(_git(root, "rev-parse", "--absolute-git-dir").strip())
    except GitError:
        return []
    found = []
    checks = (
        (
            "REVERT_HEAD",
            "a revert was interrupted",
            "an undo memvault started is finished by the next memvault command; otherwise `git revert --abort`",
        ),
        ("MERGE_HEAD", "a merge is in progress", "finish it with `git commit`, or `git merge --abort`"),
        ("CHERRY_PICK_HEAD", "a cherry-pick is in progress", "`git cherry-pick --continue` or `--abort`"),
        ("rebase-merge", "a rebase is in progress", "`git rebase --continue` or `--abort`"),
        ("rebase-apply", "a rebase or am is in progress", "`git rebase --continue` or `--abort`"),
    )
    for name, what, hint in checks:
        if (git_dir / name).exists():
            found.append((what, hint))
    lock = git_dir / "index.lock"
    with contextlib.suppress(OSError):
        if time.time() - lock.stat().st_mtime > STALE_LOCK_S:
            found.append(("a git process died holding index.lock", f"if no git command is running, delete {lock}"))
    return found


STALE_LOCK_S = 600


def _quiet(root: Path, *args: str) -> bool:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, check=False).returncode == 0


def changed_paths(root: Path, sha: str) -> list[str]:
    out = _git(root, "show", "--name-only", "--no-renames", "--relative", "--format=", sha)
    return [line for line in out.splitlines() if line]


def _ignored(root: Path, paths: list[str]) -> set[str]:
    """Which of these untracked paths the repository ignores (`git add` would refuse them)."""
    if not paths:
        return set()
    proc = subprocess.run(
        ["git", "check-ignore", "-z", "--stdin"], input="\0".join(paths) + "\0", cwd=root,
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return {p for p in proc.stdout.split("\0") if p} if proc.returncode == 0 else set()


def _trailers(body: str) -> dict[str, str]:
    found = {}
    for line in body.splitlines():
        key, sep, value = line.partition(": ")
        if sep and key in (TRAILER_OP, TRAILER_REVERTS):
            found[key] = value.strip()
    return found


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, **_fallback_identity(str(cwd))}
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        lines = [ln.strip() for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip()]
        cause = next((ln for ln in lines if ln.startswith(("error:", "fatal:"))), lines[0] if lines else "no output")
        raise GitError(f"git {args[0]} failed: {cause}")
    return proc.stdout


@functools.lru_cache(maxsize=16)
def _fallback_identity(cwd: str) -> dict[str, str]:
    """Commits must work in a repo with no identity configured; a configured one is never overridden."""
    env: dict[str, str] = {}
    for key, value in (("name", "memvault"), ("email", "memvault@localhost")):
        probe = subprocess.run(["git", "config", f"user.{key}"], cwd=cwd, capture_output=True, text=True, check=False)
        if not probe.stdout.strip():
            env[f"GIT_AUTHOR_{key.upper()}"] = env[f"GIT_COMMITTER_{key.upper()}"] = value
    return env
