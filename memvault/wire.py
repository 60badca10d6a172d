"""The hook's short-way messages to and from the warm service: one line of named fields, without importing json.

A hook process that hands its event to the service (`hooks.fast`) would otherwise import `json`, and with it
`re`, `enum`, `functools` and `collections`: a third of what a bare `python -S` start costs, on every prompt.
A message is one line: `MVB1`, then space-separated `name=value` fields, each value its UTF-8 bytes in hex
(`bytes.hex`/`bytes.fromhex` are built in), or a list: its length, a colon and its items' hex joined by
commas. The service decodes a request into the same dict a JSON request gives, and answers in kind.
"""

from __future__ import annotations

MAGIC = b"MVB1"
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from typing import TypeAlias

    Value: TypeAlias = "str | bytes | list[str] | int | float | bool | None"


def is_message(line: bytes) -> bool:
    return line[:5] == MAGIC + b" " or line == MAGIC


def pack(fields: dict[str, Value]) -> bytes:
    """One message line (newline-ended): strings and bytes as hex, lists of strings as their length, a colon and
    their items' hex joined by commas, numbers as their text, booleans as 1 or 0; a None field is left out."""
    parts = [MAGIC]
    for name, value in fields.items():
        if value is None:
            continue
        if isinstance(value, list):
            if not all(isinstance(item, str) for item in value):
                raise TypeError(f"field {name!r}: a list of strings only")
            encoded = f"{len(value)}:" + ",".join(item.encode("utf-8", "surrogatepass").hex() for item in value)
        elif isinstance(value, bytes):
            encoded = value.hex()
        elif isinstance(value, (str, bool, int, float)):
            shown = ("1" if value else "0") if isinstance(value, bool) else str(value)
            encoded = shown.encode("utf-8", "surrogatepass").hex()
        else:
            raise TypeError(f"field {name!r}: {type(value).__name__} has no wire form")
        parts.append(f"{name}={encoded}".encode("ascii"))
    return b" ".join(parts) + b"\n"


def unpack(line: bytes) -> dict[str, str]:
    """The fields of a message as hex strings (see `text`, `items`, `raw`); ValueError when it is not one."""
    parts = line.rstrip(b"\n").split(b" ")
    if parts[0] != MAGIC:
        raise ValueError("not a memvault wire message")
    fields = {}
    for part in parts[1:]:
        name, sep, value = part.decode("ascii").partition("=")
        if not sep or not name:
            raise ValueError("a malformed wire field")
        fields[name] = value
    return fields


def request(line: bytes) -> dict[str, object]:
    """A hook's request (`hooks.fast`) as the dict a JSON request gives: `env` as a mapping, `started` a number."""
    fields = unpack(line)
    out: dict[str, object] = {name: text(value) for name, value in fields.items()
                              if name not in ("env", "started", "payload")}  # fmt: skip
    if "payload" in fields:  # the hook's stdin as read: not always UTF-8 (the JSON reader says what is wrong)
        out["payload"] = raw(fields["payload"]).decode("utf-8", "replace")
    if "env" in fields:
        out["env"] = dict(item.partition("=")[::2] for item in items(fields["env"]))
    if "started" in fields:
        out["started"] = float(text(fields["started"]))
    out["wire"] = True  # answered in kind
    return out


def raw(value: str) -> bytes:
    return bytes.fromhex(value)


def text(value: str) -> str:
    return bytes.fromhex(value).decode("utf-8", "surrogatepass")


def items(value: str) -> list[str]:
    """A list field: its length, a colon, then its items' hex joined by commas (so [] and [""] differ)."""
    count, sep, joined = value.partition(":")
    found = joined.split(",") if int(count or "x") else []
    if not sep or len(found) != int(count):
        raise ValueError("a malformed wire list")
    return [text(item) for item in found]
