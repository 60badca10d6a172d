"""Tests for memvault.store.secrets: detection, line numbers, redaction and false positives."""

from __future__ import annotations

import itertools
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memvault.store.secretcues import CJK_PW, PW_WORDS, SECRET_WORDS
from memvault.store.secrets import RULES, Finding, describe, redact, scan

# Fake secrets are assembled from pieces so this file never contains a literal that
# looks like a live credential.
MIX = "Ab3De5Gh7Jk9Mn1Pq2Rs4Tu6Vw8Yz0"  # 30 mixed-case alphanumerics
AKIA = "AKIA" + "Q3X7" * 4
ASIA = "ASIA" + "R8T2" * 4
AWS_SECRET = "Abc1/Def2+" * 4
AWS_BARE = "Abc1/Def2+" + MIX  # 40 characters, as a key is written on its own
GHP = "ghp_" + MIX + "Ab3De5"
GH_PAT = "github_" + "pat_" + "11ABCDEFG0" + MIX[:12] + "_" + MIX * 2
GLPAT = "glpat" + "-" + MIX[:20]
XOXB = "xox" + "b-" + "1234567890-" + "1234567890123-" + MIX[:24]
WEBHOOK = "https://hooks.slack.com/services/" + "T0A1B2C3D" + "/B0A1B2C3D/" + MIX[:24]
OPENAI_PROJ = "sk-" + "proj-" + MIX + "_-" + MIX
OPENAI_LEGACY = "sk-" + MIX + MIX[:18]
ANTHROPIC = "sk-" + "ant-" + "api03-" + MIX + "_-" + MIX
GOOGLE = "AI" + "za" + (MIX * 2)[:35]
STRIPE = "sk" + "_live_" + MIX[:24]
STRIPE_RK = "rk" + "_live_" + MIX[:24]
NPM = "npm" + "_" + (MIX * 2)[:36]
PYPI = "pypi-" + "AgEIcHlwaS5vcmc" + (MIX + "-_") * 3
JWT = "ey" + "JhbGciOiJIUzI1NiJ9" + "." + "ey" + "JzdWIiOiIxMjM0NTY3ODkwIn0" + "." + MIX + "_-x"
PEM_BODY = "\n".join([MIX + MIX[:34]] * 3 + ["Ab3De5Gh7Jk9Mn1P=="])


def pem(kind: str = "RSA ") -> str:
    return "-----BEGIN " + kind + "PRIVATE KEY-----\n" + PEM_BODY + "\n-----END " + kind + "PRIVATE KEY-----"


# (expected kind, text, the exact secret substring that must be found)
DETECT = [
    ("aws_access_key_id", "Deploy with key " + AKIA + " from the ops account.", AKIA),
    ("aws_access_key_id", "temporary creds: " + ASIA + ", expires at noon", ASIA),
    ("aws_secret_access_key", "aws_secret_access_key = " + AWS_SECRET, AWS_SECRET),
    ("aws_secret_access_key", 'AWS_SECRET_ACCESS_KEY: "' + AWS_SECRET + '"', AWS_SECRET),
    ("github_token", "I pushed using " + GHP + " yesterday.", GHP),
    *[
        ("github_token", "token " + p + MIX + "Ab3De5 works", p + MIX + "Ab3De5")
        for p in ("gho_", "ghu_", "ghs_", "ghr_")
    ],
    ("github_token", "fine-grained PAT " + GH_PAT, GH_PAT),
    ("gitlab_token", "CI uses " + GLPAT + " for the registry", GLPAT),
    ("slack_token", "bot token is " + XOXB, XOXB),
    ("slack_webhook", "Alerts post to " + WEBHOOK + " every hour", WEBHOOK),
    ("openai_api_key", "OPENAI key " + OPENAI_PROJ, OPENAI_PROJ),
    ("openai_api_key", "old key " + OPENAI_LEGACY + " revoked?", OPENAI_LEGACY),
    ("anthropic_api_key", "claude key: " + ANTHROPIC, ANTHROPIC),
    ("google_api_key", "maps key " + GOOGLE + " in the frontend", GOOGLE),
    ("stripe_key", "billing uses " + STRIPE, STRIPE),
    ("stripe_key", "restricted key " + STRIPE_RK, STRIPE_RK),
    ("npm_token", "//registry.npmjs.org/:_authToken=" + NPM, NPM),
    ("pypi_token", "twine upload -p " + PYPI, PYPI),
    ("jwt", "Authorization: Bearer " + JWT, JWT),
    *[
        ("private_key", "key file:\n" + pem(k) + "\nend of note", pem(k))
        for k in ("", "RSA ", "EC ", "OPENSSH ", "DSA ", "ENCRYPTED ")
    ],
    ("connection_string", "DATABASE_URL=postgres://app:" + "S3cr3tPw" + "@db:5432/app", "S3cr3tPw"),
    ("connection_string", "use postgresql+psycopg2://app:" + "Pg-p4ss99" + "@db/app", "Pg-p4ss99"),
    ("connection_string", "mysql://root:" + "My5qlPw!" + "@127.0.0.1:3306/shop", "My5qlPw!"),
    ("connection_string", "mongodb+srv://svc:" + "M0ngoPw77" + "@cluster0.mongodb.net/db", "M0ngoPw77"),
    ("connection_string", "REDIS_URL=redis://:" + "R3disPw42" + "@cache:6379/0", "R3disPw42"),
    ("connection_string", "broker amqp://worker:" + "Rabb1tPw" + "@mq:5672//", "Rabb1tPw"),
    ("password_assignment", 'password = "' + "hunter2x" + '"', "hunter2x"),
    ("password_assignment", "PASSWORD: " + "s3cr3t-value", "s3cr3t-value"),
    ("password_assignment", "export DB_PASSWORD=" + "Tr0ub4dor3", "Tr0ub4dor3"),
    ("password_assignment", '{"user": "bob", "password": "' + "Xk9#mP2$vL" + '"}', "Xk9#mP2$vL"),
    ("password_assignment", "dbPassword = '" + "correct horse" + "'", "correct horse"),
    ("password_assignment", 'password: str = "' + "hunter2x" + '"', "hunter2x"),
    ("password_assignment", "mysql --passwd=" + "Q9w8e7r6", "Q9w8e7r6"),
    ("secret_assignment", 'api_key="' + "a8f3c9d1e7b2" + '"', "a8f3c9d1e7b2"),
    ("secret_assignment", "secret_token: " + "tok-93jd82h", "tok-93jd82h"),
    ("secret_assignment", "CLIENT_SECRET=" + "z8Y7x6W5v4", "z8Y7x6W5v4"),
    ("secret_assignment", "SECRET_KEY = '" + "django-insecure-9f8e7d" + "'", "django-insecure-9f8e7d"),
    ("secret_assignment", "mytool --api-key=" + "k3y-4b5c6d", "k3y-4b5c6d"),
    # said in plain speech, on command lines, in URLs and headers (issue 14)
    ("password_assignment", "the staging database password is " + "Saff" + "ron%25onyx", "Saff" + "ron%25onyx"),
    ("password_assignment", "password: " + "Tr0ub" + "4dor&3xyz", "Tr0ub" + "4dor&3xyz"),
    ("password_assignment", "la contraseña del admin es " + "Harb" + "or!8041", "Harb" + "or!8041"),
    ("password_assignment", "mysql -u root -p" + "BJ=+Vk" + "InG.5" + " shop", "BJ=+Vk" + "InG.5"),
    ("connection_string", "clone https://jdoe:" + MIX[:16] + "@git.example.org/x.git", MIX[:16]),
    ("aws_secret_access_key", "the CI secret is " + AWS_BARE + " ok", AWS_BARE),
    ("auth_header", "Authorization: Bearer " + MIX, MIX),
    ("api_token", "vault token " + "hvs." + MIX, "hvs." + MIX),
    ("recovery_codes", "github recovery codes:\n" + "qvpn5-00j8r\n17i5b-c5zv5\n", "qvpn5-00j8r\n17i5b-c5zv5\n"),
    # personal data said in prose (issue 27); the numbers are made up, with valid check digits
    ("pin", "my debit card PIN: 0417 at the usual bank", "0417"),
    ("pin", "the garage door pin code is 55190", "55190"),
    ("pin", "phone unlock passcode is 271828", "271828"),
    ("national_id", "her SSN: 536-22-8870", "536-22-8870"),
    ("national_id", "social security no. 401 38 2265 for the form", "401 38 2265"),
    ("national_id", "my national insurance number is JG 10 37 52 A", "JG 10 37 52 A"),
    ("national_id", "My SIN is 139 561 153", "139 561 153"),
    ("passport_number", "my passport no is C03005988, expires 2031", "C03005988"),
    ("iban", "pay the rent to IBAN DE20 4770 0160 0754 0389 92", "DE20 4770 0160 0754 0389 92"),
    ("payment_card", "my card number is 4539 2373 0163 1479", "4539 2373 0163 1479"),
    ("payment_card", "Amex 3710 099351 96701", "3710 099351 96701"),
    ("payment_card", "card: 5425450017528749 for the shop", "5425450017528749"),
    ("card_security_code", "the CVV is 417", "417"),
    ("password_assignment", "my password is sunshine", "sunshine"),
    ("password_assignment", "the wifi password: correct horse battery staple", "correct horse battery staple"),
    ("password_assignment", "The wifi password is 'blue otter mango'", "blue otter mango"),
]


@pytest.mark.parametrize(("kind", "text", "secret"), DETECT)
def test_detects_each_kind(kind, text, secret):
    findings = scan(text)
    assert [f.kind for f in findings] == [kind]
    assert text[findings[0].start : findings[0].end] == secret


@pytest.mark.parametrize(("kind", "text", "secret"), DETECT)
def test_redact_replaces_secret_and_is_idempotent(kind, text, secret):
    redacted, findings = redact(text)
    assert findings == scan(text)
    assert redacted == text.replace(secret, f"[REDACTED:{kind}]")
    assert secret not in redacted
    again, second = redact(redacted)
    assert again == redacted
    assert second == []


@pytest.mark.parametrize(("kind", "text", "secret"), DETECT)
def test_describe_never_contains_secret(kind, text, secret):
    summary = describe(scan(text))
    assert summary == f"{kind} on line {text[: text.index(secret)].count(chr(10)) + 1}"
    assert secret not in summary


def test_every_rule_kind_is_covered_by_a_detection_case():
    assert {kind for kind, _, _ in RULES} <= {kind for kind, _, _ in DETECT}


CONFIG = "\n".join(
    [
        "# deploy settings",
        "DEBUG=true",
        "AWS_ACCESS_KEY_ID=" + AKIA,
        "notes: rotate quarterly",
        "DB_PASSWORD=" + "Tr0ub4dor3",
        "",
        "GITHUB_TOKEN=" + GHP,
    ]
)


def test_line_numbers_and_order():
    findings = scan(CONFIG)
    assert [(f.kind, f.line) for f in findings] == [
        ("aws_access_key_id", 3),
        ("password_assignment", 5),
        ("github_token", 7),
    ]
    assert all(a.end <= b.start for a, b in itertools.pairwise(findings))
    assert describe(findings) == ("aws_access_key_id on line 3, password_assignment on line 5, github_token on line 7")


def test_redact_multiline_config():
    redacted, findings = redact(CONFIG)
    assert len(findings) == 3
    assert redacted.splitlines() == [
        "# deploy settings",
        "DEBUG=true",
        "AWS_ACCESS_KEY_ID=[REDACTED:aws_access_key_id]",
        "notes: rotate quarterly",
        "DB_PASSWORD=[REDACTED:password_assignment]",
        "",
        "GITHUB_TOKEN=[REDACTED:github_token]",
    ]
    assert redact(redacted) == (redacted, [])


def test_private_key_finding_spans_whole_block_and_lines():
    text = "line one\nline two\n" + pem("OPENSSH ") + "\ntail"
    (finding,) = scan(text)
    assert finding.line == 3
    assert text[finding.start : finding.end] == pem("OPENSSH ")
    assert redact(text)[0] == "line one\nline two\n[REDACTED:private_key]\ntail"


def test_specific_kind_wins_over_generic_assignment():
    assert [f.kind for f in scan("GITHUB_TOKEN=" + GHP)] == ["github_token"]
    assert [f.kind for f in scan('api_key = "' + OPENAI_PROJ + '"')] == ["openai_api_key"]


def test_describe_empty_and_finding_is_frozen():
    assert describe([]) == "no secrets found"
    finding = Finding("jwt", 0, 10, 1)
    with pytest.raises(AttributeError):
        finding.kind = "other"  # type: ignore[misc]
    assert finding == Finding(kind="jwt", start=0, end=10, line=1)
    assert (finding.kind, finding.start, finding.end, finding.line) == ("jwt", 0, 10, 1)


def test_scanner_is_light_enough_for_the_prompt_hook():
    """The prompt hook scans text; importing the scanner must not load typing or dataclasses."""
    probe = "import sys, memvault.store.secrets; print(sorted({'typing', 'dataclasses', 'inspect'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


BENIGN = [
    "The password must be rotated every 90 days.",
    "Use a token: it expires after an hour.",
    "| token | string | The session token returned by /login |",
    "token: string",
    "password: <password>",
    "DB_PASSWORD=${DB_PASSWORD}",
    "export PASSWORD=$PASSWORD",
    'password: "{{ secret }}"',
    "api_key = 'your-api-key'",
    "password = changeme",
    "token = '" + "x" * 24 + "'",
    'password: "********"',
    "secret = ...",
    'password = os.environ["DB_PASSWORD"]',
    'api_key = os.getenv("OPENAI_API_KEY")',
    "SECRET_KEY = settings.SECRET_KEY",
    "aws_access_key_id = AKIA" + "IOSFODNN7EXAMPLE",
    "password = example-password-123",
    "password: REDACTED",
    "token = None",
    "password = null",
    "api_key: true",
    "password = False",
    "password=abc12",
    "password: [REDACTED:password_assignment]",
    "Remember: the API key is stored in the vault, never paste it here.",
    "max_tokens: 4096",
    "Bypass: abc123def was the ticket id",
    "Run locally with postgres://user:password@localhost/db",
    "connect(password=db_password, user=db_user)",
    "token = get_token()",
    "secret = self.secret",
    "token: ${{ secrets.GITHUB_TOKEN }}",
    "password: !vault |",
    "The api_key: (required) string field",
    "cost per token = $0.000002",
    "Keys start with AKIA or ASIA; GitHub tokens start with ghp_ or github_pat_.",
    "We used the sk-learn-compatible-estimator-api-wrapper for this.",
    "The PEM file begins with -----BEGIN RSA PRIVATE KEY----- and ends with the END line.",
    "-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----",
    "Password reset links expire; the new password: something memorable.",
    """f.write('password = "' + new_pw + '"')""",
    # look-alikes of personal data
    "pin the version to 4.9.21 in requirements.txt",
    "the PIN entry screen shows 4 dots; reset the PIN after 3 failed attempts",
    "set GPIO pin 17 high; pin 13 drives the LED",
    "see PR 4921, line 123 of parser.py, port 8080",
    "call support at 555-123-4567 or +44 20 7946 0958",
    "ISBN 978-0-306-40615-7, order 112-4839201-5583921, id 123e4567-e89b-12d3-a456-426614174000",
    "use the Stripe test card 4242 4242 4242 4242",
    "a card number 4539 2373 0163 1478 with a wrong check digit",
    "DE21 4770 0160 0754 0389 92 fails the IBAN check",
    "SSN fields are masked as ***-**-1234; 000-12-3456 is never issued",
    "the password is stored in 1Password; my password is in the keychain",
    "the password is incorrect, try again",
    "the password is hashed with argon2id and rotated every 90 days",
    "compute sin 30 = 0.5; error code 4921 from the bank API",
    "the pin count is 1024; test: pin regression test for #8074",
    'badpw = "notarealpassword"',
]


@pytest.mark.parametrize("text", BENIGN)
def test_benign_text_has_no_findings(text):
    assert scan(text) == []
    assert redact(text) == (text, [])


def test_the_pin_and_ssn_said_in_one_sentence_are_both_redacted():
    """Issue 27: "Remember my bank PIN is 4921 and my SSN is 123-45-6789" was saved whole."""
    text = "Remember my bank PIN is 4921 and my SSN is 123-45-6789"
    redacted, findings = redact(text)
    assert [f.kind for f in findings] == ["pin", "national_id"]
    assert redacted == "Remember my bank PIN is [REDACTED:pin] and my SSN is [REDACTED:national_id]"


# ---- the labelled corpus (tests/data/secret_corpus.json): tuned on "dev", "heldout" only reported -------------


def test_the_scanner_on_the_labelled_corpus_both_parts() -> None:
    import json
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(repo / "scripts"))
    import eval_secrets

    corpus = json.loads((repo / "tests" / "data" / "secret_corpus.json").read_text(encoding="utf-8"))
    assert len(corpus["secrets"]) >= 100 and len(corpus["harmless"]) >= 100
    dev, heldout = eval_secrets.evaluate(corpus, "dev"), eval_secrets.evaluate(corpus, "heldout")
    assert dev.catch_rate >= 0.97 and dev.false_alarm_rate <= 0.03, dev.line()
    # Floors for the part never tuned on, set before looking at it (see wiki/explanation/privacy-and-crashes.md).
    assert heldout.catch_rate >= 0.80 and heldout.false_alarm_rate <= 0.06, heldout.line()


@pytest.mark.parametrize(
    "said",
    [
        "From now on remember: the staging database password is Saff" + "ron%25onyx",
        "Always clone with https://jdoe:" + MIX[:16] + "@git.example.org/platform/infra.git from now on",
        "Always use the CI secret key " + AWS_BARE + " for the deploy job",
        "From now on always log in with password: Tr0ub" + "4dor&3xyz",
    ],
)
def test_credentials_said_in_a_session_never_reach_the_vault(vault_dir, tmp_path, monkeypatch, said: str) -> None:
    from memvault import open_vault
    from memvault.reflect import runner

    from . import transcripts

    vault = open_vault(vault_dir)
    before = {p: p.read_bytes() for p in vault_dir.rglob("*.md")}
    monkeypatch.setattr(runner, "WAIT_SERVICE_S", 0.0)
    runner.reflect_transcript(vault, transcripts.write(tmp_path / "s.jsonl", "s", [("user", said)]), final=True)
    secret = next(part for part in said.split() if any(c.isdigit() for c in part) and len(part) > 12)
    value = secret.split(":")[-1].split("@")[0] if "://" in secret else secret
    written = [p.read_text() for p in vault_dir.rglob("*.md") if before.get(p) != p.read_bytes()]
    state = [p.read_text() for p in vault.state_dir.rglob("*.json")]
    assert not [t for t in written + state if value in t]


# ---- the cue a hook asks before it loads the scanner (store.secretcues) -------------------------------------------

# Pieces of text the scanner's rules are made of, none with a digit, "=", ":" or 12+ characters in a row: what the
# cue must still see by the rule's words. Joined at random, they make sentences some rules find something in.
PIECES = [
    "my", "the", "our", "wifi", "guest", "password", "passwort", "Kennwort", "contraseña", "пароль", "hasło", "pw",
    "pass", "passphrase", "secret", "token", "api key", "API_KEY", "access token", "client secret", "is", "was",
    "ist", "es", "to", "for", "sunshine", "correct horse", "battery", "'blue otter mango'", '"tiger lily"',
    "hunter!!", "x?y&z%w!", "Tr!ub&dor", "mysql", "-u", "root", "-psecretpw", "sshpass", "-p", "--password",
    "--token", "s3cr!t", "recovery codes", "backup code", "\n", "abcd-efgh", "wxyz-qrst", "パスワード", "は", "是",
    "密码", "Bearer", "Basic", "pin", "PIN", "card", "cvv", "SSN", "IBAN", "GB", "DE", "passport", ".", ",", " ",
    "please", "remember", "and", "then", "deploy", "the door",
]  # fmt: skip


@pytest.mark.parametrize(("kind", "text", "secret"), DETECT)
def test_the_cue_is_there_for_every_detection_case(kind, text, secret):
    from memvault.store import secretcues

    assert scan(text) and secretcues.may_hold(text)


def test_the_cue_is_there_for_every_secret_of_the_labelled_corpus() -> None:
    import json
    from pathlib import Path

    from memvault.store import secretcues

    corpus = json.loads((Path(__file__).parent / "data" / "secret_corpus.json").read_text(encoding="utf-8"))
    texts = [case["text"] for case in corpus["secrets"] + corpus["harmless"]]
    missed = [text for text in texts if scan(text) and not secretcues.may_hold(text)]
    assert not missed, missed


def test_the_cue_lets_plain_prose_skip_the_scanner() -> None:
    """The point of the cue: a prompt with no digit, no ':' or '=', no long word and no secret word needs no scan."""
    from memvault.store import secretcues

    for text in ("where did she go hiking with her kids", "please write a long summary of this thread"):
        assert not secretcues.may_hold(text)
    # what the old cue ("=", ":", "-----" or 12 characters in a row) let through to the log unredacted:
    for text in ("the door pin is 4821", "my password is sunshine", "IBAN DE20 4770 0160 0754 0389 92 please"):
        assert scan(text) and secretcues.may_hold(text)
    # each word-anchored rule without a digit, ':', '=' or a long run: the cue has its word
    word_only = ["recovery codes\nabcd-efgh\nwxyz-qrst", "backup codes\nabcd-efgh\nwxyz-qrst", "the token is x?y&z%w!",
                 "mysql -u root -pTr!ub&dor", "sshpass -p hunter!! ssh box", "The wifi password is 'blue otter mango'"]
    for text in word_only:
        assert scan(text) and secretcues.may_hold(text), text


@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=12), st.sampled_from([" ", "", "\n"]))
@settings(max_examples=3000, deadline=None)
def test_text_the_scanner_finds_anything_in_always_has_the_cue(pieces: list[str], glue: str) -> None:
    from memvault.store import secretcues

    text = glue.join(pieces)
    assert secretcues.may_hold(text) or not scan(text), scan(text)


@given(st.one_of(*(st.from_regex(f"(?i:{words})", fullmatch=True) for words in (PW_WORDS, SECRET_WORDS, CJK_PW))))
@settings(max_examples=500, deadline=None)
def test_every_password_and_secret_word_the_rules_know_is_a_cue(word: str) -> None:
    """The cue spells its words out; the scanner's rules are built from these lists: any word of them must cue."""
    from memvault.store import secretcues

    assert secretcues.may_hold(word)
