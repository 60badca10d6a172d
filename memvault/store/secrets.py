"""Find and redact credentials (API keys, tokens, private keys, passwords) in text before it is stored.

Also personal data said in prose (PINs, national ID numbers, IBANs, card numbers, passwords said as words). Over
400 lines on purpose: the rules are one ordered table (on a tie the rule listed first names the finding) with the
checks it calls, and reads best in one place; `scripts/eval_secrets.py` measures it on a labelled corpus.
"""

from __future__ import annotations

import re

from memvault.records import Record

from .secretcues import CJK_PW as _CJK_PW
from .secretcues import PW_WORDS as _PW_WORDS
from .secretcues import SECRET_WORDS as _SECRET_WORDS


class Finding(Record):
    """One detected secret. Holds only its position, never the secret text (a light NamedTuple)."""

    kind: str
    start: int  # offset of the secret value itself in the scanned text
    end: int
    line: int  # 1-based


_MIN_LEN = 6  # shorter values are never reported

# --- building blocks for "<identifier ending in a secret word> = / : <value>" rules ---
_VAL = r"[^\s\"'`,;)\]}]"  # one character of an unquoted value (`&` included: `Tr0ub4dor&3xyz`)
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
    r"|[A-Za-z_]+(?:\.[A-Za-z_]+)+"
    + _END  # settings.SECRET_KEY (no digits: `QUFw3cI2.jpuky` is a value)
    + r"|(?:[a-z]+(?:_[a-z][a-z0-9]*)+|[A-Z]+(?:_[A-Z][A-Z0-9]*)+|[a-z]+(?:[A-Z][a-z]+)+)"
    + _END  # db_password
    + r"|[$€£]?[\d.,_]+%?"
    + _END  # numbers: `cost per token = $0.002`
    + r"|[a-z][a-z0-9+.-]*://)"  # URLs (connection strings have their own rule)
)
_BARE = _NOT_CODE + r"(?P<v>" + _VAL + r"{6,})" + _END
_NOT_PROSE = r"(?=" + _VAL + r"*[0-9!@#$%^*+=/~_|])"  # after ":", a bare value needs a digit or symbol


def _assignment(kind: str, words: str, glued: str = "") -> tuple[tuple[str, re.Pattern[str], int | str], ...]:
    """Three rules for one family of key names: quoted value, `key=bare`, `key: bare`.

    `glued`: words that also count run into a prefix (`PGPASSWORD`, `dbpassword`).
    """
    prefix = r"[A-Za-z0-9_.-]*[_.-]|[A-Za-z0-9_.-]*[a-z](?=[A-Z])"
    prefix += rf"|[A-Za-z0-9]*(?=(?i:{glued}))" if glued else ""
    key = (
        rf"(?<![A-Za-z0-9_.-])(?:{prefix})?"
        r"(?i:" + words + r")(?:[_.-](?i:base|b64|hex|value|raw))?(?![A-Za-z0-9_])[\"'\]]{0,2}"
    )
    return (
        (kind, re.compile(key + r"(?:" + _EQ + "|" + _COLON + ")" + _QUOTED), "v"),
        (kind, re.compile(key + _EQ + _BARE), "v"),
        (kind, re.compile(key + _COLON + _NOT_PROSE + _BARE), "v"),
    )


# ---- credentials said in plain speech, on command lines and in URLs ----------------------------------------
# A value in prose must look like one (`_plausible`): six or more characters with a digit or a symbol, not a
# reference ($VAR, <placeholder>, a path, a URL) and not a placeholder. The rules below mark it with group "pv".
_LINK = r"(?:is|was|are|=|:=|:|to|est|es|é|è|ist|är|er|je|jest|это)"  # "the password is", "… ist", "… to"
_PV = r"[\"'`]?(?P<pv>[^\s\"'`]{6,})"


def _prose(kind: str, words: str) -> tuple[tuple[str, re.Pattern[str], int | str], ...]:
    key = rf"(?<![\w@.-])(?i:{words})(?![\w-])"
    return (
        (kind, re.compile(key + rf"(?:[^\n.!?;]{{0,60}}?(?:[\s)]{_LINK}|:)|[ \t]*[:=])[ \t]*{_PV}"), "pv"),
        (kind, re.compile(key + rf"[ \t]+{_PV}"), "pv"),  # "password PRH?$9yAG…", ".netrc: password Uyjq…"
    )


# ---- personal data said in prose: PINs, national ID numbers, bank and card numbers, passwords said as words ----
# A number needs the word that names it close before it, except the shapes that check themselves (a dashed US SSN,
# an IBAN's mod-97, a grouped card number's Luhn digit). The group name picks the check in `_CHECKS`.
_SAID = (  # "PIN:", "PIN 1234", "PIN for the garage is", "pin code of my card ="; not "pin count is", "pin … #8074"
    r"(?:(?:\s(?:for|of|on|to|at)\b[^\n\d.!?;:=#]{0,30}?)?(?:\s(?:is|was|=)|:|=))?[ \t]*[\"'`]?"
)
_ENDS = r"(?![\w-]|[.,/:]\d)"  # the number ends here: not a version (1.26.4), a time or a longer id
_SSN = r"(?!000|666|9\d\d)\d{3}(?P<s>[ -]?)(?!00)\d{2}(?P=s)(?!0000)\d{4}"  # a number the SSA could issue
_OWNER = r"(?<![\w-])(?i:my|our|his|her|their|the)\s+(?:[\w-]+\s+){0,3}?"  # "my", "the guest wifi"
_PASSWORD = rf"(?i:{_PW_WORDS}|pw)(?:\s+(?:is|was)\s*:?|\s*[:=])[ \t]*"

_PIN = r"(?<![\w-])(?:PIN|[Pp]in|(?i:pin[ -]?code|pass[ -]?code|pin number))(?![\w-])"
_NINO = r"[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]"  # UK National Insurance number
_GROUPED_CARD = (  # 4-4-4-4(-n), Amex 4-6-5
    r"\d{4}(?P<g>[ -])\d{4}(?P=g)\d{4}(?P=g)\d{4}(?:(?P=g)\d{1,3})?|\d{4}(?P<a>[ -])\d{6}(?P=a)\d{5}"
)
_IBAN = r"[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?"  # checked by its mod-97 digits
_CARD_WORD = r"(?i:card|visa|master ?card|amex|american express|discover|credit|debit|\bcc\b)"
_QUOTED_PW = r"(?P<q>[\"'`])(?P<quoted>[^\"'`\n]{6,80}?)(?P=q)"

PERSONAL: tuple[tuple[str, re.Pattern[str], int | str], ...] = (
    ("pin", re.compile(rf"{_PIN}{_SAID}(?P<v>\d{{4,8}}){_ENDS}"), "v"),
    ("national_id", re.compile(r"(?<![\w-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\w-])"), 0),  # SSN
    ("national_id", re.compile(rf"(?i:\bSSN|social security(?: number| no\.?)?){_SAID}(?P<v>{_SSN}){_ENDS}"), "v"),
    (
        "national_id",
        re.compile(rf"(?i:national insurance(?: number| no\.?)?|\bNI (?:number|no\.?)|\bNINO){_SAID}(?P<v>{_NINO})"),
        "v",
    ),
    (  # Canadian Social Insurance Number
        "national_id",
        re.compile(
            rf"(?:\bSIN|(?i:social insurance(?: number| no\.?)?)){_SAID}(?P<luhn>\d{{3}}([ -]?)\d{{3}}\2\d{{3}}){_ENDS}"
        ),
        "luhn",
    ),
    (
        "passport_number",
        re.compile(rf"(?i:passport ?(?:number|no\.?|#)){_SAID}(?P<v>(?=[A-Z]*\d)[A-Z0-9]{{6,9}}){_ENDS}"),
        "v",
    ),
    ("iban", re.compile(rf"(?<![\w-])(?P<iban>{_IBAN})(?![\w-])"), "iban"),
    # a card number in groups anywhere, or in one piece after a word naming a card
    ("payment_card", re.compile(rf"(?<![\w-])(?P<card>{_GROUPED_CARD})(?![\w-]|[ -]\d)"), "card"),
    ("payment_card", re.compile(rf"{_CARD_WORD}[^\n\d]{{0,30}}?(?<!\d)(?P<card>\d{{13,19}})(?![\w-])"), "card"),
    (
        "card_security_code",
        re.compile(r"\b(?i:cvv2?|cvc2?|csc|card security code)\b(?:\s+(?:is|was)|\s*[:=#])?[ \t]*(?P<v>\d{3,4})\b"),
        "v",
    ),
    (  # "the wifi password is 'blue otter mango'": quoted, one word or three and more
        "password_assignment",
        re.compile(
            rf"(?<![\w@.-])(?i:{_PW_WORDS}|pw)(?![\w-])"
            rf"(?:[^\n.!?;]{{0,60}}?[\s)](?:is|was|:)|[ \t]*[:=])[ \t]*{_QUOTED_PW}"
        ),
        "quoted",
    ),
    (  # "my password is sunshine", "the wifi password: correct horse battery staple": plain words that end the clause
        "password_assignment",
        re.compile(rf"{_OWNER}{_PASSWORD}(?P<words>[A-Za-z]+(?: [a-z]+){{0,5}})(?=[ \t]*(?:[.,;!?)]|$))", re.M),
        "words",
    ),
)

PROSE: tuple[tuple[str, re.Pattern[str], int | str], ...] = (
    # specific formats first: on a tie the rule listed first names the finding
    ("password_assignment", re.compile(rf"(?:{_CJK_PW})[^\n]{{0,12}}?(?:は|是|为|為|：|:|는|=)\s*{_PV}"), "pv"),
    ("password_assignment", re.compile(r"\bmysql(?:dump|admin)?\b[^\n]*?\s-p(?P<v>[^\s'\"]{4,})"), "v"),
    ("password_assignment", re.compile(r"\bsshpass\s+-p\s*[\"']?(?P<v>[^\s\"']{4,})"), "v"),
    (
        "password_assignment",
        re.compile(r"(?:\s|^)--?(?:password|passwd|pass|token|api-key)(?:=|\s+)[\"']?(?P<pv>[^\s\"']{6,})"),
        "pv",
    ),
    ("password_assignment", re.compile(r"\bcurl\b[^\n]*?\s(?:-u|--user)\s*[\"']?[^\s:\"']+:(?P<v>[^\s\"']{4,})"), "v"),
    (  # any scheme: https://user:pass@host, redis://:pass@host, ftp://u:p%25x@host, jdbc:…
        "connection_string",
        re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s:@/\"'`]*:(?P<v>[^\s@/\"'`]+)@[\w.-]"),
        "v",
    ),
    ("connection_string", re.compile(r"(?i)[?&;](?:sig|password|pwd|access_token|token)=(?P<v>[^&\s\"'`;]{6,})"), "v"),
    ("auth_header", re.compile(r"\bBearer\s+(?P<v>[A-Za-z0-9._~+/=-]{16,})"), "v"),
    ("auth_header", re.compile(r"\bBasic\s+(?P<v>[A-Za-z0-9+/]{12,}={0,2})(?![A-Za-z0-9+/=])"), "v"),
    ("auth_header", re.compile(r"\"auth\"\s*:\s*\"(?P<v>[A-Za-z0-9+/]{16,}={0,2})\""), "v"),
    (  # a bare 40-character AWS secret access key: mixed case, digits, and not a hex digest
        "aws_secret_access_key",
        re.compile(
            r"(?<![\w/+=.-])(?=[A-Za-z0-9/+]*[a-z])(?=[A-Za-z0-9/+]*[A-Z])(?=[A-Za-z0-9/+]*[0-9])"
            r"(?![0-9a-fA-F]{40})(?P<bare>[A-Za-z0-9/+]{40})(?![\w/+=-])"
        ),
        "bare",  # more than two slashes in it: a URL's path, not a key
    ),
    (  # well-known token formats (public prefixes)
        "api_token",
        re.compile(
            r"(?<![A-Za-z0-9_-])(?:"
            r"sk_test_[A-Za-z0-9]{20,}|whsec_[A-Za-z0-9]{24,}|SG\.[\w-]{16,}\.[\w-]{16,}|shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"
            r"|hvs\.[A-Za-z0-9_-]{20,}|dckr_pat_[\w-]{20,}|key-[0-9a-f]{32}|lin_api_[A-Za-z0-9]{32,}"
            r"|hf_[A-Za-z0-9]{30,}|dop_v1_[a-f0-9]{64}|dapi[a-f0-9]{32}|sntry[su]_[A-Za-z0-9_=+/-]{30,}"
            r"|[a-z0-9]{14}\.atlasv1\.[A-Za-z0-9_-]{40,}|dp\.(?:pt|st|sa|ct|scim)\.[A-Za-z0-9]{30,}"
            r"|xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}|xapp-\d-[A-Z0-9]+-\d+-[a-f0-9]{32,}|glrt-[\w-]{20,}"
            r"|(?:secret|ntn)_[A-Za-z0-9]{40,}|gh[pousr]_[A-Za-z0-9]{30,}|SK[0-9a-f]{32}|AC[0-9a-f]{32}(?=[^\n]*(?i:token|secret))"
            r"|\d{8,10}:AA[A-Za-z0-9_-]{33}|[MN][A-Za-z\d]{23,25}\.[\w-]{6}\.[\w-]{27,38}"
            r"|[a-z0-9]{6}\.[a-z0-9]{16}(?=[^\n]*(?:kubeadm|--token|bootstrap))"
            r")(?![A-Za-z0-9_-])"
        ),
        0,
    ),
    (  # 2FA recovery codes: two or more short code lines after a line naming them
        "recovery_codes",
        re.compile(
            r"(?i)(?:recovery|backup)[ _-]codes?\b[^\n]*\n"
            r"(?P<v>(?:[ \t>*-]*[a-z0-9]{4,6}-[a-z0-9]{4,6}[ \t]*(?:\n|\Z)){2,})"
        ),
        "v",
    ),
    *PERSONAL,
    *_prose("password_assignment", _PW_WORDS),
    # "pass for the jenkins user: …" ("pass" alone is a verb too often to take "is" or "to" after it)
    ("password_assignment", re.compile(rf"(?<![\w-])(?i:pass)\b[^\n.!?;:]{{0,40}}:[ \t]*{_PV}"), "pv"),
    *_prose("secret_assignment", _SECRET_WORDS),
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
    *_assignment("password_assignment", r"pass(?:word|wd|phrase)?|pwd|requirepass", glued=r"pass(?:word|wd)"),
    *_assignment(
        "secret_assignment",
        r"secret|token|(?:api|access|private|secret|account|shared[_-]?access|encryption|signing|master)[_-]?key"
        r"|client[_-]?secret|client[_-]?key[_-]?data",
    ),
    *PROSE,
)

# Values that are placeholders rather than secrets, whatever rule found them.
_PLACEHOLDER = re.compile(
    r"(?i)example|redacted|changeme|changeit|placeholder|dummy|x{5,}|\*{3,}|\.{3}|…|your[_-]|_here$"
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


_TRAILING = ".,;:!?)]}>"
_SYMBOLS = set("!@#$%^&*+=?~|<>;:/\\")  # not - _ . ' which join ordinary words
_CODE = re.compile(_NOT_CODE[len("(?!") : -1])  # what `_NOT_CODE` keeps out of assignments: calls, $VARS, names
_MARKER = re.compile(r"\[REDACTED:[a-z_]+\]")
_REFERENCE = re.compile(
    r"^(?:[$<{%~/\\(\[!]|https?:|file:|[\w.-]+\.(?:md|txt|json|ya?ml|env|pem|key|cfg|ini|toml)$"
    r"|[a-z0-9_.-]+(?:/[a-z0-9_.-]+)+$)"  # a path such as secret/stg/db
)


def _plausible(value: str) -> bool:
    """A word said after "password is" that could be one: 6+ characters with a digit or a symbol, not a
    reference ($VAR, <placeholder>, a path, a URL, a file name) or an all-letters word."""
    value = value.strip("*_~")  # markdown emphasis around a word is not part of it
    if len(value) < _MIN_LEN or _REFERENCE.match(value) or _CODE.match(value):
        return False
    if value.isdigit():
        return len(value) >= 8
    return any(c.isdigit() for c in value) or any(c in _SYMBOLS for c in value[1:-1])


def _basic_placeholder(value: str) -> bool:
    """`Basic dXNlcjpwYXNzd29yZA==` decodes to user:password, a placeholder pair."""
    import base64
    import binascii

    try:
        pair = base64.b64decode(value + "=" * (-len(value) % 4)).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return False
    _, sep, password = pair.partition(":")
    return bool(sep) and (_is_placeholder(password) or password.lower() in ("pass", "secret", "test"))


def _luhn(digits: str) -> bool:
    total = 0
    for i, c in enumerate(reversed(digits)):
        n = int(c) * (2 if i % 2 else 1)
        total += n - 9 if n > 9 else n
    return total % 10 == 0


# Public test numbers the card networks and payment providers publish (Stripe, Adyen, Braintree docs).
_TEST_CARDS = frozenset(
    [
        "4242424242424242", "4111111111111111", "4000056655665556", "5555555555554444", "2223003122003222",
        "5105105105105100", "5200828282828210", "378282246310005", "371449635398431", "6011111111111117",
        "6011000990139424", "3056930009020004", "36227206271667", "3566002020360505", "6200000000000005",
        "4012888888881881", "4222222222222", "4000000000000002", "4000000000009995", "4000002500003155",
        "4000000000003220", "4000000000000077", "4000000000000341",
    ]
)
_CARD_START = re.compile(r"4|5[1-5]|2[2-7]|3[0478]|35|6")  # Visa, Mastercard, Amex, Diners, JCB, Discover/UnionPay
_TEST_LINE = re.compile(r"(?i)\btest|sandbox")


def _card(value: str, text: str, start: int) -> bool:
    digits = value.replace(" ", "").replace("-", "")
    line = text[text.rfind("\n", 0, start) + 1 : (text.find("\n", start) + 1 or len(text) + 1) - 1]
    return (
        13 <= len(digits) <= 19
        and _CARD_START.match(digits) is not None
        and _luhn(digits)
        and digits not in _TEST_CARDS
        and not _TEST_LINE.search(line)
    )


def _iban(value: str, text: str, start: int) -> bool:
    code = value.replace(" ", "")
    if not 15 <= len(code) <= 34:
        return False
    return int("".join(str(int(c, 36)) for c in code[4:] + code[:4])) % 97 == 1


# Words that say something about a password rather than being one ("the password is stored in the keychain"):
# function words rule out a passphrase, and a lone word may also be one that describes a password.
_FUNCTION_WORDS = frozenset(
    [
        "a", "an", "the", "in", "on", "at", "to", "of", "for", "from", "with", "by", "into", "as", "is", "are",
        "was", "be", "been", "being", "not", "never", "no", "yes", "all", "any", "some", "each", "every", "this",
        "that", "it", "its", "my", "our", "your", "his", "her", "their", "and", "or", "but", "if", "then", "than",
        "so", "too", "very", "also", "only", "just", "still", "now", "here", "there", "where", "when", "what",
        "which", "who", "how", "why", "do", "does", "did", "can", "could", "should", "would", "will", "must", "may",
        "might",
    ]
)
_DESCRIBES = frozenset(
    [
        "same", "different", "correct", "incorrect", "invalid", "valid", "secure", "insecure", "strong", "weak",
        "long", "short", "empty", "blank", "missing", "unknown", "wrong", "simple", "complex", "unique", "common",
        "random", "public", "private", "hidden", "forgotten", "written", "mandatory", "optional", "present",
        "absent", "sensitive", "visible", "temporary", "plaintext", "cleartext",
    ]
)
_NOT_A_PASSWORD_END = ("ed", "ing", "ly", "ble", "ive", "ous", "ful", "less", "ent", "ant", "ary", "ory", "ion")


def _said_words(value: str, text: str, start: int) -> bool:
    """A password said as words: one word of 6+ letters, or a passphrase of 3–6 words, none of them a word that
    says something about the password (`_FUNCTION_WORDS`, `_DESCRIBES`, or shaped like an adjective or a participle)."""
    words = value.lower().split()
    if len(words) == 2 or (len(words) == 1 and (len(words[0]) < _MIN_LEN or words[0] in _DESCRIBES)):
        return False
    return not any(w in _FUNCTION_WORDS or w.endswith(_NOT_A_PASSWORD_END) or len(w) < 3 for w in words)


def _quoted(value: str, text: str, start: int) -> bool:
    """A quoted password: one token, or a passphrase of three or more words (not "too short")."""
    return (" " not in value.strip() or len(value.split()) >= 3) and not _REFERENCE.match(value)


_CHECKS = {
    "luhn": lambda value, text, start: _luhn(value.replace(" ", "").replace("-", "")),
    "card": _card,
    "iban": _iban,
    "words": _said_words,
    "quoted": _quoted,
}
_SHORT = frozenset(("pin", "card_security_code"))  # kinds whose values are shorter than _MIN_LEN


def scan(text: str) -> list[Finding]:
    """Return the secrets in ``text``, ordered by start and non-overlapping."""
    candidates = []
    done = [m.span() for m in _MARKER.finditer(text)] if "[REDACTED:" in text else []  # redacted already
    for order, (kind, regex, group) in enumerate(RULES):
        for match in regex.finditer(text):
            start, end = match.span(group)
            if done and any(a <= start < b for a, b in done):
                continue
            if group == "pv":  # said in prose: trailing punctuation is the sentence's, and it must look like one
                end -= len(text[start:end]) - len(text[start:end].rstrip(_TRAILING))
                if not _plausible(text[start:end]):
                    continue
            value = text[start:end]
            if group == "bare" and value.count("/") > 2:
                continue
            check = _CHECKS.get(group) if isinstance(group, str) else None
            if check is not None and not check(value, text, start):
                continue
            if (end - start >= _MIN_LEN or kind in _SHORT) and not _is_placeholder(value):
                if kind == "auth_header" and _basic_placeholder(value):
                    continue
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


# A note's frontmatter block, as `notes.parse` finds it (store.notes imports this module, not the other way round).
_FRONTMATTER = re.compile(r"\A\ufeff?---[ \t]*\r?\n(?:.*?\n)??---[ \t]*(?:\r?\n|\Z)", re.DOTALL)


def describe(findings: list[Finding], text: str | None = None) -> str:
    """Short human summary naming kinds and lines only, never the secret values.

    Given the scanned note's `text`, a line is counted from the start of its body, the text the user gave
    (the frontmatter memvault wrote above it is not theirs to count), and a secret in the frontmatter is
    said to be there.
    """
    if not findings:
        return "no secrets found"
    head = _FRONTMATTER.match(text) if text else None
    if head is None:
        return ", ".join(f"{f.kind} on line {f.line}" for f in findings)
    above = head.group(0).count("\n")
    where = [" in the frontmatter" if f.start < head.end() else f" on line {f.line - above} of the text given"
             for f in findings]  # fmt: skip
    return ", ".join(f.kind + at for f, at in zip(findings, where, strict=True))
