"""Find and redact credentials (API keys, tokens, private keys, passwords) in text before it is stored."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    """One detected secret. Holds only its position, never the secret text."""

    kind: str
    start: int  # offset of the secret value itself in the scanned text
    end: int
    line: int  # 1-based


_MIN_LEN = 6  # shorter values are never reported

# --- building blocks for "<identifier ending in a secret word> = / : <value>" rules ---
_VAL = r"[^\s\"'`,;&)\]}]"  # one character of an unquoted value
_END = r"(?!" + _VAL + r")"  # ...and the value ends here
_EQ = (  # "=", ":=", "=>" (not "=="), optionally after a type annotation: `password: str = ...`
    r"(?:[ \t]*:[ \t]*[A-Za-z_][\w.\[\],]*(?:[ \t]*\|[ \t]*[A-Za-z_][\w.\[\],]*)*)?"
    r"[ \t]*(?::=|=>|=(?!=))[ \t]*"
)
_COLON = r"[ \t]*:(?![:=/])[ \t]*"
_QUOTED = r"(?P<q>[\"'`])(?![\s\"'`])(?P<v>(?:(?!(?P=q))[^\\\n]|\\.){6,})(?P=q)"  # not `' + var + '`
_NOT_CODE = (  # unquoted values that are references, not secrets
    r"(?![(\[{<%!]"  # (required), [REDACTED:..], {{ x }}, <password>, %(pw)s, !vault
    r"|\$(?:[({]|\w+" + _END + r")"  # $(cmd), ${VAR}, $VAR
    r"|[A-Za-z_][\w.]*[(\[]"  # getenv("X"), os.environ["X"], ENC[...]
    r"|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+"
    + _END  # settings.SECRET_KEY
    + r"|(?:[a-z]+(?:_[a-z][a-z0-9]*)+|[A-Z]+(?:_[A-Z][A-Z0-9]*)+|[a-z]+(?:[A-Z][a-z]+)+)"
    + _END  # db_password
    + r"|[$€£]?[\d.,_]+%?"
    + _END  # numbers: `cost per token = $0.002`
    + r"|[a-z][a-z0-9+.-]*://)"  # URLs (connection strings have their own rule)
)
_BARE = _NOT_CODE + r"(?P<v>" + _VAL + r"{6,})" + _END
_NOT_PROSE = r"(?=" + _VAL + r"*[0-9!@#$%^*+=/~_|])"  # after ":", a bare value needs a digit or symbol


def _assignment(kind: str, words: str) -> tuple[tuple[str, re.Pattern[str], int | str], ...]:
    """Three rules for one family of key names: quoted value, `key=bare`, `key: bare`."""
    key = (
        r"(?<![A-Za-z0-9_.-])(?:[A-Za-z0-9_.-]*[_.-]|[A-Za-z0-9_.-]*[a-z](?=[A-Z]))?"
        r"(?i:" + words + r")(?![A-Za-z0-9_])[\"'\]]{0,2}"
    )
    return (
        (kind, re.compile(key + r"(?:" + _EQ + "|" + _COLON + ")" + _QUOTED), "v"),
        (kind, re.compile(key + _EQ + _BARE), "v"),
        (kind, re.compile(key + _COLON + _NOT_PROSE + _BARE), "v"),
    )


# (kind, regex, group holding the secret value). On overlap the earlier-starting finding wins;
# on a tie the rule listed first wins, so specific token formats come before generic assignments.
RULES: tuple[tuple[str, re.Pattern[str], int | str], ...] = (
    (
        "private_key",
        re.compile(
            r"-----BEGIN (?P<t>(?:RSA |EC |OPENSSH |DSA |ENCRYPTED )?)PRIVATE KEY-----"
            r"(?=(?:(?!-----)[\s\S])*?[A-Za-z0-9+/]{16})(?:(?!-----)[\s\S])*-----END (?P=t)PRIVATE KEY-----"
        ),
        0,
    ),
    (  # the armour and body of a key whose END line is missing (cut off, or a file read only in part)
        "private_key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----\s*"
            r"(?:[A-Za-z][\w-]*:[^\n]*\s*)*"  # armour headers (Proc-Type:, Version:)
            r"(?:(?:>[ \t]*)?[A-Za-z0-9+/=]{16,}(?:\s+|\Z))+"  # body lines, also quoted or joined into one line
        ),
        0,
    ),
    ("aws_access_key_id", re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"), 0),
    (
        "aws_secret_access_key",
        re.compile(
            r"(?i:aws[_-]?secret[_-]?(?:access[_-]?)?key)[\"']?[ \t]*[:=][ \t]*[\"']?"
            r"(?P<v>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
        ),
        "v",
    ),
    ("github_token", re.compile(r"(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{36,}(?![A-Za-z0-9])"), 0),
    ("github_token", re.compile(r"(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{22,}"), 0),
    ("gitlab_token", re.compile(r"(?<![A-Za-z0-9_])glpat-[A-Za-z0-9_-]{20,}"), 0),
    ("slack_webhook", re.compile(r"https://hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]{16,}"), 0),
    ("slack_token", re.compile(r"(?<![A-Za-z0-9_-])xox[abprs]-[A-Za-z0-9-]{10,}"), 0),
    ("anthropic_api_key", re.compile(r"(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{32,}"), 0),
    (
        "openai_api_key",
        re.compile(r"(?<![A-Za-z0-9_-])sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}|[A-Za-z0-9]{32,})"),
        0,
    ),
    ("google_api_key", re.compile(r"(?<![A-Za-z0-9_-])AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])"), 0),
    ("stripe_key", re.compile(r"(?<![A-Za-z0-9_])(?:sk|rk)_live_[A-Za-z0-9]{20,}"), 0),
    ("npm_token", re.compile(r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"), 0),
    ("pypi_token", re.compile(r"(?<![A-Za-z0-9_-])pypi-AgEI[A-Za-z0-9_-]{50,}"), 0),
    ("jwt", re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}"), 0),
    (
        "connection_string",
        re.compile(
            r"(?i:\b(?:postgres(?:ql)?|mysql|mariadb|mongodb|rediss?|amqps?)(?:\+[a-z0-9]+)?)://"
            r"[^\s:@/]*:(?P<v>[^\s@/\"'`]+)@"
        ),
        "v",
    ),
    *_assignment("password_assignment", r"pass(?:word|wd)?"),
    *_assignment("secret_assignment", r"secret|token|(?:api|access|private|secret)[_-]?key|client[_-]?secret"),
)

# Values that are placeholders rather than secrets, whatever rule found them.
_PLACEHOLDER = re.compile(
    r"(?i)example|redacted|changeme|changeit|placeholder|dummy|x{5,}|\*{3,}|\.{3}|…"
    r"|^your|^<.*>$|^\$\{.*\}$|^\$\w+$|^\{\{.*\}\}$|^%\(?\w*\)?s$|^(.)\1*$"
)
_PLACEHOLDER_WORDS = frozenset(
    (
        "none",
        "null",
        "nil",
        "true",
        "false",
        "undefined",
        "empty",
        "string",
        "integer",
        "boolean",
        "number",
        "object",
        "optional",
        "required",
        "password",
        "passwd",
        "secret",
        "postgres",
    )
)


def _is_placeholder(value: str) -> bool:
    return value.lower() in _PLACEHOLDER_WORDS or _PLACEHOLDER.search(value) is not None


def scan(text: str) -> list[Finding]:
    """Return the secrets in ``text``, ordered by start and non-overlapping."""
    candidates = []
    for order, (kind, regex, group) in enumerate(RULES):
        for match in regex.finditer(text):
            start, end = match.span(group)
            if end - start >= _MIN_LEN and not _is_placeholder(text[start:end]):
                candidates.append((start, order, end, kind))
    candidates.sort()
    findings: list[Finding] = []
    for start, _order, end, kind in candidates:
        if findings and start < findings[-1].end:  # overlap: grow the kept finding to cover both
            prev = findings[-1]
            if end > prev.end:
                findings[-1] = Finding(prev.kind, prev.start, end, prev.line)
            continue
        findings.append(Finding(kind, start, end, text.count("\n", 0, start) + 1))
    return findings


def redact(text: str) -> tuple[str, list[Finding]]:
    """Replace each secret with ``[REDACTED:<kind>]``; findings refer to the original text."""
    findings = scan(text)
    parts, pos = [], 0
    for f in findings:
        parts += [text[pos : f.start], f"[REDACTED:{f.kind}]"]
        pos = f.end
    parts.append(text[pos:])
    return "".join(parts), findings


def describe(findings: list[Finding]) -> str:
    """Short human summary naming kinds and lines only, never the secret values."""
    if not findings:
        return "no secrets found"
    return ", ".join(f"{f.kind} on line {f.line}" for f in findings)
