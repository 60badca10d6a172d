"""Git history for vaults that are repositories: one commit per mutation, undo by `git revert`.

Commits name only the paths memvault touched, so the user's own staged or unstaged work is
never swept into them. Undo never resets: it adds a revert commit, and skips commits of the
change log alone. A lock file (`index.lock`, `HEAD.lock`, a ref's `.lock`) a killed git left
behind is recognised by finding no git process at work in the repository (`locks`), and the gits
a killed memvault started are waited for before its change is finished (`orphans`).

A little over 400 lines: commits, undo's revert and the scan of the git processes at work are kept
together because every commit and every undo consults the scan; the scan alone is about 130 lines.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from memvault import fault
from memvault.errors import GitError

TRAILER_OP = "Memvault-Op"
TRAILER_REVERTS = "Memvault-Reverts"
LOG_OP = "log"  # a commit of change-log lines alone: never what undo takes back


@dataclass(frozen=True)
class MemvaultCommit:
    sha: str
    subject: str
    op: str
    when: float = 0.0  # committer time, seconds since the epoch


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
    """The newest memvault commit (not an undo, nor of the change log alone) that no later undo has reverted."""
    log = _git(root, "log", f"-n{depth}", "--format=%H%x00%ct%x00%B%x1e")
    reverted: set[str] = set()
    for record in log.split("\x1e"):
        if not record.strip():
            continue
        sha, _, rest = record.strip().partition("\x00")
        when, _, body = rest.partition("\x00")
        trailers = _trailers(body)
        if TRAILER_REVERTS in trailers:
            reverted.add(trailers[TRAILER_REVERTS])
        elif trailers.get(TRAILER_OP, LOG_OP) != LOG_OP and sha not in reverted:
            return MemvaultCommit(sha, body.strip().splitlines()[0], trailers[TRAILER_OP], float(when))
    return None


def revert(root: Path, target: MemvaultCommit, keep: Sequence[str] = ()) -> str:
    """Revert one commit as a new commit; on conflict, abort and leave the tree as it was.

    The paths in `keep` (the change log's pages) stay as HEAD has them, even where git's revert
    conflicts in them (lines appended since): the log is append-only, so undo takes back a change's
    notes, never the lines that recorded it. A crash between the two
    steps leaves the revert staged (and REVERT_HEAD); the caller journals the undo
    (`vault.changes`) and the next run calls `rollback_revert` and `revert` again.
    """
    if _git(root, "diff", "--cached", "--name-only").strip():
        raise GitError("undo needs an empty git staging area; commit or unstage your staged changes first")
    try:
        _git(root, "revert", "--no-commit", target.sha)
    except GitError as exc:
        unmerged = set(_git(root, "diff", "--name-only", "--diff-filter=U").splitlines())
        if not unmerged or not unmerged <= set(keep):
            _run(root, "revert", "--abort")
            why = f"cannot undo {target.sha[:8]}: the notes changed since ({exc.args[0]})"
            raise GitError(why, code="conflict") from None
    kept = set(_git(root, "ls-tree", "-r", "--name-only", "HEAD", "--", *keep).splitlines()) if keep else set()
    if kept:
        _git(root, "restore", "--source=HEAD", "--staged", "--worktree", "--", *sorted(kept))
    if not _git(root, "diff", "--cached", "--name-only").strip():
        quit_revert(root)
        raise GitError(f"nothing to undo in {target.sha[:8]}: it changed only the change log")
    fault.checkpoint("revert staged")
    subject = f"memvault: undo {target.subject.removeprefix('memvault: ')}"
    message = f"{subject}\n\n{TRAILER_OP}: undo\n{TRAILER_REVERTS}: {target.sha}\n"
    _git(root, "commit", "--quiet", "--no-verify", "-m", message)
    fault.checkpoint("revert committed")
    return _git(root, "rev-parse", "HEAD").strip()


# ---- lock files a killed git left behind ---------------------------------------------------------

PROC = Path("/proc")  # where Linux shows running processes; elsewhere a lock's age decides
STALE_LOCK_S = 300  # without PROC: a lock older than this is taken as left by a git that died


@dataclass(frozen=True)
class Lock:
    """A git lock file in the repository, and whether the git that made it can still be at work."""

    path: Path
    stale: bool  # no git runs in the repository (without PROC: the lock is old), so it is safe to remove
    why: str
    stamp: tuple[int, int, int] = (0, 0, 0)  # inode, mtime, size when seen: removed only if still the same file

    def advice(self, repo: Path) -> str:
        return (
            f"git's lock file {self.path} is in the way ({self.why}): when no git command is running in {repo}, "
            f"delete it (`rm {self.path}`) and run any memvault command (`memvault health`); the changes written "
            "meanwhile are committed then"
        )


def locks(root: Path) -> list[Lock]:
    """The lock files in the repository of work tree `root`: the index's, HEAD's, packed-refs' and the branches'."""
    try:
        git_dir, common = _git(root, "rev-parse", "--absolute-git-dir", "--git-common-dir").splitlines()[:2]
    except (GitError, ValueError):
        return []
    shared = Path(root, common)
    found = [Path(git_dir, "index.lock"), Path(git_dir, "HEAD.lock"), shared / "packed-refs.lock"]
    with contextlib.suppress(OSError):
        found += sorted((shared / "refs" / "heads").rglob("*.lock"))
    seen = []
    for path in found:
        with contextlib.suppress(OSError):
            st = path.lstat()
            seen.append((path, (st.st_ino, st.st_mtime_ns, st.st_size), st.st_mtime))
    if not seen:
        return []
    holders = _git_processes(root, Path(git_dir))  # looked at after the locks: a live holder is running now
    out = []
    for path, stamp, mtime in seen:
        if holders:
            said = "process" if len(holders) == 1 else "processes"
            out.append(Lock(path, False, f"git is running in the repository: {said} {', '.join(map(str, holders))}"))
        elif holders is None:
            age = max(0.0, time.time() - mtime)
            stale = age > STALE_LOCK_S
            why = (f"which git processes run cannot be seen here, so its age decides: {age / 60:.0f} min old, "
                   f"{'more' if stale else 'less'} than {STALE_LOCK_S // 60} min")  # fmt: skip
            out.append(Lock(path, stale, why, stamp))
        else:
            out.append(Lock(path, True, "left by a git process that no longer runs", stamp))
    return out


def clear_stale_locks(root: Path) -> tuple[list[Path], list[Lock]]:
    """Remove the lock files no running git holds; returns those removed and the locks left in place."""
    removed, left = [], []
    for lock in locks(root):
        if lock.stale:
            with contextlib.suppress(OSError):
                st = lock.path.lstat()
                if (st.st_ino, st.st_mtime_ns, st.st_size) == lock.stamp:  # not a new lock made since
                    lock.path.unlink()
                    removed.append(lock.path)
                    continue
        left.append(lock)
    return removed, [lock for lock in left if lock.path.exists()]


def _git_processes(repo: Path, git_dir: Path) -> list[int] | None:
    """The git processes at work in this repository (by working folder, -C, --git-dir, --work-tree or
    GIT_DIR); None when this system does not show them, or shows one it does not let us look into."""
    if not PROC.is_dir():
        return None
    bases = (Path(os.path.realpath(repo)), Path(os.path.realpath(git_dir)))
    found, hidden = [], False
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            name = (entry / "comm").read_text(encoding="utf-8", errors="replace").strip()
            if name != "git" and not name.startswith("git-"):
                continue
            places = _places(entry)
        except (FileNotFoundError, ProcessLookupError):  # ended, or a zombie: holds nothing
            continue
        except OSError:
            hidden = True
            continue
        if any(_inside(place, base) for place in places for base in bases):
            found.append(int(entry.name))
    return None if hidden and not found else sorted(found)


OWNER_ENV = "MEMVAULT_GIT_OWNER"  # in every git memvault starts: the id of the memvault process that started it
ORPHAN_WAIT_S = 30.0  # how long the next command waits for the gits of a killed one (each takes well under a second)


def orphans(root: Path) -> list[int]:
    """The git processes at work in this repository that a memvault process started and did not outlive.

    SIGKILL (a host's hook timeout, an out-of-memory kill) ends memvault, not the git it started: that git
    still commits, reverts or stages a moment later. The next command must let it finish before it replays
    the journal, or the two race (an undo finished twice, then set aside as a conflict). Empty where the
    system does not show processes (no PROC): there the lock files are what the next command sees.
    """
    try:
        git_dir = Path(_git(root, "rev-parse", "--absolute-git-dir").strip())
    except GitError:
        return []
    return [pid for pid in _git_processes(root, git_dir) or [] if _owner_gone(pid)]


def wait_for_orphans(root: Path, timeout_s: float = ORPHAN_WAIT_S) -> list[int]:
    """Wait until the gits of killed memvault processes in this repository have ended; those still running."""
    deadline = time.monotonic() + timeout_s
    while (left := orphans(root)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return left


def _owner_gone(pid: int) -> bool:
    """Whether git process `pid` was started by a memvault process that is no longer running."""
    try:
        environ = (PROC / str(pid) / "environ").read_bytes().split(b"\0")
    except OSError:
        return False
    mark = OWNER_ENV.encode() + b"="
    owner = next((v[len(mark) :] for v in environ if v.startswith(mark)), b"")
    if not owner.isdigit() or int(owner) == os.getpid():
        return False
    try:
        stat = (PROC / owner.decode() / "stat").read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] == ["Z"]  # killed, not yet reaped by its parent


def _places(entry: Path) -> list[Path]:
    """Where one process works: its folder and the folders its arguments and environment point git at."""
    cwd = Path(os.readlink(entry / "cwd"))
    argv = [a.decode("utf-8", "surrogateescape") for a in (entry / "cmdline").read_bytes().split(b"\0")]
    environ = (entry / "environ").read_bytes().decode("utf-8", "surrogateescape").split("\0")
    here, places = cwd, [cwd]
    args = iter(argv[1:])
    for arg in args:
        if arg == "-C":
            here = here / next(args, "")
            places.append(here)
        elif arg in ("--git-dir", "--work-tree"):
            places.append(here / next(args, ""))
        elif arg.startswith(("--git-dir=", "--work-tree=")):
            places.append(here / arg.partition("=")[2])
    places += [cwd / v.partition("=")[2] for v in environ if v.startswith(("GIT_DIR=", "GIT_WORK_TREE="))]
    return places


def _inside(path: Path, base: Path) -> bool:
    real = Path(os.path.realpath(path))
    return real == base or base in real.parents


def head(root: Path) -> str:
    return _git(root, "rev-parse", "HEAD").strip()


def commit_of(root: Path, sha: str) -> MemvaultCommit | None:
    """The memvault commit `sha` (None when it is not one, or does not exist)."""
    try:
        when, _, body = _git(root, "log", "-n1", "--format=%ct%x00%B", sha).partition("\x00")
    except GitError:
        return None
    trailers = _trailers(body)
    if TRAILER_OP not in trailers:
        return None
    return MemvaultCommit(sha, body.strip().splitlines()[0], trailers[TRAILER_OP], float(when))


def reverts(root: Path, sha: str) -> str | None:
    """The commit `sha` reverts (its Memvault-Reverts trailer), if any."""
    try:
        return _trailers(_git(root, "log", "-n1", "--format=%B", sha)).get(TRAILER_REVERTS)
    except GitError:
        return None


def rollback_revert(root: Path, target: str, keep: Sequence[str] = ()) -> bool:
    """Take back a `git revert --no-commit target` that was never committed; False when the files were edited since.

    Every path of `target` must still be as HEAD has it or as the staged revert has it (the change
    log's pages in `keep` may hold the revert's conflict); then each is restored from HEAD in the index
    and the work tree (a file HEAD does not have is removed) and REVERT_HEAD is cleared. The user's
    other files and staged work are not touched.
    """
    paths = changed_paths(root, target)
    for path in paths:
        if path in keep:
            continue
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
    quit_revert(root)
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
    return found


def quit_revert(root: Path) -> None:
    """Forget a revert's REVERT_HEAD, leaving the index and the work tree as they are."""
    _run(root, "revert", "--quit")


def _quiet(root: Path, *args: str) -> bool:
    return _run(root, *args).returncode == 0


def _run(root: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, env=_env(), check=False)


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of every git memvault starts: marked with this process's id (`orphans`)."""
    return {**os.environ, **(extra or {}), OWNER_ENV: str(os.getpid())}


def changed_paths(root: Path, sha: str) -> list[str]:
    out = _git(root, "show", "--name-only", "--no-renames", "--relative", "--format=", sha)
    return [line for line in out.splitlines() if line]


def _ignored(root: Path, paths: list[str]) -> set[str]:
    """Which of these untracked paths the repository ignores (`git add` would refuse them)."""
    if not paths:
        return set()
    proc = subprocess.run(
        ["git", "check-ignore", "-z", "--stdin"], input="\0".join(paths) + "\0", cwd=root,
        capture_output=True, text=True, env=_env(), check=False,
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
    proc = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, env=_env(_fallback_identity(str(cwd))), check=False
    )
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
