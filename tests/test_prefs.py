"""The offline preference miner: the many ways people state lasting rules and corrections, and what is not one.

Phrasings are written like the ones in real sessions (lower case, typos, lists, run-on sentences);
`tests/data/transcripts/charming-with-claude/` and `m-claude/` hold short excerpts of two real authors'
sessions (sources and licences in tests/data/README.md).
"""

from __future__ import annotations

import pytest

from memvault.reflect import miner, transcript
from memvault.reflect.mine import placeholders, userwords
from memvault.reflect.miner import Candidate
from memvault.reflect.transcript import Turn

from .conftest import TRANSCRIPTS


def convo(*turns: tuple[str, str]) -> list[Turn]:
    return [Turn(role, text, n, f"u{n}", None, False) for n, (role, text) in enumerate(turns, 1)]


def prefs_of(*turns: tuple[str, str]) -> list[Candidate]:
    return [c for c in miner.mine(convo(*turns), using="rules") if c.category == "preference"]


def after_agent(said: str) -> list[Candidate]:
    """`said` by the user right after the agent spoke (as most lasting rules are)."""
    return prefs_of(("user", "tidy up the config loader"), ("assistant", "I refactored the loader."), ("user", said))


@pytest.mark.parametrize(
    ("said", "rule", "confidence", "title"),
    [
        ("Always use pnpm instead of npm.", "always-never", "high", "Always use pnpm instead of npm"),
        ("never commit directly to main", "always-never", "high", "Never commit directly to main"),
        ("logging should never use f-strings", "should-never", "high", "Logging should never use f-strings"),
        (
            "but thst is the wrong fix, logging should necer use f-strings.",
            "should-never",
            "high",
            "Logging should never use f-strings",
        ),
        (
            "Also, from now on, run the linter before every commit.",
            "from-now-on",
            "high",
            "Run the linter before every commit",
        ),
        ("By the way, I prefer httpx over requests.", "prefer", "high", "Prefer httpx over requests"),
        ("i don't want you to open PRs on my behalf", "dont-want", "high", "Don't open PRs on the user's behalf"),
        (
            "i don't want to open issues or prs directly or have you do it.",
            "dont-want",
            "high",
            "The user doesn't want to open issues or prs directly or have you do it",
        ),
        ("make sure you never push to the release branch", "make-sure", "high", "Never push to the release branch"),
        (
            "make sure you do not lose my data in the database",
            "make-sure",
            "high",
            "Do not lose the user's data in the database",
        ),
        (
            "please be careful to not lose my progress in the database",
            "careful-not",
            "high",
            "Never lose the user's progress in the database",
        ),
        (
            "I only want one version of node installed, preferably from nvm",
            "only-want",
            "high",
            "Only one version of node installed, preferably from nvm",
        ),
        (
            "im not entirely comfortable with telemetry going to vendors",
            "dislike",
            "high",
            "The user is not entirely comfortable with telemetry going to vendors",
        ),
        (
            "I hate trailing summaries at the end of every answer",
            "dislike",
            "high",
            "The user hates trailing summaries at the end of every answer",
        ),
        ("Remember that the staging database is read-only.", "remember", "high", "The staging database is read-only"),
        ("stop adding comments to every line", "stop-doing", "high", "Stop adding comments to every line"),
        ("Don't ever force-push shared branches.", "dont-ever", "high", "Don't ever force-push shared branches"),
        (
            "do not create any pr or issue without my explicit approval",
            "dont-ever",
            "high",
            "Do not create any pr or issue without the user's explicit approval",
        ),
        (
            "this was identified as a false positive already: the scanner always flags vendored code",
            "false-positive",
            "high",
            "The scanner always flags vendored code",
        ),
        (
            "you're in a sandbox so do what you need, as long as you don't touch the two existing reports.",
            "as-long-as",
            "medium",
            "As long as you don't touch the two existing reports",
        ),
        ("14. I use podman", "my-setup", "medium", "The user uses podman"),
        (
            "I sign in with a hardware key, not a password",
            "my-setup",
            "medium",
            "The user signs in with a hardware key, not a password",
        ),
        (
            "as noted elsewhere, retrying inside the handler is fine because the queue redelivers",
            "said-before",
            "medium",
            "Retrying inside the handler is fine because the queue redelivers",
        ),
        (
            "it's wrong to quote integers in shell commands, harmless but pointless",
            "wrong-to",
            "medium",
            "It's wrong to quote integers in shell commands, harmless but pointless",
        ),
        ("Don't use mocks in integration tests.", "dont", "low", "Don't use mocks in integration tests"),
        ("Please use ruff for formatting.", "please-use", "low", "Use ruff for formatting"),
        (
            "disbale autostart for all but the antivirus",
            "all-but",
            "low",
            "Disable autostart for all but the antivirus",
        ),
    ],
)
def test_lasting_rules_in_many_phrasings(said: str, rule: str, confidence: str, title: str) -> None:
    (pref,) = after_agent(said)
    assert (pref.rule, pref.confidence, pref.title) == (rule, confidence, title)
    assert pref.evidence == ("L3",)
    words = said.removeprefix("14. ")  # a list item's number is not the user's words
    assert f"> {words}" in pref.body and "— the user, L3" in pref.body  # the user's own words, with the line


@pytest.mark.parametrize(
    "said",
    [
        # questions, hedges, one-off and task-scoped requests
        "Should we always use pnpm?",
        "do you know the team for each of the repos?",
        "if i add notes do they auto save when i move out of the notes field? if not how do i save them?",
        "please check if there is a round 6, i don't think so but lets be sure",
        "i changed my mind, let's leave thise for last and start with the simpler ones.",
        "ok, please generate them",
        "let's do all and i can systematically work through them",
        "For now, use the old API.",
        "Don't commit yet.",
        "Don't stop until all tests pass.",
        "I'm not sure whether I prefer tabs.",
        "Maybe we should never cache this.",
        "I'd like to commit the script but not the actual generated files.",
        "it crashed, see .crash.log. you might need ro adjust the logging to provide more detail",
        "when i press r it correctly marks it as reviewed but the pane always goes back to the first item",
        "publish all reports form this session to docs in the repo",
        # not a rule at all
        "I always forget how the release script works.",
        "Never mind, the old one is fine.",
        "Thanks, that looks good.",
        "i still sometimes have the right panel showing item 1 instead of the one actually selected.",
        "resume",
    ],
)
def test_not_lasting_rules(said: str) -> None:
    assert after_agent(said) == []


def test_corrections_right_after_the_agent_acted() -> None:
    # Saved for review, not at once: on sessions the rules were not written on, most corrections of what the
    # agent just did were about that task ("No, keep the basic accessibility testing", "No, keep it for now").
    (pref,) = after_agent("no, that's the wrong fix, use the existing helper in utils instead")
    assert (pref.rule, pref.confidence) == ("correction", "medium")
    assert 'Said in reply to the agent: "I refactored the loader."' in pref.body
    (moved,) = after_agent("no no no, that is a totally different project. please move everything back")
    assert (moved.rule, moved.confidence) == ("correction", "medium")
    (stated,) = after_agent("no, that is a different project")  # states, does not direct: weaker still
    assert (stated.rule, stated.confidence) == ("correction", "low")
    again = prefs_of(
        ("user", "tidy up the config loader"), ("assistant", "I wrote a new parser for the loader."),
        ("user", "no, use the existing parser helper in utils instead"), ("assistant", "I added a second parser."),
        ("user", "no, again: use the existing parser helper in utils"),
    )  # fmt: skip
    assert [(c.rule, c.confidence) for c in again] == [("correction+repeated", "high")]  # said twice: saved
    assert prefs_of(("user", "No, use the existing helper in utils instead.")) == []  # nobody to correct
    for reply in ("no, keep as is", "No thanks.", "no, i'm still seeing this happen", "No.", "No, keep it for now"):
        assert after_agent(reply) == [], reply


CONTINUED = "This session is being continued from a previous conversation that ran out of context. "


def test_only_the_users_own_words() -> None:
    turns = [
        Turn("assistant", "Always use pnpm instead of npm.", 1, "a", None, False),
        Turn("user", "Always use pnpm instead of npm.", 2, "s", None, True),  # a subagent's prompt
        Turn("summary", "The user said: always use pnpm instead of npm.", 3, "c", None, False),
        Turn("tool_error", "Error: never use npm here", 4, "e", None, False),
        Turn("user", CONTINUED + "The user said: never commit to main.", 5, "x", None, False),
    ]
    assert [c for c in miner.mine(turns, using="rules") if c.category == "preference"] == []


def test_pasted_logs_code_and_quotes_are_not_the_users_words() -> None:
    pasted = (
        "here is what it printed:\n"
        "2026-01-16 20:25:15,524 - ERROR - never retry this request\n"
        "    always_retry = False  # never change\n"
        "```\nAlways use pnpm instead of npm.\n```\n"
        "> Never commit to main.\n"
        "| Severity | Always | Never |\n"
        "what do you think"
    )
    assert after_agent(pasted) == []


def test_one_sentence_at_a_time_and_each_list_item_apart() -> None:
    said = (
        "1.  we're auditing the antivirus  (is there a cli?)\n"
        "5.  (im not entirely comfortable with vendor telemetry)\n"
        "13. disable autostart for all but the antivirus\n"
        "14. I use hyper v"
    )
    got = {p.title: p.confidence for p in after_agent(said)}
    assert got == {
        "The user is not entirely comfortable with vendor telemetry": "high",
        "Disable autostart for all but the antivirus": "low",
        "The user uses hyper v": "medium",
    }


def test_a_pointer_sentence_joins_the_rule_it_points_at() -> None:
    (pref,) = after_agent("bug 7 in indico is wrong. this was identified as a false positive already. "
                          "modern ops always sets relation.app.")  # fmt: skip
    assert (pref.title, pref.confidence, pref.rule) == ("Modern ops always sets relation.app", "high", "false-positive")
    assert "bug 7 in indico is wrong" in pref.body


def test_the_same_rule_said_again_is_one_capture_with_both_lines() -> None:
    prefs = prefs_of(
        ("assistant", "Here are the findings."),
        ("user", "the tempo finding is wrong. modern ops always sets relation.app."),
        ("assistant", "Removed it."),
        ("user", "kafka-k8s has the fp about relation.app"),
        ("assistant", "Removed that one too."),
        ("user", "never use f-strings in logging calls"),
    )
    assert [(p.title, p.evidence, p.rule) for p in prefs] == [
        ("Modern ops always sets relation.app", ("L2", "L4"), "always-fact+repeated"),
        ("Never use f-strings in logging calls", ("L6",), "always-never"),
    ]
    assert prefs[0].confidence == "high"  # medium, said twice
    assert "Said 2 times in this session." in prefs[0].body


def test_a_bare_directive_without_its_object_is_not_saved_unasked() -> None:
    (pref,) = after_agent("i would like a branch for each fix (again *don't commit*)")
    assert (pref.title, pref.confidence) == ("Don't commit", "medium")


def test_keys_are_stable_across_sessions_and_keep_negations() -> None:
    def key(text: str) -> str:
        (pref,) = after_agent(text)
        return pref.key

    assert key("Always use pnpm instead of npm.") == key("always use PNPM instead of npm!")
    assert key("Never use mocks in integration tests.") != key("Always use mocks in integration tests.")
    assert key("Always use pnpm instead of npm.") != key("Always use npm instead of pnpm.")
    assert key("Always keep the line length at 100.") != key("Always keep the line length at 120.")


# ---------------------------------------------------------------- titles and placeholders


@pytest.mark.parametrize(
    ("clause", "title"),
    [
        ("Also, from now on, never add emojis to commit messages.", "Never add emojis to commit messages"),
        ("By the way, I prefer httpx for HTTP calls", "Prefer httpx for HTTP calls"),
        ("ok so just remember that CI runs on arm64", "CI runs on arm64"),
        ("no, make sure you always pin versions", "Always pin versions"),
        ("I use fish as my shell", "The user uses fish as the user's shell"),
        ("i'm on call on fridays", "The user is on call on fridays"),
    ],
)
def test_titles_state_the_rule_without_a_lead_in(clause: str, title: str) -> None:
    assert userwords.rule_title(clause) == title


def test_typos_of_rule_words_are_read_but_real_words_are_not_changed() -> None:
    assert userwords.canonical("logging should necer use f-strings") == "logging should never use f-strings"
    assert userwords.canonical("alwyas verify") == "always verify"
    assert userwords.canonical("a newer remote version, formal intent") == "a newer remote version, formal intent"


def test_local_paths_and_user_names_become_placeholders() -> None:
    text = (
        r"the venv in /home/jdoe/src/app/.venv is broken, C:\Users\Mischa\Documents too; "
        "jdoe said so; /tmp/review-venv works; /Users/[USER]/x; the -home-jdoe-src-app- folder"
    )
    names = placeholders.names_in([text])
    assert names >= {"jdoe", "Mischa"}
    out = placeholders.replace_local(text, project="/home/jdoe/src/app", names=names)
    assert out == (
        r"the venv in <project>/.venv is broken, ~\Documents too; "
        "<user> said so; /tmp/review-venv works; ~/x; the ~-src-app- folder"
    )
    assert placeholders.names_in(["/home/ubuntu/x", "/Users/[USER]/y"]) == placeholders.names_in([])  # no one
    assert placeholders.replace_local("Ubuntu 24.04 on /home/ubuntu/x", names=set()) == "Ubuntu 24.04 on ~/x"


def test_captures_carry_no_local_paths_or_user_names() -> None:
    turns = transcript.read(TRANSCRIPTS / "m-claude/3cfce0ff-excerpt.jsonl", tools=True)
    turns.turns.append(Turn("user", r"never touch C:\Users\Mischa\Documents\M-Claude\.git\hooks by hand", 9, "x",
                            None, False))  # fmt: skip
    cands = miner.mine(turns.turns, project=turns.cwd, using="rules")
    text = "\n".join(f"{c.title}\n{c.body}\n{c.key}" for c in cands)
    assert "Mischa" not in text and "mischa" not in text and r"~\Documents\M-Claude\.git\hooks" in text


# ---------------------------------------------------------------- excerpts of real sessions


def mined(name: str) -> dict[str, Candidate]:
    read = transcript.read(TRANSCRIPTS / name, tools=True)
    return {c.title: c for c in miner.mine(read.turns, project=read.cwd, using="rules")}


def test_real_excerpts_charming_0a0eb7b7() -> None:
    got = mined("charming-with-claude/0a0eb7b7-excerpt.jsonl")
    assert {t: (c.evidence, c.confidence) for t, c in got.items()} == {
        "Do not create any pr or issue without the user's explicit approval": (("L1", "L5", "L23"), "high"),
        "Logging should never use f-strings": (("L9",), "high"),
        "Discourse has a wrong finding, about unnecessary pebble replan calls": (("L11", "L17"), "high"),
        "Modern ops always sets relation.app": (("L13", "L15", "L17"), "high"),
        "Waiting for juju is ok and there is no guarantee when anotehr event arrives": (("L17",), "medium"),
        "Don't commit": (("L23",), "medium"),
    }
    assert "that is the wrong fix" not in got["Logging should never use f-strings"].title.lower()
    assert "but thst is the wrong fix, logging should necer use f-strings." in got[
        "Logging should never use f-strings"].body  # fmt: skip


def test_real_excerpts_the_same_rule_in_two_sessions() -> None:
    first = mined("charming-with-claude/58b4f056-excerpt.jsonl")
    second = mined("charming-with-claude/e7e9024b-excerpt.jsonl")
    assert list(first) == ["Never lose the user's progress in the database"]  # not "no, keep as is"
    assert list(second) == ["Do not lose the user's data in the databas"]


def test_real_excerpts_m_claude_3cfce0ff() -> None:
    got = mined("m-claude/3cfce0ff-excerpt.jsonl")
    assert {t: c.confidence for t, c in got.items()} == {
        "The user signs in with a FIDO2 NIST AAL3": "medium",
        "The user is not entirely comfortable with M$ Spynet": "high",
        "Disable autostart for all but bitdefender": "low",
        "The user uses hyper v": "medium",
        "Always verify and run hooks": "high",
    }


def test_keys_of_the_same_rule_in_other_words_are_recognised() -> None:
    from memvault.reflect.mine.text import similar_keys

    assert similar_keys("preference:dont-lose-users-data-databas", "preference:never-lose-users-progress-database")
    assert not similar_keys("preference:never-use-mocks-integration", "preference:use-mocks-integration")
    assert not similar_keys("preference:pnpm-instead-npm-scripts", "preference:npm-instead-pnpm-scripts")
    assert not similar_keys("preference:squash-merge-pull-requests", "preference:rebase-merges-pull-requests-not")
    assert not similar_keys("fix:lose-users-data-database", "preference:lose-users-data-database")


# ---- pasted text is never the user's words (issue 28, item 2) ---------------------------------------------

SPEC_TEMPLATE = """## User Input

```text
I will be using Go without any framework. The frontend should never use React.
```

You **MUST** consider the user input before proceeding (if not empty).

## Outline

1. **Setup**: Run `.specify/scripts/bash/setup-plan.sh --json` from repo root and parse JSON for FEATURE_SPEC.
2. **Load context**: Read FEATURE_SPEC and `.specify/memory/constitution.md`. Load the IMPL_PLAN template.
3. **Ask**: Never reveal future queued questions in advance. Never exceed 5 total asked questions.
   - DO NOT create any checklists that are embedded in the spec; that is a separate command.
   - Do not ask the user to repeat it unless they provided an empty command.

## Key rules

- NEVER hallucinate missing sections; if absent, report them accurately.
- Always operate on the existing constitution file, never create a new one.
- Stop asking further questions when all critical ambiguities are resolved early.
""" + "\n".join(f"- Step {n}: fill in section {n} of the plan from the spec and the research notes." for n in range(20))


def test_an_expanded_command_template_gives_only_what_the_user_typed_into_it() -> None:
    got = {c.title: c for c in after_agent(SPEC_TEMPLATE)}
    assert list(got) == ["The frontend should never use React"]


def test_a_rule_typed_after_a_paste_is_mined_and_the_paste_is_not() -> None:
    log = (
        "2024-03-02 10:11:12 ERROR worker: never retry a failed job twice (policy=strict)\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/app/jobs.py", line 41, in run\n'
        "    raise RetryError('always fail fast')\n"
        "RetryError: always fail fast\n\n"
        "from now on always run the linter first"
    )
    assert [c.title for c in after_agent(log)] == ["Always run the linter first"]


@pytest.mark.parametrize(
    "paste",
    [
        "Request URL: https://api.example.com/v1/items\nRequest Method: GET\nStatus Code: 500 Internal Server Error\n"
        "X-Error: never cache this response",
        "src/lib.rs:12:5: error: you should never call unwrap here\nerror[E0308]: mismatched types\n"
        "  --> src/lib.rs:12:5",
        "app/models.py:14:80: E501 line too long, always wrap at 79 (95 > 79 characters)\n"
        "app/views.py:3:1: F401 'os' imported but unused",
        "FAILED tests/test_api.py::test_retry - AssertionError: should always retry three times\n"
        "E       assert 2 == 3",
    ],
)
def test_pasted_output_with_rule_words_is_not_a_preference(paste: str) -> None:
    assert after_agent(paste) == []


def test_the_assistants_words_quoted_back_are_not_the_users_rule() -> None:
    said = "From now on I will always run the full test suite before each commit."
    turns = convo(
        ("user", "tidy up the config loader"),
        ("assistant", f"Done. {said}"),
        ("user", f"{said}\nwhy did that take so long?"),
    )
    assert [c for c in miner.mine(turns, using="rules") if c.category == "preference"] == []


# Another assistant's answer, pasted whole into the turn (made up; the shape of the train split's pasted replies).
PASTED_ANSWER = """That is a solid plan. Moving the export job to the queue is the right call.

## ✅ What to keep

* **Keep the retries:** the worker restarts often, and the retries are what save the half-written files.
* **Keep the batch size at 500:** the database copes with that, and the job finishes inside the window.

## ❌ What to avoid

* **Don't upload the files one by one:** it is an I/O nightmare. Always zip locally before you upload.
* **Don't skip the dry run:** it catches the path mistakes before the real export touches anything.
* **Don't widen the export window:** past midnight the reports start, and both jobs then fight for the same
  tables, which makes each of them slower than the two run one after the other.

## 🔍 Why the queue helps

The queue gives the job a place to wait when the database is busy, instead of failing and starting over.
It also gives you one place to see what is left, which the cron job never did: when it failed at night, you
only learnt of it from the missing files in the morning.

---

### 🚀 Next steps
1. Move the job to the queue.
2. Run the dry run against last week's data.

**Do you want me to write the queue worker for you now, or will you check the dry run first?**"""


def test_a_rule_inside_a_long_markdown_answer_waits_for_review_while_the_same_rule_typed_is_saved() -> None:
    assert len(PASTED_ANSWER) >= 1200
    (pasted,) = [p for p in after_agent(PASTED_ANSWER) if "zip" in p.title.lower()]
    assert pasted.confidence == "medium"
    (typed_rule,) = after_agent("Always zip locally before you upload.")
    assert typed_rule.confidence == "high"


def test_a_rule_typed_into_a_long_template_is_still_saved() -> None:
    template = ("## User Input\n\n```text\nAlways zip locally before you upload.\n```\n\n"
                "You **MUST** consider the user input before proceeding.\n\n## Outline\n\n"
                + "\n".join(f"{i}. Step {i} of the command's own outline, written by its authors." for i in range(40))
                + "\n\n## Key rules\n\n- Use absolute paths.\n")  # fmt: skip
    assert len(template) >= 1200
    (rule,) = [p for p in after_agent(template) if "zip" in p.title.lower()]
    assert rule.confidence == "high"
