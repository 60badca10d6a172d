"""Claude Code's settings.json, pure: build our five hook entries, merge them in, take them out, recognise ours.

Nothing here touches the filesystem. Paths are `PurePath`s so a Windows install can be planned (and
tested) anywhere. Our handlers are recognised by their script path (`…/memvault/hooks/<name>.py`),
never by the interpreter, so a re-install from a moved environment replaces them instead of adding a copy.
Every other key, event, group and handler is left exactly where and as it was.
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePath, PureWindowsPath
from typing import Any

from memvault.errors import MemvaultError


@dataclass(frozen=True)
class HookSpec:
    """One event we hook: the launcher script, the matcher (None = every occurrence) and the timeout in seconds."""

    event: str
    script: str
    matcher: str | None
    timeout: int


# Timeouts (seconds). The hooks keep their own, much shorter budgets (recall 300 ms, session start 500 ms)
# and hand slow work to a detached job; these are the host's kill limits, with room for a cold interpreter
# start on a slow disk. UserPromptSubmit blocks the prompt, so it is kept short. All SessionEnd hooks share
# a 1.5 s budget that the largest SessionEnd timeout in a settings file raises: 5 s lets a cold start finish
# (the hook itself only marks the session closed and starts reflection in the background).
HOOKS: tuple[HookSpec, ...] = (
    HookSpec("SessionStart", "session_start", None, 10),
    HookSpec("UserPromptSubmit", "user_prompt_submit", None, 5),
    HookSpec("Stop", "stop", None, 5),
    HookSpec("SessionEnd", "session_end", None, 5),
    HookSpec("Notification", "idle", "idle_prompt", 5),
)

# The interpreter's flags before a hook script: `-S` skips the site set-up at start; the launcher runs it
# (`site.main()`) only when the hook does its full work. The served prompt took 15 ms less in an editable
# install, about the same in a regular one (wiki/explanation/hooks.md).
INTERPRETER_FLAGS = ("-S",)

_SCRIPTS = {spec.script for spec in HOOKS}
_OUR_SCRIPT = re.compile(r"(?:^|/)memvault/hooks/(?P<name>[a-z_]+)\.py$")


def claude_dir(env: Mapping[str, str] | None = None, home: Path | None = None) -> Path:
    """Claude Code's user folder: `$CLAUDE_CONFIG_DIR`, else `~/.claude` (`%USERPROFILE%\\.claude` on Windows)."""
    env = os.environ if env is None else env
    if env.get("CLAUDE_CONFIG_DIR"):
        return Path(env["CLAUDE_CONFIG_DIR"]).expanduser()
    return (home or Path.home()) / ".claude"


def check_interpreter(interpreter: PurePath) -> None:
    """Refuse an interpreter Claude Code cannot run directly in exec form (with the reason)."""
    text = str(interpreter)
    if not text or not interpreter.is_absolute():
        raise MemvaultError(f"the Python interpreter path {text!r} is not absolute", code="install")
    if isinstance(interpreter, PureWindowsPath):
        name = interpreter.name.lower()
        if any(part.lower() == "windowsapps" for part in interpreter.parts):
            raise MemvaultError(
                f"{text} is the Microsoft Store's Python alias, which Claude Code cannot start as a hook; "
                "install Python from python.org (or use `py -3`) and run memvault install from that Python's venv",
                code="install",
            )
        if not name.endswith(".exe"):
            raise MemvaultError(
                f"{text} is not a .exe: Claude Code runs exec-form hooks without a shell, so .cmd and .bat "
                "launchers do not work; run memvault install with the venv's python.exe",
                code="install",
            )
        if name.startswith("pythonw"):
            raise MemvaultError(f"{text} has no standard output for the hook's answer; use python.exe", code="install")


def hook_entries(interpreter: PurePath, hooks_dir: PurePath) -> dict[str, dict[str, Any]]:
    """Our matcher group per event, in exec form: the absolute interpreter runs the absolute launcher script."""
    entries: dict[str, dict[str, Any]] = {}
    for spec in HOOKS:
        handler = {
            "type": "command",
            "command": str(interpreter),
            "args": [*INTERPRETER_FLAGS, str(hooks_dir / f"{spec.script}.py")],
            "timeout": spec.timeout,
        }
        group: dict[str, Any] = {"matcher": spec.matcher} if spec.matcher else {}
        group["hooks"] = [handler]
        entries[spec.event] = group
    return entries


def our_script(handler: Any) -> str | None:
    """The launcher name (`session_start`, …) when `handler` runs one of our hook scripts, else None."""
    if not isinstance(handler, dict):
        return None
    args = handler.get("args")  # [flags…, script]; before -S it was [script]
    candidates = [args[-1]] if isinstance(args, list) and args and isinstance(args[-1], str) else []
    for text in candidates:
        match = _OUR_SCRIPT.search(text.replace("\\", "/"))
        if match and match["name"] in _SCRIPTS:
            return match["name"]
    return None


def parse(text: str, origin: str) -> dict[str, Any]:
    """The settings object; invalid JSON, or anything but an object at the top, is a clear error."""
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        message = f"{origin} is not valid JSON ({exc}); fix it first, nothing was written"
        raise MemvaultError(message, code="install") from None
    if not isinstance(data, dict):
        raise MemvaultError(f"{origin}: the top level must be a JSON object; nothing was written", code="install")
    hooks = data.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise MemvaultError(f'{origin}: "hooks" must be an object; nothing was written', code="install")
    for event, groups in (hooks or {}).items():
        if not isinstance(groups, list):
            raise MemvaultError(f"{origin}: hooks.{event} must be a list; nothing was written", code="install")
    return data


def dump(data: Mapping[str, Any], like: str = "") -> str:
    """JSON text for `data`, indented like the file it replaces (two spaces by default), ending in a newline."""
    indent: str | int = 2
    match = re.search(r"^[{\[][ \t]*\r?\n([ \t]+)\S", like)
    if match:
        indent = match.group(1)
    text = json.dumps(data, indent=indent, ensure_ascii=False) + "\n"
    return text.replace("\n", "\r\n") if "\r\n" in like else text


@dataclass(frozen=True)
class MergeResult:
    data: dict[str, Any]
    added: tuple[str, ...]  # events that had none of our handlers
    updated: tuple[str, ...]  # events whose handler of ours was replaced (moved venv, new timeout, duplicates)
    unchanged: tuple[str, ...]

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated)


Ours = Callable[[Any], object]  # truthy for a handler memvault wrote


def merge(settings: Mapping[str, Any], entries: Mapping[str, dict[str, Any]], ours: Ours | None = None) -> MergeResult:
    """`settings` with exactly one group of ours per event; other keys, groups and handlers untouched and in order.

    `ours` recognises our handlers (default: Claude Code's launchers by script path; other hosts pass theirs).
    """
    is_ours = ours or our_script
    data = copy.deepcopy(dict(settings))
    if not isinstance(data.get("hooks"), dict):  # missing, or null
        data["hooks"] = {}
    hooks = data["hooks"]
    added, updated, unchanged = [], [], []
    for event, wanted in entries.items():
        groups = hooks.get(event)
        if groups is None:
            hooks[event] = [copy.deepcopy(wanted)]
            added.append(event)
            continue
        found = [(i, h) for i, g in enumerate(groups) for h in _handlers(g) if is_ours(h)]
        if not found:
            groups.append(copy.deepcopy(wanted))
            added.append(event)
        elif len(found) == 1 and groups[found[0][0]] == wanted:
            unchanged.append(event)
        else:
            hooks[event] = _replace_ours(groups, wanted, is_ours)
            updated.append(event)
    return MergeResult(data, tuple(added), tuple(updated), tuple(unchanged))


def _handlers(group: Any) -> list[Any]:
    handlers = group.get("hooks") if isinstance(group, dict) else None
    return handlers if isinstance(handlers, list) else []


def _replace_ours(groups: list[Any], wanted: dict[str, Any], is_ours: Ours) -> list[Any]:
    """Our group takes the place of the first group that held only ours; our handlers elsewhere are dropped."""
    result: list[Any] = []
    placed = False
    for group in groups:
        handlers = _handlers(group)
        kept = [h for h in handlers if not is_ours(h)]
        if len(kept) == len(handlers):
            result.append(group)
        elif not kept:
            if not placed:
                result.append(copy.deepcopy(wanted))
                placed = True
        else:
            result.append({**group, "hooks": kept})
    if not placed:
        result.append(copy.deepcopy(wanted))
    return result


@dataclass(frozen=True)
class UnmergeResult:
    data: dict[str, Any]
    removed: tuple[str, ...]  # events we took handlers out of


def unmerge(
    settings: Mapping[str, Any],
    created_events: frozenset[str] | None = None,
    created_hooks: bool = True,
    ours: Ours | None = None,
) -> UnmergeResult:
    """`settings` without our handlers. A group, event list or `hooks` object we emptied is removed when we
    created it (`created_events`, `created_hooks`; None = assume we created whatever we emptied)."""
    is_ours = ours or our_script
    data = copy.deepcopy(dict(settings))
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return UnmergeResult(data, ())
    removed = []
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list) or not any(is_ours(h) for g in groups for h in _handlers(g)):
            continue
        removed.append(event)
        kept_groups = []
        for group in groups:
            handlers = _handlers(group)
            kept = [h for h in handlers if not is_ours(h)]
            if len(kept) == len(handlers):
                kept_groups.append(group)
            elif kept:
                kept_groups.append({**group, "hooks": kept})
        hooks[event] = kept_groups
        if not kept_groups and (created_events is None or event in created_events):
            del hooks[event]
    if removed and not hooks and created_hooks:
        del data["hooks"]
    return UnmergeResult(data, tuple(removed))


def installed_events(settings: Mapping[str, Any]) -> dict[str, str]:
    """Event → our launcher script, for every event that currently runs one of ours."""
    hooks = settings.get("hooks")
    found: dict[str, str] = {}
    if isinstance(hooks, dict):
        for event, groups in hooks.items():
            for group in groups if isinstance(groups, list) else []:
                for handler in _handlers(group):
                    name = our_script(handler)
                    if name:
                        found.setdefault(event, name)
    return found


def plugin_keys(settings: Mapping[str, Any]) -> list[str]:
    """Enabled `memvault@<marketplace>` plugins: their hooks would run next to the ones installed here."""
    plugins = settings.get("enabledPlugins")
    if not isinstance(plugins, dict):
        return []
    return [key for key, on in plugins.items() if isinstance(key, str) and key.startswith("memvault@") and on]
