"""Whether a text may hold a secret, told without loading the scanner: a cue that every finding of `secrets` has.

Compiling the scanner's rules (`memvault.store.secrets`) costs a fresh process about 11 ms, so a hook that has a
short text to keep (the prompt's excerpt in its log line) asks `may_hold` first and loads the scanner only on a
cue. The cue is a superset of the rules, by their shapes: every rule's match holds a digit (PINs, card, ID and
bank numbers), `=` or `:` (assignments, URLs with credentials, headers in JSON), `-----` (key armour), a run of
12 or more non-blank characters (every token format), or a word the rule is anchored on (the password and secret
words of any language, `pass` also finding `sshpass`; `mysql`; recovery and backup codes). `tests/test_secrets.py`
checks the superset on the labelled corpus and on generated text; a new rule must keep it.
"""

from __future__ import annotations

import re

# The words the scanner's rules name a password or a secret by (`secrets` builds its rules from these).
PW_WORDS = (
    r"pass(?:word|wd|phrase|code)|pw|pwd|requirepass|passwort|kennwort|mot de passe|contrase[ñn]a|senha"
    r"|wachtwoord|has[łl]o|lösenord|salasana|parola|heslo|jelszó|пароль"
)
SECRET_WORDS = (
    r"(?:api|access|secret|private|encryption|signing|master|account|app)[ _-]?key"  # noqa: S105 - key names
    r"|(?:access|auth|api|bearer|refresh|bot|session|personal access)[ _-]?token|token"
    r"|(?:shared|client|webhook|app|signing)[ _-]?secret|secret"
)
CJK_PW = r"パスワード|密码|密碼|비밀번호|口令"

# Every word of the lists above holds one of these (a test draws words from the lists to check it); spelled out,
# the cue compiles in a third of the time the lists would take.
_WORDS = r"pass|pw|key|token|secret|kennwort|mot de passe|contrase|senha|wachtwoord|has[łl]o|lösenord|salasana|parola"
_WORDS += r"|heslo|jelszó|пароль|mysql|recovery|backup"
_CUE = re.compile(rf"\d|[=:：]|-----|\S{{12,}}|(?i:{_WORDS})|{CJK_PW}")


def may_hold(text: str) -> bool:
    """False only when no rule of the scanner can find anything in `text`; True means: scan it."""
    return _CUE.search(text) is not None
