"""Git history for vaults that are repositories: one commit per mutation, undo by `git revert`.

Commits name only the paths memvault touched, so the user's own staged or unstaged work is
never swept into them. Undo never resets: it adds a revert commit.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

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
    tracked = set(_git(root, "ls-files", "-z", "--", *paths).split("\0"))
    paths = [p for p in paths if p in tracked or os.path.lexists(root / p)]  # not a file never committed, now gone
    ignored = _ignored(root, [p for p in paths if p not in tracked])  # e.g. a .gitignore'd `_meta/` change log
    paths = [p for p in paths if p not in ignored]
    if not paths:
        return None
    _git(root, "add", "-A", "--", *paths)
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
    """Revert one commit as a new commit; on conflict, abort and leave the tree as it was."""
    if _git(root, "diff", "--cached", "--name-only").strip():
        raise GitError("undo needs an empty git staging area; commit or unstage your staged changes first")
    try:
        _git(root, "revert", "--no-commit", target.sha)
    except GitError as exc:
        subprocess.run(["git", "revert", "--abort"], cwd=root, capture_output=True, check=False)
        why = f"cannot undo {target.sha[:8]}: the notes changed since ({exc.args[0]})"
        raise GitError(why, code="conflict") from None
    subject = f"memvault: undo {target.subject.removeprefix('memvault: ')}"
    message = f"{subject}\n\n{TRAILER_OP}: undo\n{TRAILER_REVERTS}: {target.sha}\n"
    _git(root, "commit", "--quiet", "--no-verify", "-m", message)
    return _git(root, "rev-parse", "HEAD").strip()


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
