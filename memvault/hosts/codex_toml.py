"""Codex CLI's config.toml, as text: memvault's managed blocks (hook trust, the MCP server), and hook trust hashes.

Codex runs a user hook only once it is trusted: `[hooks.state."<hooks.json path>:<event>:<group>:<handler>"]`
with `trusted_hash = "sha256:…"`, the SHA-256 of the handler's identity (event, matcher, command,
effective timeout, async) as compact sorted JSON; checked against Codex CLI 0.169's own hashes.
memvault writes such tables only with the user's consent, inside a block it can find and remove
again byte for byte; nothing outside its blocks is ever rewritten.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Mapping
from typing import Any

from memvault.errors import MemvaultError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

# Events whose matcher Codex keeps in the hook's identity (the others ignore a matcher).
MATCHER_EVENTS = frozenset(
    {"PreToolUse", "PostToolUse", "PermissionRequest", "SessionStart", "PreCompact", "PostCompact", "SubagentStart",
     "SubagentStop"}
)  # fmt: skip
CLAMPED_3S = frozenset({"SessionEnd", "Interrupt"})
_BEGIN, _END = (
    "# >>> memvault {name} (memvault install wrote this block; memvault uninstall removes it)",
    "# <<< memvault {name}",
)


def snake(event: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


def trust_key(hooks_file: str, event: str, group: int, handler: int) -> str:
    return f"{hooks_file}:{snake(event)}:{group}:{handler}"


def trust_hash(event: str, group: Mapping[str, Any], handler: Mapping[str, Any]) -> str:
    """The `trusted_hash` Codex expects for one command handler."""
    timeout = max(1, int(handler.get("timeout", 600)))
    if event in CLAMPED_3S:
        timeout = min(timeout, 3)
    identity_handler: dict[str, Any] = {
        "type": "command",
        "command": handler["command"],
        "timeout": timeout,
        "async": bool(handler.get("async", False)),
    }
    for key in ("statusMessage", "commandWindows", "additionalContextLimit"):
        if handler.get(key) is not None:
            identity_handler[key] = handler[key]
    identity: dict[str, Any] = {"event_name": snake(event), "hooks": [identity_handler]}
    if event in MATCHER_EVENTS and group.get("matcher") is not None:
        identity["matcher"] = group["matcher"]
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def parse(text: str, origin: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise MemvaultError(
            f"{origin} is not valid TOML ({exc}); fix it first, nothing was written", code="install"
        ) from None


def string(value: str) -> str:
    """A TOML basic string (JSON's escapes are valid TOML escapes)."""
    return json.dumps(value, ensure_ascii=False)


def block_span(text: str, name: str) -> tuple[int, int] | None:
    """Start and end offsets of our block `name` (end includes its last newline), or None."""
    begin = text.find(_BEGIN.format(name=name))
    if begin < 0:
        return None
    end_marker = _END.format(name=name)
    end = text.find(end_marker, begin)
    if end < 0:
        raise MemvaultError(
            f"memvault's {name} block in config.toml has lost its end line; fix it by hand", code="install"
        )
    end += len(end_marker)
    if text.startswith("\r\n", end):
        end += 2
    elif text.startswith("\n", end):
        end += 1
    return begin, end


def without_block(text: str, name: str) -> str:
    """`text` with our block `name` taken out, and the blank line put before it (when we added one)."""
    span = block_span(text, name)
    if span is None:
        return text
    begin, end = span
    head = text[:begin]
    if head.endswith("\n\n") or head.endswith("\r\n\r\n"):
        head = head[: -2 if head.endswith("\r\n\r\n") else -1]
    return head + text[end:]


def with_block(text: str, name: str, body: str) -> str:
    """`text` with our block `name` holding `body` (TOML tables): replaced in place, else appended at the end."""
    newline = "\r\n" if "\r\n" in text else "\n"
    block = newline.join([_BEGIN.format(name=name), *body.strip("\n").split("\n"), _END.format(name=name)]) + newline
    span = block_span(text, name)
    if span is not None:
        return text[: span[0]] + block + text[span[1] :]
    if not text:
        return block
    return text + ("" if text.endswith("\n") else newline) + newline + block


_FEATURE_OFF = re.compile(r"^(?P<lead>[ \t]*(?:features\.)?(?:hooks|codex_hooks)[ \t]*=[ \t]*)false\b", re.M)
_TABLE = re.compile(r"^[ \t]*\[", re.M)


def hooks_disabled(data: dict[str, Any]) -> bool:
    """Whether config.toml switches Codex's hooks off (`[features] hooks = false`, or its old name `codex_hooks`)."""
    features = data.get("features")
    return isinstance(features, dict) and (features.get("hooks") is False or features.get("codex_hooks") is False)


def enable_hooks(text: str) -> str:
    """`text` with every `hooks = false` / `codex_hooks = false` of the `[features]` table set to true; nothing
    else changes (comments, spacing, other keys)."""
    out, table = [], ""
    for line in text.splitlines(keepends=True):
        if _TABLE.match(line):
            table = line.strip().split("]")[0].lstrip("[").strip()
        dotted = line.lstrip().startswith("features.") and table == ""
        if table == "features" or dotted:
            line = _FEATURE_OFF.sub(lambda m: m["lead"] + "true", line)
        out.append(line)
    return "".join(out)


def outside_blocks(text: str, *names: str) -> str:
    for name in names:
        text = without_block(text, name)
    return text
