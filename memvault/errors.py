"""The one error family memvault raises, each with a stable reason code for users and scripts."""

from __future__ import annotations

import errno
import os

# Reason codes of the safety envelope (SPEC §4). Scripts match on these strings.
REASON_CODES = (
    "path_escape",
    "not_markdown",
    "outside_scope",
    "too_large",
    "conflict",
    "secret",
    "missing",
    "protected",
)

READ_ONLY = (errno.EROFS,)
FULL = (errno.ENOSPC, errno.EDQUOT)
DENIED = (errno.EACCES, errno.EPERM)


class MemvaultError(Exception):
    """A failure whose message is fit to show the user as it is."""

    code = "error"

    def __init__(self, message: str, *, code: str | None = None, path: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.path = path

    def __str__(self) -> str:
        return f"{self.args[0]} [{self.code}]"


class SafetyError(MemvaultError):
    """A write refused by the safety envelope; `code` is one of REASON_CODES."""


class ProtectedError(SafetyError):
    """An automatic change that would modify, move or remove a protected entry (`protected: true`)."""

    code = "protected"


class InvalidNote(MemvaultError):
    """A note whose frontmatter cannot be parsed, so it must not be rewritten."""

    code = "invalid_frontmatter"


class ConfigError(MemvaultError):
    """The configuration file or an environment override is invalid."""

    code = "config"


class VaultNotFound(MemvaultError):
    """No vault was configured, or the configured folder does not exist."""

    code = "no_vault"


class VaultBusy(MemvaultError):
    """Another memvault process held the vault lock for too long."""

    code = "busy"


class GitError(MemvaultError):
    """A git operation on the vault repository failed."""

    code = "git"


class NotWritable(MemvaultError):
    """The filesystem refused a write (read-only, full, no permission); the message says what was kept."""

    code = "not_writable"
    reason = ""  # why, without what became of the change: "the vault is read-only (PATH)"


def not_writable(exc: OSError, where: str, folder: str | os.PathLike[str], *, kept: bool = False) -> NotWritable:
    """The one line for an OSError a change met writing in `where` ("the vault"), whose folder is `folder`.

    `kept` says the change could not be taken back either: its journal entry stays, and the next
    command that can write finishes it. Otherwise nothing of the change was written.
    """
    if exc.errno in READ_ONLY:
        reason = f"{where} is read-only ({os.fspath(folder)})"
    elif exc.errno in FULL:
        reason = f"the disk holding {where} is full ({os.fspath(folder)})"
    elif exc.errno in DENIED:
        reason = f"no permission to write in {where} ({os.path.dirname(exc.filename or '') or os.fspath(folder)})"
    else:
        reason = f"cannot write in {where} ({exc.filename or os.fspath(folder)}: {exc.strerror or exc})"
    done = "nothing was written"
    if kept:
        done = "the change is half written; the next command that can write there finishes it"
    error = NotWritable(f"{reason}: {done}")
    error.reason = reason
    return error
