"""The test run never touches the HOME, XDG folders, temp folder or runtime folder of the person running it.

A slice of the suite runs in a subprocess whose HOME, XDG_RUNTIME_DIR and TMPDIR are sentinel folders
standing for a user's real ones, with the folders memvault and the agents keep there. Afterwards every
one of them lists as before (names and modification times). The slice holds the tests that once reached
the real folders: a real Codex CLI and Gemini CLI asked for their version (they write `~/.codex/tmp/` and
`~/.gemini/projects.json`), a runtime folder looked for without XDG_RUNTIME_DIR (the temp folder's
`runtime-<uid>/`, where the user's own service listens), and the tests that unset the XDG variables.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from .conftest import REPO

CHILD = "MEMVAULT_TESTS_ISOLATION_CHILD"  # set in the slice's run: the probes below are collected there only
# The user's folders a run must leave alone: memvault's own, and the agents' it installs into.
HOME_FOLDERS = (".codex", ".gemini", ".claude", ".config/memvault", ".local/state/memvault")
SLICE = [
    "tests/test_suite_isolation.py",
    "tests/test_config.py::test_without_memvault_home_the_folders_are_where_platformdirs_puts_them",
    "tests/test_hooks.py::test_the_prompt_hooks_short_way_finds_the_service_where_paths_puts_it",
]


def listing(root: Path) -> dict[str, int]:
    """Every name under `root` (itself included) with its modification time; {} when it does not exist."""
    if not root.exists():
        return {}
    found = {".": root.lstat().st_mtime_ns}
    for path in root.rglob("*"):
        found[path.relative_to(root).as_posix()] = path.lstat().st_mtime_ns
    return found


def places(home: Path, runtime: Path, temp: Path) -> dict[str, dict[str, int]]:
    """What the run must not change: the folders in HOME, the runtime folder, the temp folder's runtime folders."""
    uid = os.getuid()
    found = {f"~/{name}": listing(home / name) for name in HOME_FOLDERS}
    found["$XDG_RUNTIME_DIR"] = listing(runtime)
    found[f"/run/user/{uid}/memvault"] = listing(Path(f"/run/user/{uid}/memvault"))
    for path in [temp / f"runtime-{uid}", *temp.glob(f"memvault-{uid}-*")]:  # paths.runtime_dir()'s fallbacks
        found[f"$TMPDIR/{path.name}"] = listing(path)
    return found


@pytest.mark.skipif(os.name != "posix", reason="the sentinel runtime folder is a POSIX one")
@pytest.mark.skipif(bool(os.environ.get(CHILD)), reason="this is the slice's own run")
def test_a_run_leaves_the_users_home_and_runtime_folder_as_they_were(tmp_path: Path) -> None:
    home, runtime, temp = tmp_path / "home", tmp_path / "run", tmp_path / "tmp"
    for folder in HOME_FOLDERS:
        (home / folder).mkdir(parents=True)
    (home / ".config/memvault/config.yaml").write_text("vault:\n  root: /nowhere\n", encoding="utf-8")
    (home / ".gemini/projects.json").write_text("{}\n", encoding="utf-8")
    (runtime / "memvault").mkdir(parents=True, mode=0o700)
    runtime.chmod(0o700)
    temp.mkdir()
    before = places(home, runtime, temp)
    own = ("HOME", "USERPROFILE", "TMPDIR", "TEMP", "TMP", "PYTEST_DEBUG_TEMPROOT", "CLAUDE_CONFIG_DIR")
    env = {k: v for k, v in os.environ.items() if k not in own and not k.startswith(("XDG_", "MEMVAULT_", "GIT_"))}
    env.update(HOME=str(home), XDG_RUNTIME_DIR=str(runtime), TMPDIR=str(temp), **{CHILD: "1"})
    # pytest's own tmp_path folders where this run keeps them: a longer path would move the tests' sockets
    env["PYTEST_DEBUG_TEMPROOT"] = os.environ.get("PYTEST_DEBUG_TEMPROOT") or tempfile.gettempdir()
    from tests.e2e import npm

    env["MEMVAULT_E2E_CACHE"] = str(npm.cache_root())  # installed clients only
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", "-rs", *SLICE],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    after = places(home, runtime, temp)
    changed = {
        place: sorted(set(after[place].items()) ^ set(before.get(place, {}).items()))
        for place in after
        if after[place] != before.get(place, {})
    }
    assert changed == {}, proc.stdout[-2000:]
    assert not list(temp.glob("memvault-tests-*")), "the run's own folder is removed when it passes"


if os.environ.get(CHILD):  # the probes: collected only in the slice's run, with the sentinel folders as the "real" ones

    @pytest.mark.parametrize("client", ["CODEX", "GEMINI_CLI"])
    def test_probe_a_real_client_asked_for_its_version(client: str) -> None:
        """What the end-to-end fixtures do first; the clients write to their folders in HOME when asked."""
        from tests.e2e import npm

        package = getattr(npm, client)
        if npm._executable(package, npm.cache_root() / f"{package.folder}-{package.version}") is None:
            pytest.skip(f"{package.spec} is not in the end-to-end cache (installed by the end-to-end tests)")
        try:
            npm.install(package)  # runs `<client> --version`
        except npm.Unavailable as why:
            pytest.skip(str(why))

    def test_probe_a_runtime_folder_without_xdg_runtime_dir(monkeypatch: pytest.MonkeyPatch) -> None:
        """As an install test's memvault runs it: no MEMVAULT_HOME, no XDG variables, the run's TMPDIR."""
        if os.path.isdir(f"/run/user/{os.getuid()}"):
            pytest.skip("this machine has /run/user/<uid>: a test must never unset XDG_RUNTIME_DIR here")
        for name in [k for k in os.environ if k.startswith("XDG_")] + ["MEMVAULT_HOME"]:
            monkeypatch.delenv(name)
        from memvault import paths

        assert paths.runtime_dir().is_dir()
