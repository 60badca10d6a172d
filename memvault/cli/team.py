"""`memvault team`: team memory through the team's PostgreSQL — init-db, member add, publish, pull, push, status."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click
from rich.markup import escape

from memvault.errors import MemvaultError
from memvault.team import status as team_status
from memvault.team.outbox import TeamState

from .group import State, cli, err, json_option, out, pass_state, print_json

CONNECT_S = 5.0  # a person waits this long for the server before their publish is queued
PULL_WAIT_S = 600.0  # a pull waits this long for another one of the same vault (a session start's) to finish


@cli.group()
def team() -> None:
    """Team memory: publish notes to your team's PostgreSQL, pull the team's notes into a read-only mirror.

    Credentials come from libpq's own places (the service file, PGPASSFILE, PG* variables), never from
    the vault or memvault's config. See the how-to "Join a team and share notes".
    """


@contextmanager
def _talking(what: str) -> Iterator[None]:
    """The server going away mid-command (a restart, the network) is one line, not a traceback."""
    import psycopg

    try:
        yield
    except psycopg.Error as exc:
        raise MemvaultError(
            f"{what} stopped: the team's server went away ({_line(exc)}); what was done is kept, run it again",
            code="team-offline",
        ) from None


def _need(state: State) -> Any:
    vault = state.vault
    if not team_status.available():
        raise MemvaultError("team memory needs the team extra: pip install 'memvault[team]'", code="team-missing")
    if not team_status.configured(vault.config):
        raise MemvaultError(
            "team memory is not configured: set team.service (a libpq service name) in the config file",
            code="team-config",
        )
    return vault


def _admin_conn(state: State, conninfo: str | None) -> Any:
    from memvault.team import db

    if conninfo:
        import psycopg

        if "password" in conninfo.lower():
            raise MemvaultError("no password in --conninfo: put it in PGPASSFILE or the service file", code="usage")
        return psycopg.connect(conninfo, connect_timeout=int(CONNECT_S))
    vault = _need(state)
    return db.connect(db.settings_from(vault.config), timeout_s=CONNECT_S)


@team.command("init-db")
@click.option("--conninfo", metavar="CONNINFO", help="libpq connection string of an admin (default: team.service).")
@pass_state
def init_db(state: State, conninfo: str | None) -> None:
    """Create or upgrade memvault's schema in the team's database (idempotent; run as its owner)."""
    from memvault.team import schema

    with _talking("init-db"):
        conn = _admin_conn(state, conninfo)
        try:
            applied = schema.init_db(conn)
        finally:
            conn.close()
    out.print(f"schema up to date{f' (applied {applied})' if applied else ''}")


@team.group("member")
def member() -> None:
    """Add or remove a member's database role (an admin command)."""


@member.command("add")
@click.argument("role")
@click.option("--team", "teams", multiple=True, required=True, help="A team the member joins (repeat for several).")
@click.option("--password", is_flag=True, help="Ask for a login password for the role (else set it yourself).")
@click.option("--conninfo", metavar="CONNINFO", help="libpq connection string of an admin (default: team.service).")
@pass_state
def member_add(state: State, role: str, teams: tuple[str, ...], password: bool, conninfo: str | None) -> None:
    """Create the login role ROLE (or update it) and put it in each --team."""
    from memvault.team import admin

    secret = click.prompt("password", hide_input=True, confirmation_prompt=True, err=True) if password else None
    with _talking("member add"):
        conn = _admin_conn(state, conninfo)
        try:
            admin.add_member(conn, role, list(teams), password=secret)
        finally:
            conn.close()
    out.print(f"member {escape(role)} in {', '.join(escape(t) for t in teams)}")


@member.command("remove")
@click.argument("role")
@click.option("--team", "teams", multiple=True, help="Leave only this team (repeat); without it, every team.")
@click.option("--conninfo", metavar="CONNINFO", help="libpq connection string of an admin (default: team.service).")
@pass_state
def member_remove(state: State, role: str, teams: tuple[str, ...], conninfo: str | None) -> None:
    """Take ROLE out of each --team (or out of every team and team memory); what it published stays."""
    from memvault.team import admin

    with _talking("member remove"):
        conn = _admin_conn(state, conninfo)
        try:
            admin.remove_member(conn, role, list(teams) or None)
        finally:
            conn.close()
    out.print(f"member {escape(role)} removed from {', '.join(escape(t) for t in teams) or 'team memory'}")


@team.command()
@click.argument("note")
@click.option("--team", "team_name", metavar="NAME", help="The team to share it with.")
@click.option("--org", is_flag=True, help="Share it with every member of the database instead of one team.")
@json_option
@pass_state
def publish(state: State, note: str, team_name: str | None, org: bool, as_json: bool) -> None:
    """Send NOTE (a vault-relative path) to the team: private notes refused, private spans, secrets, local paths
    and user names kept home. Queued in the state folder first: with the server down it goes out later."""
    from memvault.team import push

    if bool(team_name) == org:
        raise MemvaultError("give --team NAME or --org", code="usage")
    vault = _need(state)
    tstate = TeamState(vault.root)
    entry = push.prepare_publish(vault, tstate, note, scope="org" if org else "team", team=team_name)
    connect = team_status.connector(vault.config, CONNECT_S)
    result = push.publish(vault, tstate, entry, connect, queue=vault.config.team.publish_queue)
    _print_sent(result, as_json, redacted=entry.redacted)


@team.command()
@json_option
@pass_state
def pull(state: State, as_json: bool) -> None:
    """Bring the team's and the org's entries into MemoryVault/team/ (incremental; sends queued publishes first)."""
    from memvault.team import mirror, push

    vault = _need(state)
    tstate = TeamState(vault.root)
    connect = team_status.connector(vault.config, CONNECT_S)
    sent = push.flush(vault, tstate, connect)
    try:
        conn = connect()
    except Exception as exc:
        tstate.record_pull(cursor=None, error=f"cannot reach the server: {_line(exc)}")
        raise MemvaultError(f"cannot reach the team's server: {_line(exc)}", code="team-offline") from None
    try:
        with _talking("the pull"):
            report = mirror.pull(vault, conn, tstate, mirror=vault.config.team.mirror, wait_s=PULL_WAIT_S)
    finally:
        conn.close()
    if as_json:
        print_json({**dataclasses.asdict(report), "sent": sent.sent, "queued": sent.queued})
        return
    if report.busy:
        raise MemvaultError("another pull of this vault is still running; try again when it ends", code="busy")
    out.print(
        f"pulled {report.changes} change(s): {len(report.written)} written, {len(report.removed)} removed, "
        f"{report.vectors} vector(s) imported; cursor {report.cursor}"
    )
    for rel in report.kept_local:
        err.print(f"[yellow]kept your edit:[/] {rel} (run `memvault team push` to propose it)")
    for line in report.refused:
        err.print(f"[yellow]not mirrored:[/] {escape(line)}")


@team.command()
@json_option
@pass_state
def push(state: State, as_json: bool) -> None:
    """Propose your edits to mirrored team notes as new versions; a conflict keeps both and asks (in review)."""
    from memvault.team import push as push_mod

    vault = _need(state)
    with _talking("the push"):
        result = push_mod.push(
            vault,
            TeamState(vault.root),
            team_status.connector(vault.config, CONNECT_S),
            mirror_mode=vault.config.team.mirror,
        )
    _print_sent(result, as_json)


@team.command()
@click.argument("note")
@pass_state
def delete(state: State, note: str) -> None:
    """Delete the team entry mirrored at NOTE for everyone (a tombstone every member's pull follows; the
    server keeps its versions and the audit). Refused when someone changed it since your last pull."""
    from memvault.team import push as push_mod

    vault = _need(state)
    connect = team_status.connector(vault.config, CONNECT_S)
    with _talking("the delete"):
        version = push_mod.delete(vault, TeamState(vault.root), note, connect, mirror_mode=vault.config.team.mirror)
    out.print(f"deleted for the team: {escape(note)} (tombstone, version {version})")


@team.command("status")
@json_option
@pass_state
def status_cmd(state: State, as_json: bool) -> None:
    """When the last pull was and why it failed, queued publishes, conflicts, mirrored entries (no network)."""
    report = team_status.status(state.vault)
    if as_json:
        print_json(dataclasses.asdict(report))
        return
    out.print(escape(report.line()))
    out.print(f"mirrored entries: {report.mirrored}; cursor {report.cursor}")


def _print_sent(
    result: Any, as_json: bool, redacted: list[str] | None = None, *, exit_on_conflict: bool = True
) -> None:
    if as_json:
        print_json(dataclasses.asdict(result))
    else:
        for rel, version in result.sent:
            out.print(f"published: [bold]{escape(rel)}[/] (version {version})")
        for rel in result.queued:
            out.print(f"queued: {escape(rel)} (server not reachable: it goes out with the next publish, push or pull)")
        for rel, copy in result.conflicts:
            err.print(
                f"[yellow]conflict:[/] {escape(rel)} changed on the server first; your edit is kept as {escape(copy)}. "
                "Merge it into the team note and run `memvault team push` again, or reject it in `memvault review`."
            )
        for rel, why in result.refused:
            err.print(f"[red]refused:[/] {escape(rel)}: {escape(why)}")
        if redacted:
            err.print(f"[yellow]warning:[/] secrets were redacted before sending ({', '.join(redacted)})")
        if result.error and result.queued:
            err.print(f"[yellow]why:[/] {escape(result.error)}")
    if (result.conflicts or result.refused) and exit_on_conflict:
        sys.exit(1)


def _line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def recall_team(state: State, query: str, k: int, as_json: bool) -> None:
    """`memvault recall --team`: the server's hybrid search, floored as locally; what this member may read."""
    from memvault.team import remote

    vault = _need(state)
    with _talking("the team search"):
        try:
            hits, mode = remote.search(vault, query, k, timeout_s=CONNECT_S)
        except MemvaultError as exc:
            if exc.code != "team-unavailable":
                raise
            raise MemvaultError(f"{exc.args[0]}", code="team-offline") from None
    if as_json:
        print_json({"mode": mode, "hits": [dataclasses.asdict(h) for h in hits]})
        return
    for rank, hit in enumerate(hits, 1):
        where = f" → {escape(hit.mirrored)}" if hit.mirrored else ""
        out.print(f"{rank}. [bold]{escape(hit.title)}[/] ({escape(hit.team)}, v{hit.version} by {escape(hit.author)})"
                  f"{where}")  # fmt: skip
        out.print(f"   [dim]{escape(hit.snippet)}[/]")
    out.print(f"[dim]{len(hits)} team entr{'y' if len(hits) == 1 else 'ies'}, {mode} search on the server[/]")


def publish_reviewed(vault: Any, rel: str) -> None:
    """Review's "publish to team": the approved entry goes through `team publish` (the team asked when several)."""
    from memvault.team import push

    teams = list(vault.config.team.teams)
    if len(teams) == 1:
        name = teams[0]
    else:
        name = click.prompt("publish to which team (or 'org' for everyone)", type=click.Choice([*teams, "org"]))
    tstate = TeamState(vault.root)
    scope = "org" if name == "org" else "team"
    try:
        entry = push.prepare_publish(vault, tstate, rel, scope=scope, team=None if scope == "org" else name)
        connect = team_status.connector(vault.config, CONNECT_S)
        result = push.publish(vault, tstate, entry, connect, queue=vault.config.team.publish_queue)
    except MemvaultError as exc:  # approved and kept; only the publish was refused (a secret, private, offline)
        err.print(f"[yellow]not published:[/] {escape(str(exc))}")
        return
    _print_sent(result, False, redacted=entry.redacted, exit_on_conflict=False)  # the review goes on
