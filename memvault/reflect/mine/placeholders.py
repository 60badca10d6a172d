"""Local absolute paths and user names out of captured text: `~` for a home folder, `<project>`, `<user>`.

A capture is read in later sessions, maybe on another machine or by someone else: the session's
project folder becomes `<project>`, any home folder (`/home/NAME`, `/Users/NAME`, `C:\\Users\\NAME`,
also as Claude Code spells it in its own folder names, `-home-NAME-`) becomes `~`, and the account
names found in those paths (and this machine's own) become `<user>` wherever else they appear.
Generic account names (root, ubuntu, user, …) are left as words: they name no one.
"""

from __future__ import annotations

import getpass
import os
import re
from collections.abc import Iterable
from pathlib import Path

_HOME = re.compile(
    r"(?P<root>/home/|/Users/|/users/|[A-Za-z]:\\{1,2}[Uu]sers\\{1,2}|/[a-z]/[Uu]sers/)(?P<name>\[?[A-Za-z0-9._-]+\]?)"
)
_DASHED_HOME = re.compile(r"(?:\b[A-Za-z]-)?-(?:home|Users)-(?P<name>[A-Za-z0-9._]+)")
_GENERIC = frozenset(
    ["root", "ubuntu", "user", "users", "admin", "administrator", "vagrant", "runner", "ec2-user", "[user]",
     "public", "default", "shared", "guest", "me", "dev", "developer", "app", "node", "test", "tester", "ci"]
)  # fmt: skip


def names_in(texts: Iterable[str]) -> set[str]:
    """Account names seen in home-folder paths of `texts`, plus this machine's user (generic names left out)."""
    found = {this_user()}
    for text in texts:
        found.update(m.group("name") for m in _HOME.finditer(text))
        found.update(m.group("name") for m in _DASHED_HOME.finditer(text))
    return {n for n in found if n and n.lower() not in _GENERIC and len(n) >= 3}


def this_user() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError, ImportError):  # no login name (containers, services)
        return os.path.basename(str(Path.home()))


def replace_local(text: str, *, project: str | None = None, names: Iterable[str] = ()) -> str:
    """`text` with the project folder as `<project>`, home folders as `~` and the user names as `<user>`."""
    if project and len(project) > 3 and not _HOME.fullmatch(project.rstrip("/\\")):  # a home folder is ~
        for spelling in {project, project.replace("\\", "/"), project.replace("/", "\\")}:
            text = re.sub(re.escape(spelling) + r"(?=[/\\\s'\"`)\]:,;]|$)", "<project>", text)
    text = _HOME.sub("~", text)
    text = _DASHED_HOME.sub("~", text)
    for name in sorted(set(names), key=len, reverse=True):
        text = re.sub(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", "<user>", text, flags=re.IGNORECASE)
    return text


def key_without(key: str, names: Iterable[str]) -> str:
    """A candidate key (`kind:slug-words`) with user names as `user` and home-folder words dropped."""
    kind, _, slug = key.partition(":")
    lowered = {n.lower() for n in names}
    words = [("user" if w in lowered else w) for w in slug.split("-")]
    return f"{kind}:{'-'.join(words)}"
