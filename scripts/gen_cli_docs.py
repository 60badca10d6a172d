"""Write wiki/reference/cli.md from the CLI's own --help (run with --check to verify it is current)."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from click.testing import CliRunner

from memvault.cli import cli

TARGET = Path(__file__).resolve().parent.parent / "wiki" / "reference" / "cli.md"
HEADER = """# CLI reference

Generated from `memvault --help` by `scripts/gen_cli_docs.py`; a test fails when it is out of date.
Every command accepts the global `--vault PATH` (or `MEMVAULT_VAULT`) before its name. Exit codes:
0 success, 1 error (message with a reason code, see [errors](errors.md)), 2 usage error.

Output fits the terminal's width (`COLUMNS` when set; 80 in a pipe). A path or a name is never cut
or broken across lines: a table that cannot show its paths whole prints one block per row instead,
the path on a line of its own (copied whole even when the terminal folds it), the other fields
indented under it. Titles and snippets wrap between words. `--json` gives the same results for
scripts. Long work (`reindex`) shows a progress bar in a terminal and, in a pipe or a log, a start
line and progress lines with a rate on standard error.
"""


def render() -> str:
    runner = CliRunner()
    parts = [
        HEADER,
        "## memvault\n",
        "```\n" + runner.invoke(cli, ["--help"], prog_name="memvault", terminal_width=100).output + "```\n",
    ]
    assert isinstance(cli, click.Group)
    for name in sorted(cli.commands):
        result = runner.invoke(cli, [name, "--help"], prog_name="memvault", terminal_width=100)
        parts += [f"## memvault {name}\n", "```\n" + result.output + "```\n"]
    return "\n".join(parts)


def main() -> int:
    text = render()
    if "--check" in sys.argv:
        if not TARGET.exists() or TARGET.read_text(encoding="utf-8") != text:
            print(f"{TARGET} is out of date: run python scripts/gen_cli_docs.py", file=sys.stderr)
            return 1
        return 0
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
