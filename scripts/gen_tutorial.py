"""Fill the tutorial's marked console blocks with what the commands print (run with --check to verify it is current).

wiki/tutorial/first-vault.md marks the blocks whose output is generated with a `<!-- run -->` line right above
the fence. Their `$ ` lines are run in order, each by bash, in a throwaway HOME holding `~/Obsidian` with one
note of the user's own (`Projects/Billing service.md`, from examples/vault), with the `memvault` of this
Python environment, the offline miner and a git identity of "You". What varies from run to run is then
fixed: the throwaway HOME reads `/home/you`, today is 2026-11-21, the times of day count up from 14:45:17
in the order they happened, and each commit gets the same made-up hash every run. Blocks without the mark
(the install, recall and anything needing the embedding model or Claude Code) are captured by hand.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET = REPO / "wiki" / "tutorial" / "first-vault.md"
USER_NOTE = "Projects/Billing service.md"
SHOWN_HOME = "/home/you"
DAY = dt.date(2026, 11, 21)
FIRST_TIME = dt.datetime(2026, 11, 21, 14, 45, 17)
COLUMNS = 100
GITCONFIG = "[user]\n\tname = You\n\temail = you@example.com\n[init]\n\tdefaultBranch = main\n"

MARK = re.compile(r"^(?P<indent> *)<!-- run -->\n(?P=indent)```console\n(?P<body>.*?)^(?P=indent)```\n", re.M | re.S)
# A command that writes stamps its notes with the time: each starts in a second of its own (see _run).
WRITES = re.compile(r"\bmemvault (init|save|evolve|undo|reflect|inbox|review|promote)\b|\bgit commit\b")
STAMP = re.compile(r"\b(\d{4}-\d\d-\d\d)([T ])(\d\d:\d\d:\d\d)\b")
HEX = re.compile(r"\b[0-9a-f]{7,40}\b")


def _environment(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMVAULT_", "XDG_", "CLAUDE_", "GIT_"))}
    home = root / "home"
    (root / "gitconfig").write_text(GITCONFIG, encoding="utf-8")
    for folder in ("tmp", "run"):
        (root / folder).mkdir(mode=0o700)
    env.update(
        HOME=str(home),
        TMPDIR=str(root / "tmp"),
        XDG_RUNTIME_DIR=str(root / "run"),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        GIT_CONFIG_GLOBAL=str(root / "gitconfig"),
        GIT_CONFIG_NOSYSTEM="1",
        MEMVAULT_MINER="offline",
        COLUMNS=str(COLUMNS),
        LINES="50",
        NO_COLOR="1",
        TERM="dumb",
        LC_ALL="C.UTF-8",
    )
    env.pop("VIRTUAL_ENV", None)
    return env


_last_write = [0]  # the second the last writing command ended in


def _run(command: str, cwd: Path, env: dict[str, str], cwd_file: Path) -> tuple[str, Path]:
    """What `command` prints (stdout and stderr as they came) and the folder it left the shell in."""
    writes = bool(WRITES.search(command))
    if writes and int(time.time()) <= _last_write[0]:  # a second of its own: times stay in order, and distinct
        time.sleep(1.02 - time.time() % 1)
    script = f'{command}\nstatus=$?\npwd > "{cwd_file}"\nexit $status\n'
    done = subprocess.run(["bash", "-c", script], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if writes:
        _last_write[0] = int(time.time())
    return done.stdout.decode("utf-8"), Path(cwd_file.read_text(encoding="utf-8").strip())


def _fixed(text: str, home: Path, commits: list[str]) -> str:
    """`text` with what varies from run to run replaced (see the module's docstring)."""
    text = text.replace(str(home), SHOWN_HOME)
    today = dt.date.today()
    text = text.replace(today.isoformat(), DAY.isoformat()).replace(today.strftime("%Y%m%d"), DAY.strftime("%Y%m%d"))

    def commit(match: re.Match[str]) -> str:
        word = match.group(0)
        for n, full in enumerate(commits):
            if full.startswith(word):
                return hashlib.sha256(f"first-vault commit {n}".encode()).hexdigest()[: len(word)]
        return word

    return HEX.sub(commit, text)


def _times(texts: list[str]) -> dict[str, str]:
    """Each time of day printed → the fixed one of the same rank (every write happened in a second of its own)."""
    seen = sorted({m.group(3) for t in texts for m in STAMP.finditer(t) if m.group(1) == DAY.isoformat()})
    return {real: (FIRST_TIME + dt.timedelta(seconds=n)).strftime("%H:%M:%S") for n, real in enumerate(seen)}


def render(page: str | None = None) -> str:
    """The tutorial with its marked blocks filled from a real run."""
    page = TARGET.read_text(encoding="utf-8") if page is None else page
    blocks = list(MARK.finditer(page))
    root = Path(tempfile.mkdtemp(prefix="memvault-tutorial-"))
    try:
        env = _environment(root)
        home = Path(env["HOME"])
        (home / "Obsidian" / USER_NOTE).parent.mkdir(parents=True)
        (home / "Obsidian" / ".obsidian").mkdir()  # Obsidian's settings folder: what makes it a vault
        shutil.copyfile(REPO / "examples" / "vault" / USER_NOTE, home / "Obsidian" / USER_NOTE)
        cwd = home
        runs: list[list[tuple[str, str]]] = []
        for block in blocks:
            indent = block.group("indent")
            done = []
            for line in block.group("body").splitlines():
                if line.startswith(indent + "$ "):
                    command = line[len(indent) + 2 :]
                    real = command.replace(DAY.strftime("%Y%m%d"), dt.date.today().strftime("%Y%m%d"))
                    output, cwd = _run(real, cwd, env, root / "cwd")
                    done.append((command, output))
            runs.append(done)
        repo = home / "Obsidian"
        listed = subprocess.run(["git", "rev-list", "--reverse", "--all"], cwd=repo, env=env, capture_output=True)
        commits = listed.stdout.decode().split() if (repo / ".git").exists() and listed.returncode == 0 else []
        subprocess.run(["memvault", "serve", "--stop"], cwd=home, env=env, capture_output=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    fixed = [[(c, _fixed(o, home, commits)) for c, o in done] for done in runs]
    times = _times([o for done in fixed for _, o in done])

    def timed(text: str) -> str:
        return STAMP.sub(lambda m: f"{m.group(1)}{m.group(2)}{times.get(m.group(3), m.group(3))}", text)

    parts, at = [], 0
    for block, done in zip(blocks, fixed, strict=True):
        indent = block.group("indent")
        lines = []
        for command, output in done:
            lines.append(f"$ {command}")
            lines += timed(output).rstrip("\n").splitlines() if output.strip() else []
        body = "".join(f"{indent}{line}".rstrip() + "\n" if line else "\n" for line in lines)
        parts += [page[at : block.start("body")], body, f"{indent}```\n"]
        at = block.end()
    return "".join(parts) + page[at:]


def main() -> int:
    text = render()
    if "--check" in sys.argv:
        if TARGET.read_text(encoding="utf-8") != text:
            print(f"{TARGET} is out of date: run python scripts/gen_tutorial.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
