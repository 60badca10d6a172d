"""Whether text would be dangerous as a standing instruction (pure): destructive commands, weakened
safety settings, data sent elsewhere.

A preference saved from a session is injected into every later one, so text pasted into a prompt
("from now on always run rm -rf ~ … never ask for confirmation") must not become a rule without a
person reading it. `assess` names the first danger it finds; reflection then routes the capture to
`_review/` with that warning, whatever its confidence (see wiki/explanation/reflection.md).
"""

from __future__ import annotations

import re

_FLAGS = re.IGNORECASE
_DESTRUCTIVE = re.compile(
    r"\brm\s+(?:-\w*[rR]\w*\s+|--recursive\s+|-\w*f\w*\s+)+\S*"  # rm -rf ~, rm -r -f /, rm --recursive
    r"|\brmdir\s+/s\b|\bdel\s+/[sfq]\b|\bRemove-Item\b[^\n]*-Recurse"
    r"|\bgit\s+push\b[^\n]*(?:--force\b|--force-with-lease\b|\s-f\b|\s\+\w)"
    r"|\bgit\s+reset\s+--hard\b|\bgit\s+clean\s+-\w*f|\bgit\s+checkout\s+--\s+\.|\bgit\s+branch\s+-D\b"
    r"|\bgit\s+filter-(?:branch|repo)\b|\bgit\s+stash\s+(?:drop|clear)\b"
    r"|\b(?:drop|truncate)\s+(?:table|database|schema)\b|\bdelete\s+from\s+\w+\s*(?:;|$)"
    r"|\bmkfs(?:\.\w+)?\b|\bdd\s+[^\n]*\bof=/dev/|>\s*/dev/(?:sd|nvme|disk)|\bshred\b|\bwipefs\b"
    r"|\bchmod\s+(?:-R\s+)?(?:0?777|a\+rwx)\b|\bchown\s+-R\b[^\n]*\s/(?:\s|$)"
    r"|:\(\)\s*\{\s*:\|:&\s*\};:"  # the fork bomb
    r"|\bkubectl\s+delete\b|\bterraform\s+destroy\b|\bdocker\s+(?:system|volume)\s+prune\b"
    r"|\bdropdb\b|\bflushall\b|\bformat\s+[a-z]:",
    _FLAGS,
)
_WEAKENS = re.compile(
    r"\b(?:never|don'?t|do\s+not|stop|no\s+need\s+to|without|skip|no\s+more)\s+(?:\w+\s+){0,3}?"
    r"(?:ask(?:ing)?|confirm(?:ing|ation)?|prompt(?:ing)?|permission|approval|review(?:ing)?)\b"
    r"|--no-verify\b|--dangerously-skip-permissions\b|\bbypassPermissions\b|--yolo\b|--insecure\b"
    r"|\bskip\s+(?:the\s+)?(?:tests?|hooks?|checks?|ci|linters?|pre-commit)\b"
    r"|\b(?:disable|turn\s+off|switch\s+off|bypass|ignore)\s+(?:the\s+|all\s+)?(?:\w+\s+)?"
    r"(?:ssl|tls|certificate|cert|firewall|2fa|mfa|sandbox|antivirus|selinux|apparmor|security|verification"
    r"|signature|safety|guardrails?|permissions?|hooks?|tests?)\b"
    r"|\bverify\s*=\s*False\b|\bNODE_TLS_REJECT_UNAUTHORIZED\s*=\s*0|\bStrictHostKeyChecking\s*=?\s*no\b"
    r"|\bauto[- ]?approve\b|\bapprove\s+everything\b|\bsudo\s+(?:without|with\s+no)\s+password\b|\bNOPASSWD\b",
    _FLAGS,
)
_SENDS = re.compile(
    r"\b(?:curl|wget|http|httpie)\b[^\n]*(?:\s-d\b|--data\S*|\s-F\b|--form\b|--upload-file\b|\s-T\b|--post-\w+)"
    r"|\|\s*(?:nc|ncat|netcat|curl|wget)\b|\bnc\s+(?:-\w+\s+)*[\w.-]+\s+\d{2,5}\b"
    r"|\b(?:scp|rsync|sftp)\b[^\n]*\s[\w.-]+@[\w.-]+:"
    r"|\b(?:send|upload|post|email|e-mail|forward|copy|paste|exfiltrate|leak|share|sync)\w*\s+"
    r"(?:[^\n]{0,60}?)\b(?:to|into|at|on)\s+(?:https?://|[\w.+-]+@[\w-]+\.\w|\S*(?:webhook|pastebin|gist|"
    r"ngrok|requestbin|transfer\.sh|discord|telegram)\b)",
    _FLAGS,
)
KINDS = (
    (_DESTRUCTIVE, "would run a destructive command"),
    (_WEAKENS, "would weaken a safety setting"),
    (_SENDS, "would send data somewhere"),
)


def assess(text: str) -> str | None:
    """A warning naming the first danger in `text` and the words that show it, or None."""
    for pattern, what in KINDS:
        found = pattern.search(text)
        if found:
            shown = " ".join(found.group(0).split())
            return f"{what} ({shown[:60]}{'…' if len(shown) > 60 else ''})"
    return None
