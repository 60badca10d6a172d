"""The plugin route's environment: memvault's dependencies in a venv in `CLAUDE_PLUGIN_DATA`, set up in the background.

Claude Code installs a plugin's files but not its Python dependencies. The hook launcher
(`memvault/hooks/_launch.py`) calls `prepare` before anything else; while the venv is missing,
SessionStart starts one detached install (`python -m memvault.claude.plugin_setup install …`) and every
hook exits 0 at once. Once the venv is there its site-packages are added to the hook's `sys.path`
(memvault itself always comes from the plugin folder, which changes on every update).

Standard library only, and nothing slow at import: this runs on the 300 ms prompt path with a
Python that may have none of memvault's dependencies.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

STAMP = "venv-ready.json"  # written last by a successful install: the venv's Python, site dirs, dependency key
LOCK = "install.lock"  # exists while one install runs
FAILED = "install-failed.json"  # the last failed install: retried after RETRY_S
LOG = "install.log"
VENV = "venv"
LOCK_STALE_S = 3 * 3600  # an install lock older than this is left over from a crash
RETRY_S = 24 * 3600
MAX_LOG = 1024 * 1024
DEFAULT_TORCH = "torch==2.13.0"  # CPU build on our machines; installed before sentence-transformers, as install.sh does
INSTALLING = (
    "MemoryVault is installing its dependencies in the background (first run); memory starts working in a few minutes"
)
_WINDOWS_DETACHED = 0x00000008 | 0x00000200 | 0x08000000  # DETACHED_PROCESS, NEW_PROCESS_GROUP, NO_WINDOW


# ---- the hook side: decide, never wait --------------------------------------------------------


def prepare(event: str, data: Path, root: Path) -> str | None:
    """Make the venv's packages importable and return None, or return the reason the hook must not run.

    The reason is a message for the user (SessionStart only) or "" (exit silently). SessionStart
    also starts the install when the venv is missing, and a re-install when the dependency set changed.
    """
    starting = event == "SessionStart"
    if sys.version_info < (3, 10):  # noqa: UP036 (python3 on PATH may be older than memvault supports)
        found = "{}.{}".format(*sys.version_info[:2])
        return f"MemoryVault needs Python 3.10 or newer; python3 here is {found}" if starting else ""
    stamp = read_json(data / STAMP)
    ready = (
        stamp is not None
        and stamp.get("python") == python_tag()
        and isinstance(stamp.get("venv_python"), str)
        and Path(stamp["venv_python"]).exists()
    )
    if ready and stamp is not None:
        activate(stamp)
        if starting and stamp.get("key") != dependency_key(root, embeddings_wanted()):
            start_install(data, root)  # the old venv keeps serving while the new dependency set installs
        return None
    if not starting:
        return ""
    return start_install(data, root)


def activate(stamp: dict[str, Any]) -> None:
    """Put the venv's site dirs (and their .pth entries) before the interpreter's own site-packages."""
    import site

    before = list(sys.path)
    for folder in stamp.get("site") or []:
        site.addsitedir(folder)
    added = [p for p in sys.path if p not in before]
    at = next((i for i, p in enumerate(before) if p.rstrip("/\\").endswith(("site-packages", "dist-packages"))), None)
    if at is not None:
        sys.path[:] = before[:at] + added + before[at:]
    # Background jobs (reflection, the embedding service) start with this interpreter: the venv's.
    sys.executable = stamp["venv_python"]


def start_install(data: Path, root: Path) -> str:
    """Start one detached install unless one runs or failed within a day; the message to show the user."""
    log = data / LOG
    failed = read_json(data / FAILED)
    key = dependency_key(root, embeddings_wanted())
    if failed and failed.get("key") == key and time.time() - float(failed.get("time", 0)) < RETRY_S:
        return f"MemoryVault could not install its dependencies (see {log}); it tries again once a day"
    if not take_lock(data / LOCK):
        return INSTALLING
    try:
        command = [
            sys.executable,
            "-m",
            "memvault.claude.plugin_setup",
            "install",
            "--data",
            str(data),
            "--root",
            str(root),
        ]
        if not embeddings_wanted():
            command.append("--no-embeddings")
        env = {**os.environ, "PYTHONPATH": str(root)}
        pid = spawn(command, log, env)
        write_json(data / LOCK, {"pid": pid, "time": time.time()})
    except OSError as exc:
        (data / LOCK).unlink(missing_ok=True)
        return f"MemoryVault could not start installing its dependencies: {exc}"
    return INSTALLING


def take_lock(lock: Path) -> bool:
    """Create the lock file exclusively; a lock from a crashed install (old, or its process gone) is taken over."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            if not lock_is_stale(lock):
                return False
            lock.unlink(missing_ok=True)
            continue
        with os.fdopen(fd, "w") as handle:
            json.dump({"pid": os.getpid(), "time": time.time()}, handle)
        return True
    return False


def lock_is_stale(lock: Path) -> bool:
    try:
        age = time.time() - lock.stat().st_mtime
    except OSError:
        return True
    if age > LOCK_STALE_S:
        return True
    info = read_json(lock) or {}
    pid = info.get("pid")
    if os.name != "posix" or not isinstance(pid, int) or age < 5:  # just created: the pid may not be written yet
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    """A finished child its parent has not reaped yet still answers kill(pid, 0) (Linux only checked)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
    except (OSError, IndexError):
        return False


def spawn(command: list[str], log: Path, env: dict[str, str]) -> int:
    """Run `command` detached (own session, no console), output appended to `log`; return its pid.

    The same as `memvault.procs.spawn`, which cannot be imported here (its imports need the dependencies).
    """
    import subprocess

    log.parent.mkdir(parents=True, exist_ok=True)
    try:
        if log.stat().st_size > MAX_LOG:
            os.replace(log, log.with_name(log.name + ".1"))
    except OSError:
        pass
    windows = sys.platform == "win32"
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=str(log.parent),
            start_new_session=not windows,
            creationflags=_WINDOWS_DETACHED if windows else 0,
        )
    return proc.pid


# ---- what to install ---------------------------------------------------------------------------


def embeddings_wanted() -> bool:
    return os.environ.get("MEMVAULT_PLUGIN_NO_EMBEDDINGS", "").strip().lower() not in ("1", "true", "yes")


def torch_spec() -> str:
    return os.environ.get("MEMVAULT_TORCH_SPEC") or DEFAULT_TORCH


def python_tag() -> str:
    return f"{sys.implementation.name}-{sys.version_info[0]}.{sys.version_info[1]}"


def requirements(root: Path) -> tuple[list[str], list[str]]:
    """memvault's dependencies and its `embeddings` extra, read from the plugin's pyproject.toml.

    A small reader for the two arrays (tomllib is not in Python 3.10): quoted strings between
    `dependencies = [` / `embeddings = [` and the closing bracket, comment lines skipped.
    """
    text = (root / "pyproject.toml").read_text(encoding="utf-8")
    return _array(text, "dependencies"), _array(text, "embeddings")


def _array(text: str, name: str) -> list[str]:
    import re

    match = re.search(rf"^{name}\s*=\s*\[(.*?)\]", text, re.M | re.S)
    if match is None:
        return []
    lines = [line for line in match.group(1).splitlines() if not line.strip().startswith("#")]
    return re.findall(r'"([^"]+)"', "\n".join(lines))


def dependency_key(root: Path, embeddings: bool) -> str:
    """Changes when what the venv must hold changes: the dependency lists, the torch pin, the Python."""
    import hashlib

    try:
        deps, extra = requirements(root)
    except OSError:
        deps, extra = [], []
    parts = [python_tag(), *deps, *([torch_spec(), *extra] if embeddings else ["no-embeddings"])]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


# ---- the install itself (the detached child) ----------------------------------------------------


def install(data: Path, root: Path, embeddings: bool) -> int:
    """Create or update `<data>/venv` with memvault's dependencies, then write the stamp; 0 on success."""
    import subprocess

    venv = data / VENV
    venv_python = venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    key = dependency_key(root, embeddings)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # pip must not see the plugin folder
    say(f"install started: {sys.executable} (Python {python_tag()}), dependency key {key}")
    try:
        fake = os.environ.get("MEMVAULT_PLUGIN_INSTALL_CMD")  # tests: one command instead of venv + pip
        steps = [json.loads(fake)] if fake else _steps(venv, venv_python, root, embeddings)
        for step in steps:
            say("$ " + " ".join(step))
            subprocess.run(step, check=True, env=env, cwd=str(data), stdin=subprocess.DEVNULL)
        site = _site_dirs(venv_python, env) if venv_python.exists() else []
        write_json(
            data / STAMP,
            {"key": key, "python": python_tag(), "venv_python": str(venv_python), "site": site,
             "embeddings": embeddings, "time": time.time()},
        )  # fmt: skip
        (data / FAILED).unlink(missing_ok=True)
        say("install finished: memory works from the next prompt")
        return 0
    except (OSError, subprocess.CalledProcessError, ValueError) as exc:
        write_json(data / FAILED, {"key": key, "time": time.time(), "error": str(exc)[:500]})
        say(f"install failed: {exc} (retried at the first session start after 24 hours)")
        return 1
    finally:
        (data / LOCK).unlink(missing_ok=True)


def _steps(venv: Path, venv_python: Path, root: Path, embeddings: bool) -> list[list[str]]:
    deps, extra = requirements(root)
    stamp = read_json(venv.parent / STAMP)
    fresh = stamp is None or stamp.get("python") != python_tag()  # a venv of another Python is rebuilt
    steps = [[sys.executable, "-m", "venv", *(["--clear"] if fresh and venv.exists() else []), str(venv)]]
    pip = [str(venv_python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    if embeddings:
        steps.append([*pip, torch_spec()])  # first, so sentence-transformers does not pull another torch build
        return [*steps, [*pip, *deps, *extra]]
    return [*steps, [*pip, *deps]]


def _site_dirs(venv_python: Path, env: dict[str, str]) -> list[str]:
    import subprocess

    code = "import json,sysconfig;print(json.dumps(sorted({sysconfig.get_path(n) for n in ('purelib','platlib')})))"
    out = subprocess.run([str(venv_python), "-c", code], check=True, capture_output=True, text=True, env=env)
    return [str(p) for p in json.loads(out.stdout)]


def say(line: str) -> None:
    print(time.strftime("%Y-%m-%d %H:%M:%S"), line, flush=True)


# ---- small file helpers --------------------------------------------------------------------------


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def write_json(path: Path, value: dict[str, Any]) -> None:
    """Atomic: a temp file renamed over the target (memvault.store is not importable without the dependencies)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(value, indent=1), encoding="utf-8")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m memvault.claude.plugin_setup")
    parser.add_argument("action", choices=("install", "status"))
    parser.add_argument("--data", required=True, type=Path)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[2])
    parser.add_argument("--no-embeddings", action="store_true")
    args = parser.parse_args(argv)
    if args.action == "status":
        print(json.dumps(read_json(args.data / STAMP)))
        return 0
    return install(args.data, args.root, not args.no_embeddings)


if __name__ == "__main__":
    sys.exit(main())
