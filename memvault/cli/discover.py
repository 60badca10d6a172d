"""`memvault skills`: discover skill patterns worth adopting, adapt one into the watchlist, approve or dismiss it."""

from __future__ import annotations

from pathlib import Path

import click
from rich.markup import escape

from memvault.discovery import sources, watchlist
from memvault.text import plural

from .group import State, cli, confirmed, err, json_option, out, pass_state, print_json, print_result, yes_option
from .render import print_table

SHOWN = 20  # candidates listed in the table, best fit first
_DIR = click.Path(file_okay=False, path_type=Path)
project_option = click.option(
    "--project", type=_DIR, metavar="DIR", help="The project whose skill folders to read (default: .)."
)
repo_option = click.option(
    "--repo", "repos", type=_DIR, multiple=True, metavar="DIR",
    help="A local repository (a clone) whose skills to read too, besides discovery.repos; repeatable.",
)  # fmt: skip


@cli.group("skills")
def skills() -> None:
    """Skills worth adopting, found for you: adapted into a watchlist, never imported.

    `discover` reads the skills on this machine (plugins, your and the project's skill folders, Codex
    CLI's and Gemini CLI's) and the repositories you list, and the web whitelist only when you said yes
    (discovery.web: true). What you already have is left out; the rest is scored against your notes.
    """


@skills.command("discover")
@project_option
@repo_option
@click.option("--local", "local_only", is_flag=True, help="Leave the web part out even when discovery.web is on.")
@click.option("--limit", type=click.IntRange(0, 50), default=watchlist.LIMIT, show_default=True,
              help="Watchlist entries to write at most.")  # fmt: skip
@click.option("--dry-run", is_flag=True, help="Show what would be written; write nothing.")
@json_option
@pass_state
def discover(
    state: State, project: Path | None, repos: tuple[Path, ...], local_only: bool, limit: int, dry_run: bool,
    as_json: bool,
) -> None:  # fmt: skip
    """Find skill patterns that fit what you do; write a watchlist entry for each (best fit first).

    A pattern fits when notes of yours are about the same things (the relevance floor of recall decides);
    one that no note is about is listed, not written (`memvault skills adapt NAME` writes it anyway).
    Running it again proposes nothing new: entries waiting, approved or dismissed are remembered.
    """
    vault = state.vault
    places = sources.Places.from_config(vault.config, project, repos)
    wait = 30.0 if vault.config.embedding.warm_service else 0.0
    report = watchlist.discover(vault, places, use_web=not local_only, dry_run=dry_run, limit=limit,
                                wait_service=wait)  # fmt: skip
    if as_json:
        print_json(report.as_dict())
        return
    written = {rel.rsplit("/", 1)[-1].removesuffix(".md") for rel in report.written}
    rows = [(escape(c["slug"]), f"{c['fit']:.2f}", escape(c["origin"]), "written" if c["slug"] in written else
             "fits" if c["fit"] > watchlist.MIN_FIT else "no note of yours is about it")
            for c in report.candidates]  # fmt: skip
    print_table(("candidate", "fit", "from", "watchlist"), rows[:SHOWN])
    if len(rows) > SHOWN:
        out.print(f"… and {len(rows) - SHOWN} more, fitting no better (--json lists them all)")
    verb = "would write" if dry_run else "wrote"
    out.print(
        f"found {plural(report.found, 'pattern')}: {len(report.had)} you have or already have in the watchlist, "
        f"{len(report.candidates)} new to you; "
        f"{verb} {plural(len(report.written), 'watchlist entry', 'watchlist entries')}"
    )
    if not report.written:
        out.print("nothing new to propose")
    if report.web:
        out.print(escape(report.web))
    for problem in report.errors:
        err.print(f"[yellow]skipped:[/] {escape(problem['path'])}: {escape(problem['error'])}")


@skills.command("adapt")
@click.argument("candidate")
@project_option
@repo_option
@json_option
@pass_state
def adapt(state: State, candidate: str, project: Path | None, repos: tuple[Path, ...], as_json: bool) -> None:
    """Write the watchlist entry of CANDIDATE (a name `discover` listed), fitting or not.

    The entry says what the pattern does, why it fits you (your notes, linked), what to adopt and what
    not, its source and licence, in your terms: none of the upstream text is copied.
    """
    vault = state.vault
    places = sources.Places.from_config(vault.config, project, repos)
    print_result(watchlist.adapt(vault, watchlist.find(vault, candidate, places)), as_json)


@skills.group("watchlist", invoke_without_command=True)
@click.option("--all", "every", is_flag=True, help="Also list approved and dismissed entries.")
@json_option
@click.pass_context
def watchlist_group(ctx: click.Context, every: bool, as_json: bool) -> None:
    """List the watchlist's waiting entries; `approve NAME` or `dismiss NAME` decides one."""
    if ctx.invoked_subcommand is None:
        _list(ctx.find_object(State), every, as_json)


def _list(state: State | None, every: bool, as_json: bool) -> None:
    assert state is not None  # the main group made it
    found = watchlist.items(state.vault, every=every)
    if as_json:
        print_json([item.__dict__ for item in found])
        return
    rows = [(escape(i.slug), i.state, f"{i.fit:.2f}", escape(i.licence), escape(i.upstream)) for i in found]
    print_table(("entry", "state", "fit", "licence", "source"), rows)
    out.print(f"{plural(len(found), 'entry', 'entries')}" + ("" if every else " waiting for you"))


@watchlist_group.command("list")
@click.option("--all", "every", is_flag=True, help="Also list approved and dismissed entries.")
@json_option
@pass_state
def watchlist_list(state: State, every: bool, as_json: bool) -> None:
    """List the watchlist (the same as `memvault skills watchlist`)."""
    _list(state, every, as_json)


@watchlist_group.command("approve")
@click.argument("name")
@yes_option
@json_option
@pass_state
def approve(state: State, name: str, yes: bool, as_json: bool) -> None:
    """Move NAME to personal-skills/ as a proposal: a skill for you to write, never a rule loaded by itself."""
    vault = state.vault
    print_result(confirmed(vault, lambda: watchlist.approve(vault, name), yes=yes, what="Approve it"), as_json)


@watchlist_group.command("dismiss")
@click.argument("name")
@click.option("--reason", default="", help="Why, kept in the entry.")
@yes_option
@json_option
@pass_state
def dismiss(state: State, name: str, reason: str, yes: bool, as_json: bool) -> None:
    """Dismiss NAME: the entry stays, marked dismissed, and discovery never proposes it again."""
    vault = state.vault
    print_result(confirmed(vault, lambda: watchlist.dismiss(vault, name, reason), yes=yes, what="Dismiss it"), as_json)
