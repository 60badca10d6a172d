"""The repository tests itself: a fresh clone, with nothing beside it and a throwaway HOME, passes the fast tests."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import DATA, REPO, git

IN_CLONE = "MEMVAULT_TEST_IN_CLONE"
# The modules that read the fixtures in tests/data, commit with git, or check the docs' links and commands.
FAST = [
    "tests/test_transcript.py",
    "tests/test_notes.py",
    "tests/test_miner.py",
    "tests/test_git.py",
    "tests/test_docs.py",
    "tests/test_reflect.py::test_real_transcripts_no_crash_provenance_and_second_pass_adds_nothing",
    "tests/test_ideas.py::test_capture_creates_ideas_md_and_the_incubator_note_in_one_commit",
]
# What would reach outside the checkout: the folder beside it, or this machine's absolute paths.
OUTSIDE = re.compile(r"REPO\.parent|\.\./shared|shared/data|[\"'(`]/work/")


def tracked(*folders: str) -> list[Path]:
    listed = git(REPO, "ls-files", "-z", "--", *folders).split("\0")
    return [REPO / rel for rel in listed if rel and not rel.startswith("tests/data/")]


def test_no_test_or_script_reaches_outside_the_checkout() -> None:
    offenders = []
    for path in [*tracked("tests", "scripts", "memvault", "wiki"), REPO / "README.md"]:
        if path.suffix in (".py", ".sh", ".md") and path != Path(__file__):
            text = path.read_text(encoding="utf-8")
            offenders += [f"{path.relative_to(REPO)}: {m.group(0)}" for m in OUTSIDE.finditer(text)]
    assert offenders == []


def test_every_fixture_folder_has_its_licence_and_is_small() -> None:
    readme = (DATA / "README.md").read_text(encoding="utf-8")
    folders = [p for p in DATA.iterdir() if p.is_dir()]
    folders = [f for top in folders for f in ([*top.iterdir()] if top.name == "transcripts" else [top]) if f.is_dir()]
    assert folders
    for folder in folders:
        assert (folder / "LICENSE").is_file(), folder
        assert f"`{folder.relative_to(DATA).as_posix()}/`" in readme, folder
    size = sum(p.stat().st_size for p in DATA.rglob("*") if p.is_file())
    assert size < 6_000_000, size


@pytest.mark.skipif(bool(os.environ.get(IN_CLONE)), reason="already running inside the clone")
def test_a_fresh_clone_with_a_throwaway_home_passes_the_fast_tests(tmp_path: Path) -> None:
    """What a user gets: only the committed files, no folder beside them, no git identity, an empty HOME."""
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    clone, home = tmp_path / "clone", tmp_path / "home"
    home.mkdir()
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True, capture_output=True)
    assert not (tmp_path / "shared").exists()
    keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL")
    env = {key: os.environ[key] for key in keep if key in os.environ}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_STATE_HOME=str(home / ".local/state"),
               XDG_DATA_HOME=str(home / ".local/share"), XDG_CACHE_HOME=str(home / ".cache"),
               PYTHONPATH=str(clone), PYTHONDONTWRITEBYTECODE="1", **{IN_CLONE: "1"})  # fmt: skip
    where = subprocess.run(
        [sys.executable, "-c", "import memvault; print(memvault.__file__)"],
        cwd=clone, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert Path(where.stdout.strip()).is_relative_to(clone), where.stdout  # the clone's code, not this checkout's
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow", *FAST],
        cwd=clone, env=env, capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-2000:]
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert re.search(r"\d+ passed", summary) and "failed" not in summary and "error" not in summary, summary


@pytest.mark.parametrize(
    "argv",
    [
        ["bench_recall.py", "--set", "locomo"],
        ["bench_latency.py"],
        ["bench_hooks.py"],
        ["bench_reflect.py"],
        ["floor_by_size.py"],
    ],
    ids=lambda argv: argv[0],
)
def test_a_benchmark_without_its_data_says_so_in_one_line(argv: list[str], tmp_path: Path) -> None:
    env = {**os.environ, "MEMVAULT_BENCH_DATA": str(tmp_path / "nothing-here")}
    done = subprocess.run([sys.executable, str(REPO / "scripts" / argv[0]), *argv[1:]], env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0 and done.stderr == "", done.stderr
    (line,) = done.stdout.splitlines()
    assert line.startswith("skipped: ") and "MEMVAULT_BENCH_DATA" in line and str(tmp_path) not in line
    helped = subprocess.run([sys.executable, str(REPO / "scripts" / argv[0]), "--help"], capture_output=True, text=True)
    assert helped.returncode == 0 and ("--locomo" in helped.stdout or "--data" in helped.stdout)
