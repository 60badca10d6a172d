"""`memvault recall` (alias `search`), `reindex`, `serve`: finding notes, the index, the embedding service."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import time
from contextlib import nullcontext
from typing import Any

import click
from rich.markup import escape

from memvault import config as config_mod
from memvault.errors import MemvaultError
from memvault.text import plural

from .group import State, cli, err, json_option, out, pass_state, print_json
from .render import print_table


@cli.command()
@click.argument("query", nargs=-1, required=True)
@click.option("-k", "k", type=click.IntRange(1, 100), help="How many entries (default: recall.k in the config, 5).")
@click.option("--group", "-g", metavar="G", help="Only entries of this group.")
@click.option("--include-inbox", is_flag=True, help="Also search _inbox/ and _review/.")
@click.option(
    "--include-private", is_flag=True, help="Also show private notes (for your eyes; never paste into agent context)."
)
@click.option(
    "--wait",
    type=click.FloatRange(0, 600),
    default=30,
    show_default=True,
    help="Seconds to wait for the embedding service to start; 0 gives keyword-only results until it runs.",
)
@click.option(
    "--explain",
    is_flag=True,
    help="Show the prompt hook's view: what it would inject for QUERY as a prompt, and why each other entry is not.",
)
@click.option("--no-floor", is_flag=True, help="Show the top entries even below the relevance floor.")
@click.option("--team", "team", is_flag=True, help="Search the team's server instead (team and org entries).")
@json_option
@pass_state
def recall(
    state: State,
    query: tuple[str, ...],
    k: int | None,
    group: str | None,
    include_inbox: bool,
    include_private: bool,
    wait: float,
    explain: bool,
    no_floor: bool,
    team: bool,
    as_json: bool,
) -> None:
    """Find the entries most relevant to QUERY: meaning (vectors) and words (keywords) combined.

    Only active entries are searched; superseded ones, private notes and the inbox/review folders
    are left out unless asked for. The entries shown are the ones the prompt hook and MCP give for
    the same words (one recall): entries below the relevance floor (`recall.min_relevance`) are not
    shown, nor the idea ledger, daily notes or skill entries without a strong reason; --explain says
    why each entry passed or not, --no-floor shows them all. `memvault search` does the same.
    """
    if team:
        from .team import recall_team

        return recall_team(state, " ".join(query), k or state.vault.config.recall.k, as_json)
    vault = state.vault
    spinner = err.status("waiting for the embedding service…") if wait > 0 and not as_json else nullcontext()
    with spinner:
        result = vault.recall(" ".join(query), k, group=group, include_inbox=include_inbox,
                              include_private=include_private, wait_service=wait, floor=not no_floor)  # fmt: skip
    result.hits, result.dropped = _redacted(result.hits), _redacted(result.dropped)
    if as_json:
        print_json(result.as_dict())
        return
    if explain:
        _explain(result)
        _hook_view(" ".join(query), result, vault.config.recall, k=k, floor=not no_floor)
    else:
        rows = []
        for rank, hit in enumerate(result.hits, 1):
            scores = (f"{hit.score:.3f}", f"{hit.vec_score:.2f}", f"{hit.kw_score:.2f}")
            rows.append((f"[bold]{escape(hit.path)}[/]", str(rank), *scores, _match(hit)))
        print_table(("entry", "#", "score", "vec", "kw", "match"), rows, wrap=(5,))
    below = f", {len(result.dropped)} below the relevance floor" if result.dropped else ""
    out.print(f"[dim]{plural(len(result.hits), 'entry')}{below}, {result.mode} search, {result.ms:.0f} ms[/]")
    if result.reason:
        err.print(f"[yellow]note:[/] {result.reason}")
    elif result.dropped and not explain:
        err.print("[dim]--explain shows why each entry passed or not; --no-floor shows them all[/]")


def _redacted(hits: list[Any]) -> list[Any]:
    """The hits with secret-shaped strings in their titles, headings, snippets and passages redacted."""
    from memvault.store import secrets

    def clean(text: str) -> str:
        return secrets.redact(text)[0] if text else text

    return [h._replace(title=clean(h.title), heading=clean(h.heading), snippet=clean(h.snippet),
                       passage=clean(h.passage)) for h in hits]  # fmt: skip


def _match(hit: Any) -> str:
    """A hit's title, heading and snippet, as the table's last column."""
    section = f" › {hit.heading}" if hit.heading and hit.heading != hit.title else ""
    return f"{escape(hit.title + section)}: [dim]{escape(hit.snippet)}[/]"


def _explain(result: Any) -> None:
    """Every hit of the top k, passed or not, with the raw signals the floor judged: the ones passed first, in the
    order the hook gives them, then the others in the order fusion ranked them."""
    rows = []
    ranked = [*result.hits, *sorted(result.dropped, key=lambda h: -h.score)]
    for rank, hit in enumerate(ranked, 1):
        passed = hit in result.hits
        verdict = f"[green]passed[/]: {escape(hit.why)}" if passed else f"[red]below the floor[/]: {escape(hit.why)}"
        cosine = "–" if hit.cosine is None else f"{hit.cosine:.2f}"
        words = f"{hit.coverage:.2f}\n{hit.shared_words} word{'s' if hit.shared_words != 1 else ''}"
        rows.append((f"[bold]{escape(hit.path)}[/]", str(rank), cosine, words,
                     "yes" if hit.identifier else "", f"{_match(hit)}\n{verdict}"))  # fmt: skip
    print_table(("entry", "#", "cosine", "keywords", "exact", "match"), rows, wrap=(5,))


def _hook_view(prompt: str, result: Any, settings: Any, *, k: int | None, floor: bool) -> None:
    """What the prompt hook would do with this query as a prompt (in a new session: nothing given yet)."""
    from memvault.recall import eligible

    skipped = eligible.skip_reason(prompt, settings.min_prompt_chars)
    if skipped:
        out.print(f"the prompt hook would skip this prompt: {escape(skipped)}")
        return
    from memvault.recall import passages
    from memvault.store import secrets

    def clean(text: str) -> str:
        return secrets.redact(text)[0] if text else text

    # the hook's own text: its k hits, each with its passage, within recall.max_context_chars
    context, kept = passages.context([h.as_dict() for h in result.hits[: settings.k]], settings.max_context_chars,
                                     clean)  # fmt: skip
    given = [str(h["title"]) for h in kept]
    said = f": {escape(', '.join(given))}" if given else ""
    out.print(f"the prompt hook would inject {plural(len(given), 'entry')}{said}")
    if context:
        out.print(escape(context), highlight=False, soft_wrap=True)
    if not floor or (k is not None and k != settings.k):
        out.print(f"[dim](the hook recalls with the floor and k = {settings.k}: run without -k and --no-floor to see"
                  " exactly its view)[/]")  # fmt: skip
    if result.mode != "hybrid" and result.partial:
        out.print("[dim](keyword-only here; the hook too is keyword-only while the embedding service is not up)[/]")


search = click.Command(
    "search",
    params=recall.params,
    callback=recall.callback,
    help="The same as `memvault recall` (find the entries most relevant to QUERY); see `memvault recall --help`.",
    short_help="Alias of `memvault recall`.",
)
cli.add_command(search)


@cli.command()
@click.option("--full", is_flag=True, help="Forget the index and rebuild it from every note (re-embeds everything).")
@click.option("--keyword-only", is_flag=True, help="Update notes and keywords only; leave embedding for later.")
@click.option("--wait", "wait", is_flag=True, help="If another reindex of the vault runs, wait for it, then catch up.")
@json_option
@pass_state
def reindex(state: State, full: bool, keyword_only: bool, wait: bool, as_json: bool) -> None:
    """Bring the search index up to date with your notes (only changed notes are re-read and re-embedded).

    Notes edited in Obsidian are picked up here and by the hooks in the background; run this after
    changing the embedding model, or with --full if search results look stale. When another reindex
    of the vault is running it says so at once and, in a terminal, offers to wait (--wait waits).
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from memvault.vault.indexing import ReindexBusy

    vault = state.vault
    ask = not (wait or as_json) and sys.stdin is not None and sys.stdin.isatty()

    def waiting(who: str) -> None:
        err.print(f"another reindex of this vault is running ({escape(who)}); waiting for it to finish…")

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("{task.fields[rate]}"))  # fmt: skip
    quiet = as_json or not err.is_terminal  # no bar (and no stray blank line) in a pipe or a log
    lines = _ProgressLines(vault.root) if quiet and not as_json else None  # there, plain lines instead
    with Progress(*columns, console=err, transient=True, disable=quiet) as bar:
        tasks: dict[str, Any] = {}

        def progress(phase: str, done: int, total: int) -> None:
            if lines is not None:
                lines.update("reading notes" if phase == "scan" else "embedding", done, total)
            if phase not in tasks:
                label = "reading notes" if phase == "scan" else "embedding"
                tasks[phase] = bar.add_task(label, total=total, rate="", started_at=time.monotonic())
            task = tasks[phase]
            bar.update(task, completed=done, total=total, rate=_rate(bar.tasks[task].fields["started_at"], done, total))

        options: dict[str, Any] = {"full": full, "vectors": "none" if keyword_only else "auto", "progress": progress}
        try:
            report = vault.reindex(**options, wait=WAIT_FOR_REINDEX_S if wait else 0, on_wait=waiting)
        except ReindexBusy as exc:
            if not ask:
                raise MemvaultError(f"{exc}: `memvault reindex --wait` waits for it", code="busy") from None
            bar.stop()
            if not click.confirm(f"{exc}. Wait for it to finish, then catch up?", default=True, err=True):
                err.print("nothing done: the running reindex brings the index up to date")
                raise click.exceptions.Exit(1) from None
            bar.start()
            report = vault.reindex(**options, wait=WAIT_FOR_REINDEX_S, on_wait=waiting)
    if as_json:
        print_json({**dataclasses.asdict(report), "index": str(vault.index_file)})
        return
    if report.rebuilt:
        err.print(f"[yellow]warning:[/] {report.rebuilt}")
    out.print(
        f"{report.scanned} notes: {report.added} added, {report.updated} updated, {report.removed} removed, "
        f"{report.unchanged} unchanged; {report.embedded} embedded"
        + (f" with {report.model}" if report.model else "")
        + f" in {report.seconds:.1f}s"
    )
    if report.pending:
        out.print(f"{report.pending} notes still wait for vectors (keyword search finds them meanwhile)")
    for line in report.warnings:
        err.print(f"[yellow]warning:[/] {line}")


PROGRESS_EVERY_S = 10.0  # in a pipe or a log: a progress line this often, besides each phase's first and last


class _ProgressLines:
    """Reindex progress as plain lines on standard error, for a pipe or a log where a bar cannot redraw:
    `reindexing VAULT…` with the first batch of work (a reindex found busy says only that), then each phase's
    first batch (`reading notes: 200 of 1200, 900 notes/s, 0:01 left`), one line every PROGRESS_EVERY_S and
    its last. A phase is timed from the end of the one before (the first, from the start)."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self.since = time.monotonic()
        self.started: dict[str, float] = {}
        self.said: dict[str, float] = {}
        self.ended: set[str] = set()

    def update(self, label: str, done: int, total: int) -> None:
        now = time.monotonic()
        if not self.started:
            err.print(f"reindexing {escape(str(self.root))}…", soft_wrap=True)
        if label not in self.started:
            self.started[label] = self.since
        elif label in self.ended or (done < total and now - self.said[label] < PROGRESS_EVERY_S):
            return
        self.said[label] = now
        if done >= total:
            self.ended.add(label)
            self.since = now
        rate = _rate(self.started[label], done, total, at_least=0.0)
        err.print(f"{label}: {done} of {total}" + (f", {rate}" if rate else ""), soft_wrap=True)


WAIT_FOR_REINDEX_S = 6 * 3600  # `--wait`: as long as a reindex of a big vault on a slow machine can take


def _rate(started: float, done: int, total: int, at_least: float = 1.0) -> str:
    """ "120 notes/s, 2:05 left" for the progress bar, once there is something to measure (`at_least` seconds)."""
    elapsed = time.monotonic() - started
    if done <= 0 or elapsed <= 0 or elapsed < at_least:
        return ""
    rate = done / elapsed
    left = int((total - done) / rate) if rate > 0 else 0
    return f"{rate:.0f} notes/s, {left // 60}:{left % 60:02d} left" if done < total else f"{rate:.0f} notes/s"


@cli.command()
@click.option("--stop", "action", flag_value="stop", help="Stop the running service.")
@click.option("--status", "action", flag_value="status", help="Show whether it runs, with which model.")
@click.option("--background", "action", flag_value="background", help="Start it detached and wait until ready.")
@click.option("--idle-minutes", type=click.FloatRange(0.01), help="Exit after this long unused (default: config).")
@json_option
def serve(action: str | None, idle_minutes: float | None, as_json: bool) -> None:
    """Run the warm embedding service that keeps the model loaded for fast semantic recall.

    One per user, reachable only by you (a Unix socket in a private folder; loopback TCP with a
    token on Windows). The hooks start it on demand and it exits after being idle, so you rarely
    need this command. Without options it runs in the foreground until Ctrl-C.
    """
    from memvault.recall import client

    settings = config_mod.load().embedding
    idle = idle_minutes or settings.service_idle_minutes
    if action == "status":
        info = client.status()
        if as_json:
            print_json(info or {"running": False})
        elif info is None:
            out.print("not running")
        else:
            out.print(f"running: pid {info.get('pid')}, model {info.get('model')} (dim {info.get('dim')}), "
                      f"{info.get('requests')} requests, idle exit after {info.get('idle_minutes')} min")  # fmt: skip
        return
    if action == "stop":
        stopped = client.stop()
        print_json({"stopped": stopped}) if as_json else out.print("stopped" if stopped else "not running")
        return
    if action == "background":
        client.start(settings.model, idle)
        with err.status("loading the embedding model…"):
            info = client.wait_ready(120)
        if info is None:
            raise MemvaultError(f"the service did not start; see {client.log_file()}", code="service")
        print_json(info) if as_json else out.print(f"running: pid {info.get('pid')}, model {info.get('model')}")
        return
    # The same entry point as the background start (it adds the prompt hook's op), in the foreground.
    command = [sys.executable, "-m", client.ENTRY, "--model", settings.model, "--idle-minutes", str(idle)]
    try:
        sys.exit(subprocess.call(command))
    except KeyboardInterrupt:  # the service got Ctrl-C as well and stops by itself
        sys.exit(130)


@cli.command()
def mcp() -> None:
    """Serve the vault to agents over the Model Context Protocol (stdio): recall, save, evolve, list, show, queues.

    Agents run this themselves; register it with `memvault install --mcp CLIENT`. It reads the same
    config as the CLI and follows the same rules: private notes are never given out, secrets are
    refused, every write is journalled and committed.
    """
    from memvault.mcpserver import server

    try:
        app = server.build()
    except ImportError as exc:
        raise MemvaultError(str(exc), code="missing") from None
    app.run("stdio")
