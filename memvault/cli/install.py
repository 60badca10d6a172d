"""`memvault install` and `uninstall`: connect Claude Code, Codex CLI, Gemini CLI or MCP clients, or undo it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from memvault import paths as paths_mod
from memvault.claude import installer, skillfile
from memvault.claude import uninstall as uninstall_mod
from memvault.errors import MemvaultError
from memvault.hosts import uninstall as hosts_uninstall

from . import agents
from .group import cli, err, json_option, out, print_json

_scope = click.option(
    "--scope",
    type=click.Choice(["user", "project"]),
    default="user",
    show_default=True,
    help="user: ~/.claude (or $CLAUDE_CONFIG_DIR); project: <project>/.claude.",
)
_project = click.option(
    "--project",
    type=click.Path(file_okay=False, path_type=Path),
    help="The project folder for --scope project (default: the current folder).",
)
_dry_run = click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")


@cli.command()
@agents.host_option
@agents.mcp_option
@agents.trust_option
@agents.enable_option
@agents.approve_option
@click.option(
    "--vault",
    "vault",
    type=click.Path(file_okay=False, path_type=Path),
    help="The Obsidian vault: recorded in the config, MemoryVault/ folders created (default: the configured one).",
)
@click.option(
    "--skill-name",
    default=skillfile.DEFAULT_SKILL,
    show_default=True,
    help="The skill's slash command. 'memory' clashes with Claude Code's built-in /memory.",
)
@click.option(
    "--web/--no-web",
    "web",
    default=None,
    help="Let your own agent use the web (idea research, skill discovery) within a budget; asked on a terminal.",
)
@_scope
@_project
@_dry_run
@json_option
def install(
    host: str | None,
    mcp: tuple[str, ...],
    trust_hooks: bool | None,
    enable_hooks: bool | None,
    approve_tools: bool | None,
    vault: Path | None,
    skill_name: str,
    web: bool | None,
    scope: str,
    project: Path | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Connect an agent: Claude Code by default (five hooks in settings.json, and the skill).

    --host codex or gemini merges memvault's hooks into that CLI's config instead (all: every
    agent found on this machine); --mcp CLIENT registers the `memvault mcp` server with a client
    that reads a config file (codex, gemini, claude-code, claude-desktop, cursor; repeatable).

    The hooks run this Python by absolute path (exec form, no shell). Other tools' hooks and every
    other setting are left as they are; the settings file is backed up to
    settings.json.memvault-backup before the first change. Safe to run again: an install from a moved
    environment replaces the old hook entries. Nothing in the vault is changed except creating
    missing MemoryVault/ folders.

    \b
    Examples:
      memvault install --vault ~/Obsidian
      memvault install --dry-run
      memvault install --scope project --project . --skill-name mem
      memvault install --host codex --trust-hooks
      memvault install --host all --mcp codex --mcp gemini
    """
    results = []
    for name in agents.hosts_of(host, mcp):
        if name == "claude-code":
            results.append(_install_claude(vault, skill_name, scope, project, dry_run, as_json))
        else:
            results.append(agents.install_host(name, trust_hooks, enable_hooks, vault, dry_run, as_json))
    results += [agents.install_mcp(client, approve_tools, dry_run, as_json) for client in agents.mcp_clients(mcp)]
    _web_answer(web, dry_run, as_json)
    if as_json:
        print_json(results[0] if len(results) == 1 else {"results": results, "dry_run": dry_run})


def _install_claude(
    vault: Path | None, skill_name: str, scope: str, project: Path | None, dry_run: bool, as_json: bool
) -> dict[str, Any]:
    target = installer.Target.of(scope, project)
    plan = installer.plan_install(target, skill_name=skill_name, vault=vault)
    if not dry_run and plan.changed:
        installer.apply(plan)
    result = {**plan.as_dict(), "dry_run": dry_run}
    if as_json:
        return result
    for warning in plan.warnings:
        err.print(f"[yellow]warning:[/] {escape(warning)}")
    if not plan.changed:
        out.print(f"already installed: {escape(str(target.settings))} and skill /{escape(skill_name)} are up to date")
        _next_step(plan)
        return result
    verb = "would " if dry_run else ""
    settings = escape(str(target.settings))
    for event in plan.merge.added:
        out.print(f"{verb}add hook [bold]{event}[/] to {settings}")
    for event in plan.merge.updated:
        out.print(f"{verb}update hook [bold]{event}[/] in {settings}")
    if plan.writes_backup:
        out.print(f"{verb}back up the original to {escape(str(plan.backup))}")
    if plan.merge.added or plan.merge.updated:
        out.print(f"  hooks run: {escape(plan.interpreter)} {escape(str(installer.HOOKS_DIR))}/<hook>.py")
    for old in plan.stale_skills:
        out.print(f"{verb}remove the earlier skill {escape(str(old))}")
    if plan.skill_action != "unchanged":
        action = {"created": "install", "updated": "update"}[plan.skill_action]
        out.print(f"{verb}{action} skill [bold]/{escape(skill_name)}[/]: {escape(str(plan.skill_path))}")
    if plan.write_config:
        out.print(f"{verb}record the vault {escape(str(plan.vault))} in {escape(str(paths_mod.config_file()))}")
    for folder in plan.vault_folders:
        out.print(f"{verb}create {escape(folder)}/")
    if dry_run:
        out.print("dry run: nothing was written")
    else:
        out.print("installed; Claude Code picks up the hooks in new sessions")
    out.print(_reflection_line(), soft_wrap=True)
    _next_step(plan)
    return result


def _reflection_line() -> str:
    """One line: reflection uses the user's own Claude Code, and how to turn that off."""
    from memvault import config as config_mod

    try:
        settings = config_mod.load().reflection
    except MemvaultError:
        return "reflection: see `memvault health` for which miner runs"
    where = escape(str(paths_mod.config_file()))
    if settings.miner == "offline":
        return f"reflection mines finished sessions offline (reflection.miner: offline in {where})"
    return (
        f"reflection mines finished sessions with your Claude Code (`{escape(settings.claude_command)} -p`, model "
        f"{escape(settings.claude_model)}, at most {settings.claude_calls_per_day} calls a day); to keep it offline, "
        f"set reflection.miner: offline in {where}"
    )


WEB_QUESTION = (
    "Let your own coding agent use the web, within a budget (5 minutes, 3 fetches a run, a few runs a day), to "
    "research the ideas you park and find skills worth adopting? It is sent an idea's own text or the listed "
    "addresses, never your notes; what it finds lands in review. memvault itself opens no connection."
)


def _web_answer(given: bool | None, dry_run: bool, as_json: bool) -> None:
    """Record yes or no to the web (discovery.web, ideas.research): the flag, else asked once on a terminal."""
    import sys

    import yaml

    from memvault import config as config_mod

    if dry_run:
        return
    if given is None:
        file = paths_mod.config_file()
        try:
            raw = yaml.safe_load(file.read_text(encoding="utf-8")) if file.exists() else None
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            return  # `memvault health` names a broken config; the question waits for a readable one
        section = raw.get("discovery") if isinstance(raw, dict) else None
        if (isinstance(section, dict) and "web" in section) or as_json or not sys.stdin.isatty():
            return  # answered at an earlier install, or no one to ask: the web stays as the config says (off)
        given = click.confirm(WEB_QUESTION, default=False, err=True)
    where = config_mod.write_keys({"discovery": {"web": given}, "ideas": {"research": "web" if given else "local"}})
    if not as_json:
        state = "on: your agent researches new ideas and reads the discovery sources" if given else "off"
        out.print(f"web research and discovery: {state} (discovery.web, ideas.research in {escape(str(where))})",
                  soft_wrap=True)  # fmt: skip


def _next_step(plan: installer.Plan) -> None:
    if plan.vault is None:
        out.print(
            "no vault is configured yet: run [bold]memvault init PATH[/] with your Obsidian vault "
            "(until then the hooks do nothing)"
        )


@cli.command()
@agents.host_option
@agents.mcp_option
@click.option(
    "--all",
    "everything",
    is_flag=True,
    help="Every registration memvault made on this machine: Claude Code (each scope and project recorded), "
    "Codex CLI, Gemini CLI and every MCP client.",
)
@_scope
@_project
@_dry_run
@json_option
def uninstall(
    host: str | None,
    mcp: tuple[str, ...],
    everything: bool,
    scope: str,
    project: Path | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Disconnect an agent: remove memvault's hooks (and skill) or MCP registration; the vault and the config stay.

    Only what memvault added is removed. When a file is otherwise unchanged since the install, its
    original bytes are put back (or it is deleted, if the install created it); changes you made in
    between are kept. Without --host or --mcp, Claude Code is disconnected; --all disconnects every
    agent memvault was connected to here (install.sh --uninstall runs it before removing the environment).
    """
    if everything:
        if host or mcp:
            raise MemvaultError("--all already includes every --host and --mcp; give one or the other", code="usage")
        results = _uninstall_everything(scope, project, dry_run, as_json)
        if as_json:
            print_json({"results": results, "dry_run": dry_run})
        return
    results = []
    for name in agents.hosts_of(host, mcp, found_only=False):
        if name == "claude-code":
            results.append(_uninstall_claude(installer.Target.of(scope, project), dry_run, as_json))
        else:
            results.append(agents.uninstall_host(name, dry_run, as_json))
    results += [agents.uninstall_mcp(client, dry_run, as_json) for client in agents.mcp_clients(mcp)]
    if as_json:
        print_json(results[0] if len(results) == 1 else {"results": results, "dry_run": dry_run})


def _uninstall_everything(scope: str, project: Path | None, dry_run: bool, as_json: bool) -> list[dict[str, Any]]:
    """`uninstall --all`: Claude Code's recorded targets (and the one --scope names), then every other agent's
    files; only what changes is shown."""
    targets = [installer.Target.of(scope, project), *uninstall_mod.recorded_targets()]
    results = []
    for target in {str(t.settings): t for t in targets}.values():
        if uninstall_mod.plan_uninstall(target).changed:
            results.append(_uninstall_claude(target, dry_run, as_json))
    for plan in hosts_uninstall.everywhere():  # each applied before the next is planned
        if plan.changed:
            results.append(agents.uninstall_plan(plan, dry_run, as_json))
    if not results and not as_json:
        out.print("nothing to uninstall: no agent on this machine has memvault's hooks, skill or MCP server")
    return results


def _uninstall_claude(target: installer.Target, dry_run: bool, as_json: bool) -> dict[str, Any]:
    removal = uninstall_mod.plan_uninstall(target)
    if not dry_run and removal.changed:
        uninstall_mod.apply_uninstall(removal)
    result = {**removal.as_dict(), "dry_run": dry_run}
    if as_json:
        return result
    if not removal.changed:
        out.print(f"nothing to uninstall: no memvault hooks in {escape(str(target.settings))} and no memvault skill")
        return result
    verb = "would " if dry_run else ""
    settings = escape(str(target.settings))
    for event in removal.events:
        out.print(f"{verb}remove hook [bold]{event}[/] from {settings}")
    action = {
        "restored": f"{verb}restore the original {settings} (byte for byte)",
        "rewritten": f"{verb}keep your other changes to {settings}",
        "deleted": f"{verb}delete {settings} (memvault created it)",
    }.get(removal.settings_action)
    if action:
        out.print(action)
    for skill in removal.skills:
        out.print(f"{verb}remove skill {escape(str(skill))}")
    if removal.backup_removed is not None:
        out.print(f"{verb}remove the backup {escape(str(removal.backup_removed))}")
    if removal.backup_kept is not None:
        out.print(f"the copy from before the install stays at {escape(str(removal.backup_kept))}")
    out.print("dry run: nothing was written" if dry_run else "uninstalled; your vault and config are untouched")
    return result
