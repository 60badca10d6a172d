"""`memvault idea`, `memvault promote idea` and `memvault gc`: the idea ledger from the terminal."""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

import click
from rich.markup import escape

from memvault.errors import MemvaultError
from memvault.ideas import incubator, ledger
from memvault.text import plural
from memvault.vault.core import Vault

from .group import (
    State,
    body_of,
    cli,
    confirmed,
    err,
    json_option,
    out,
    pass_state,
    print_json,
    print_result,
    yes_option,
)
from .render import print_table


@cli.command()
@click.argument("title")
@click.argument("body", required=False)
@click.option("--group", "-g", help="Group folder under MemoryVault/ (default: personal-private).")
@click.option("--slug", help="The incubator folder's name (default: made from the title).")
@click.option("--tag", "-t", "tags", multiple=True, help="A tag besides `idea` (repeatable).")
@json_option
@pass_state
def idea(
    state: State,
    title: str,
    body: str | None,
    group: str | None,
    slug: str | None,
    tags: tuple[str, ...],
    as_json: bool,
) -> None:
    """Park an idea: an incubator note `<group>/_idea-incubator/<slug>/_index.md` plus a section in Ideas.md.

    BODY is the idea's text (`-` reads standard input; default: the title); its first two sentences become the
    summary in Ideas.md; up to three related notes found by recall are linked in `related:`. Both
    files are written together, or neither.
    """
    text = body_of(body) if body is not None else title
    related = _related(state.vault, title, text)
    meta = {"related": related} if related else None
    result = incubator.capture(state.vault, title, text, slug=slug, group=group, tags=("idea", *tags), meta=meta)
    print_result(result, as_json)


def _related(vault: Vault, title: str, text: str) -> list[str]:
    """Wikilinks to the existing notes most related to the idea, chosen as reflection chooses them."""
    from memvault.reflect.session import RELATED_COSINE, RELATED_KEYWORD

    try:
        hits = vault.recall(f"{title}\n\n{text}", 5).hits
    except (MemvaultError, OSError):
        return []
    close = [h for h in hits if h.vec_score >= RELATED_COSINE or h.kw_score >= RELATED_KEYWORD]
    return [f"[[{Path(h.path).stem}]]" for h in close if h.path != ledger.LEDGER][:3]


@cli.group()
def promote() -> None:
    """Promote an entry to the next stage (`promote idea SLUG`: an incubating idea becomes a project)."""


@promote.command(name="idea")
@click.argument("slug")
@click.option("--group", "-g", help="The group whose incubator holds the idea (only needed when several do).")
@yes_option
@json_option
@pass_state
def promote_idea(state: State, slug: str, group: str | None, yes: bool, as_json: bool) -> None:
    """Move an incubating idea's folder to MemoryVault/personal-projects/SLUG/ and mark it in Ideas.md.

    Every file of the folder moves; `_index.md` gets `status: promoted` and `promoted: <date>`, and
    the idea's Ideas.md section gets a `→ promoted <date> to [[…]]` line. One write: all or nothing.
    A protected idea is promoted after you confirm (--yes: without asking).
    """
    outcome = confirmed(
        state.vault, lambda: incubator.promote(state.vault, slug, group=group), yes=yes, what="Promote it"
    )
    if as_json:
        print_json(outcome.as_dict())
        return
    out.print(f"promoted: [bold]{escape(outcome.path)}[/] ({plural(len(outcome.files), 'file')})", soft_wrap=True)
    _render_outcome(outcome)


def _render_outcome(outcome: incubator.Outcome, indent: str = "") -> None:
    if outcome.section_marked:
        out.print(f"{indent}{ledger.LEDGER}: section marked {outcome.action}")
    if outcome.commit:
        out.print(f"{indent}committed {outcome.commit[:10]}")
    if outcome.warning:
        err.print(f"[yellow]warning:[/] {escape(outcome.warning)}")


@cli.group()
def research() -> None:
    """Research an entry (`research idea SLUG`: an incubating idea gets its research.md)."""


@research.command(name="idea")
@click.argument("slug")
@click.option("--group", "-g", help="The group whose incubator holds the idea (only needed when several do).")
@json_option
@pass_state
def research_idea(state: State, slug: str, group: str | None, as_json: bool) -> None:
    """Write SLUG's research.md in its incubator folder: the notes related to it, and the web part when allowed.

    The web part runs only with `ideas.research: web`, for an idea that is not private, within the
    `discovery.budget_*` budget and `discovery.daily_cap`, through your own agent with only its web tools;
    what it returns is fenced as untrusted. Otherwise the page says why the web part did not run.
    Researching again replaces the page. (`memvault idea TITLE BODY` parks an idea; this researches one.)
    """
    from memvault.discovery import research as researcher

    outcome = researcher.research_idea(state.vault, slug, group=group)
    if as_json:
        print_json(outcome.as_dict())
        return
    out.print(f"wrote: [bold]{escape(outcome.path)}[/] ({plural(len(outcome.related), 'cross-reference')})",
              soft_wrap=True)  # fmt: skip
    if outcome.web is not None and outcome.web.ok:
        ran = outcome.web
        out.print(f"web: {ran.host}, {plural(ran.fetches, 'web call')}, {ran.seconds:.0f} s, "
                  f"{plural(len(ran.sources), 'source')} (untrusted: review it)")  # fmt: skip
    else:
        out.print(f"web: did not run ({escape(outcome.web_why)})", soft_wrap=True)
    if outcome.commit:
        out.print(f"committed {outcome.commit[:10]}")
    if outcome.warning:
        err.print(f"[yellow]warning:[/] {escape(outcome.warning)}")


@cli.command()
@click.option("--months", type=click.IntRange(1), help="Untouched for this many months (default: gc.idea_months, 6).")
@click.option("--ask", is_flag=True, help="Ask even when standard input is not a terminal (answers piped in).")
@json_option
@pass_state
def gc(state: State, months: int | None, ask: bool, as_json: bool) -> None:
    """List incubating ideas untouched for N months and ask, for each, Keep / Archive / Delete.

    Untouched means no file of the idea's folder changed and its `updated` date is older. Archive
    moves the folder to _archive/ (status archived), Delete removes it after a second confirmation;
    both mark the idea's Ideas.md section. Nothing changes without your answer: with --json, or when
    standard input is not a terminal (without --ask), the ideas are only listed. An idea whose folder
    holds a protected file (or a note whose frontmatter cannot be read) is never offered: it is listed
    as kept, with the file and the reason.
    """
    vault = state.vault
    months = months or vault.config.gc.idea_months
    old = incubator.stale(vault, months)
    kept = [i for i in old if i.protected]
    old = [i for i in old if not i.protected]
    if as_json:
        print_json({"months": months, "ideas": [i.as_dict() for i in old], "protected": [i.as_dict() for i in kept]})
        return
    if kept:
        out.print(f"{plural(len(kept), 'protected idea')} untouched for {plural(months, 'month')} kept without asking:")
        for item in kept:
            out.print(f"  {escape(item.slug)} ({escape(item.protected_reason or 'protected')})")
    if not old:
        out.print(f"no incubating idea untouched for {plural(months, 'month')}")
        return
    _render_ideas(old, months)
    if not (ask or sys.stdin.isatty()):
        out.print("standard input is not a terminal: nothing changed (run `memvault gc` in a terminal, or with --ask)")
        return
    done: list[tuple[str, incubator.Idea, incubator.Outcome | None]] = []
    try:
        for item in old:
            done.append(_ask(state, item))
    except click.Abort:
        out.print("\nstopped: the remaining ideas are kept")
    _summary(done, len(old))


def _ask(state: State, item: incubator.Idea) -> tuple[str, incubator.Idea, incubator.Outcome | None]:
    choices = click.Choice(["k", "a", "d", "keep", "archive", "delete"], case_sensitive=False)
    answer = click.prompt(f"{item.slug}: [k]eep, [a]rchive or [d]elete?", type=choices, default="k", show_choices=False)
    answer = answer.lower()[0]
    if answer == "k":
        return "kept", item, None
    if answer == "a":
        return "archived", item, incubator.archive(state.vault, item)
    if not click.confirm(f"Delete {item.folder}/ and every file in it?", default=False):
        return "kept", item, None
    return "deleted", item, incubator.delete(state.vault, item)


def _render_ideas(old: list[incubator.Idea], months: int) -> None:
    out.print(f"Incubating ideas untouched for {plural(months, 'month')}:")
    rows = [(escape(item.slug), escape(item.title), item.last_touched.astimezone().date().isoformat(),
             "yes" if item.section_present else "no") for item in old]  # fmt: skip
    print_table(("idea", "title", "last touched", "in Ideas.md"), rows, wrap=(1,))


def _summary(done: list[tuple[str, incubator.Idea, incubator.Outcome | None]], listed: int) -> None:
    counts = {a: sum(1 for action, _, _ in done if action == a) for a in ("kept", "archived", "deleted")}
    counts["kept"] += listed - len(done)
    out.print(", ".join(f"{plural(n, 'idea')} {a}" for a, n in counts.items() if n) + f" ({dt.date.today()})")
    for action, item, outcome in done:
        if outcome is None:
            continue
        where = f" → {escape(outcome.path.rsplit('/', 1)[0])}/" if outcome.path else f" ({escape(item.folder)}/)"
        out.print(f"  {action} {escape(item.slug)}{where}")
        _render_outcome(outcome, "    ")
