"""The user docs hold together: every wiki page is in the index, and every relative link leads to a file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
WIKI = REPO / "wiki"
PAGES = sorted(WIKI.rglob("*.md"))
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
CODE = re.compile(r"`[^`\n]*`")


def links(page: Path) -> list[str]:
    text = CODE.sub("", FENCE.sub("", page.read_text(encoding="utf-8")))  # examples in code are not links
    return [m.group(1) for m in LINK.finditer(text)]


def test_every_wiki_page_is_listed_in_the_wiki_index() -> None:
    listed = {(WIKI / target.split("#")[0]).resolve() for target in links(WIKI / "README.md")}
    missing = [str(p.relative_to(WIKI)) for p in PAGES if p.name != "README.md" and p.resolve() not in listed]
    assert not missing, f"add these pages to wiki/README.md: {missing}"


@pytest.mark.parametrize("page", [*PAGES, REPO / "README.md"], ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_lead_to_existing_files(page: Path) -> None:
    broken = []
    for target in links(page):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue  # a web address or an anchor in the same page
        if not (page.parent / target.split("#")[0]).exists():
            broken.append(target)
    assert not broken, f"{page.relative_to(REPO)} links to missing files: {broken}"


def test_the_architecture_page_names_every_folder_and_module() -> None:
    """The folder tree and the module table on the architecture page follow the package as it is."""
    page = (WIKI / "explanation" / "architecture.md").read_text(encoding="utf-8")
    package = REPO / "memvault"
    folders = sorted(p.name for p in package.iterdir() if p.is_dir() and p.name != "__pycache__")
    missing = [f"{name}/" for name in folders if f"  {name}/ " not in page]
    launchers = {"_launch", "idle", "session_end", "session_start", "stop", "user_prompt_submit"}
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).with_suffix("")
        if rel.name.startswith("__") or (rel.parts[0] == "hooks" and rel.name in launchers):
            continue  # package files, and the hook launchers (described together)
        if f"`{'.'.join(rel.parts)}`" not in page:
            missing.append(".".join(rel.parts))
    described = set(re.findall(r"^\| `([a-z_.]+)`", page, re.M))
    stale = [name for name in described if not (package / (name.replace(".", "/") + ".py")).exists()]
    assert not missing and not stale, f"architecture.md: not described {missing}; no such module {stale}"


def test_health_prints_where_the_config_file_is(vault_dir: Path, memvault_home: Path) -> None:
    """troubleshoot-hooks sends the user to `memvault health` to find the config file: it names it, or the
    file it would be when there is none yet."""
    from click.testing import CliRunner

    from memvault.cli import cli

    page = (WIKI / "how-to" / "troubleshoot-hooks.md").read_text(encoding="utf-8")
    assert "(`memvault health` prints\n  where the config file is)" in page
    config = memvault_home / "config.yaml"
    for exists in (False, True):
        if exists:
            config.parent.mkdir(parents=True, exist_ok=True)
            config.write_text("memory:\n  enabled: true\n", encoding="utf-8")
        shown = CliRunner().invoke(cli, ["--vault", str(vault_dir), "health"], terminal_width=200).output
        line = next((x for x in shown.splitlines() if x.startswith("config: ")), None)
        assert line is not None and str(config) in line, shown
        assert ("not written yet" in line) is not exists, line


def test_the_tutorials_outputs_are_what_the_commands_print() -> None:
    """The tutorial's marked console blocks are regenerated from a real run (scripts/gen_tutorial.py): a change
    to what a command prints makes this fail until the page is regenerated."""
    import runpy

    module = runpy.run_path(str(REPO / "scripts" / "gen_tutorial.py"))
    page = module["TARGET"].read_text(encoding="utf-8")
    assert page.count("<!-- run -->") >= 15  # the outputs of steps 1 to 9
    fresh = module["render"](page)
    assert fresh == page, "wiki/tutorial/first-vault.md is stale: run python scripts/gen_tutorial.py"


@pytest.mark.parametrize(("client", "headless", "other"), [("codex", "codex exec", "gemini -p"),
                                                           ("gemini", "gemini -p", "codex exec")])  # fmt: skip
def test_the_mcp_approval_hint_names_the_clients_own_headless_command(client: str, headless: str, other: str) -> None:
    from memvault.hosts import install

    hints = " ".join(install.plan_mcp(client, approve=False).notes)
    assert headless in hints and other not in hints, hints


def test_install_shs_next_steps_suggest_a_vault_only_when_none_is_known_and_say_what_health_checks(
    tmp_path: Path,
) -> None:
    import subprocess

    from .test_install_sh import _env, _run

    home, vault = tmp_path / "home", tmp_path / "Obsidian"
    (vault / ".obsidian").mkdir(parents=True)

    def next_steps(proc: subprocess.CompletedProcess[str]) -> str:
        return proc.stdout.split("Done. Next steps:", 1)[1]

    steps = next_steps(_run(home, "--no-python-deps", "--no-demo"))
    assert "memvault init ~/path/to/your/ObsidianVault" in steps and "your vault:" not in steps  # none known yet
    lines = steps.splitlines()
    at = next(n for n, line in enumerate(lines) if "memvault health" in line)
    health = " ".join(lines[at : at + 2])
    assert "interpreter that exists" in health and "the hooks" not in health, health  # what it checks of hooks
    memvault = home / ".local/share/memvault/venv/bin/memvault"
    subprocess.run([str(memvault), "init", str(vault)], env=_env(home), check=True, capture_output=True)
    steps = next_steps(_run(home, "--no-python-deps", "--no-demo"))
    assert "ObsidianVault" not in steps and f"your vault: {vault}" in steps, steps
