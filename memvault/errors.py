"""The one error family memvault raises, each with a stable reason code for users and scripts."""

from __future__ import annotations

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
