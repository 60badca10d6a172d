"""What "private" means, defined once for every place text leaves the vault.

Two things are private:

- a **note** whose `private` property is true in YAML's sense. `is_private_value` reads a parsed
  value; `frontmatter_says_private` reads the raw frontmatter line by line for the prompt path,
  which never loads YAML. Both fail closed: any value other than an explicit "no" (absent, empty,
  null, false/no/off/n, 0) makes the note private, and so does a frontmatter the line reader
  cannot make sense of;
- a **span** of text between `<private>` and `</private>` (an unclosed span runs to the end).

Titles, snippets, always-load text, the file-scan fallback, the hook log and `inspect` all go
through these functions, so a note or a span is private in the same way everywhere.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

TYPE_CHECKING = False  # typing.TYPE_CHECKING (mypy reads it so) without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

_PRIVATE = re.compile(r"<private>.*?(?:</private>|\Z)", re.IGNORECASE | re.DOTALL)
_OPEN_TAG = re.compile(r"<private>", re.IGNORECASE)
# What YAML 1.1 (PyYAML) and YAML 1.2 read as false or null, as plain text; compared lowercased.
_NOT_PRIVATE = frozenset(("", "~", "null", "false", "no", "off", "n", "0", "0.0"))


def strip_private(text: str) -> str:
    """Remove `<private>…</private>` spans (an unclosed span runs to the end)."""
    if "<" not in text:
        return text
    return _PRIVATE.sub("", text)


def has_private_span(text: str) -> bool:
    return _OPEN_TAG.search(text) is not None


def is_private_value(value: Any) -> bool:
    """Whether a parsed `private` property makes its note private (YAML truthiness, failing closed).

    `True`, `yes`, `"true"`, `1`, `[x]` and anything unexpected are private; absent (`None`),
    `False`, `0`, `""`, `"no"`, `"off"`, `"false"`, `"null"` and empty collections are not.
    """
    if value is None or value is False:
        return False
    if value is True:
        return True
    if isinstance(value, (int, float)):
        return value != 0
    if isinstance(value, str):
        return value.strip().lower() not in _NOT_PRIVATE
    if isinstance(value, (list, tuple, dict, set)):
        return len(value) > 0
    return True


def note_is_private(meta: Mapping[str, Any], frontmatter: str | None) -> bool:
    """A note is private when its parsed `private` property is (`is_private_value`), or when the
    line-level read of its raw frontmatter says so (an unparsable frontmatter fails closed too)."""
    return is_private_value(meta.get("private")) or (frontmatter is not None and frontmatter_says_private(frontmatter))


def frontmatter_says_private(frontmatter: str) -> bool:
    """A line-level read of raw frontmatter (no YAML): does a `private:` key in it say private?

    Every `private:` key counts, at any depth and in flow style (`{private: yes}`), so duplicate or
    nested keys fail closed. A value on the key's own line is read as a YAML scalar (quotes and a
    trailing `# comment` removed); a scalar on the following indented lines counts as written there;
    a list item there (`- no` is the list `["no"]` to YAML), an anchor, alias, tag or non-empty
    collection is private.
    """
    if "private" not in frontmatter.lower():
        return False
    lines = frontmatter.splitlines()
    for i, line in enumerate(lines):
        for match in _KEY.finditer(line):
            flow = match.group("pre") in ("{", ",") or line.lstrip().startswith("{")
            value = _value(match.group("rest"), flow)
            if value is None:  # nothing on the line: the value, if any, is on the next lines
                following = next((ln for ln in lines[i + 1 :] if ln.strip() and not ln.lstrip().startswith("#")), "")
                if following[:1] not in (" ", "\t", "-"):
                    continue  # null
                item = following.strip()
                if item == "-" or item.startswith(("- ", "-\t")):
                    return True  # a block sequence: a non-empty list, private whatever its items say
                value = _value(item, False) or ""
            if value not in _NOT_PRIVATE:
                return True
    return False


_KEY = re.compile(r"""(?:^|(?P<pre>[\s{,?]))["']?private["']?[ \t]*:(?=[ \t]|$)(?P<rest>.*)$""", re.IGNORECASE)


def _value(rest: str, flow: bool) -> str | None:
    """The scalar at the start of `rest` as lowercase text, "?" for what is not a plain scalar, None when empty."""
    rest = rest.strip()
    if not rest or rest.startswith("#"):
        return None
    if rest[0] in "'\"":
        end = rest.find(rest[0], 1)
        return rest[1:end].strip().lower() if end > 0 else "?"
    if rest[0] in "[{":
        return "" if re.match(r"^(\[\s*\]|\{\s*\})\s*(?:#.*)?$", rest) else "?"
    if rest[0] in "&*!|>":
        return "?"  # an anchor, alias, tag or block scalar: not an explicit "no"
    cut = len(rest)
    for i, ch in enumerate(rest):
        if (ch == "#" and rest[i - 1] in " \t") or (flow and ch in ",}"):
            cut = i
            break
    return rest[:cut].strip().lower()
