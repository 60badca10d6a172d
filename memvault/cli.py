"""The `memvault` command line: a thin click layer over the library, rendered with rich or as JSON."""

from __future__ import annotations

import dataclasses
import json
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from . import __version__, notes
from . import config as config_mod
from .errors import MemvaultError
from .vault import Vault, WriteResult, open_vault

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)


class _Group(click.Group):
    """Maps every MemvaultError, once, to a clear message and exit code 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemvaultError as exc:
            if exc.code == "usage":
                raise click.UsageError(exc.args[0]) from None
            raise click.ClickException(str(exc)) from None


class _State:
    def __init__(self, vault_path: str | None) -> None:
        self.vault_path = vault_path
        self._vault: Vault | None = None

    @property
    def vault(self) -> Vault:
        if self._vault is None:
            self._vault = open_vault(self.vault_path)
        return self._vault


pass_state = click.make_pass_decorator(_State)
json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--vault",
    "vault_path",
    envvar="MEMVAULT_VAULT",
    metavar="PATH",
    help="The Obsidian vault (default: $MEMVAULT_VAULT, then the config file).",
)
@click.version_option(__version__, prog_name="memvault")
@click.pass_context
def cli(ctx: click.Context, vault_path: str | None) -> None:
    """MemoryVault: permanent, human-editable memory for coding agents, kept in your Obsidian vault."""
    ctx.obj = _State(vault_path)


@cli.command()
@click.argument("path", required=False, type=click.Path(file_okay=False, path_type=Path))
@json_option
@pass_state
def init(state: _State, path: Path | None, as_json: bool) -> None:
    """Create the MemoryVault/ folders in a vault and record the vault in the config.

    PATH defaults to --vault. Safe to run again: existing folders and notes are left alone.
    """
    root = path or (Path(state.vault_path) if state.vault_path else None)
    if root is None:
        raise click.UsageError("give the vault folder: memvault init PATH")
    if not root.is_dir():
        raise MemvaultError(f"{root} is not a folder: create the Obsidian vault first", code="no_vault")
    vault = open_vault(root)
    created = vault.init_structure()
    cfg_path = config_mod.write_vault_root(vault.root)
    if as_json:
        _print_json({"vault": str(vault.root), "created": created, "config": str(cfg_path)})
        return
    for rel in created:
        out.print(f"created [bold]{rel}/[/]")
    out.print(
        f"vault [bold]{vault.root}[/] is ready ({'nothing to create' if not created else f'{len(created)} folders'});"
        f" config: {cfg_path}"
    )


@cli.command()
@click.argument("kind")
@click.argument("slug")
@click.argument("body", required=False)
@click.option("--group", "-g", help="Group folder under MemoryVault/ (default: personal-private).")
@click.option("--tag", "-t", "tags", multiple=True, help="A tag (repeatable).")
@click.option("--always-load", is_flag=True, help="Load this entry at every session start.")
@click.option("--private", is_flag=True, help="Never inject this entry into agent context.")
@click.option("--replace", is_flag=True, help="Overwrite an existing entry in place (keeps created and unknown keys).")
@click.option("--source", default="manual", show_default=True, help="Provenance: a session id, or manual.")
@click.option("--confidence", type=click.Choice(["high", "medium", "low"]), help="Confidence at capture.")
@json_option
@pass_state
def save(
    state: _State,
    kind: str,
    slug: str,
    body: str | None,
    group: str | None,
    tags: tuple[str, ...],
    always_load: bool,
    private: bool,
    replace: bool,
    source: str,
    confidence: str | None,
    as_json: bool,
) -> None:
    """Write an entry to MemoryVault/<group>/<kind>/<slug>.md.

    BODY is the markdown text; omit it or give - to read standard input. A body that starts with
    its own frontmatter contributes those keys.

    \b
    Example:
      memvault save preference pytest-style "Use plain asserts and fixtures." -t python
    """
    text = _body(body)
    result = state.vault.save(
        kind,
        slug,
        text,
        group=group,
        tags=tags,
        always_load=always_load,
        private=private,
        replace=replace,
        source=source,
        confidence=confidence,
    )
    _report(result, as_json)


@cli.command()
@click.argument("old_path")
@click.argument("content", required=False)
@click.option("--reason", "-r", required=True, help="Why the old entry is outdated (recorded in the new one).")
@click.option("--slug", help="Give the new entry another slug (default: it takes the old entry's place).")
@click.option("--tag", "-t", "tags", multiple=True, help="Replace the tags (repeatable; default: keep the old ones).")
@click.option("--outside", is_flag=True, help="Allow evolving a note outside MemoryVault/.")
@json_option
@pass_state
def evolve(
    state: _State,
    old_path: str,
    content: str | None,
    reason: str,
    slug: str | None,
    tags: tuple[str, ...],
    outside: bool,
    as_json: bool,
) -> None:
    """Supersede OLD_PATH atomically with new CONTENT (or - / standard input).

    The new entry records `supersedes:`; the old one moves to _archive/ with `status: superseded`
    and `superseded_by:`. A crash at any moment leaves either the whole old or the whole new state.
    """
    result = state.vault.evolve(old_path, _body(content), reason=reason, slug=slug, tags=tags or None, outside=outside)
    _report(result, as_json)


@cli.command()
@json_option
@pass_state
def undo(state: _State, as_json: bool) -> None:
    """Revert the last memvault change with `git revert` (the vault must be a git repository)."""
    _report(state.vault.undo(), as_json)


@cli.command(name="list")
@click.option("--group", "-g", help="Only this group.")
@click.option("--kind", "-k", help="Only this kind.")
@click.option("--status", "-s", help="Only this status (active, superseded, …).")
@click.option("--all", "everything", is_flag=True, help="Include your own notes outside MemoryVault/.")
@json_option
@pass_state
def list_(
    state: _State, group: str | None, kind: str | None, status: str | None, everything: bool, as_json: bool
) -> None:
    """List entries with their kind, status and group."""
    entries = state.vault.list(scope="all" if everything else "memory", group=group, kind=kind, status=status)
    if as_json:
        _print_json([dataclasses.asdict(e) for e in entries])
        return
    table = Table("path", "kind", "status", "tags", box=None)
    for e in entries:
        table.add_row(e.path, e.kind or "", e.status + (" (private)" if e.private else ""), ", ".join(e.tags))
    out.print(table)
    out.print(f"{len(entries)} entries")


@cli.command()
@click.argument("path")
@json_option
@pass_state
def show(state: _State, path: str, as_json: bool) -> None:
    """Print one note (vault-relative PATH)."""
    nf = state.vault.read(path)
    if as_json:
        _print_json(
            {
                "path": nf.path,
                "title": nf.title,
                "meta": dict(nf.note.meta),
                "body": nf.note.body,
                "error": nf.note.error,
                "mtime_ns": nf.mtime_ns,
            }
        )
        return
    if nf.note.error:
        err.print(f"[yellow]warning:[/] frontmatter is not valid YAML: {nf.note.error}")
    click.echo(notes.dump(nf.note), nl=False)  # exactly the file, fences and line endings included


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
@json_option
@pass_state
def recall(
    state: _State,
    query: tuple[str, ...],
    k: int | None,
    group: str | None,
    include_inbox: bool,
    include_private: bool,
    wait: float,
    as_json: bool,
) -> None:
    """Find the entries most relevant to QUERY: meaning (vectors) and words (keywords) combined.

    Only active entries are searched; superseded ones, private notes and the inbox/review folders
    are left out unless asked for. Alias: `memvault search`.
    """
    vault = state.vault
    spinner = err.status("waiting for the embedding service…") if wait > 0 and not as_json else nullcontext()
    with spinner:
        result = vault.recall(" ".join(query), k, group=group, include_inbox=include_inbox,
                              include_private=include_private, wait_service=wait)  # fmt: skip
    if as_json:
        _print_json(result.as_dict())
        return
    table = Table("#", "score", "vec", "kw", "entry", box=None)
    for rank, hit in enumerate(result.hits, 1):
        section = f" › {hit.heading}" if hit.heading and hit.heading != hit.title else ""
        where = f"[bold]{escape(hit.title)}[/]  [dim]{escape(hit.path + section)}[/]"
        table.add_row(str(rank), f"{hit.score:.3f}", f"{hit.vec_score:.2f}", f"{hit.kw_score:.2f}",
                      f"{where}\n{escape(hit.snippet)}")  # fmt: skip
    out.print(table)
    out.print(f"[dim]{len(result.hits)} entries, {result.mode} search, {result.ms:.0f} ms[/]")
    if result.reason:
        err.print(f"[yellow]note:[/] {result.reason}")


cli.add_command(recall, name="search")


@cli.command()
@click.option("--full", is_flag=True, help="Forget the index and rebuild it from every note (re-embeds everything).")
@click.option("--keyword-only", is_flag=True, help="Update notes and keywords only; leave embedding for later.")
@json_option
@pass_state
def reindex(state: _State, full: bool, keyword_only: bool, as_json: bool) -> None:
    """Bring the search index up to date with your notes (only changed notes are re-read and re-embedded).

    Notes edited in Obsidian are picked up here and by the hooks in the background; run this after
    changing the embedding model, or with --full if search results look stale.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    vault = state.vault
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=True, disable=as_json) as bar:
        tasks: dict[str, Any] = {}

        def progress(phase: str, done: int, total: int) -> None:
            if phase not in tasks:
                label = "reading notes" if phase == "scan" else "embedding"
                tasks[phase] = bar.add_task(label, total=total)
            bar.update(tasks[phase], completed=done, total=total)

        report = vault.reindex(full=full, vectors="none" if keyword_only else "auto", progress=progress)
    if as_json:
        _print_json({**dataclasses.asdict(report), "index": str(vault.index_file)})
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
    from . import client, service

    settings = config_mod.load().embedding
    idle = idle_minutes or settings.service_idle_minutes
    if action == "status":
        info = client.status()
        if as_json:
            _print_json(info or {"running": False})
        elif info is None:
            out.print("not running")
        else:
            out.print(f"running: pid {info.get('pid')}, model {info.get('model')} (dim {info.get('dim')}), "
                      f"{info.get('requests')} requests, idle exit after {info.get('idle_minutes')} min")  # fmt: skip
        return
    if action == "stop":
        stopped = client.stop()
        _print_json({"stopped": stopped}) if as_json else out.print("stopped" if stopped else "not running")
        return
    if action == "background":
        client.start(settings.model, idle)
        with err.status("loading the embedding model…"):
            info = client.wait_ready(120)
        if info is None:
            raise MemvaultError(f"the service did not start; see {client.log_file()}", code="service")
        _print_json(info) if as_json else out.print(f"running: pid {info.get('pid')}, model {info.get('model')}")
        return
    sys.exit(service.serve(settings.model, idle))


def _body(value: str | None) -> str:
    if value is not None and value != "-":
        return value
    if sys.stdin is None or sys.stdin.isatty():
        raise click.UsageError("give the content as an argument, or pipe it on standard input with -")
    return sys.stdin.read()


def _report(result: WriteResult, as_json: bool) -> None:
    if as_json:
        _print_json(dataclasses.asdict(result))
        return
    out.print(f"{result.op}: [bold]{result.path}[/]" + (f" (archived {result.archived})" if result.archived else ""))
    if result.commit:
        out.print(f"committed {result.commit[:10]}")
    if result.warning:
        err.print(f"[yellow]warning:[/] {result.warning}")


def _print_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


from . import cli_hooks  # noqa: E402,F401  (registers inspect)

# isort: split
from . import cli_reflect  # noqa: E402,F401  (registers reflect, review, inbox)

# isort: split
from . import cli_health  # noqa: E402,F401  (registers health)

# isort: split
from . import cli_ideas  # noqa: E402,F401  (registers promote, gc)

# isort: split
from . import cli_skills  # noqa: E402,F401  (registers index-skills, import-claude-memory)

# isort: split
from . import cli_install  # noqa: E402,F401  (registers install, uninstall)
