"""The install and uninstall steps for Codex CLI, Gemini CLI and MCP clients: options, consent, what is printed."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from memvault import config as config_mod
from memvault import paths as paths_mod
from memvault.errors import MemvaultError
from memvault.hosts import install as hosts_install
from memvault.hosts import places, spec
from memvault.hosts import uninstall as hosts_uninstall

from .group import err, out

HOSTS = ("claude-code", spec.CODEX, spec.GEMINI)

host_option = click.option(
    "--host",
    type=click.Choice(["claude", "claude-code", spec.CODEX, spec.GEMINI, "all"]),
    default=None,
    help="The agent whose hooks to connect: claude (Claude Code, the default), codex, gemini, or all found here.",
)
mcp_option = click.option(
    "--mcp",
    "mcp",
    multiple=True,
    type=click.Choice([*hosts_install.MCP_CLIENTS, "all"]),
    help="Register the `memvault mcp` server with this client (repeatable; all: every client found here).",
)
trust_option = click.option(
    "--trust-hooks/--no-trust-hooks",
    default=None,
    help="Codex: mark memvault's hooks trusted in config.toml (Codex skips untrusted hooks). Asked when not given.",
)
enable_option = click.option(
    "--enable-hooks/--no-enable-hooks",
    default=None,
    help="Codex: where config.toml switches hooks off ([features] hooks = false), set it to true. Asked when needed.",
)
approve_option = click.option(
    "--approve-tools/--no-approve-tools",
    default=None,
    help="MCP on Codex or Gemini: let memvault's tools run without a confirmation each time. Asked when not given.",
)


def hosts_of(host: str | None, mcp: tuple[str, ...], *, found_only: bool = True) -> list[str]:
    """The agents whose hooks to (un)install: none when only --mcp was given, Claude Code when nothing was."""
    if host is None:
        return [] if mcp else ["claude-code"]
    if host == "claude":
        return ["claude-code"]
    if host != "all":
        return [host]
    return [h for h in HOSTS if not found_only or h == "claude-code" or _found(h)]


def mcp_clients(mcp: tuple[str, ...]) -> list[str]:
    if "all" not in mcp:
        return list(dict.fromkeys(mcp))
    return [c for c in hosts_install.MCP_CLIENTS if hosts_install.MCP_CLIENTS[c]().parent.is_dir()]


def _found(host: str) -> bool:
    """An agent counts as present when its config folder exists or its command is on PATH."""
    folder = places.codex_home() if host == spec.CODEX else places.gemini_dir()
    return folder.is_dir() or shutil.which(host) is not None


def _consent(given: bool | None, question: str, dry_run: bool, as_json: bool, earlier: bool) -> bool | None:
    """The user's answer: the flag when given; asked on a terminal unless given at an earlier install;
    otherwise None (what an earlier install recorded stays, and nothing is assumed)."""
    if given is not None:
        return given
    if earlier or dry_run or as_json or not sys.stdin.isatty():
        return None
    return click.confirm(question, default=False, err=True)


def install_host(
    host: str, trust: bool | None, enable: bool | None, vault: Path | None, dry_run: bool, as_json: bool
) -> dict[str, Any]:
    if host == spec.CODEX and hosts_install.codex_hooks_disabled():
        enable = _consent(
            enable,
            "Codex CLI's config.toml switches hooks off ([features] hooks = false). Switch them on?",
            dry_run,
            as_json,
            False,
        )
    if host == spec.CODEX:
        trust = _consent(
            trust,
            "Codex CLI runs a user hook only once it is trusted. Mark memvault's hooks trusted in its config.toml?",
            dry_run,
            as_json,
            hosts_install.trusted_before(),
        )
    plan = hosts_install.plan_hooks(host, trust=bool(trust), enable=bool(enable))
    if not dry_run and plan.changed:
        hosts_install.apply(plan)
    recorded = _record_vault(vault, dry_run)
    _show(plan, dry_run, as_json, installing=True)
    if recorded and not as_json:
        out.print(f"{'would record' if dry_run else 'recorded'} the vault {escape(str(vault))} in "
                  f"{escape(str(paths_mod.config_file()))}")  # fmt: skip
    elif not as_json and _no_vault():
        out.print("no vault is configured yet: run [bold]memvault init PATH[/] with your Obsidian vault "
                  "(until then the hooks do nothing)")  # fmt: skip
    return {**plan.as_dict(), "dry_run": dry_run}


def install_mcp(client: str, approve: bool | None, dry_run: bool, as_json: bool) -> dict[str, Any]:
    if client in (spec.CODEX, spec.GEMINI):
        approve = _consent(
            approve,
            f"Let {client} call memvault's MCP tools (recall, save, evolve, …) without asking each time?",
            dry_run,
            as_json,
            hosts_install.load_manifest(hosts_install.MCP_CLIENTS[client]()) is not None,
        )
    plan = hosts_install.plan_mcp(client, approve=approve)
    return _carry_out(plan, hosts_install.apply, dry_run, as_json, installing=True)


def uninstall_host(host: str, dry_run: bool, as_json: bool) -> dict[str, Any]:
    plan = hosts_uninstall.plan_uninstall_hooks(host)
    return _carry_out(plan, hosts_uninstall.apply_uninstall, dry_run, as_json, installing=False)


def uninstall_mcp(client: str, dry_run: bool, as_json: bool) -> dict[str, Any]:
    plan = hosts_uninstall.plan_uninstall_mcp(client)
    return _carry_out(plan, hosts_uninstall.apply_uninstall, dry_run, as_json, installing=False)


def uninstall_plan(plan: hosts_install.Plan, dry_run: bool, as_json: bool) -> dict[str, Any]:
    """One removal planned elsewhere (`uninstall --all`): applied unless a dry run, shown, returned as JSON."""
    return _carry_out(plan, hosts_uninstall.apply_uninstall, dry_run, as_json, installing=False)


def _carry_out(
    plan: hosts_install.Plan,
    apply: Callable[[hosts_install.Plan], Any],
    dry_run: bool,
    as_json: bool,
    *,
    installing: bool,
) -> dict[str, Any]:
    """Apply `plan` (unless a dry run or nothing changes), show it, and return it as the command's JSON."""
    if not dry_run and plan.changed:
        apply(plan)
    _show(plan, dry_run, as_json, installing=installing)
    return {**plan.as_dict(), "dry_run": dry_run}


def _no_vault() -> bool:
    try:
        return config_mod.load().vault_root is None
    except MemvaultError:  # an invalid config is reported by every other command; not this one's business
        return False


def _record_vault(vault: Path | None, dry_run: bool) -> bool:
    """`--vault` with a non-Claude host: recorded in the config and its MemoryVault/ folders created, as for Claude."""
    if vault is None:
        return False
    from memvault.vault.core import open_vault

    vault = vault.expanduser().absolute()
    if not vault.is_dir():
        raise MemvaultError(f"{vault} is not a folder: create the Obsidian vault first", code="no_vault")
    if not dry_run:
        config_mod.write_vault_root(vault)
        open_vault(vault).init_structure()
    return True


def _show(plan: hosts_install.Plan, dry_run: bool, as_json: bool, *, installing: bool) -> None:
    if as_json:
        return
    name = plan.host.removeprefix("mcp:")
    title = spec.HOSTS[name].title if name in spec.HOSTS else name
    for warning in plan.warnings:
        err.print(f"[yellow]warning:[/] {escape(warning)}")
    if not plan.changed:
        out.print(f"{title}: {'already up to date' if installing else 'nothing of memvault to remove'}")
    verb = "would " if dry_run else ""
    for edit in plan.edits:
        for change in edit.done if edit.after is not None else []:
            out.print(f"{title}: {verb}{escape(change)} in {escape(str(edit.path))}")
        if installing and edit.writes_backup:
            out.print(f"  {verb}back up the original to {escape(str(edit.backup))}")
    if installing:
        for note in plan.notes:
            out.print(f"[dim]{escape(note)}[/]")
    if dry_run and plan.changed:
        out.print("dry run: nothing was written")
